@testable import CallLog
import XCTest

/// Lines are found in the chunk they were written into, whatever the chunk size and however
/// the writes fall: a line that crosses a chunk moves whole into the next, a line longer than a
/// chunk grows it, and the lines and issues come out in file order with their numbers.
final class LineChunkerTests: XCTestCase {
    /// Lines of every length around small chunk sizes, empty ones, CR LF endings, one longer
    /// than the limit, and an incomplete last line.
    private static let text: [UInt8] = {
        var s = ""
        for k in 0..<400 { s += String(repeating: Character(UnicodeScalar(97 + k % 26)!), count: (k * 37) % 301) + (k % 9 == 0 ? "\r\n" : "\n") }
        s += "\n" + String(repeating: "L", count: 2_000) + "\n" + "after the long one\n" + "no newline at the end"
        return Array(s.utf8)
    }()

    private static let limit = 1_000

    /// What a plain split gives: each line's text and number, or the issue at that line; blank
    /// lines (empty, or a lone CR) are no records and give nothing.
    private static func expected() -> [String] {
        var out: [String] = []
        let parts = text.split(separator: 0x0A, omittingEmptySubsequences: false)
        for (k, part) in parts.enumerated() {
            if k < parts.count - 1 && (part.isEmpty || part.elementsEqual([0x0D])) { continue }
            if k == parts.count - 1 {
                out.append("issue \(k + 1) incomplete last line: \(part.count) bytes after the last newline; skipped")
            } else if part.count > limit {
                out.append("issue \(k + 1) line too long: \(part.count) bytes (limit \(limit)); skipped")
            } else {
                out.append("\(k + 1) " + String(decoding: part.last == 0x0D ? part.dropLast() : part, as: UTF8.self))
            }
        }
        return out
    }

    private static func collect(_ c: inout LineChunk, into out: inout [String]) {
        c.forEachLine(
            { line, n in out.append("\(n) " + String(decoding: line, as: UTF8.self)) },
            issue: { out.append("issue \($0.line ?? -1) \($0.category.rawValue): \($0.message)") })
    }

