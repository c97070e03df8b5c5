import CallLog
import Foundation
import Store
import TestSupport
import XCTest

/// The commands as a user runs them: the built `callstats` binary, end to end.
final class CommandLineTests: XCTestCase {
    static let binary = TestPaths.callstatsBinary

    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("cli") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// Runs the built binary; returns exit status, stdout and stderr.
    @discardableResult
    func callstats(_ args: [String], environment: [String: String]? = nil) throws -> (status: Int32, out: String, err: String) {
        let r = try runProcess(CommandLineTests.binary, args, in: dir, environment: environment)
        return (r.status, r.out, r.err)
    }

    func testSampleDataEndToEnd() throws {
        let db = dir.appendingPathComponent("demo.sqlite").path
        let sample = TestPaths.sampleData.appendingPathComponent("sample").path
        let first = try callstats(["analyze", sample, "--db", db, "--quiet"])
        XCTAssertEqual(first.status, 0, first.err)
        XCTAssertTrue(first.out.contains("skipped         nothing") || first.out.contains("nothing"), first.out)
        let calls = try callstats([
            "query", "--db", db, "--format", "csv", "SELECT count(*) AS n, sum(grade = 'poor') AS poor, sum(grade = 'good') AS good FROM calls",
        ])
        XCTAssertEqual(calls.status, 0, calls.err)
        let numbers = calls.out.split(separator: "\n")[1].split(separator: ",").compactMap { Int($0) }
        XCTAssertGreaterThanOrEqual(numbers[0], 200, "the sample has a few hundred calls")
        XCTAssertGreaterThan(numbers[1], 0, "some sample calls are poor (lossy, congested, one-way profiles)")
        XCTAssertGreaterThan(numbers[2], numbers[1], "most sample calls are good")

        // A second run over the same logs changes nothing.
        let snapshot = try callstats(["query", "--db", db, "--format", "json", "SELECT * FROM calls ORDER BY call_id"]).out
        let rollups = try callstats(["query", "--db", db, "--format", "json", "SELECT * FROM rollups ORDER BY 1, 2, 3, 4"]).out
        let second = try callstats(["analyze", sample, "--db", db, "--quiet"])
        XCTAssertEqual(second.status, 0, second.err)
        XCTAssertTrue(second.out.contains("already ingested"), second.out)
        XCTAssertEqual(try callstats(["query", "--db", db, "--format", "json", "SELECT * FROM calls ORDER BY call_id"]).out, snapshot)
        XCTAssertEqual(try callstats(["query", "--db", db, "--format", "json", "SELECT * FROM rollups ORDER BY 1, 2, 3, 4"]).out, rollups)

        // The views people ask first answer.
        for view in ["worst_calls", "poor_share_by_network", "setup_p95_by_app_version", "findings_summary", "daily_quality"] {
            let r = try callstats(["query", "--db", db, "SELECT * FROM \(view) LIMIT 3"])
            XCTAssertEqual(r.status, 0, "\(view): \(r.err)")
            XCTAssertFalse(r.out.contains("(0 rows)"), "\(view) is empty")
        }
    }

