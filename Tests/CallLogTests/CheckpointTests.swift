import CallLog
import Foundation
import TestSupport
import XCTest

/// Checkpoints: no line is used before its bytes are verified, a cut file still yields every
/// flushed line, and files without checkpoints read as before.
final class CheckpointTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("checkpoint") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// Three calls' records, statistics as deltas, flushed every few records as the collector
    /// does; `flushes` holds the file's size and the lines written at each flush and segment end
    /// (each time the file grew).
    func writeCheckpointedFile(_ name: String, segmentBytes: Int = 8 << 20) throws -> (path: String, lines: [String], flushes: [(bytes: Int, lines: Int)]) {
        let path = dir.appendingPathComponent(name).path
        var options = LogWriter.Options()
        options.segmentBytes = segmentBytes
        let writer = try LogWriter(path: path, options: options)
        var flushes: [(bytes: Int, lines: Int)] = []
        var appended = 0
        for c in 0..<3 {
            let call = "call-\(c)"
            var records: [LogRecord] = [
                .callInfo(
                    call: call, ts: 1_000, direction: "outgoing", sdk: "s", sdkVersion: "1", app: "a",
                    appVersion: "1", platform: "ios", network: "wifi", media: ["audio"])
            ]
            for i in 0..<12 {
                let t = Double(2_000 + i * 1_000)
                let jitter = 0.002 + Double(i % 4) / 1000
                var inbound: JSONObject = ["id": .string("IT01A\(c)"), "timestamp": .number(t), "type": "inbound-rtp", "kind": "audio"]
                inbound["ssrc"] = .number(Double(c))
                inbound["packetsReceived"] = .number(Double(50 * i))
                inbound["packetsLost"] = .number(Double(i / 3))
                inbound["jitter"] = .number(jitter)
                records.append(.stats(call: call, ts: Int64(t), format: .w3c, report: [.object(inbound)]))
            }
            records.append(.end(call: call, ts: 30_000, reason: "terminatedLocally"))
            for (i, r) in records.enumerated() {
                try writer.append(r)
                appended += 1
                if i % 4 == 3 { try writer.flush() }
                if writer.bytesWritten > (flushes.last?.bytes ?? 0) { flushes.append((writer.bytesWritten, appended)) }
            }
        }
        try writer.close()
        flushes.append((writer.bytesWritten, appended))
        // The lines as written: what an undamaged file yields, in order, checkpoints left out.
        let (lines, issues) = read(path)
        XCTAssertEqual(issues, [])
        XCTAssertEqual(lines.count, appended)
        return (path, lines, flushes)
    }

    /// Every line the reader hands out, and its issues, reading in small pieces and chunks so
    /// that held lines move between buffers.
    func read(_ path: String, readBytes: Int = 1 << 20, chunkBytes: Int = 192 << 10) -> (lines: [String], issues: [LogIssue]) {
        var reader = LogLineReader(path: path)
        reader.chunkBytes = readBytes
        var lines: [String] = [], issues: [LogIssue] = []
        reader.forEachChunk(chunkBytes: chunkBytes) { chunk in
            chunk.forEachLine({ line, _ in lines.append(String(decoding: line, as: UTF8.self)) }, issue: { issues.append($0) })
        }
        return (lines, issues)
    }

    func testACheckpointIsAnAgentRecordThatOlderReadersCountAndIgnore() throws {
        var text: [UInt8] = []
        LogCheckpoint(bytes: 1234, xxh64: 0x0123_4567_89AB_CDEF, ts: 1_795_349_990_000).write(to: &text)
        XCTAssertEqual(
            String(decoding: text, as: UTF8.self),
            #"{"v":1,"kind":"agent","call":"-","ts":1795349990000,"agent":"writer","event":"checkpoint","bytes":1234,"xxh64":"0123456789abcdef"}"# + "\n")
        let record = try text.dropLast().withUnsafeBufferPointer { try LogRecord(parsing: $0) }
        XCTAssertEqual(record.kind, .agent)
        XCTAssertEqual(record.call, "-")
        text.dropLast().withUnsafeBytes {
            XCTAssertEqual(LogCheckpoint(line: $0), LogCheckpoint(bytes: 1234, xxh64: 0x0123_4567_89AB_CDEF, ts: 1_795_349_990_000))
        }
    }

    /// One bit flipped anywhere in the file: every line handed out is one that was written, and
    /// whenever lines are missing the damage is reported, with the file and where.
    func testAFlippedBitNeverYieldsAnAlteredLine() throws {
        let (path, original, _) = try writeCheckpointedFile("flip.ndjson.zst")
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let written = Set(original)
        let damaged = dir.appendingPathComponent("damaged.ndjson.zst").path
        var altered = 0, reported = 0
        for position in stride(from: 0, to: bytes.count, by: 3) {
            var copy = bytes
            copy[position] ^= 1 << UInt8(position % 8)
            try Data(copy).write(to: URL(fileURLWithPath: damaged))
            for (readBytes, chunkBytes) in [(1 << 20, 192 << 10), (333, 100)] {
                let (lines, issues) = read(damaged, readBytes: readBytes, chunkBytes: chunkBytes)
                let foreign = lines.filter { !written.contains($0) }
                XCTAssertEqual(foreign, [], "bit \(position % 8) of byte \(position) flipped")
                if foreign.isEmpty && lines != original { altered += 1 }
                if lines != original {
                    XCTAssertFalse(issues.isEmpty, "lines lost without a word: byte \(position)")
                    reported += 1
                }
                for issue in issues {
                    XCTAssertEqual(issue.file, damaged)
                    XCTAssertNotNil(issue.line, "\(issue)")
                }
            }
        }
        XCTAssertGreaterThan(reported, bytes.count / 6, "most flips cost lines, and say so")
    }

    /// Cut at every byte: the reader yields exactly the lines flushed before the cut (and those
    /// of a frame whose checkpoint came through but not its last 4 bytes, zstd's checksum), and
    /// reports the cut when it is not at a flush.
    func testACutFileYieldsEveryLineFlushedBeforeTheCut() throws {
        for segmentBytes in [8 << 20, 3_000] {
            let (path, original, flushes) = try writeCheckpointedFile("cut-\(segmentBytes).ndjson.zst", segmentBytes: segmentBytes)
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            let cut = dir.appendingPathComponent("cut.ndjson.zst").path
            for size in 0...bytes.count {
                try Data(bytes.prefix(size)).write(to: URL(fileURLWithPath: cut))
                var flushed = flushes.last(where: { $0.bytes <= size })?.lines ?? 0
                let (lines, issues) = read(cut, readBytes: 97, chunkBytes: 150)
                if let next = flushes.first(where: { $0.bytes > size }), size >= next.bytes - 4, lines.count == next.lines { flushed = next.lines }
                XCTAssertEqual(lines, Array(original.prefix(flushed)), "cut at \(size) of \(bytes.count), segments of \(segmentBytes)")
                if !flushes.contains(where: { $0.bytes == size }) && size > 0 {
                    XCTAssertFalse(issues.isEmpty, "a cut at \(size) is reported")
                }
            }
        }
    }

    /// One frame of 6 MiB of text (segments larger than the reader waits for): the reader
    /// waits for the frame's checksum only up to `LineChunker.deferredHoldBytes`, then compares
    /// checkpoints as they come. Whole, every line is read; with a byte flipped near the end of
    /// the frame, every line flushed before the damaged stretch is still read and none altered.
    func testALongFrameIsVerifiedByItsCheckpointsPastTheHoldLimit() throws {
        let path = dir.appendingPathComponent("long.ndjson.zst").path
        var options = LogWriter.Options()
        options.segmentBytes = 64 << 20
        let writer = try LogWriter(path: path, options: options)
        var written: [String] = []
        var flushedAt: [(bytes: Int, lines: Int)] = []
        var i = 0
        while writer.textBytes < 6 << 20 {
            let r = LogRecord.event(
                call: "long", ts: 1_000 + Int64(i), action: "log", type: "line-\(i)", detail: ["pad": .string(String(repeating: "x", count: 200))])
            try writer.append(r)
            written.append(r.jsonLine)
            i += 1
            if i % 50 == 0 {
                try writer.flush()
                flushedAt.append((writer.bytesWritten, written.count))
            }
        }
        try writer.close()
        let (whole, issues) = read(path)
        XCTAssertEqual(issues, [])
        XCTAssertTrue(whole == written, "\(whole.count) lines read of \(written.count)")
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let position = bytes.count - 3_000
        bytes[position] ^= 0x10
        let damaged = dir.appendingPathComponent("long-damaged.ndjson.zst").path
        try Data(bytes).write(to: URL(fileURLWithPath: damaged))
        let (lines, damageIssues) = read(damaged)
        // Only lines as written, in order (a subsequence: the damaged stretch's lines are left out).
        var next = 0
        for line in lines {
            guard let at = written[next...].firstIndex(of: line) else { return XCTFail("a line not written, or out of order, after \(next) lines") }
            next = at + 1
        }
        let flushedBefore = flushedAt.last(where: { $0.bytes < position })?.lines ?? 0
        XCTAssertEqual(Array(lines.prefix(flushedBefore)) == Array(written.prefix(flushedBefore)), true, "every line flushed before the damaged stretch")
        XCTAssertLessThan(lines.count, written.count)
        XCTAssertFalse(damageIssues.isEmpty)
    }

    /// Files from writers without checkpoints (older callstats, the `zstd` tool, plain text),
    /// in one frame or several, read whole, as before.
    func testFilesWithoutCheckpointsReadAsBefore() throws {
        let (_, original, _) = try writeCheckpointedFile("source.ndjson.zst")
        let text = Array(original.map { $0 + "\n" }.joined().utf8)
        let half = original.prefix(original.count / 2).map { $0 + "\n" }.joined().utf8.count
        let oneFrame = dir.appendingPathComponent("old.ndjson.zst").path
        try Data(ZstdCompressor.compressFrame(text)).write(to: URL(fileURLWithPath: oneFrame))
        let twoFrames = dir.appendingPathComponent("old2.ndjson.zst").path
        try Data(ZstdCompressor.compressFrame(Array(text[..<half])) + ZstdCompressor.compressFrame(Array(text[half...])))
            .write(to: URL(fileURLWithPath: twoFrames))
        let plain = dir.appendingPathComponent("old.ndjson").path
        try Data(text).write(to: URL(fileURLWithPath: plain))
        for path in [oneFrame, twoFrames, plain] {
            for (readBytes, chunkBytes) in [(1 << 20, 192 << 10), (333, 100)] {
                let (lines, issues) = read(path, readBytes: readBytes, chunkBytes: chunkBytes)
                XCTAssertEqual(lines, original, path)
                XCTAssertEqual(issues, [], path)
            }
        }
        // Records restored as before, statistics deltas included.
        let (records, issues) = LogReader(path: oneFrame).readAll()
        XCTAssertEqual(issues, [])
        XCTAssertEqual(records.count, original.count)
    }
}