    func testLinesAndIssuesAreFoundWhateverTheChunksAndWrites() {
        let expected = Self.expected()
        for chunkBytes in [1, 2, 3, 7, 64, 100, 299, 300, 301, 1_000, 5_000, 1 << 20] {
            for write in [1, 5, 150, 301, 4_096, 1 << 20] {
                var chunker = LineChunker(path: "t", chunkBytes: chunkBytes, maximumLineBytes: Self.limit)
                var seen: [String] = []
                var handOuts = 0
                let handOut = { (c: inout LineChunk) in
                    handOuts += 1
                    Self.collect(&c, into: &seen)
                }
                var offset = 0
                while offset < Self.text.count {
                    let space = chunker.space(handOut)
                    let n = min(space.count, write, Self.text.count - offset)
                    Self.text[offset..<offset + n].withUnsafeBytes { space.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: n) }
                    chunker.wrote(n, handOut)
                    offset += n
                }
                chunker.finish(handOut)
                XCTAssertEqual(seen, expected, "chunks of \(chunkBytes), writes of \(write)")
                if chunkBytes <= 1_000 { XCTAssertGreaterThan(handOuts, Self.text.count / (chunkBytes + 2_100), "\(chunkBytes)") }
            }
        }
    }

    /// A chunk handed out may be kept (the shared file's readers read it later): the next lines
    /// go into the chunk given back, and the kept one still holds its own.
    func testAChunkKeptByTheReceiverKeepsItsLines() {
        var chunker = LineChunker(path: "t", chunkBytes: 200, maximumLineBytes: Self.limit)
        var kept: [LineChunk] = []
        let handOut = { (c: inout LineChunk) in
            kept.append(c)
            c = LineChunk()
        }
        var offset = 0
        while offset < Self.text.count {
            let space = chunker.space(handOut)
            let n = min(space.count, 97, Self.text.count - offset)
            Self.text[offset..<offset + n].withUnsafeBytes { space.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: n) }
            chunker.wrote(n, handOut)
            offset += n
        }
        chunker.finish(handOut)
        XCTAssertGreaterThan(kept.count, 50)
        XCTAssertEqual(Set(kept.map { ObjectIdentifier($0.buffer) }).count, kept.count, "each kept chunk has its own memory")
        var seen: [String] = []
        for var c in kept { Self.collect(&c, into: &seen) }
        XCTAssertEqual(seen, Self.expected())
    }

    /// zstd copies from up to a window back, and finds those bytes in the chunk's memory
    /// (`ZstdDecoder.outputMayMove`): whatever the window, the chunk size, the size of the
    /// reads, the frames and whether chunks are kept, every line comes out as written, and no
    /// frame is reported damaged (a reused buffer would fail the frame's checksum); a skippable
    /// frame among them is stepped over. The same for the form that hands each block to a
    /// closure.
    func testZstdFindsWhatItCopiesFromInTheChunks() {
        // Lines that repeat parts of lines far back (up to 6,000 lines, about 400 KB).
        var text: [UInt8] = []
        var expected: [String] = []
        for k in 0..<12_000 {
            let line =
                #"{"n":\#(k),"echo":\#((k &* 7_919) % 6_000),"pad":"\#(String(repeating: "x", count: (k &* 31) % 90))","id":"\#((k % 6_000) &* 2_654_435_761 % 1_000_003)"}"#
            text += Array(line.utf8) + [0x0A]
            expected.append("\(k + 1) " + line)
        }
        for windowLog in [10, 14, 20] as [Int32] {
            for frames in [1, 7] {
                // Several frames, flushed inside as the log writer does, or one.
                let compressor = ZstdCompressor(level: 3, windowLog: windowLog)
                var file: [UInt8] = []
                let frameBytes = text.count / frames + 1
                for f in 0..<frames {
                    let part = text[min(text.count, f * frameBytes)..<min(text.count, (f + 1) * frameBytes)]
                    let half = part.startIndex + part.count / 2
                    compressor.compress(Array(part[..<half]), .flush, into: &file)
                    compressor.compress(Array(part[half...]), .end, into: &file)
                    // A skippable frame after the first, with more content (200,000 bytes) than
                    // zstd takes in one piece: stepped over.
                    if f == 0 && frames > 1 { file += [0x50, 0x2A, 0x4D, 0x18, 0x40, 0x0D, 0x03, 0] + [UInt8](repeating: 0x41, count: 200_000) }
                }
                // The form that hands each block to a closure, fed whole and in small reads.
                let whole = ZstdDecoder.decompressAll(file)
                XCTAssertTrue(whole.output == text && whole.damage.isEmpty, "decompressAll, window 2^\(windowLog), \(frames) frames")
                let emitting = ZstdDecoder()
                var emitted: [UInt8] = []
                for at in stride(from: 0, to: file.count, by: 7) {
                    file[at..<min(file.count, at + 7)].withUnsafeBytes {
                        emitting.decompress($0, emit: { emitted += $0 }, damaged: { XCTFail("\($0)") })
                    }
                }
                XCTAssertTrue(emitted == text, "reads of 7, window 2^\(windowLog), \(frames) frames")
                for chunkBytes in [100, 5_000, 1 << 20] {
                    for read in [7, 4_096, 1 << 20] {
                        for keep in [false, true] {
                            let what = "window 2^\(windowLog), \(frames) frames, chunks of \(chunkBytes), reads of \(read), chunks kept: \(keep)"
                            let decoder = ZstdDecoder()
                            var chunker = LineChunker(path: "t", chunkBytes: chunkBytes, maximumLineBytes: 1 << 20)
                            var kept: [LineChunk] = []
                            var seen: [String] = []
                            let handOut = { (c: inout LineChunk) in
                                if keep {
                                    kept.append(c)
                                    c = kept.count > 3 ? kept.removeFirst() : LineChunk()  // given back, as the shared reader does
                                    Self.collect(&kept[kept.count - 1], into: &seen)
                                } else {
                                    Self.collect(&c, into: &seen)
                                }
                            }
                            var at = 0
                            while at < file.count {
                                file[at..<min(file.count, at + read)].withUnsafeBytes { chunker.decompress($0, with: decoder, handOut) }
                                at += read
                            }
                            chunker.finish(handOut)
                            XCTAssertFalse(decoder.insideFrame, what)
                            if seen != expected {
                                let first = (0..<min(seen.count, expected.count)).first { seen[$0] != expected[$0] } ?? min(seen.count, expected.count)
                                XCTFail("\(what): \(seen.count) lines, first difference at \(first): \(seen.dropFirst(first).first ?? "none")")
                            }
                        }
                    }
                }
            }
        }
    }
}
