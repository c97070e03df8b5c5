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

    /// What a plain split gives: each line's text and number, or the issue at that line.
    private static func expected() -> [String] {
        var out: [String] = []
        let parts = text.split(separator: 0x0A, omittingEmptySubsequences: false)
        for (k, part) in parts.enumerated() {
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
        c.forEachLine({ line, n in out.append("\(n) " + String(decoding: line, as: UTF8.self)) },
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
}
