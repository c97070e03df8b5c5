import CallLog
import Foundation
import TestSupport
import XCTest

/// gzip logs (the collector's compression where the platform has no zstd): written one member
/// per flush, read by every reader, with the same guarantees as zstd logs.
final class GzipLogTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("gziplog") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    func sample(_ call: String, _ snapshots: Int) -> [LogRecord] { LogFileTests.sampleRecords(call: call, snapshots: snapshots) }

    func testRoundTripIsStandardGzip() throws {
        let path = dir.appendingPathComponent("a.ndjson.gz").path
        let records = sample("call-1", 20)
        let w = try LogWriter(path: path)
        for (i, r) in records.enumerated() {
            try w.append(r)
            if i % 5 == 4 { try w.flush() }
        }
        try w.close()
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        XCTAssertEqual(Array(bytes.prefix(3)), [0x1F, 0x8B, 0x08], "a gzip member starts the file")
        let (read, issues) = LogReader(path: path).readAll()
        XCTAssertEqual(issues, [])
        LogFileTests.assertSameRecords(read, records)
        // The system's gzip reads the file (every member) and finds the same lines.
        let gunzip = try runProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", "gzip -dc < '\(path)'"])
        XCTAssertEqual(gunzip.status, 0, gunzip.err)
        let lines = gunzip.out.split(separator: "\n").filter { !$0.contains("\"kind\":\"agent\"") }
        XCTAssertEqual(lines.count, records.count)
    }

    /// Cut at every 5th byte: each cut yields exactly the records flushed before it, reports the
    /// cut, and never anything invalid or altered.
    func testTruncatedFileYieldsEveryFlushedRecord() throws {
        let path = dir.appendingPathComponent("t.ndjson.gz").path
        let records = sample("call-1", 30)
        let w = try LogWriter(path: path)
        var flushedAt: [Int] = []
        for r in records {
            try w.append(r)
            try w.flush()
            flushedAt.append(w.bytesWritten)
        }
        try w.close()
        let (whole, _) = LogReader(path: path).readAll()
        let full = try Data(contentsOf: URL(fileURLWithPath: path))
        let cutPath = dir.appendingPathComponent("cut.ndjson.gz").path
        for cut in stride(from: 0, to: full.count, by: 5) {
            try full.prefix(cut).write(to: URL(fileURLWithPath: cutPath))
            let (read, issues) = LogReader(path: cutPath).readAll()
            let expected = flushedAt.filter { $0 <= cut }.count
            // One record more than flushed is read in two cases, both with bytes as written: a
            // member's line is vouched for by its checkpoint line before the member's trailer
            // (CRC-32 and length, 8 bytes after the deflate end) is read; and before the first
            // checkpoint the file reads as one without checkpoints (older writers, the gzip tool),
            // whose complete lines are used.
            let trailerCut = expected < records.count && flushedAt[expected] - cut <= 10
            let beforeFirstCheckpoint = expected == 0
            XCTAssertTrue(
                read.count == expected || ((trailerCut || beforeFirstCheckpoint) && read.count == expected + 1),
                "cut at \(cut): \(read.count) read, \(expected) flushed")
            XCTAssertEqual(read, Array(whole.prefix(read.count)), "cut at \(cut)")
            if cut > 0 && expected < records.count && !flushedAt.contains(cut) {
                XCTAssertTrue(issues.contains { $0.category == .truncatedFile }, "cut at \(cut) not reported: \(issues)")
            }
            XCTAssertFalse(issues.contains { $0.category == .invalidRecord }, "cut at \(cut) produced a bad record")
        }
    }

    /// A bit flipped anywhere in the file never yields an altered record: damaged members are
    /// reported and skipped, the members after them read.
    func testFlippedBitsAlterNoRecord() throws {
        let path = dir.appendingPathComponent("f.ndjson.gz").path
        let w = try LogWriter(path: path)
        for s in 0..<4 {
            for r in sample("call-\(s)", 10) { try w.append(r) }
            try w.flush()
        }
        try w.close()
        let (original, _) = LogReader(path: path).readAll()
        let lines = Set(original.map(\.jsonLine))
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let damagedPath = dir.appendingPathComponent("d.ndjson.gz").path
        var damagedReads = 0
        for at in stride(from: 0, to: bytes.count, by: 11) {
            var copy = bytes
            copy[at] ^= 0x10
            try Data(copy).write(to: URL(fileURLWithPath: damagedPath))
            let (read, issues) = LogReader(path: damagedPath).readAll()
            for r in read { XCTAssertTrue(lines.contains(r.jsonLine), "bit at byte \(at) altered a record: \(r.jsonLine)") }
            if read.count < original.count {
                damagedReads += 1
                XCTAssertFalse(issues.isEmpty, "bit at byte \(at): records lost without a word")
            }
            // At most the damaged member's call is lost.
            XCTAssertGreaterThanOrEqual(Set(read.map(\.call)).count, 3, "bit at byte \(at)")
        }
        XCTAssertGreaterThan(damagedReads, 0)
    }

    /// Garbage between two members is skipped to the next member, whatever the read size.
    func testGarbageBetweenMembersIsSkipped() throws {
        func member(_ call: String) -> [UInt8] {
            GzipCompressor.compressMember(Array((sample(call, 20).map(\.jsonLine).joined(separator: "\n") + "\n").utf8))
        }
        let garbage = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7919) }
        let path = dir.appendingPathComponent("g.ndjson.gz").path
        try Data(member("x") + garbage + member("y")).write(to: URL(fileURLWithPath: path))
        for chunk in [1 << 20, 1000, 7] {
            var reader = LogReader(path: path)
            reader.lines.chunkBytes = chunk
            let (read, issues) = reader.readAll()
            XCTAssertEqual(Set(read.map(\.call)), ["x", "y"], "reads of \(chunk)")
            XCTAssertEqual(read.count, 46, "reads of \(chunk)")
            XCTAssertEqual(issues.filter { $0.category == .damagedFrame }.count, 1, "reads of \(chunk): \(issues)")
        }
    }

    /// A plain log compressed with the `gzip` tool (no checkpoints, one member) is read whole,
    /// whatever its name, and found in folders as `*.ndjson.gz`.
    func testGzipToolOutputIsRead() throws {
        let plain = dir.appendingPathComponent("p.ndjson").path
        let w = try LogWriter(path: plain)
        for r in sample("call-1", 12) { try w.append(r) }
        try w.close()
        let gz = try runProcess(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", "gzip -9 -c '\(plain)' > '\(dir.path)/tool.ndjson.gz' && cp '\(dir.path)/tool.ndjson.gz' '\(dir.path)/renamed.log'"])
        XCTAssertEqual(gz.status, 0, gz.err)
        for name in ["tool.ndjson.gz", "renamed.log"] {
            let (read, issues) = LogReader(path: dir.appendingPathComponent(name).path).readAll()
            XCTAssertEqual(issues, [], name)
            XCTAssertEqual(read.count, 15, name)
        }
        XCTAssertTrue(LogFiles.find([dir.path]).files.contains { $0.hasSuffix("tool.ndjson.gz") })
    }
}