    func testDamagedInputIsReportedWithFileAndLineAndTheRestKept() throws {
        let logs = dir.appendingPathComponent("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        XCTAssertEqual(try callstats(["simulate", "--calls", "20", "--out", logs.path, "--seed", "7"]).status, 0)
        let clean = dir.appendingPathComponent("clean.sqlite").path
        XCTAssertEqual(try callstats(["analyze", logs.path, "--db", clean, "--quiet"]).status, 0)

        // Append a malformed line to a plain copy of one file.
        let files = try FileManager.default.contentsOfDirectory(atPath: logs.path).filter { $0.hasSuffix(".zst") }.sorted()
        let plain = logs.appendingPathComponent("extra.ndjson")
        try "{\"kind\":\"event\",\"call\":\"x\"}\nnot json at all\n".write(to: plain, atomically: true, encoding: .utf8)
        let dirty = dir.appendingPathComponent("dirty.sqlite").path
        let r = try callstats(["analyze", logs.path, "--db", dirty])
        XCTAssertEqual(r.status, 3, r.out + r.err)
        XCTAssertTrue(r.err.contains("extra.ndjson:1: invalid record: missing field \"ts\""), r.err)
        XCTAssertTrue(r.err.contains("extra.ndjson:2: invalid record"), r.err)
        XCTAssertTrue(r.out.contains("\nskipped         2 invalid records\n"), r.out)
        let alone = dir.appendingPathComponent("alone.sqlite").path
        let one = try callstats(["analyze", plain.path, "--db", alone, "--quiet"])
        XCTAssertTrue(one.out.contains("\(alone): 0 calls, 0 poor, 0 without media, 1 file\n"), one.out)
        let q = "SELECT count(*), round(sum(mos_cq), 6) FROM calls"
        XCTAssertEqual(try callstats(["query", "--db", dirty, q]).out, try callstats(["query", "--db", clean, q]).out)
        XCTAssertFalse(files.isEmpty)
    }

    /// A column of reals prints with one number of decimals, so that decimal points line up;
    /// no line ends in padding.
    func testQueryTableAlignsDecimals() throws {
        let db = dir.appendingPathComponent("empty.sqlite").path
        let logs = dir.appendingPathComponent("no-logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        XCTAssertEqual(try callstats(["analyze", logs.path, "--db", db, "--quiet"]).status, 0)
        let r = try callstats(["query", "--db", db, "SELECT 2.8 AS mos, 'x' AS note UNION ALL SELECT 2.431, 'yy' UNION ALL SELECT 3, 'z'"])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertEqual(
            r.out.split(separator: "\n").map(String.init),
            [
                "  mos  note",
                "-----  ----",
                "2.800  x",
                "2.431  yy",
                "3.000  z",
                "(3 rows)",
            ])
    }

    func testCatRestoresAndFilters() throws {
        let logs = dir.appendingPathComponent("logs")
        XCTAssertEqual(try callstats(["simulate", "--calls", "3", "--out", logs.path, "--seed", "1"]).status, 0)
        let all = try callstats(["cat", logs.path])
        XCTAssertEqual(all.status, 0, all.err)
        let lines = all.out.split(separator: "\n")
        XCTAssertFalse(lines.contains { $0.contains("\"delta\"") }, "cat restores full snapshots")
        XCTAssertTrue(lines.contains { $0.contains("\"kind\":\"stats\"") && $0.contains("\"report\"") })
        let ends = try callstats(["cat", "--kind", "end", logs.path]).out.split(separator: "\n")
        XCTAssertEqual(ends.count, 3)
    }

    /// A real SIP/RTP capture, measured on the wire and scored into the same tables as SDK logs;
    /// packet counts equal tshark's (`*.rtp_streams.txt` beside the capture).
    func testCaptureIsAnalysedLikeSDKLogs() throws {
        let pcap = TestPaths.shared.appendingPathComponent("pcaps/heplify/rtp_rtcp_sip_ipv4_udp.pcap")
        guard FileManager.default.fileExists(atPath: pcap.path) else { throw XCTSkip("../shared/pcaps is absent") }
        let logs = dir.appendingPathComponent("wire")
        let c = try callstats(["capture", "-r", pcap.path, "-o", logs.path])
        XCTAssertEqual(c.status, 0, c.err)
        XCTAssertTrue(c.out.contains("RTP / RTCP / STUN"), c.out)
        let db = dir.appendingPathComponent("wire.sqlite").path
        XCTAssertEqual(try callstats(["analyze", logs.path, "--db", db, "-q"]).status, 0)
        let call = try callstats([
            "query", "--db", db, "--format", "csv",
            "SELECT sdk, source, grade, mos_cq > 4.3, loss_pct FROM calls WHERE call_id = '12013223@200.57.7.195'",
        ])
        XCTAssertEqual(call.out.split(separator: "\n").last, "wire,wire,good,1,0", call.out)
        let streams = try callstats([
            "query", "--db", db, "--format", "csv",
            "SELECT packets, packets_lost, codec FROM streams WHERE call_id = '12013223@200.57.7.195' AND direction = 'inbound' ORDER BY packets",
        ])
        XCTAssertEqual(streams.out.split(separator: "\n").dropFirst(), ["548,0,audio/PCMA", "891,0,audio/PCMA"])
        // Each stream's receiver reported it in RTCP (RR blocks, no loss): the sent direction,
        // one `outbound` row per stream, beside what the capture measured.
        let sent = try callstats([
            "query", "--db", db, "--format", "csv",
            """
            SELECT (SELECT group_concat(ssrc || ':' || score_source || ':' || packets_lost, ' ') FROM
                      (SELECT * FROM streams s WHERE s.call_id = c.call_id AND s.direction = 'outbound' ORDER BY ssrc)),
                   mos_cq_sent BETWEEN 4 AND mos_cq, loss_pct_sent
            FROM calls c WHERE call_id = '12013223@200.57.7.195'
            """,
        ])
        XCTAssertEqual(sent.out.split(separator: "\n").last, "1492336106:remote_report:0 3535621694:remote_report:0,1,0", sent.out)
    }

    /// Two runs that must agree (one reader, two readers) hold the same rows; a database made
    /// from fewer logs is told apart, with the tables that differ.
    func testCompareDatabasesTellsSameFromDifferent() throws {
        let logs = dir.appendingPathComponent("logs").path
        XCTAssertEqual(try callstats(["simulate", "--calls", "30", "--files", "3", "--seed", "4", "--out", logs]).status, 0)
        let one = dir.appendingPathComponent("one.sqlite").path, two = dir.appendingPathComponent("two.sqlite").path
        XCTAssertEqual(try callstats(["analyze", logs, "--db", one, "--threads", "1", "--quiet"]).status, 0)
        XCTAssertEqual(try callstats(["analyze", logs, "--db", two, "--threads", "2", "--quiet"]).status, 0)
        let same = try callstats(["internal", "compare-databases", one, two])
        XCTAssertEqual(same.status, 0, same.out + same.err)
        XCTAssertTrue(same.out.contains("same rows in every table"), same.out)

        let files = try FileManager.default.contentsOfDirectory(atPath: logs).sorted()
        let fewer = dir.appendingPathComponent("fewer.sqlite").path
        XCTAssertEqual(try callstats(["analyze", logs + "/" + files[0], "--db", fewer, "--quiet"]).status, 0)
        let different = try callstats(["internal", "compare-databases", one, fewer])
        XCTAssertEqual(different.status, 1, different.out + different.err)
        XCTAssertTrue(different.out.contains("different: ") && different.out.contains("calls"), different.out)
    }

    /// Thresholds as a user changes them: a settings file from `config`, `analyze --config`,
    /// a run with other settings refused, `regrade`, and the database's settings shown.
    func testSettingsFromTheCommandLine() throws {
        let defaults = try callstats(["config", "--json"])
        XCTAssertEqual(defaults.status, 0, defaults.err)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(defaults.out.utf8)) as? [String: Double])
        XCTAssertEqual(object.count, 23)
        XCTAssertEqual(object["jitter_warn_ms"], 30)
        XCTAssertEqual(object["mos_poor"], 3.1)

        let file = dir.appendingPathComponent("grading.json").path
        let written = try callstats(["config", "--set", "jitter_warn_ms=40", "--json"])
        try written.out.write(toFile: file, atomically: true, encoding: .utf8)
        let db = dir.appendingPathComponent("graded.sqlite").path
        let sample = TestPaths.sampleData.appendingPathComponent("sample").path
        let first = try callstats(["analyze", sample, "--db", db, "--config", file, "--quiet"])
        XCTAssertEqual(first.status, 0, first.err)
        XCTAssertTrue(first.out.contains("\nsettings        jitter_warn_ms 40 (default 30)\n"), first.out)

        let refused = try callstats(["analyze", sample, "--db", db, "--set", "jitter_warn_ms=50", "--quiet"])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(
            refused.err.contains(
                "graded.sqlite holds calls graded with other settings than this run asks for: jitter_warn_ms 50 (database: 40). Regrade them first"),
            refused.err)

        // Calls scored by another quality model: every run says so until a regrade.
        try SQLiteStore(path: db).db.run("UPDATE meta SET value = 'callstats-quality-0 (test)' WHERE key = 'quality_model'")
        let mixed = try callstats(["analyze", sample, "--db", db, "--quiet"])
        XCTAssertEqual(mixed.status, 0, mixed.err)
        XCTAssertTrue(
            mixed.err.contains("warning: \(db) holds calls scored by quality model callstats-quality-0 (test); this callstats scores with callstats-quality-"),
            mixed.err)
        XCTAssertTrue(mixed.err.contains("Run `callstats regrade --db \(db)` to score every stored call with this one"), mixed.err)

        let regraded = try callstats(["regrade", "--db", db, "--set", "jitter_warn_ms=50", "--quiet"])
        XCTAssertEqual(regraded.status, 0, regraded.err)
        XCTAssertTrue(regraded.out.hasPrefix("calls regraded  300\n"), regraded.out)
        XCTAssertTrue(regraded.out.contains("\nsettings        jitter_warn_ms 50 (was 40)\n"), regraded.out)
        XCTAssertTrue(regraded.out.contains("\nquality model   callstats-quality-"), regraded.out)
        XCTAssertTrue(regraded.out.contains(" (was callstats-quality-0 (test))\n"), regraded.out)
        let shown = try callstats(["config", "--db", db])
        let row = try XCTUnwrap(shown.out.split(separator: "\n").first { $0.hasPrefix("jitter_warn_ms") })
        XCTAssertEqual(row.split(separator: " ").prefix(4), ["jitter_warn_ms", "50", "*", "30"], shown.out)
        XCTAssertTrue(shown.out.hasSuffix("(* 1 changed from the default)\n"), shown.out)
        // Later runs use the database's settings.
        let again = try callstats(["analyze", sample, "--db", db, "--quiet", "--force"])
        XCTAssertEqual(again.status, 0, again.err)
        XCTAssertTrue(again.out.contains("\nsettings        jitter_warn_ms 50 (default 30)\n"), again.out)
        XCTAssertFalse(again.err.contains("quality model"), again.err)

        let bad = dir.appendingPathComponent("bad.json").path
        try "{\"jitter\": 1}".write(toFile: bad, atomically: true, encoding: .utf8)
        let unknown = try callstats(["analyze", sample, "--db", dir.appendingPathComponent("new.sqlite").path, "--config", bad])
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.err.contains("bad.json: line 1: unknown setting jitter (`callstats config` lists them"), unknown.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("new.sqlite").path), "nothing created")
        let missing = try callstats(["config", "--db", dir.appendingPathComponent("none.sqlite").path, "--set", "jitter_warn_ms=40"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.err.contains("none.sqlite: no such database"), missing.err)
        let noDatabase = try callstats(["regrade", "--db", dir.appendingPathComponent("none.sqlite").path, "--set", "jitter_warn_ms=40"])
        XCTAssertEqual(noDatabase.status, 1)
        XCTAssertTrue(noDatabase.err.contains("none.sqlite: no such database"), noDatabase.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("none.sqlite").path), "nothing created")
        let malformed = try callstats(["regrade", "--db", db, "--set", "jitter_warn_ms"])
        XCTAssertEqual(malformed.status, 1)
        XCTAssertTrue(malformed.err.contains("--set jitter_warn_ms: expected name=number"), malformed.err)
    }

    func testHelpIsUseful() throws {
        let r = try callstats(["analyze", "--help"])
        XCTAssertTrue(r.out.contains("--db"))
        XCTAssertTrue(r.out.contains("Exit status"))
        let missing = try callstats(["query", "--db", dir.appendingPathComponent("none.sqlite").path, "SELECT 1"])
        XCTAssertNotEqual(missing.status, 0)
        // What a bug report needs: the release and the formats it reads and writes.
        let version = try callstats(["--version"])
        XCTAssertEqual(version.status, 0, version.err)
        XCTAssertTrue(version.out.hasPrefix("callstats 0."), version.out)
        XCTAssertTrue(version.out.hasSuffix(" (log format v\(LogRecord.formatVersion), database schema v\(Schema.version))\n"), version.out)
    }
}

