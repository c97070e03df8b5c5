import CallLog
import Foundation
import Jobs
import TestSupport
import XCTest

/// What one log can make `analyze` hold is bounded (`RecordIngestor.Bounds`): small versions of
/// the attacks, each run by the real binary with its bound lowered, each asserting the message
/// (with file and line) and that every valid record is kept. At full size, with the default
/// bounds, the growing chain's cost is held linear by `make perf-check`.
final class BoundsTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("faults-bounds") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    static let t0: Int64 = 1_795_349_930_000

    func write(_ name: String, _ lines: [String]) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func query(_ db: String, _ sql: String) throws -> [String] {
        let r = try Binary.run(["query", "--db", db, "--format", "csv", sql])
        XCTAssertEqual(r.status, 0, r.err)
        return Array(r.out.split(separator: "\n").dropFirst().map(String.init))
    }

    static func event(_ call: String, _ i: Int) -> String {
        #"{"v":1,"kind":"event","call":"\#(call)","ts":\#(t0 + Int64(i)),"action":"callMetric","type":"callRinging"}"#
    }

    static func stats(_ call: String, _ i: Int) -> String {
        let ts = t0 + Int64(i) * 1000
        return
            #"{"v":1,"kind":"stats","call":"\#(call)","ts":\#(ts),"format":"w3c","pc":"a","report":[{"id":"IT1","timestamp":\#(ts),"type":"inbound-rtp","kind":"audio","ssrc":1,"packetsReceived":\#(50 * i),"packetsLost":0,"jitter":0.003}]}"#
    }

    /// A gigabyte of newlines fits in 33 KB of zstd. Blank lines are passed over in runs, with
    /// nothing kept per line: none reaches the reader's caller, nothing is reported, and the
    /// record after them is read (before, each was a line held until verified, 24 bytes of
    /// bookkeeping per byte of text, then an "invalid record" with its message).
    func testABlankLineBombIsPassedOverWithNothingKeptPerLine() throws {
        let megabytes = Soak.count("CALLSTATS_SOAK_BLANK_MB", ci: 16)
        let blank = [UInt8](repeating: 0x0A, count: megabytes << 20)
        var text = blank
        text += Array((#"{"v":1,"kind":"call","call":"after-blanks","ts":\#(Self.t0),"direction":"outgoing"}"# + "\n\r\n\n").utf8)
        let compressor = ZstdCompressor(level: 19)
        var compressed: [UInt8] = []
        compressor.compress(text, .end, into: &compressed)
        XCTAssertLessThan(compressed.count, 64 * megabytes + 1024, "a small file")
        let path = dir.appendingPathComponent("blank.ndjson.zst").path
        try Data(compressed).write(to: URL(fileURLWithPath: path))

        var lines: [(String, Int)] = []
        var issues: [LogIssue] = []
        LogLineReader(path: path).forEachLine({ lines.append((String(decoding: $0, as: UTF8.self), $1)) }, issue: { issues.append($0) })
        XCTAssertEqual(lines.count, 1, "only the record reaches the caller")
        XCTAssertEqual(lines.first?.1, (megabytes << 20) + 1, "line numbers still count the blank lines")
        XCTAssertEqual(issues, [])

        let db = dir.appendingPathComponent("blank.sqlite").path
        // Under /usr/bin/time where it is installed: the peak memory does not grow with the blank
        // lines (before: 24 bytes held per line until 16 MiB of text, then one message each).
        let timed = FileManager.default.isExecutableFile(atPath: "/usr/bin/time")
        let args = ["analyze", path, "--db", db, "--threads", "1"]
        let r = try runProcess(
            timed ? URL(fileURLWithPath: "/usr/bin/time") : Binary.url, timed ? ["-f", "peak-kb %M", Binary.url.path] + args : args)
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertTrue(r.out.contains("skipped         nothing"), r.out)
        if timed, let kb = r.err.firstMatch(of: /peak-kb (\d+)/).flatMap({ Int($0.1) }) {
            Soak.figure("blank_line_bomb_peak_kb", kb)
            XCTAssertLessThan(kb, 200_000, "\(megabytes) MiB of blank lines")
        }
        XCTAssertEqual(try query(db, "SELECT call_id FROM calls"), ["after-blanks"])
    }

    /// More calls open at once than a reader holds: the open ones are handed on and merged with
    /// their later records, said once with file and line, nothing skipped, and the database is
    /// the one a run without the bound makes.
    func testTooManyOpenCallsAreHandedOnAndMerged() throws {
        // 30 calls interleaved: each has an event, then (after all 30 began) another and its end.
        var lines: [String] = []
        for c in 0..<30 { lines.append(Self.event("c\(c)", c)) }
        for c in 0..<30 {
            lines.append(Self.event("c\(c)", 100 + c))
            lines.append(#"{"v":1,"kind":"end","call":"c\#(c)","ts":\#(Self.t0 + 200 + Int64(c)),"reason":"terminatedLocally"}"#)
        }
        let path = try write("open.ndjson", lines)
        let bounded = dir.appendingPathComponent("bounded.sqlite").path
        let run = try Binary.run(["analyze", path, "--db", bounded, "--max-open-calls", "10", "--threads", "1"])
        XCTAssertEqual(run.status, 0, run.err)
        XCTAssertTrue(
            run.err.contains(
                "note: \(path):11: calls handed on early: 11 calls open at once, their ids 23 bytes (a reader holds at most 10 calls, 67108864 bytes of ids): those open were handed on"
            ),
            run.err)
        XCTAssertEqual(run.err.components(separatedBy: "calls open at once").count - 1, 1, "said once per file (by each reader of it)")
        XCTAssertEqual(try query(bounded, "SELECT count(*), sum(complete) FROM calls"), ["30,30"])
        XCTAssertEqual(try query(bounded, "SELECT count(*) FROM events"), ["90"])

        let free = dir.appendingPathComponent("free.sqlite").path
        XCTAssertEqual(try Binary.run(["analyze", path, "--db", free, "--quiet"]).status, 0)
        assertSameResults(try dumpDatabase(bounded), try dumpDatabase(free), "handed on early")
    }

    /// One call with more records than a reader holds for a call: the rest of its records in
    /// the file are skipped and said (with the first line), its end is still taken, and the
    /// other call in the file is whole.
    func testRecordsPastTheBoundOfOneCallAreSkippedAndSaid() throws {
        var lines = [#"{"v":1,"kind":"call","call":"long","ts":\#(Self.t0),"direction":"outgoing","media":["audio"]}"#]
        for i in 1...30 { lines.append(Self.stats("long", i)) }
        lines.append(Self.event("other", 5))
        lines.append(Self.stats("other", 1))
        lines.append(Self.stats("other", 2))
        lines.append(#"{"v":1,"kind":"end","call":"long","ts":\#(Self.t0 + 31_000),"reason":"terminatedLocally"}"#)
        let path = try write("long.ndjson", lines)
        let db = dir.appendingPathComponent("long.sqlite").path
        let run = try Binary.run(["analyze", path, "--db", db, "--max-records-per-call", "20"])
        XCTAssertEqual(run.status, 3, run.err)
        XCTAssertTrue(
            run.err.contains(
                "warning: \(path):22: record beyond a limit: call long already has 20 records in this file (the most a reader holds for one call); its further records here are skipped"
            ), run.err)
        XCTAssertTrue(run.out.contains("10 records beyond a limit"), run.out)
        XCTAssertEqual(try query(db, "SELECT call_id, complete FROM calls ORDER BY call_id"), ["long,1", "other,0"])
        // 20 snapshots make 19 intervals; the other call's two make one.
        XCTAssertEqual(try query(db, "SELECT call_id, count(*) FROM intervals GROUP BY call_id ORDER BY call_id"), ["long,19", "other,1"])
    }

    /// A peer connection whose reports keep adding objects holds at most the bound: the objects
    /// past it are left out and said (file and line), the objects it holds keep being read, and
    /// the call's other peer connection is whole. Without the bound each snapshot was read over
    /// every object the chain ever had: time and memory grew with the square of its records.
    func testObjectsPastTheBoundOfOnePeerConnectionAreLeftOutAndSaid() throws {
        var lines = [#"{"v":1,"kind":"call","call":"grow","ts":\#(Self.t0),"direction":"outgoing","media":["audio"]}"#]
        func inbound(_ id: String, _ ssrc: Int, _ packets: Int, _ ts: Int64) -> String {
            #"{"id":"\#(id)","timestamp":\#(ts),"type":"inbound-rtp","kind":"audio","ssrc":\#(ssrc),"packetsReceived":\#(packets),"packetsLost":0,"jitter":0.003}"#
        }
        // Each full report of pc "a" keeps stream IT1 growing and adds three new streams.
        for i in 1...6 {
            let ts = Self.t0 + Int64(i) * 1000
            var objects = [inbound("IT1", 1, 50 * i, ts)]
            for k in 0..<(3 * i) { objects.append(inbound("N\(k)", 100 + k, 10 * i, ts)) }
            lines.append(
                #"{"v":1,"kind":"stats","call":"grow","ts":\#(ts),"format":"w3c","pc":"a","report":[\#(objects.joined(separator: ","))]}"#)
            lines.append(
                #"{"v":1,"kind":"stats","call":"grow","ts":\#(ts),"format":"w3c","pc":"b","report":[\#(inbound("IB", 7, 40 * i, ts))]}"#)
        }
        lines.append(#"{"v":1,"kind":"end","call":"grow","ts":\#(Self.t0 + 7_000),"reason":"terminatedLocally"}"#)
        let path = try write("grow.ndjson", lines)
        let db = dir.appendingPathComponent("grow.sqlite").path
        let run = try Binary.run(["analyze", path, "--db", db, "--max-objects-per-peer-connection", "5"])
        XCTAssertEqual(run.status, 3, run.err)
        // Line 4 is pc a's second report: 1 + 6 objects, 5 held, 2 left out.
        XCTAssertTrue(
            run.err.contains(
                "warning: \(path):4: record beyond a limit: 2 new statistics objects left out: a peer connection holds at most 5 (the record's other objects are used)"
            ), run.err)
        XCTAssertTrue(run.out.contains("5 records beyond a limit"), run.out)
        // pc a keeps its first five streams (IT1 and N0-N3), pc b its one; each of the six has
        // its intervals, none of the streams past the bound appears.
        XCTAssertEqual(try query(db, "SELECT count(*) FROM streams"), ["6"])
        XCTAssertEqual(try query(db, "SELECT ssrc FROM streams WHERE ssrc >= 100 ORDER BY ssrc"), ["100", "101", "102", "103"])
        XCTAssertEqual(try query(db, "SELECT sum(packets) FROM streams WHERE ssrc IN (1, 7)"), ["540"])
    }

    /// A call id or peer-connection name longer than the bound skips its record (said with file
    /// and line), before the id is kept anywhere; the records around it are read.
    func testAnOversizedIDSkipsItsRecord() throws {
        let long = String(repeating: "x", count: 100_000)
        let path = try write(
            "ids.ndjson",
            [
                #"{"v":1,"kind":"call","call":"ok","ts":\#(Self.t0),"direction":"outgoing"}"#,
                #"{"v":1,"kind":"call","call":"\#(long)","ts":\#(Self.t0),"direction":"outgoing"}"#,
                #"{"v":1,"kind":"stats","call":"ok","ts":\#(Self.t0 + 1000),"format":"w3c","pc":"\#(long)","report":[]}"#,
                #"{"v":1,"kind":"event","call":"\#(String(repeating: "y", count: 200))","ts":\#(Self.t0),"action":"a","type":"b"}"#,
                Self.event("ok", 7),
            ])
        let db = dir.appendingPathComponent("ids.sqlite").path
        let run = try Binary.run(["analyze", path, "--db", db, "--max-id-bytes", "100"])
        XCTAssertEqual(run.status, 3, run.err)
        XCTAssertTrue(run.err.contains("\(path):2: record beyond a limit: call id of 100000 bytes (limit 100); record skipped"), run.err)
        XCTAssertTrue(run.err.contains("\(path):3: record beyond a limit: peer-connection name of 100000 bytes (limit 100); record skipped"), run.err)
        XCTAssertTrue(run.err.contains("\(path):4: record beyond a limit: call id of 200 bytes (limit 100); record skipped"), run.err)
        XCTAssertEqual(try query(db, "SELECT call_id FROM calls"), ["ok"])
        XCTAssertEqual(try query(db, "SELECT count(*) FROM events"), ["1"])
    }
}
