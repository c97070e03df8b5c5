import CallLog
import Foundation
import TestSupport
import XCTest

/// Writer and reader together, including every way a file can be damaged.
final class LogFileTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("calllog") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    func sampleRecords(call: String = "call-1", snapshots: Int = 20) -> [LogRecord] { Self.sampleRecords(call: call, snapshots: snapshots) }

    /// Records read back are the ones written: written stats gain a `seq`, nothing else changes.
    static func assertSameRecords(_ read: [LogRecord], _ written: [LogRecord], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(read.count, written.count, file: file, line: line)
        for (a, b) in zip(read, written) {
            var a = a
            a.body["seq"] = nil
            XCTAssertEqual(a, b, file: file, line: line)
        }
    }

    /// A small call: info, events, statistics whose counters grow, an end.
    static func sampleRecords(call: String = "call-1", snapshots: Int = 20) -> [LogRecord] {
        var out: [LogRecord] = [
            .callInfo(
                call: call, ts: 1_000, direction: "outgoing", sdk: "kandy-mobile", sdkVersion: "5.2",
                app: "demo", appVersion: "1.0", platform: "ios", network: "wifi", media: ["audio"]),
            .event(call: call, ts: 1_010, action: "callMetric", type: "callCreate"),
        ]
        for i in 0..<snapshots {
            let t = Double(2_000 + i * 1_000)
            let report: [JSONValue] = [
                [
                    "id": "IT01A1", "timestamp": .number(t), "type": "inbound-rtp", "kind": "audio", "ssrc": 1,
                    "packetsReceived": .number(Double(50 * i)), "packetsLost": .number(Double(i / 3)), "jitter": .number(0.002 + Double(i % 4) / 1000),
                ],
                ["id": "CF01", "timestamp": .number(t), "type": "certificate", "fingerprint": "AB:CD", "base64Certificate": "MIIB"],
            ]
            out.append(.stats(call: call, ts: Int64(t), format: .w3c, report: report))
        }
        out.append(.end(call: call, ts: 30_000, reason: "terminatedLocally", statusCode: 9901, durationMs: 29_000))
        return out
    }

    /// A summary counts skipped input in words people read: "1 invalid record", "2 invalid records".
    func testIssueCountsReadAsEnglish() {
        for c in LogIssue.Category.allCases {
            XCTAssertEqual(c.counted(1), "1 \(c.rawValue)")
            XCTAssertNotEqual(c.counted(2), "2 \(c.rawValue)", "\(c) has a plural")
        }
        XCTAssertEqual(LogIssue.Category.invalidRecord.counted(2), "2 invalid records")
        XCTAssertEqual(LogIssue.Category.lineTooLong.counted(3), "3 lines too long")
        XCTAssertEqual(LogIssue.Category.missingDeltaBase.counted(0), "0 deltas without base")
    }

    func testRoundTripCompressedAndPlain() throws {
        for name in ["a.ndjson.zst", "a.ndjson"] {
            let path = dir.appendingPathComponent(name).path
            let records = sampleRecords()
            let w = try LogWriter(path: path)
            for r in records { try w.append(r) }
            try w.close()
            let (read, issues) = LogReader(path: path).readAll()
            XCTAssertEqual(issues, [])
            Self.assertSameRecords(read, records)
        }
    }

    func testDeltasMakeTheFileSmaller() throws {
        var sizes: [Bool: Int] = [:]
        for delta in [true, false] {
            var o = LogWriter.Options()
            o.deltaStats = delta
            let path = dir.appendingPathComponent("d\(delta).ndjson").path
            let w = try LogWriter(path: path, options: o)
            for r in sampleRecords(snapshots: 100) { try w.append(r) }
            try w.close()
            sizes[delta] = w.bytesWritten
        }
        XCTAssertLessThan(sizes[true]!, sizes[false]! * 6 / 10)
    }

    /// Cut a compressed file at every 7th byte: each cut yields exactly the records flushed
    /// before it, reports the cut, and never anything invalid.
    func testTruncatedFileYieldsEveryFlushedRecord() throws {
        let path = dir.appendingPathComponent("t.ndjson.zst").path
        let records = sampleRecords(snapshots: 30)
        let w = try LogWriter(path: path)
        var flushedAt: [Int] = []  // file size after record i was flushed
        for r in records {
            try w.append(r)
            try w.flush()
            flushedAt.append(w.bytesWritten)
        }
        try w.close()
        let full = try Data(contentsOf: URL(fileURLWithPath: path))
        let cutPath = dir.appendingPathComponent("cut.ndjson.zst").path
        for cut in stride(from: 0, to: full.count, by: 7) {
            try full.prefix(cut).write(to: URL(fileURLWithPath: cutPath))
            let (read, issues) = LogReader(path: cutPath).readAll()
            let expected = flushedAt.filter { $0 <= cut }.count
            XCTAssertEqual(read.count, expected, "cut at \(cut)")
            if cut > 0 && expected < records.count {
                XCTAssertTrue(issues.contains { $0.category == .truncatedFile }, "cut at \(cut) not reported")
            }
            XCTAssertFalse(issues.contains { $0.category == .invalidRecord }, "cut at \(cut) produced a bad record")
        }
    }

    /// A caller that never flushes (the simulator, the importers) still gets flush points: after
    /// each `end` record, the call is readable from the file as it is, and after each
    /// `flushTextBytes` of text; segments end every `segmentBytes`. A caller's flush right after
    /// the writer's own writes nothing more.
    func testTheWriterFlushesOnItsOwnAtCallEndsAndEveryFlushTextBytes() throws {
        let path = dir.appendingPathComponent("own.ndjson.zst").path
        var o = LogWriter.Options()
        o.flushTextBytes = 8 << 10
        o.segmentBytes = 32 << 10
        let w = try LogWriter(path: path, options: o)
        let first = sampleRecords(call: "first", snapshots: 5)
        for r in first { try w.append(r) }
        let afterEnd = w.bytesWritten
        XCTAssertGreaterThan(afterEnd, 0, "the end record was flushed without a flush()")
        try w.flush()
        XCTAssertEqual(w.bytesWritten, afterEnd, "nothing appended since the writer's flush point: nothing written")
        // The file as it is while the writer is open: the finished call is there in full.
        let (read, _) = LogReader(path: path).readAll()
        Self.assertSameRecords(read, first)

        // A long call, never flushed: about 200 KiB of text in flush points of 8 KiB.
        let long = sampleRecords(call: "long", snapshots: 1_500).filter { $0.kind != .end }
        for r in long { try w.append(r) }
        let text = String(decoding: ZstdDecoder.decompressAll([UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))).output, as: UTF8.self)
        let lines = text.split(separator: "\n")
        let isCheckpoint = { (l: Substring) in l.contains(#""event":"checkpoint""#) }
        XCTAssertGreaterThan(w.textBytes, 150 << 10)
        // A checkpoint per 8 KiB (the segment ends' among them), give or take a line each.
        XCTAssertEqual(Double(lines.filter(isCheckpoint).count), Double(w.textBytes) / Double(8 << 10), accuracy: Double(w.textBytes) / Double(80 << 10))
        // The reader keeps exactly the records before the last checkpoint on disk.
        let vouched = lines[..<(lines.lastIndex(where: isCheckpoint) ?? 0)].filter { !isCheckpoint($0) }.count
        XCTAssertEqual(LogReader(path: path).readAll().records.count, vouched)
        XCTAssertGreaterThan(vouched, first.count + long.count - 100, "at most 8 KiB of records unflushed")
        try w.close()
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let frames = 1 + (1..<(bytes.count - 3)).filter { bytes[$0] == 0x28 && bytes[$0 + 1] == 0xB5 && bytes[$0 + 2] == 0x2F && bytes[$0 + 3] == 0xFD }.count
        XCTAssertEqual(Double(frames), Double(w.textBytes) / Double(32 << 10), accuracy: 1, "a frame per 32 KiB segment")
    }

    /// Damage inside one segment loses at most that segment; the others are read in full.
    func testCorruptSegmentIsSkippedAndTheRestRead() throws {
        let path = dir.appendingPathComponent("c.ndjson.zst").path
        let w = try LogWriter(path: path)
        var segmentEnds: [Int] = []
        for s in 0..<3 {
            for r in sampleRecords(call: "call-\(s)") { try w.append(r) }
            try w.endSegment()
            segmentEnds.append(w.bytesWritten)
        }
        try w.close()
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        // Overwrite bytes in the middle of the second segment.
        let mid = (segmentEnds[0] + segmentEnds[1]) / 2
        for i in mid..<(mid + 16) { bytes[i] ^= 0xA5 }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let (read, issues) = LogReader(path: path).readAll()
        let calls = Dictionary(grouping: read, by: \.call).mapValues(\.count)
        XCTAssertEqual(calls["call-0"], 23)
        XCTAssertEqual(calls["call-2"], 23)
        XCTAssertTrue(issues.contains { $0.category == .damagedFrame || $0.category == .invalidRecord }, "\(issues)")
        XCTAssertFalse(issues.contains { $0.file != path })
    }

    func testGarbageBetweenFramesIsSkipped() throws {
        let a = ZstdCompressor.compressFrame(Array((sampleRecords(call: "x").map(\.jsonLine).joined(separator: "\n") + "\n").utf8))
        let b = ZstdCompressor.compressFrame(Array((sampleRecords(call: "y").map(\.jsonLine).joined(separator: "\n") + "\n").utf8))
        let garbage = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7919) }
        let path = dir.appendingPathComponent("g.ndjson.zst").path
        try Data(a + garbage + b).write(to: URL(fileURLWithPath: path))
        let (read, issues) = LogReader(path: path).readAll()
        XCTAssertEqual(Set(read.map(\.call)), ["x", "y"])
        XCTAssertEqual(read.count, 46)
        XCTAssertEqual(issues.filter { $0.category == .damagedFrame }.count, 1, "\(issues)")
    }

    /// Input that is nothing but damaged frame starts (a magic number, a header descriptor with
    /// its reserved bit set, a window byte) is skipped start by start in one input without
    /// piling up work, and the frame after it is read whole.
    func testManyDamagedFrameStartsInOneInput() {
        let text = Self.frameTexts(1)[0]
        let file = Array([[UInt8]](repeating: [0x28, 0xB5, 0x2F, 0xFD, 0x08, 0x00], count: 20_000).joined()) + ZstdCompressor.compressFrame(text)
        for chunk in [file.count, 65_536] {
            let (decoder, output, damage) = Self.decode(file, inChunksOf: chunk)
            XCTAssertEqual(damage.count, 20_000, "chunks of \(chunk)")
            XCTAssertTrue(output == text, "chunks of \(chunk)")
            XCTAssertEqual(decoder.compressedOffset, file.count, "chunks of \(chunk)")
            XCTAssertFalse(decoder.insideFrame)
        }
    }

    /// A frame that asks for a window over 2 GiB is refused as damage (as `zstd -d --long=31`
    /// refuses it), and the next frame is read. Both hold one raw block, `{}` and a newline;
    /// only the window descriptor differs (2^32 bytes, then 2^20).
    func testAFrameWithAWindowTooLargeIsRefused() {
        let frame = { (window: UInt8) -> [UInt8] in [0x28, 0xB5, 0x2F, 0xFD, 0x00, window, 0x19, 0x00, 0x00, 0x7B, 0x7D, 0x0A] }
        let file = frame(22 << 3) + frame(10 << 3)
        for chunk in [file.count, 5, 1] {
            let (decoder, output, damage) = Self.decode(file, inChunksOf: chunk)
            XCTAssertEqual(damage.count, 1, "chunks of \(chunk): \(damage)")
            XCTAssertTrue(damage.first?.message.contains("memory") == true, "chunks of \(chunk): \(damage)")
            // Found at the window descriptor (byte 5); the next frame starts 7 bytes on.
            XCTAssertEqual(damage.first?.offset, 5, "chunks of \(chunk)")
            if chunk == file.count { XCTAssertEqual(damage.first?.skipped, 7) }
            XCTAssertEqual(String(decoding: output, as: UTF8.self), "{}\n", "chunks of \(chunk)")
            XCTAssertFalse(decoder.insideFrame)
        }
    }

    /// Content decides, not the name: a rotated zstd log is decoded, a plain log named `.zst`
    /// is still read as zstd (its damage reported), a gzip log is decoded, an xz one refused by name.
    func testFileContentIsToldByItsFirstBytes() throws {
        let text = Array((sampleRecords(call: "x").map(\.jsonLine).joined(separator: "\n") + "\n").utf8)
        let rotated = dir.appendingPathComponent("calls.ndjson.1").path
        try Data(ZstdCompressor.compressFrame(text)).write(to: URL(fileURLWithPath: rotated))
        let (read, issues) = LogReader(path: rotated).readAll()
        XCTAssertEqual(read.count, 23)
        XCTAssertEqual(issues, [])

        // A gzip log is decoded whatever its name; xz is refused by name.
        let gzip = dir.appendingPathComponent("calls.log").path
        try Data(GzipCompressor.compressMember(text)).write(to: URL(fileURLWithPath: gzip))
        XCTAssertEqual(LogReader(path: gzip).readAll().records.count, 23)
        let xz = dir.appendingPathComponent("calls.ndjson.xz").path
        try Data([0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00] + text).write(to: URL(fileURLWithPath: xz))
        let refused = LogReader(path: xz).readAll()
        XCTAssertEqual(refused.records.count, 0)
        XCTAssertEqual(refused.issues.map(\.category), [.unreadableFile])
        XCTAssertTrue(refused.issues[0].description.contains("compressed with xz"), refused.issues[0].description)

        XCTAssertEqual(LogLineReader.content(firstBytes: Array(text.prefix(6)), path: "a.ndjson.zst"), .zstd)
        XCTAssertEqual(LogLineReader.content(firstBytes: Array(text.prefix(6)), path: "a.ndjson"), .plain)
        XCTAssertEqual(LogLineReader.content(firstBytes: [0x52, 0x2A, 0x4D, 0x18, 0, 0], path: "a"), .zstd)  // skippable frame
        XCTAssertEqual(LogLineReader.content(firstBytes: [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00], path: "a.ndjson"), .otherCompression("xz"))
        XCTAssertEqual(LogLineReader.content(firstBytes: Array("BZh91".utf8), path: "a.ndjson"), .otherCompression("bzip2"))
        XCTAssertEqual(LogLineReader.content(firstBytes: [], path: "empty.ndjson"), .plain)
        XCTAssertEqual(LogLineReader.content(firstBytes: [], path: "empty.ndjson.gz"), .gzip)
    }

    /// `count` frames' texts of NDJSON-like lines, each several of the decoder's output buffers
    /// long (so that zstd also consumes input while the decoder empties a full buffer), and
    /// each line naming its frame (`{"frame":2,"n":0,` starts the third).
    static func frameTexts(_ count: Int) -> [[UInt8]] {
        (0..<count).map { f in
            Array((0..<12_000).map { #"{"frame":\#(f),"n":\#($0),"h":"\#(($0 &* 2_654_435_761) % 1_000_003)"}"# + "\n" }.joined().utf8)
        }
    }

    /// `file` through one decoder, fed `chunk` bytes at a time.
    static func decode(_ file: [UInt8], inChunksOf chunk: Int) -> (ZstdDecoder, output: [UInt8], damage: [ZstdDecoder.Damage]) {
        let decoder = ZstdDecoder()
        var output: [UInt8] = []
        var damage: [ZstdDecoder.Damage] = []
        var at = 0
        while at < file.count {
            let end = min(at + chunk, file.count)
            file[at..<end].withUnsafeBytes { decoder.decompress($0, emit: { output.append(contentsOf: $0) }, damaged: { damage.append($0) }) }
            at = end
        }
        return (decoder, output, damage)
    }

    /// Damage is reported at a byte of the frame it is in, however the file is fed: whole, or
    /// in chunks that end inside frames. Frames 2 and 4 of four end with a wrong checksum (their
    /// content is intact).
    func testDamageIsReportedWithinItsFrame() {
        let contents = Self.frameTexts(4)
        var frames = contents.map { ZstdCompressor.compressFrame($0) }
        for f in [1, 3] { frames[f][frames[f].count - 1] ^= 0x01 }  // the checksum's last byte
        let file = frames.flatMap { $0 }
        var starts: [Int] = []
        var offset = 0
        for f in frames { starts.append(offset); offset += f.count }
        for chunk in [file.count, 65_536, 1_000, 7] {
            let (decoder, output, damage) = Self.decode(file, inChunksOf: chunk)
            XCTAssertEqual(damage.count, 2, "chunks of \(chunk): \(damage)")
            for (d, f) in zip(damage, [1, 3]) {
                XCTAssertTrue(
                    (starts[f]...(starts[f] + frames[f].count)).contains(d.offset),
                    "chunks of \(chunk): damage at \(d.offset), frame \(f + 1) is \(starts[f])..<\(starts[f] + frames[f].count)")
            }
            XCTAssertEqual(decoder.compressedOffset, file.count, "chunks of \(chunk)")
            if chunk == file.count {
                // The third frame follows the second's checksum; nothing follows the fourth's.
                XCTAssertEqual(damage.first?.skipped, 4)
                XCTAssertNil(damage.last?.skipped)
            }
            // The intact frames whole; of a damaged one, what zstd emitted before its checksum
            // (its last block may be held back), and nothing else.
            let third = Array(#"{"frame":2,"n":0,"#.utf8)
            guard let split = Data(output).range(of: Data(third))?.lowerBound else {
                return XCTFail("chunks of \(chunk): the third frame is missing")
            }
            guard output.starts(with: contents[0]), output[split...].starts(with: contents[2]) else {
                return XCTFail("chunks of \(chunk): an intact frame did not come out whole")
            }
            XCTAssertTrue(contents[1].starts(with: output[contents[0].count..<split]), "chunks of \(chunk)")
            XCTAssertTrue(contents[3].starts(with: output[(split + contents[2].count)...]), "chunks of \(chunk)")
            XCTAssertTrue(damage.allSatisfy { $0.message.contains("checksum") }, "chunks of \(chunk): \(damage)")
        }
    }

    /// Bytes changed inside a frame's blocks, wherever zstd notices (while it still has output
    /// to hand over, or reading the next block), in the middle frame or the last: one damage, in
    /// that frame, and the frames before and after it whole, however the file is fed.
    func testDamageInsideAFrameIsReportedOnceWithinIt() {
        let contents = Self.frameTexts(3)
        let clean = contents.map { ZstdCompressor.compressFrame($0) }
        for damaged in [1, 2] {
            for place in stride(from: 0.2, through: 0.9, by: 0.1) {
                var frames = clean
                let at = Int(Double(frames[damaged].count) * place)
                for i in at..<(at + 16) { frames[damaged][i] ^= 0xA5 }
                let file = frames.flatMap { $0 }
                let start = clean[..<damaged].reduce(0) { $0 + $1.count }
                let frame = start..<(start + clean[damaged].count)
                for chunk in [file.count, 131_075, 4_096, 7] {
                    let (decoder, output, damage) = Self.decode(file, inChunksOf: chunk)
                    let what = "bytes changed at \(at) of frame \(damaged + 1), chunks of \(chunk)"
                    XCTAssertEqual(damage.count, 1, "\(what): \(damage)")
                    XCTAssertTrue(damage.allSatisfy { frame.contains($0.offset) }, "\(what): \(damage), the frame is \(frame)")
                    XCTAssertFalse(decoder.insideFrame, "\(what): a damaged frame is not a cut one")
                    XCTAssertTrue(output.starts(with: contents[0]), what)
                    if damaged == 1 {
                        XCTAssertTrue(output.count >= contents[2].count && output.suffix(contents[2].count).elementsEqual(contents[2]), what)
                    }
                }
            }
        }
    }

    func testMalformedLinesAreReportedWithLineNumbersAndSkipped() throws {
        let good = sampleRecords(snapshots: 3).map(\.jsonLine)
        var lines = good
        lines.insert("this is not json", at: 2)
        lines.insert(#"{"kind":"stats","ts":5}"#, at: 4)
        lines.insert("", at: 5)
        let path = dir.appendingPathComponent("m.ndjson").path
        try (lines.joined(separator: "\n") + "\n{\"kind\":\"event\",\"call\"").write(toFile: path, atomically: true, encoding: .utf8)
        let (read, issues) = LogReader(path: path).readAll()
        XCTAssertEqual(read.count, good.count)
        // The blank line 6 is no record and no problem: passed over (FORMAT.md, "Files").
        XCTAssertEqual(issues.map(\.line), [3, 5, 10])
        XCTAssertEqual(issues.map(\.category), [.invalidRecord, .invalidRecord, .partialLine])
        XCTAssertTrue(issues[1].description.hasPrefix("\(path):5: invalid record: missing field \"call\""), issues[1].description)
    }

    func testOverlongLineIsSkipped() throws {
        let path = dir.appendingPathComponent("l.ndjson").path
        let huge = #"{"kind":"event","call":"c","ts":1,"pad":""# + String(repeating: "x", count: 3_000_000) + "\"}"
        let lines = [sampleRecords()[0].jsonLine, huge, sampleRecords()[1].jsonLine]
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        var reader = LogReader(path: path)
        reader.lines.maximumLineBytes = 1 << 20
        reader.lines.chunkBytes = 1 << 16
        let (read, issues) = reader.readAll()
        XCTAssertEqual(read.count, 2)
        XCTAssertEqual(issues.map(\.category), [.lineTooLong])
        XCTAssertEqual(issues.first?.line, 2)
    }

    func testDeltaWithoutItsBaseIsReportedAndTheChainRecovers() throws {
        let path = dir.appendingPathComponent("b.ndjson").path
        let w = try LogWriter(path: path)
        for r in sampleRecords(snapshots: 6) { try w.append(r) }
        try w.endSegment()  // the next segment starts with a full snapshot again
        for r in sampleRecords(snapshots: 6).dropFirst(2).dropLast() { try w.append(r) }
        try w.close()
        var lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        lines.remove(at: 3)  // the second snapshot: the deltas after it have no base
        lines.removeAll { $0.contains(#""event":"checkpoint""#) }  // a file edited by hand: no checkpoints
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let (read, issues) = LogReader(path: path).readAll()
        XCTAssertEqual(issues.map(\.category), Array(repeating: .missingDeltaBase, count: 4))
        XCTAssertEqual(read.filter { $0.kind == .stats }.count, 1 + 6)
    }

    func testFindsLogFilesInFolders() throws {
        let sub = dir.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        for n in ["a.ndjson.zst", "b.ndjson", "sub/c.ndjson.zst", "notes.txt", "sub/.hidden.ndjson"] {
            XCTAssertTrue(FileManager.default.createFile(atPath: dir.appendingPathComponent(n).path, contents: Data()))
        }
        let empty = dir.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        // Given first, the empty folder is searched (and reported) before the folder holding it.
        let found = LogFiles.find([empty.path, dir.path, dir.appendingPathComponent("nope").path])
        XCTAssertEqual(found.files.map { URL(fileURLWithPath: $0).lastPathComponent }, ["a.ndjson.zst", "b.ndjson", "c.ndjson.zst"])
        XCTAssertEqual(found.missing, [dir.appendingPathComponent("nope").path])
        XCTAssertEqual(found.foldersWithoutLogs, [empty.path])
    }

    /// Logs linked into a folder are read; a link back up the tree is searched once; a link to
    /// a log that is gone is reported as missing.
    func testFollowsSymbolicLinksInFolders() throws {
        let fm = FileManager.default
        let store = dir.appendingPathComponent("store"), linked = dir.appendingPathComponent("linked")
        try fm.createDirectory(at: store.appendingPathComponent("deep"), withIntermediateDirectories: true)
        try fm.createDirectory(at: linked, withIntermediateDirectories: true)
        for n in ["store/a.ndjson.zst", "store/deep/b.ndjson"] {
            XCTAssertTrue(fm.createFile(atPath: dir.appendingPathComponent(n).path, contents: Data()))
        }
        try fm.createSymbolicLink(
            atPath: linked.appendingPathComponent("a.ndjson.zst").path,
            withDestinationPath: store.appendingPathComponent("a.ndjson.zst").path)
        try fm.createSymbolicLink(
            atPath: linked.appendingPathComponent("deep").path,
            withDestinationPath: store.appendingPathComponent("deep").path)
        try fm.createSymbolicLink(atPath: linked.appendingPathComponent("up").path, withDestinationPath: "..")
        try fm.createSymbolicLink(
            atPath: linked.appendingPathComponent("gone.ndjson").path,
            withDestinationPath: store.appendingPathComponent("gone.ndjson").path)
        let found = LogFiles.find([linked.path])
        let relative = found.files.map { String($0.dropFirst(dir.path.count + 1)) }
        // `deep` is searched as linked/deep (first in name order), not again as up/store/deep;
        // through `up`, the tree above is searched, but `linked` is not entered again.
        XCTAssertEqual(relative, ["linked/a.ndjson.zst", "linked/deep/b.ndjson", "linked/up/store/a.ndjson.zst"])
        XCTAssertEqual(found.missing, [linked.appendingPathComponent("gone.ndjson").path])
        XCTAssertEqual(found.foldersWithoutLogs, [])

        // A folder given after one that holds it was searched with it: not listed again, and
        // not reported as holding no logs.
        let nested = LogFiles.find([store.path, store.appendingPathComponent("deep").path])
        XCTAssertEqual(nested.files.map { String($0.dropFirst(dir.path.count + 1)) }, ["store/a.ndjson.zst", "store/deep/b.ndjson"])
        XCTAssertEqual(nested.foldersWithoutLogs, [])
    }
}