/// Every numeric option at its extremes: a usage error (exit 64) naming the option, before
/// anything runs; never an arithmetic overflow with a backtrace.
final class NumericOptionTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("cli-numbers") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    func testEveryNumericOptionIsRangeCheckedAtItsExtremes() throws {
        let out = dir.appendingPathComponent("out").path
        let db = dir.appendingPathComponent("x.sqlite").path
        let log = dir.appendingPathComponent("a.ndjson").path
        try "".write(toFile: log, atomically: true, encoding: .utf8)
        let huge = "9223372036854775807"
        let cases: [(args: [String], option: String)] = [
            (["prune", "--db", db, "--older-than", "99999999999999999d"], "--older-than"),
            (["prune", "--db", db, "--older-than", "36501d"], "--older-than"),
            (["forget", "--db", db, "--call", "x", "--vacuum-wait", huge], "--vacuum-wait"),
            (["prune", "--db", db, "--before", "2026-01-01", "--vacuum-wait=-1"], "--vacuum-wait"),
            (["serve", "--out", out, "--read-timeout", huge], "--read-timeout"),
            (["serve", "--out", out, "--read-timeout", "0"], "--read-timeout"),
            (["serve", "--out", out, "--file-age", huge], "--file-age"),
            (["serve", "--out", out, "--file-bytes", "-1"], "--file-bytes"),
            (["serve", "--out", out, "--max-body", huge], "--max-body"),
            (["serve", "--out", out, "--max-line", "0"], "--max-line"),
            (["serve", "--out", out, "--max-connections", "0"], "--max-connections"),
            (["serve", "--out", out, "--max-connections-per-address", huge], "--max-connections-per-address"),
            (["serve", "--out", out, "--request-timeout", huge], "--request-timeout"),
            (["serve", "--out", out, "--request-timeout", "0"], "--request-timeout"),
            (["serve", "--out", out, "--compression-level", "99"], "--compression-level"),
            (["serve", "--out", out, "--max-held-objects-per-client", "1"], "--max-held-objects-per-client"),
            (["serve", "--out", out, "--segment-bytes", huge], "--segment-bytes"),
            (["serve", "--out", out, "--threads", huge], "--threads"),
            (["simulate", "--calls", "1", "--out", out, "--days", "1e300"], "--days"),
            (["simulate", "--calls", "1", "--out", out, "--days", "nan"], "--days"),
            (["simulate", "--calls", "1", "--out", out, "--period", huge], "--period"),
            (["simulate", "--calls=-5", "--out", out], "--calls"),
            (["simulate", "--calls", "1", "--out", out, "--workers", "0"], "--workers"),
            (["capture", "-r", log, "-o", out, "--interval", huge], "--interval"),
            (["capture", "-r", log, "-o", out, "--duration=-1"], "--duration"),
            (["capture", "-r", log, "-o", out, "--duration", "inf"], "--duration"),
            (["analyze", log, "--db", db, "--threads=-3"], "--threads"),
            (["analyze", log, "--db", db, "--threads", "0"], "--threads"),
            (["regrade", "--db", db, "--threads", huge], "--threads"),
            (["query", "--db", db, "--limit=-1", "SELECT 1"], "--limit"),
        ]
        for c in cases {
            let r = try runProcess(CommandLineTests.binary, c.args, in: dir)
            XCTAssertEqual(r.status, 64, "\(c.args): \(r.err)")
            XCTAssertTrue(r.err.contains(c.option), "\(c.args): \(r.err)")
            XCTAssertFalse(r.err.contains("Backtracing") || r.err.contains("Fatal error"), "\(c.args): \(r.err)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: out), "nothing ran")
    }
}
