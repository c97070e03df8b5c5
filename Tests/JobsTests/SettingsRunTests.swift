import Analysis
import CallLog
import Foundation
import Jobs
import Simulator
import SQLiteDatabase
import Store
import TestSupport
import XCTest

/// Settings over runs: each database keeps its settings, runs use them and refuse others, and
/// a regrade from stored material equals analysing the logs afresh with the new settings.
final class SettingsRunTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("settings") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// Stricter than the defaults on every kind of finding the simulated calls have.
    let strict: AnalysisConfig = {
        var c = AnalysisConfig()
        try! c.apply(assignments: [
            "jitter_warn_ms=12", "loss_warn_pct=0.3", "loss_poor_pct=2", "rtt_warn_ms=150", "rtt_poor_ms=250",
            "freeze_warn_pct=3", "freeze_poor_pct=8", "concealment_warn_pct=2", "low_fps=20",
            "mos_fair=4.1", "mos_poor=3.9", "persistence_count=2",
        ])
        return c
    }()

    func logs(calls: Int = 60, files: Int = 3) throws -> [String] {
        let out = dir.appendingPathComponent("logs")
        var config = SimulatorConfiguration(calls: calls, seed: 7)  // one with frozen video
        config.files = files
        _ = try Simulator(config).write(to: out.path) { _ in }
        return LogFiles.find([out.path]).files
    }

    @discardableResult
    func analyze(_ paths: [String], db: String, config: AnalysisConfig? = nil) throws -> AnalyzeRun.Report {
        var o = AnalyzeRun.Options(paths: paths, database: db)
        o.config = config
        o.callsPerTransaction = 9
        return try AnalyzeRun(options: o).run()
    }

    @discardableResult
    func regrade(_ db: String, config: AnalysisConfig?, threads: Int = 2) throws -> RegradeRun.Report {
        var o = RegradeRun.Options(database: db)
        o.config = config
        o.threads = threads
        o.callsPerBatch = 16  // several batches
        return try RegradeRun(options: o).run()
    }

    func dump(_ db: String) throws -> String { try DatabaseComparison.text(of: db, .init(material: .bytes)) }

    func settings(_ db: String) throws -> AnalysisConfig { try SQLiteStore(path: db, forWriting: false).recordedSettings() }

    func testRegradeEqualsAFreshAnalysisWithTheSameSettings() throws {
        let files = try logs()
        let freshDefault = dir.appendingPathComponent("default.sqlite").path
        let freshStrict = dir.appendingPathComponent("strict.sqlite").path
        let regraded = dir.appendingPathComponent("regraded.sqlite").path
        try analyze(files, db: freshDefault)
        try analyze(files, db: freshStrict, config: strict)
        try analyze(files, db: regraded)
        let defaultRows = try dump(freshDefault), strictRows = try dump(freshStrict)
        XCTAssertNotEqual(defaultRows, strictRows, "the settings change the results")
        let findings = { (db: String) in try SQLiteStore(path: db, forWriting: false).db.scalar("SELECT count(*) FROM findings")?.int64 ?? 0 }
        XCTAssertGreaterThan(try findings(freshStrict), try findings(freshDefault) + 20, "stricter thresholds, more findings")
        let poorFreezes = { (db: String) in
            try SQLiteStore(path: db, forWriting: false).db.scalar("SELECT count(*) FROM findings WHERE code = 'long_freeze' AND severity = 'poor'")?.int64 ?? 0
        }
        XCTAssertGreaterThan(try poorFreezes(freshStrict), try poorFreezes(freshDefault), "freeze_poor_pct decides a freeze's severity")

        let r = try regrade(regraded, config: strict)
        XCTAssertEqual(r.calls, 60)
        XCTAssertEqual(r.previousSettings, AnalysisConfig())
        XCTAssertEqual(r.gradesAfter, try SQLiteStore(path: freshStrict, forWriting: false).totals().byGrade)
        XCTAssertNotEqual(r.gradesBefore, r.gradesAfter)
        XCTAssertEqual(try dump(regraded), strictRows)
        XCTAssertEqual(try settings(regraded), strict)

        // And back, on one thread this time.
        try regrade(regraded, config: AnalysisConfig(), threads: 1)
        XCTAssertEqual(try dump(regraded), defaultRows)
        XCTAssertEqual(try settings(regraded), AnalysisConfig())

        // Without settings: the database's own, the same results.
        try regrade(regraded, config: nil)
        XCTAssertEqual(try dump(regraded), defaultRows)
    }

    func testRunsKeepTheDatabaseSettingsAndRefuseOthers() throws {
        let files = try logs()
        let all = dir.appendingPathComponent("all.sqlite").path
        try analyze(files, db: all, config: strict)
        let db = dir.appendingPathComponent("parts.sqlite").path
        let first = try analyze(Array(files.prefix(2)), db: db, config: strict)
        XCTAssertEqual(first.settings, strict)
        XCTAssertEqual(try settings(db), strict)

        // Other settings are refused while graded calls are stored, and change nothing.
        let before = try dump(db)
        XCTAssertThrowsError(try analyze([files[2]], db: db, config: AnalysisConfig())) { error in
            guard case StoreError.otherSettings(let path, let differences) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(path, db)
            XCTAssertTrue(
                differences.hasPrefix("loss_warn_pct 1 (database: 0.3), loss_poor_pct 5 (database: 2), jitter_warn_ms 30 (database: 12)"), differences)
        }
        XCTAssertEqual(try dump(db), before)

        // Without settings the run uses the database's: the same as analysing everything at once.
        let last = try analyze([files[2]], db: db)
        XCTAssertEqual(last.settings, strict)
        XCTAssertEqual(try dump(db), try dump(all))
        // The same settings, given again, are accepted.
        XCTAssertNoThrow(try analyze(files, db: db, config: strict))
    }

    func testADatabaseWithoutRecordedSettingsWasGradedWithTheDefaults() throws {
        let files = try logs(calls: 12, files: 1)
        let db = dir.appendingPathComponent("old.sqlite").path
        try analyze(files, db: db)
        try SQLiteStore(path: db).db.run("DELETE FROM meta WHERE key = 'analysis_config'")
        XCTAssertEqual(try settings(db), AnalysisConfig())
        XCTAssertThrowsError(try analyze(files, db: db, config: strict))
        XCTAssertEqual(try analyze(files, db: db).settings, AnalysisConfig())

        // Settings that cannot be read are an error, not the defaults.
        try SQLiteStore(path: db).db.run("UPDATE meta SET value = '{\"jitter\": 1}' WHERE key = 'analysis_config'")
        XCTAssertThrowsError(try analyze(files, db: db)) {
            XCTAssertTrue(
                "\($0)".contains(
                    "the analysis settings it records (meta.analysis_config) cannot be read: meta.analysis_config: line 1: unknown setting jitter"), "\($0)")
        }
    }

    /// The quality model that scored a database's calls is in `meta`: recorded by the first
    /// run; a run into a database scored by another model keeps that one's name and says so
    /// (`otherQualityModel`, the warning the command prints); `regrade` records its own.
    func testTheQualityModelIsRecordedAndAnotherOneIsReported() throws {
        let files = try logs(calls: 12, files: 2)
        let db = dir.appendingPathComponent("model.sqlite").path
        let model = { try SQLiteStore(path: db, forWriting: false).recordedQualityModel() }
        let first = try analyze([files[0]], db: db)
        XCTAssertNil(first.otherQualityModel)
        XCTAssertEqual(try model(), CallAnalyzer.qualityModelVersion)
        XCTAssertTrue(try XCTUnwrap(try model()).hasPrefix("callstats-quality-"))

        let older = "callstats-quality-0 (G.107-2011 NB; codecs 0; video 0)"
        try SQLiteStore(path: db).db.run("UPDATE meta SET value = ? WHERE key = 'quality_model'", [.text(older)])
        let second = try analyze([files[1]], db: db)
        XCTAssertEqual(second.otherQualityModel, older, "calls scored by another model are stored")
        XCTAssertEqual(try model(), older, "the database mixes two models: the older name stays until a regrade")
        XCTAssertEqual(try analyze([files[1]], db: db).otherQualityModel, older, "said again on every run")

        let r = try regrade(db, config: nil)
        XCTAssertEqual(r.previousQualityModel, older)
        XCTAssertEqual(r.qualityModel, CallAnalyzer.qualityModelVersion)
        XCTAssertEqual(try model(), CallAnalyzer.qualityModelVersion)
        XCTAssertNil(try analyze(files, db: db).otherQualityModel)

        // A database written before the model was recorded gets this one, without a warning.
        try SQLiteStore(path: db).db.run("DELETE FROM meta WHERE key = 'quality_model'")
        XCTAssertNil(try model())
        XCTAssertNil(try analyze([files[0]], db: db).otherQualityModel)
        XCTAssertEqual(try model(), CallAnalyzer.qualityModelVersion)
    }

    /// Label keys as rollup dimensions: five calls in one hour, labelled region eu (two), us
    /// (one), a number (one) and none (one). Configured, the rollups split
    /// them by region (`label.region`) with those counts, hour and day, and the calls without
    /// the label as `unknown`; not configured, there is no such dimension; a regrade that
    /// configures it adds it to every bucket, one that drops it removes it.
    func testConfiguredLabelKeysAreRollupDimensions() throws {
        let t0: Int64 = 1_700_000_000_000
        let regions: [(id: String, labels: JSONObject)] = [
            ("c1", ["region": "eu", "tenant": "acme"]), ("c2", ["region": "us"]), ("c3", ["region": "eu"]),
            ("c4", ["tenant": "acme"]), ("c5", ["region": 7]),
        ]
        let path = dir.appendingPathComponent("labelled.ndjson").path
        let w = try LogWriter(path: path)
        for (n, c) in regions.enumerated() {
            let ts = t0 + Int64(n) * 60_000
            try w.append(
                .callInfo(
                    call: c.id, ts: ts, direction: "outgoing", sdk: "test", sdkVersion: "1", app: "app", appVersion: "1",
                    platform: "web", network: "wifi", media: ["audio"], labels: c.labels))
            try w.append(.end(call: c.id, ts: ts + 30_000, reason: "terminatedLocally"))
        }
        try w.close()
        func rollups(_ db: String, _ dimension: String) throws -> [String: Int64] {
            let reader = try SQLiteReader(path: db)
            var out: [String: Int64] = [:]
            for row in try reader.connection.rows(
                "SELECT period, value, calls FROM rollups WHERE dimension = ? ORDER BY period, value", [.text(dimension)])
            {
                out["\(row[0].description) \(row[1].description)"] = row[2].int64
            }
            return out
        }
        let byRegion: [String: Int64] = [
            "day eu": 2, "day us": 1, "day 7": 1, "day unknown": 1, "hour eu": 2, "hour us": 1, "hour 7": 1, "hour unknown": 1,
        ]

        let plain = dir.appendingPathComponent("plain.sqlite").path
        try analyze([path], db: plain)
        XCTAssertEqual(try rollups(plain, "all"), ["day *": 5, "hour *": 5])
        XCTAssertEqual(try rollups(plain, "label.region"), [:], "not configured: no such dimension")
        XCTAssertEqual(try SQLiteReader(path: plain).connection.scalar("SELECT count(*) FROM rollups WHERE dimension LIKE 'label.%'")?.int64, 0)

        var labelled = AnalysisConfig()
        labelled.labelDimensions = ["region"]
        let db = dir.appendingPathComponent("labelled.sqlite").path
        try analyze([path], db: db, config: labelled)
        XCTAssertEqual(try settings(db).labelDimensions, ["region"])
        XCTAssertEqual(try rollups(db, "label.region"), byRegion)
        XCTAssertEqual(try rollups(db, "label.tenant"), [:], "only the keys configured")
        XCTAssertEqual(try rollups(db, "network"), ["day wifi": 5, "hour wifi": 5], "the other dimensions as before")

        // Another list is other settings: refused while calls are stored, taken by a regrade.
        var both = labelled
        both.labelDimensions = ["region", "tenant"]
        XCTAssertThrowsError(try analyze([path], db: db, config: both))
        try regrade(plain, config: both)
        XCTAssertEqual(try rollups(plain, "label.region"), byRegion)
        XCTAssertEqual(
            try rollups(plain, "label.tenant"), ["day acme": 2, "day unknown": 3, "hour acme": 2, "hour unknown": 3])
        try regrade(plain, config: AnalysisConfig())
        XCTAssertEqual(try rollups(plain, "label.region"), [:])
        XCTAssertEqual(try rollups(plain, "label.tenant"), [:])
    }

    func testARegradeThatCannotReadACallChangesNothing() throws {
        let files = try logs(calls: 40, files: 2)
        let db = dir.appendingPathComponent("damaged.sqlite").path
        try analyze(files, db: db)
        // The store is let go after each change: it holds the database's write lock.
        func change(_ sql: String, _ values: [SQLValue] = []) throws { try SQLiteStore(path: db).db.run(sql, values) }
        let victim = try XCTUnwrap(
            SQLiteStore(path: db, forWriting: false).db.scalar("SELECT call_id FROM call_material ORDER BY call_id LIMIT 1 OFFSET 30")?.string)
        let material = try XCTUnwrap(
            SQLiteStore(path: db, forWriting: false).db.scalar("SELECT material FROM call_material WHERE call_id = ?", [.text(victim)]))
        try change("UPDATE call_material SET material = x'00010203' WHERE call_id = ?", [.text(victim)])
        let before = try dump(db)
        XCTAssertThrowsError(try regrade(db, config: strict)) { error in
            XCTAssertTrue("\(error)".hasPrefix("\(db): the stored material of call \(victim) cannot be read ("), "\(error)")
            XCTAssertTrue("\(error)".hasSuffix("); nothing was changed"), "\(error)")
        }
        XCTAssertEqual(try dump(db), before)
        XCTAssertEqual(try settings(db), AnalysisConfig())

        // A write that fails half-way (here a trigger refuses one call, in the second batch of
        // 16 while the third is analysed) leaves the database as it was, too.
        try change("UPDATE call_material SET material = ? WHERE call_id = ?", [material, .text(victim)])
        let refused = try XCTUnwrap(
            SQLiteStore(path: db, forWriting: false).db.scalar("SELECT call_id FROM call_material ORDER BY call_id LIMIT 1 OFFSET 20")?.string)
        try change("CREATE TRIGGER refuse BEFORE INSERT ON calls WHEN NEW.call_id = '\(refused)' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")
        let beforeWrite = try dump(db)
        XCTAssertThrowsError(try regrade(db, config: strict)) { XCTAssertTrue("\($0)".contains("refused by the test"), "\($0)") }
        XCTAssertEqual(try dump(db), beforeWrite)
        XCTAssertEqual(try settings(db), AnalysisConfig())
        try change("DROP TRIGGER refuse")

        // A call without material cannot be regraded either: refused before anything is written.
        try change("DELETE FROM call_material WHERE call_id = ?", [.text(victim)])
        XCTAssertThrowsError(try regrade(db, config: strict)) {
            XCTAssertEqual("\($0)", "\(db): 1 call has no stored material (the inputs a regrade analyses again), so it cannot be regraded; nothing was changed")
        }
    }
}
