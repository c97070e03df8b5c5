import CallLog
import Foundation
import Jobs
import Simulator
import SQLiteDatabase
import Store
import TestSupport
import XCTest

/// The analyser against a corpus of bad input, one case per row.
///
/// Every row puts bad input next to (or into) the good records of a simulated log and checks:
/// the problem is reported with its file and line; every valid record is kept; and the good
/// calls' results are exactly those of the good records alone (same calls, same MOS, streams,
/// findings, events). Records whose *values* are absurd (negative counters, 1e308, an hour of
/// jitter) are valid records: they are kept, the absurd values are not measurements and are
/// left out, and nothing else changes.
final class BadInputTests: XCTestCase {
    /// The good corpus and its analysis, made once for all rows.
    struct Good {
        var dir: URL
        /// The simulated log as written (zstd, deltas).
        var compressed: URL
        /// The same text uncompressed, lines unchanged (deltas included).
        var lines: [String]
        /// Every record as full snapshots (deltas restored), in file order.
        var fullRecords: [LogRecord]
        var callIDs: Set<String>
        var dump: String
        var dumpOfGoodCalls: String
    }

    nonisolated(unsafe) static var good: Good!
    var dir: URL!

    override class func setUp() {
        super.setUp()
        let dir = TestPaths.temporaryDirectory("faults-bad-good")
        do {
            let logs = try Corpus.simulate(into: dir.appendingPathComponent("logs"), calls: 12, files: 1, seed: 23)
            let file = Corpus.files(in: logs)[0]
            let text = ZstdDecoder.decompressAll([UInt8](try Data(contentsOf: URL(fileURLWithPath: file))))
            // The records' lines, as a file edited by hand or written by another tool would hold
            // them: without the writer's checkpoints (an edited file fails them).
            let lines = String(decoding: text.output, as: UTF8.self).split(separator: "\n").map(String.init)
                .filter { !$0.contains(#""event":"checkpoint""#) }
            let (records, issues) = LogReader(path: file).readAll()
            precondition(issues.isEmpty, "the good corpus is good: \(issues)")
            let db = dir.appendingPathComponent("good.sqlite").path
            try analyzeInProcess([logs.path], db: db)
            let ids = Set(try SQLiteStore(path: db, forWriting: false).db.rows("SELECT call_id FROM calls").compactMap { $0[0].string })
            good = Good(
                dir: dir, compressed: URL(fileURLWithPath: file), lines: lines, fullRecords: records, callIDs: ids,
                dump: try dumpDatabase(db), dumpOfGoodCalls: try dumpDatabase(db, calls: ids))
        } catch {
            fatalError("good corpus: \(error)")
        }
    }

    override class func tearDown() {
        try? FileManager.default.removeItem(at: good.dir)
        super.tearDown()
    }

    override func setUp() { dir = TestPaths.temporaryDirectory("faults-bad") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    // MARK: - The table

    /// What the results must be after a row's input is analysed.
    enum Expect {
        /// Exactly the good corpus's database (the bad input added nothing and removed nothing).
        case same
        /// The good calls exactly as in the good database; other calls (made by the bad
        /// input's own valid records) exist and hold only sane values.
        case sameGoodCalls(extra: Set<String>)
        /// Exactly what the reference reader (`LogReader`) recovers from the same files: the
        /// fast analysis path keeps every record the reference keeps, no more, no less.
        case recovered
    }

    struct Row {
        var name: String
        /// Files of the case: name → bytes.
        var files: [(String, [UInt8])]
        /// Issues that must be reported: (file name, line, category). Nothing else may be.
        var issues: [(file: String, line: Int?, category: LogIssue.Category)]
        var expect: Expect
        /// Categories also allowed (damage whose exact effect depends on the bytes hit).
        var alsoAllowed: Set<LogIssue.Category> = []
    }

    /// The plain good text with `bad` lines inserted before line `at` (1-based): the first bad
    /// line is then line `at`.
    static func withLines(_ bad: [String], at: Int = 5) -> [UInt8] {
        var lines = good.lines
        lines.insert(contentsOf: bad, at: at - 1)
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    static func text(_ records: [LogRecord]) -> [UInt8] {
        Array(records.map { $0.jsonLine + "\n" }.joined().utf8)
    }

    static var someGoodCall: String { good.fullRecords.first { $0.kind == .stats }!.call }
    static let ts = "1795300000000"

    /// Lines that are not records (or not valid ones): each is reported and skipped.
    static var lineRows: [Row] {
        let c = someGoodCall
        let report = #"[{"id":"IT9","timestamp":1,"type":"inbound-rtp","kind":"audio","ssrc":9,"packetsReceived":10,"packetsLost":1,"jitter":0.01}]"#
        let cases: [(String, String)] = [
            ("not JSON", "this is not json"),
            ("binary garbage", String(decoding: (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) }.filter { $0 != 0x0A }, as: UTF8.self)),
            ("JSON array", "[1,2,3]"),
            ("JSON string", #""call""#),
            ("empty object", "{}"),
            ("kind null", #"{"v":1,"kind":null,"call":"x","ts":\#(ts)}"#),
            ("call is a number", #"{"v":1,"kind":"event","call":42,"ts":\#(ts),"action":"a","type":"b"}"#),
            ("call empty", #"{"v":1,"kind":"event","call":"","ts":\#(ts),"action":"a","type":"b"}"#),
            ("ts is text", #"{"v":1,"kind":"event","call":"\#(c)","ts":"soon","action":"a","type":"b"}"#),
            ("ts is an object", #"{"v":1,"kind":"end","call":"\#(c)","ts":{"ms":1},"reason":"failed"}"#),
            ("missing call (event)", #"{"v":1,"kind":"event","ts":\#(ts),"action":"a","type":"b"}"#),
            ("missing ts (event)", #"{"v":1,"kind":"event","call":"\#(c)","action":"a","type":"b"}"#),
            ("missing call (stats)", #"{"v":1,"kind":"stats","ts":\#(ts),"format":"w3c","report":\#(report)}"#),
            ("missing ts (stats)", #"{"v":1,"kind":"stats","call":"\#(c)","format":"w3c","pc":"bad","report":\#(report)}"#),
            ("ts NaN as string (stats)", #"{"v":1,"kind":"stats","call":"\#(c)","ts":"NaN","format":"w3c","pc":"bad","report":\#(report)}"#),
            ("ts 1e308 (stats)", #"{"v":1,"kind":"stats","call":"\#(c)","ts":1e308,"format":"w3c","pc":"bad","report":\#(report)}"#),
            ("ts -1e308 as string (stats)", #"{"v":1,"kind":"stats","call":"\#(c)","ts":"-1e308","format":"w3c","pc":"bad","report":\#(report)}"#),
            ("ts 1e308 (event)", #"{"v":1,"kind":"event","call":"\#(c)","ts":1e308,"action":"a","type":"b"}"#),
            ("ts beyond Int64 as string (event)", #"{"v":1,"kind":"event","call":"\#(c)","ts":"9223372036854775807","action":"a","type":"b"}"#),
            ("seq 1e300 (stats)", #"{"v":1,"kind":"stats","call":"\#(c)","ts":\#(ts),"format":"w3c","pc":"bad","seq":1e300,"report":\#(report)}"#),
            ("report not an array", #"{"v":1,"kind":"stats","call":"\#(c)","ts":\#(ts),"format":"w3c","pc":"bad","report":{"a":1}}"#),
            ("report objects not objects", #"{"v":1,"kind":"stats","call":"\#(c)","ts":\#(ts),"format":"w3c","pc":"bad","report":[1,"x",null]}"#),
            ("newer major version", #"{"v":2,"kind":"event","call":"\#(c)","ts":\#(ts),"action":"a","type":"b"}"#),
            (
                "deeply nested event",
                #"{"v":1,"kind":"event","call":"\#(c)","ts":\#(ts),"detail":"# + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
                    + "}"
            ),
            (
                "deeply nested stats",
                #"{"v":1,"kind":"stats","call":"\#(c)","ts":\#(ts),"format":"w3c","pc":"bad","report":[{"id":"X","type":"inbound-rtp","x":"#
                    + String(repeating: "{\"a\":", count: 50_000) + "1" + String(repeating: "}", count: 50_000) + "}]}"
            ),
            ("unterminated string", #"{"v":1,"kind":"event","call":"\#(c)","ts":\#(ts),"action":"a"#),
            (
                "truncated stats",
                #"{"v":1,"kind":"stats","call":"\#(c)","ts":\#(ts),"format":"w3c","pc":"bad","report":[{"id":"IT9","type":"inbound-rtp","packetsRec"#
            ),
        ]
        let deltaCases: [(String, String)] = [
            // A base that is not a number is no base: the delta cannot apply.
            (
                "base NaN as string (delta)",
                #"{"v":1,"kind":"stats","call":"\#(c)","ts":\#(ts),"format":"w3c","pc":"bad","seq":1,"base":"NaN","delta":{"t":1}}"#
            ),
            (
                "delta of a chain never started",
                #"{"v":1,"kind":"stats","call":"\#(c)","ts":\#(ts),"format":"w3c","pc":"bad","seq":8,"base":7,"delta":{"t":1}}"#
            ),
        ]
        return cases.map { name, line in
            Row(name: name, files: [("case.ndjson", withLines([line]))], issues: [("case.ndjson", 5, .invalidRecord)], expect: .same)
        }
            + deltaCases.map { name, line in
                Row(name: name, files: [("case.ndjson", withLines([line]))], issues: [("case.ndjson", 5, .missingDeltaBase)], expect: .same)
            }
    }

    /// A complete call of three 10-second snapshots whose inbound audio carries `fields`.
    static func call(
        _ id: String, start: Int64 = 1_795_300_000_000, inbound fields: JSONObject, tsJumps: [Int64] = [0, 0, 0],
        end: JSONObject = [:], quality: Double? = nil
    ) -> [LogRecord] {
        var records: [LogRecord] = [
            .callInfo(
                call: id, ts: start, direction: "outgoing", sdk: "test", sdkVersion: "1", app: "test", appVersion: "1",
                platform: "linux", network: "wifi", media: ["audio", "video"])
        ]
        for i in 0..<3 {
            let t = start + 1_000 + Int64(i) * 10_000 + tsJumps[i]
            var inbound: JSONObject = [
                "id": "IT1", "timestamp": .number(Double(t)), "type": "inbound-rtp", "kind": "audio",
                "ssrc": 7, "codecId": "C1", "packetsReceived": .number(Double(500 * (i + 1))),
                "packetsLost": .number(Double(i)), "jitter": 0.01,
                "concealedSamples": 0, "totalSamplesReceived": .number(Double(480_000 * (i + 1))),
            ]
            for (k, v) in fields.entries { inbound[k] = i == 0 ? inbound[k] ?? v : v }
            let video: JSONObject = [
                "id": "IT2", "timestamp": .number(Double(t)), "type": "inbound-rtp", "kind": "video", "ssrc": 8,
                "framesDecoded": .number(Double(300 * (i + 1))), "frameWidth": 1280, "frameHeight": 720,
                "freezeCount": 0, "totalFreezesDuration": 0,
            ]
            let codec: JSONObject = ["id": "C1", "timestamp": .number(Double(t)), "type": "codec", "mimeType": "audio/opus", "clockRate": 48000]
            records.append(.stats(call: id, ts: t, format: .w3c, report: [.object(inbound), .object(video), .object(codec)]))
        }
        if let quality { records.append(.quality(call: id, ts: start + 25_000, score: quality, source: "test")) }
        var e = LogRecord.end(call: id, ts: start + 30_000, reason: "terminatedLocally", durationMs: 29_000)
        for (k, v) in end.entries { e[k] = v }
        records.append(e)
        return records
    }

    /// Valid records with absurd values: kept, the absurd values not taken as measurements.
    static var absurdRows: [Row] {
        let cases: [(String, [LogRecord])] = [
            ("negative counters", call("absurd-negative", inbound: ["packetsReceived": -100, "packetsLost": -5, "totalSamplesReceived": -1, "jitter": -0.5])),
            ("NaN as strings", call("absurd-nan", inbound: ["packetsLost": "NaN", "jitter": "NaN", "packetsReceived": "Infinity", "ssrc": "NaN"])),
            (
                "1e308 everywhere",
                call(
                    "absurd-huge",
                    inbound: [
                        "packetsReceived": 1e308, "packetsLost": 1e308, "bytesReceived": 1e308, "jitter": 1e308,
                        "ssrc": 1e308, "concealedSamples": 1e308, "jitterBufferDelay": 1e308,
                    ],
                    end: ["statusCode": 1e308, "sipStatus": -1e308, "durationMs": 1e308], quality: 1e308)
            ),
            (
                "-1e308 everywhere",
                call(
                    "absurd-tiny", inbound: ["packetsReceived": -1e308, "packetsLost": -1e308, "jitter": -1e308, "ssrc": -1e308],
                    end: ["statusCode": -1e308, "sipStatus": 1e308], quality: -1e308)
            ),
            ("jitter of an hour", call("absurd-jitter", inbound: ["jitter": 3600])),
            ("clock rate and frame size 1e308", call("absurd-codec", inbound: ["clockRate": 1e308, "frameWidth": 1e308, "framesDecoded": 1e308])),
            ("clock jumps back an hour", call("clock-back", inbound: [:], tsJumps: [0, -3_600_000, 0])),
            ("clock jumps a century ahead", call("clock-ahead", inbound: [:], tsJumps: [0, 3_155_760_000_000, 0])),
            ("clock near the limit", call("clock-limit", start: 999_999_999_000_000, inbound: [:], tsJumps: [0, 0, 0])),
            ("clock before 1970", call("clock-negative", start: -999_999_999_000_000, inbound: [:], tsJumps: [0, 0, 0])),
        ]
        return cases.map { name, records in
            Row(
                name: name, files: [("case.ndjson", Array((good.lines.joined(separator: "\n") + "\n").utf8) + text(records))],
                issues: [], expect: .sameGoodCalls(extra: [records[0].call]))
        }
    }

    /// Duplication, order and splitting: the same records, arranged differently, give the same database.
    static var arrangementRows: [Row] {
        var rng = SplitMix64(seed: 99)
        let full = good.fullRecords
        let compressed = [UInt8](try! Data(contentsOf: good.compressed))
        var shuffled = full
        shuffled.shuffle(using: &rng)
        var split: [(String, [UInt8])] = []
        for i in 0..<10 {
            split.append(("part-\(i).ndjson", text(full.enumerated().filter { $0.offset % 10 == i }.map(\.element))))
        }
        var splitShuffled: [(String, [UInt8])] = []
        for i in 0..<7 {
            splitShuffled.append(("mixed-\(i).ndjson", text(shuffled.enumerated().filter { $0.offset % 7 == i }.map(\.element))))
        }
        return [
            Row(
                name: "every line twice (deltas too)", files: [("twice.ndjson", Array(good.lines.flatMap { [$0, $0] }.joined(separator: "\n").utf8) + [0x0A])],
                issues: [], expect: .same),
            Row(name: "every record twice, full snapshots", files: [("twice.ndjson", text(full.flatMap { [$0, $0] }))], issues: [], expect: .same),
            Row(
                name: "duplicated files (renamed copy and a plain copy)",
                files: [
                    ("a.ndjson.zst", compressed), ("b-copy.ndjson.zst", compressed),
                    ("c-plain.ndjson", Array((good.lines.joined(separator: "\n") + "\n").utf8)),
                ],
                issues: [], expect: .same),
            Row(name: "records out of order", files: [("shuffled.ndjson", text(shuffled))], issues: [], expect: .same),
            Row(name: "calls split over ten files", files: split, issues: [], expect: .same),
            Row(name: "calls split over files, out of order", files: splitShuffled, issues: [], expect: .same),
        ]
    }

    /// Damage to compressed files: reported, and every record the reference reader recovers is kept.
    static var frameRows: [Row] {
        let compressed = [UInt8](try! Data(contentsOf: good.compressed))
        // The good records again, in many small frames (segments), as a long-running agent writes them.
        let segmented = segmentedFile(good.fullRecords)
        var flipped = segmented
        for at in [segmented.count / 3, segmented.count / 2, 2 * segmented.count / 3] { flipped[at] ^= 0x10 }
        var rng = SplitMix64(seed: 7)
        let garbage = (0..<20_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let half = segmented.count / 2
        let boundary = ZstdFrames.boundaries(segmented).first { $0 >= half } ?? half
        return [
            Row(
                name: "truncated zstd file", files: [("cut.ndjson.zst", Array(compressed.prefix(compressed.count * 3 / 5)))],
                issues: [("cut.ndjson.zst", nil, .truncatedFile)], expect: .recovered, alsoAllowed: [.partialLine]),
            Row(
                name: "bit flips inside frames", files: [("flipped.ndjson.zst", flipped)],
                // Altered lines never reach the analysis: zstd or a checkpoint stops them first.
                issues: [("flipped.ndjson.zst", nil, .damagedFrame)], expect: .recovered, alsoAllowed: [.failedCheckpoint, .missingDeltaBase]),
            Row(
                name: "a frame of garbage between frames",
                files: [("garbage.ndjson.zst", Array(segmented[..<boundary]) + [0x28, 0xB5, 0x2F, 0xFD] + garbage + Array(segmented[boundary...]))],
                issues: [("garbage.ndjson.zst", nil, .damagedFrame)], expect: .recovered, alsoAllowed: [.invalidRecord]),
            Row(
                name: "a file of garbage beside the good one", files: [("good.ndjson.zst", compressed), ("junk.ndjson.zst", garbage)],
                issues: [("junk.ndjson.zst", nil, .damagedFrame)], expect: .same),
            Row(
                name: "plain file cut mid-line", files: [("cut.ndjson", Array((good.lines.joined(separator: "\n")).utf8.dropLast(40)))],
                issues: [("cut.ndjson", good.lines.count, .partialLine)], expect: .recovered),
        ]
    }

    static func segmentedFile(_ records: [LogRecord]) -> [UInt8] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("seg-\(UUID().uuidString).ndjson.zst").path
        defer { unlink(path) }
        var o = LogWriter.Options()
        o.segmentBytes = 16 << 10
        let w = try! LogWriter(path: path, options: o)
        for r in records { try! w.append(r) }
        try! w.close()
        return [UInt8](try! Data(contentsOf: URL(fileURLWithPath: path)))
    }

    // MARK: - Running a row

    func check(_ row: Row) throws {
        let caseDir = dir.appendingPathComponent(String(row.name.map { $0.isLetter || $0.isNumber ? $0 : "_" }))
        try FileManager.default.createDirectory(at: caseDir, withIntermediateDirectories: true)
        for (name, bytes) in row.files { try Data(bytes).write(to: caseDir.appendingPathComponent(name)) }
        let db = caseDir.path + ".sqlite"
        var o = AnalyzeRun.Options(paths: [caseDir.path], database: db)
        o.callsPerTransaction = 5
        let run = AnalyzeRun(options: o)
        let collected = IssueLog()
        run.onIssue = { collected.add($0) }
        let report = try run.run()
        let issues = collected.all

        // Reported where it is: the named file, the named line, in the message a user reads.
        for want in row.issues {
            let path = caseDir.appendingPathComponent(want.file).path
            let found = issues.first { $0.file == path && $0.category == want.category && (want.line == nil || $0.line == want.line) }
            XCTAssertNotNil(
                found, "\(row.name): expected \(want.file):\(want.line.map(String.init) ?? "?"): \(want.category.rawValue); got \(issues.map(\.description))")
            if let found, let line = found.line {
                XCTAssertTrue(found.description.hasPrefix("\(path):\(line): \(want.category.rawValue): "), found.description)
            }
        }
        let allowed = Set(row.issues.map(\.category)).union(row.alsoAllowed)
        for issue in issues where !allowed.contains(issue.category) {
            XCTFail("\(row.name): unexpected issue \(issue)")
        }
        XCTAssertTrue(issues.allSatisfy { $0.line != nil }, "\(row.name): every issue names its line: \(issues)")
        XCTAssertEqual(report.skippedAnything, !row.issues.isEmpty, row.name)

        switch row.expect {
        case .same:
            assertSameResults(try dumpDatabase(db), Self.good.dump, row.name)
        case .sameGoodCalls(let extra):
            assertSameResults(try dumpDatabase(db, calls: Self.good.callIDs), Self.good.dumpOfGoodCalls, row.name)
            let store = try SQLiteStore(path: db, forWriting: false)
            let ids = Set(try store.db.rows("SELECT call_id FROM calls").compactMap { $0[0].string })
            XCTAssertEqual(ids.subtracting(Self.good.callIDs), extra, "\(row.name): the bad input's own valid call is kept")
            try assertSaneValues(store, row.name)
        case .recovered:
            // The reference: what LogReader keeps from the same files, as full snapshots in one plain file.
            var kept: [LogRecord] = []
            for f in Corpus.files(in: caseDir) { kept += LogReader(path: f).readAll().records }
            XCTAssertFalse(kept.isEmpty, "\(row.name): the damage left valid records")
            let refDir = dir.appendingPathComponent("ref-" + caseDir.lastPathComponent)
            try FileManager.default.createDirectory(at: refDir, withIntermediateDirectories: true)
            try Data(Self.text(kept)).write(to: refDir.appendingPathComponent("kept.ndjson"))
            let refDB = refDir.path + ".sqlite"
            try analyzeInProcess([refDir.path], db: refDB)
            assertSameResults(try dumpDatabase(db), try dumpDatabase(refDB), "\(row.name): analysis equals the reference reader's records")
            XCTAssertEqual(report.progress.records, kept.count, "\(row.name): records kept")
        }
    }

    /// No stored figure is NaN, infinite or outside what the quantity can be.
    func assertSaneValues(_ store: SQLiteStore, _ name: String) throws {
        let checks = [
            "SELECT count(*) FROM calls WHERE mos_cq NOT BETWEEN 1 AND 5 OR mos_worst NOT BETWEEN 1 AND 5",
            "SELECT count(*) FROM calls WHERE loss_pct NOT BETWEEN 0 AND 100 OR concealment_pct NOT BETWEEN 0 AND 100",
            "SELECT count(*) FROM calls WHERE jitter_ms NOT BETWEEN 0 AND 10000 OR rtt_ms NOT BETWEEN 0 AND 60000",
            "SELECT count(*) FROM streams WHERE loss_pct NOT BETWEEN 0 AND 100 OR jitter_mean_ms NOT BETWEEN 0 AND 10000 OR packets < 0 OR packets_lost < 0",
            "SELECT count(*) FROM intervals WHERE loss_pct NOT BETWEEN 0 AND 100 OR jitter_ms NOT BETWEEN 0 AND 10000 OR packets < 0 OR mos_cq NOT BETWEEN 1 AND 5",
            "SELECT count(*) FROM rollups WHERE mos_mean NOT BETWEEN 1 AND 5 OR loss_mean NOT BETWEEN 0 AND 100",
        ]
        for sql in checks {
            XCTAssertEqual(try store.db.scalar(sql)?.int64, 0, "\(name): \(sql)")
        }
    }

    // MARK: - Tests

    func testLinesThatAreNotValidRecords() throws {
        for row in Self.lineRows { try check(row) }
        Soak.figure("bad_inputs", Self.lineRows.count)
    }

    func testRecordsWithAbsurdValuesAndClockJumps() throws {
        for row in Self.absurdRows { try check(row) }
        Soak.figure("bad_inputs", Self.absurdRows.count)
    }

    func testDuplicatedReorderedAndSplitRecords() throws {
        for row in Self.arrangementRows { try check(row) }
        Soak.figure("bad_inputs", Self.arrangementRows.count)
    }

    func testDamagedCompressedFiles() throws {
        for row in Self.frameRows { try check(row) }
        Soak.figure("bad_inputs", Self.frameRows.count)
    }

    /// A 100 MB line (generated here, never committed): skipped as too long, reported with its
    /// line, the lines after it read.
    func testHundredMegabyteLine() throws {
        let caseDir = dir.appendingPathComponent("huge")
        try FileManager.default.createDirectory(at: caseDir, withIntermediateDirectories: true)
        let path = caseDir.appendingPathComponent("huge.ndjson").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil))
        let out = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        let lines = Self.good.lines
        out.write((lines[..<4].joined(separator: "\n") + "\n").data(using: .utf8)!)
        out.write(#"{"v":1,"kind":"event","call":"huge","ts":1795300000000,"pad":""#.data(using: .utf8)!)
        let chunk = Data(repeating: UInt8(ascii: "x"), count: 1 << 20)
        for _ in 0..<100 { out.write(chunk) }
        out.write("\"}\n".data(using: .utf8)!)
        out.write((lines[4...].joined(separator: "\n") + "\n").data(using: .utf8)!)
        try out.close()

        let db = caseDir.path + ".sqlite"
        let run = AnalyzeRun(options: AnalyzeRun.Options(paths: [caseDir.path], database: db))
        let collected = IssueLog()
        run.onIssue = { collected.add($0) }
        _ = try run.run()
        XCTAssertEqual(collected.all.count, 1)
        XCTAssertTrue(collected.all.first?.description.hasPrefix("\(path):5: line too long: ") ?? false, "\(collected.all)")
        assertSameResults(try dumpDatabase(db), Self.good.dump, "100 MB line")
        Soak.figure("bad_inputs", 1)
    }
}

/// Issues reported by a run (from its reader threads).
final class IssueLog: @unchecked Sendable {
    private let lock = NSLock()
    private var issues: [LogIssue] = []
    func add(_ i: LogIssue) { lock.lock(); issues.append(i); lock.unlock() }
    var all: [LogIssue] { lock.lock(); defer { lock.unlock() }; return issues }
}

/// Where zstd frames start in a file (to put garbage exactly between two).
enum ZstdFrames {
    static func boundaries(_ bytes: [UInt8]) -> [Int] {
        guard bytes.count >= 4 else { return [] }
        return (1..<(bytes.count - 3)).filter { bytes[$0] == 0x28 && bytes[$0 + 1] == 0xB5 && bytes[$0 + 2] == 0x2F && bytes[$0 + 3] == 0xFD }
    }
}
