import Analysis
import CallLog
import Foundation
import Jobs
import MaterialCodec
import MaterialScanning
import Simulator
import SQLiteDatabase
import Store
import TestSupport
import XCTest

final class AnalyzeRunTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("ingest") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    func simulate(calls: Int, files: Int, seed: UInt64 = 3) throws -> URL {
        let logs = dir.appendingPathComponent("logs-\(seed)")
        var config = SimulatorConfiguration(calls: calls, seed: seed)
        config.files = files
        _ = try Simulator(config).write(to: logs.path) { _ in }
        return logs
    }

    func analyze(_ paths: [String], db: String) throws -> AnalyzeRun.Report {
        var o = AnalyzeRun.Options(paths: paths, database: db)
        o.callsPerTransaction = 7  // many small transactions: exercises the batch boundaries
        return try AnalyzeRun(options: o).run()
    }

    func dump(_ db: String) throws -> String { try DatabaseComparison.text(of: db, .init(intervals: .totalsPerStream)) }

    func testSecondRunChangesNothingAndDuplicatesAreRecognised() throws {
        let logs = try simulate(calls: 40, files: 3)
        let db = dir.appendingPathComponent("a.sqlite").path
        let first = try analyze([logs.path], db: db)
        XCTAssertEqual(first.callsInRun, 40)
        XCTAssertTrue(first.issueCounts.isEmpty, "\(first.firstIssues)")
        let before = try dump(db)
        let second = try analyze([logs.path], db: db)
        XCTAssertEqual(second.progress.filesDone, 0)
        XCTAssertEqual(second.alreadyIngested.count, 3)
        XCTAssertEqual(try dump(db), before)

        // A renamed copy is the same content: skipped.
        let copy = dir.appendingPathComponent("copy")
        try FileManager.default.copyItem(at: logs, to: copy)
        let third = try analyze([copy.path], db: db)
        XCTAssertEqual(third.alreadyIngested.count, 3)
        XCTAssertEqual(try dump(db), before)

        // Forced re-reading merges records with what is stored: still no double counting.
        var o = AnalyzeRun.Options(paths: [logs.path], database: db)
        o.force = true
        _ = try AnalyzeRun(options: o).run()
        XCTAssertEqual(try dump(db), before)
    }

    /// Simulated logs analysed into `v2.sqlite`, and that database as version 1 laid it out
    /// (`v1.sqlite`: intervals and events in tables of those names under the call id, no call
    /// key), with the results both must show.
    /// `expected`: the results as version 1 holds them (without the columns added since);
    /// `expectedUpgraded`: as the upgrade leaves them (those columns NULL until calls are
    /// written again).
    func version1Database(calls: Int, files: Int, seed: UInt64) throws -> (logs: URL, path: String, expected: String, expectedUpgraded: String) {
        let logs = try simulate(calls: calls, files: files, seed: seed)
        let current = dir.appendingPathComponent("current.sqlite").path
        _ = try analyze([logs.path], db: current)
        // The calls columns that later versions added (at the table's end, after `call_key`).
        // The columns that later versions added to calls (at the table's end, after `call_key`)
        // and streams; and the conversations version 4 links (none before the next run).
        let addedSince2 =
            CallsTable.columnDescriptions.filter { ($0.addedIn ?? 0) > 2 }.map { "calls.\($0.name)" }
            + StreamsTable.columnDescriptions.filter { ($0.addedIn ?? 0) > 2 }.map { "streams.\($0.name)" }
        func parts(_ column: String) -> (table: Substring, name: Substring) {
            (column.split(separator: ".")[0], column.split(separator: ".")[1])
        }
        let upgraded = dir.appendingPathComponent("upgraded.sqlite").path
        try FileManager.default.copyItem(atPath: current, toPath: upgraded)
        try Database(path: upgraded).execute(
            addedSince2.map { "UPDATE \(parts($0).table) SET \(parts($0).name) = NULL;" }.joined())
        // The upgrade rebuilds every rollup bucket, from calls whose added columns are NULL.
        try SQLiteStore(path: upgraded).rebuildAllRollups()
        let target = dir.appendingPathComponent("v1.sqlite").path
        try FileManager.default.copyItem(atPath: current, toPath: target)
        let db = try Database(path: target)
        try db.execute("DROP VIEW conversations; DROP VIEW conversation_legs; DROP TABLE call_conversations;")
        try db.execute(addedSince2.map { "ALTER TABLE \(parts($0).table) DROP COLUMN \(parts($0).name);" }.joined())
        try db.execute(
            "DROP VIEW daily_quality; ALTER TABLE rollups DROP COLUMN unmeasured;"
                + (Schema.rollupMetricColumns(addedIn: 4) + Schema.rollupMetricColumns(addedIn: 5)).map {
                    "ALTER TABLE rollups DROP COLUMN \($0);"
                }.joined())
        let expected = try dump(target)  // before it becomes version 1
        try db.execute(
            """
            PRAGMA journal_mode = DELETE;
            CREATE TABLE v1_intervals AS SELECT * FROM intervals;
            CREATE TABLE v1_events AS SELECT * FROM events;
            DROP VIEW intervals; DROP VIEW events; DROP TABLE interval_rows; DROP TABLE event_rows;
            ALTER TABLE v1_intervals RENAME TO intervals; ALTER TABLE v1_events RENAME TO events;
            CREATE INDEX intervals_call ON intervals(call_id);
            CREATE INDEX events_call ON events(call_id, ts);
            DROP INDEX calls_key; ALTER TABLE calls DROP COLUMN call_key;
            UPDATE meta SET value = '1' WHERE key = 'schema_version';
            """)
        return (logs, target, expected, try dump(upgraded))
    }

    /// An upgrade that fails part way (here: a table in the way of the new ones) changes nothing:
    /// the run stops with the error, the database is still version 1 with every row, and the
    /// next run, once the obstacle is gone, upgrades it.
    func testAFailedUpgradeLeavesVersion1AsItWas() throws {
        let (logs, old, expected, expectedUpgraded) = try version1Database(calls: 12, files: 2, seed: 22)
        try Database(path: old).execute("CREATE TABLE event_rows (x INTEGER)")  // not the upgrade's shape

        XCTAssertThrowsError(try analyze([logs.path], db: old)) { error in
            XCTAssertTrue(
                "\(error)".hasPrefix("\(old) has schema version 1; upgrading it to \(Schema.version) failed (step v2-call-keys) and changed nothing ("),
                "\(error)")
        }
        let db = try Database(path: old, readOnly: true)
        XCTAssertEqual(try db.scalar("SELECT value FROM meta WHERE key = 'schema_version'")?.string, "1")
        XCTAssertEqual(try db.scalar("SELECT type FROM sqlite_master WHERE name = 'intervals'")?.string, "table")
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'interval_rows'")?.int64, 0)
        XCTAssertEqual(try dump(old), expected)

        try Database(path: old).execute("DROP TABLE event_rows")
        XCTAssertEqual(try analyze([logs.path], db: old).upgradedFrom, 1)
        XCTAssertEqual(try dump(old), expectedUpgraded)
    }

    /// A database of schema version 1 (intervals and events filed under the call id, in tables
    /// of those names) is read as it is, and upgraded by the next run that writes to it: the
    /// same rows through the views, every row under its call's key, and runs after that write
    /// into it as into a new one.
    func testAVersion1DatabaseIsReadAndUpgraded() throws {
        let (logs, old, expected, expectedUpgraded) = try version1Database(calls: 24, files: 3, seed: 21)
        let current = dir.appendingPathComponent("current.sqlite").path
        XCTAssertEqual(try dump(old), expected, "version 1 is read as it is")

        // Upgraded by a run that has nothing new to read, which says so: before it starts (the
        // command line shows it, as the upgrade can take minutes) and in its report.
        var o1 = AnalyzeRun.Options(paths: [logs.path], database: old)
        o1.callsPerTransaction = 7
        let run = AnalyzeRun(options: o1)
        var announced: [Int] = []  // called on this thread, before the readers start
        run.onUpgrade = { announced.append($0) }
        let upgrade = try run.run()
        XCTAssertEqual(announced, [1])
        XCTAssertEqual(upgrade.callsInRun, 0)
        XCTAssertEqual(upgrade.upgradedFrom, 1)
        let store = try SQLiteStore(path: old, forWriting: false)
        let kinds = try store.db.rows("SELECT name, type FROM sqlite_master WHERE name IN ('intervals', 'events', 'interval_rows', 'event_rows') ORDER BY name")
            .map { "\(($0[0].string ?? "")):\(($0[1].string ?? ""))" }
        XCTAssertEqual(kinds, ["event_rows:table", "events:view", "interval_rows:table", "intervals:view"])
        XCTAssertEqual(try store.db.scalar("SELECT value FROM meta WHERE key = 'schema_version'")?.string, String(Schema.version))
        let steps = try store.db.rows("SELECT key FROM meta WHERE key LIKE 'migration.%' ORDER BY key").compactMap { $0[0].string }
        XCTAssertEqual(steps, Schema.migrations.map { "migration." + $0.name }, "each step is recorded")
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM calls WHERE call_key IS NULL")?.int64, 0)
        XCTAssertEqual(
            try store.db.scalar(
                """
                SELECT (SELECT count(*) FROM interval_rows WHERE call_key NOT IN (SELECT call_key FROM calls))
                     + (SELECT count(*) FROM event_rows WHERE call_key NOT IN (SELECT call_key FROM calls))
                """)?.int64, 0)
        XCTAssertEqual(try store.db.scalar("PRAGMA integrity_check")?.string, "ok")
        XCTAssertEqual(try dump(old), expectedUpgraded)

        // Written into again: every call replaced under a new key, the same results.
        var o = AnalyzeRun.Options(paths: [logs.path], database: old)
        o.force = true
        let again = AnalyzeRun(options: o)
        again.onUpgrade = { announced.append($0) }
        XCTAssertNil(try again.run().upgradedFrom, "upgraded once")
        XCTAssertEqual(announced, [1], "no upgrade announced for a current database")
        XCTAssertEqual(try dump(old), try dump(current))
        XCTAssertEqual(
            try store.db.scalar("SELECT count(*) FROM interval_rows")?.int64,
            try SQLiteStore(path: current, forWriting: false).db.scalar("SELECT count(*) FROM interval_rows")?.int64)
    }

    /// A database of version 4 (no sent direction in the rollups) is upgraded by the next run,
    /// which reads no new file: the rollups it rebuilds at its end say what a fresh analysis says.
    func testAVersion4DatabaseGetsTheSentDirectionsRollups() throws {
        let logs = try simulate(calls: 20, files: 1, seed: 5)
        let path = dir.appendingPathComponent("v4.sqlite").path
        _ = try analyze([logs.path], db: path)
        let sql = "SELECT period, bucket_ts, dimension, value, mos_sent_n, mos_sent_p50, loss_sent_mean, loss_sent_p95 FROM rollups ORDER BY 1, 2, 3, 4"
        let fresh = try SQLiteReader(path: path).connection.rows(sql).map { $0.map(\.description) }
        XCTAssertGreaterThan(fresh.filter { $0[4] != "0" && $0[5] != "NULL" }.count, 0, "the simulated calls have a sent direction")
        try OlderSchemas.makeVersion4(try Database(path: path))
        XCTAssertTrue(Schema.upgradeSummary(from: 4).contains("rollups.mos_sent_*"), Schema.upgradeSummary(from: 4))
        XCTAssertEqual(try analyze([logs.path], db: path).upgradedFrom, 4)
        let upgraded = try SQLiteReader(path: path).connection
        XCTAssertEqual(try upgraded.scalar("SELECT value FROM meta WHERE key = 'schema_version'")?.string, String(Schema.version))
        XCTAssertEqual(try upgraded.rows(sql).map { $0.map(\.description) }, fresh)
        XCTAssertEqual(try upgraded.scalar("SELECT count(*) FROM rollup_pending")?.int64, 0)
    }

    /// A database of version 3 (no `unmeasured` grade, no XR columns) is upgraded in place by the
    /// next run, which says what the upgrade adds; its calls keep their grades and its rollups
    /// still equal them, until `regrade` grades them again: then the calls without media
    /// statistics are `unmeasured`, in `calls` and in the rollups.
    func testAVersion3DatabaseIsUpgradedAndRegradeFindsItsUnmeasuredCalls() throws {
        let logs = try simulate(calls: 30, files: 1, seed: 43)
        // A call of quality callbacks alone: graded good by version 3.
        let extra = try LogWriter(path: logs.appendingPathComponent("callbacks.ndjson").path)
        let t0: Int64 = 1_795_000_000_000
        try extra.append(
            .callInfo(
                call: "callbacks-only", ts: t0, direction: "outgoing", sdk: "cisco-rem", sdkVersion: "1", app: "a", appVersion: "1",
                platform: "ios", network: "wifi", media: ["audio"]))
        try extra.append(.quality(call: "callbacks-only", ts: t0 + 5_000, score: 90, source: "cisco-rem"))
        try extra.append(.quality(call: "callbacks-only", ts: t0 + 60_000, score: 70, source: "cisco-rem"))
        try extra.close()
        let path = dir.appendingPathComponent("v3.sqlite").path
        _ = try analyze([logs.path], db: path)
        let fresh = try SQLiteReader(path: path).connection
        let unmeasured = try XCTUnwrap(try fresh.scalar("SELECT count(*) FROM calls WHERE grade = 'unmeasured'")?.int64)
        XCTAssertGreaterThanOrEqual(unmeasured, 1)
        XCTAssertEqual(try fresh.scalar("SELECT grade FROM calls WHERE call_id = 'callbacks-only'")?.string, "unmeasured")
        let goodBefore = try XCTUnwrap(try fresh.scalar("SELECT count(*) FROM calls WHERE grade = 'good'")?.int64)

        // As version 3 stored it: those calls good, no unmeasured count, no XR columns.
        let db = try Database(path: path)
        XCTAssertEqual(StreamsTable.columnDescriptions.filter { $0.name.hasPrefix("xr_") }.map(\.addedIn), Array(repeating: 4, count: 6))
        try db.execute(
            """
            UPDATE calls SET grade = 'good', grade_reason = 'no problems found' WHERE grade = 'unmeasured';
            UPDATE rollups SET good = good + unmeasured;
            """)
        try OlderSchemas.makeVersion3(db)
        XCTAssertTrue(Schema.upgradeSummary(from: 3).contains("rollups.unmeasured"), Schema.upgradeSummary(from: 3))
        XCTAssertTrue(Schema.upgradeSummary(from: 3).contains("streams.xr_mos_cq"), Schema.upgradeSummary(from: 3))

        var o = AnalyzeRun.Options(paths: [logs.path], database: path)
        o.callsPerTransaction = 7
        let run = AnalyzeRun(options: o)
        var announced: [Int] = []
        run.onUpgrade = { announced.append($0) }
        XCTAssertEqual(try run.run().upgradedFrom, 3)
        XCTAssertEqual(announced, [3])
        let upgraded = try SQLiteReader(path: path).connection
        XCTAssertEqual(try upgraded.scalar("SELECT value FROM meta WHERE key = 'schema_version'")?.string, String(Schema.version))
        XCTAssertEqual(try upgraded.scalar("SELECT count(*) FROM calls WHERE grade = 'unmeasured'")?.int64, 0, "grades kept")
        XCTAssertEqual(try upgraded.scalar("SELECT count(*) FROM streams WHERE xr_mos_cq IS NOT NULL")?.int64, 0)
        func rollupCounts(_ c: Database) throws -> [Int64?] {
            try c.rows("SELECT sum(good), sum(unmeasured) FROM rollups WHERE period = 'day' AND dimension = 'all'")[0].map(\.int64)
        }
        XCTAssertEqual(try rollupCounts(upgraded), [goodBefore + unmeasured, 0])
        XCTAssertEqual(try upgraded.scalar("SELECT count(*) FROM daily_quality WHERE unmeasured > 0")?.int64, 0)

        let regraded = try RegradeRun(options: .init(database: path)).run()
        XCTAssertEqual(regraded.gradesBefore["unmeasured"] ?? 0, 0)
        XCTAssertEqual(Int64(regraded.gradesAfter["unmeasured"] ?? 0), unmeasured)
        XCTAssertEqual(try rollupCounts(try SQLiteReader(path: path).connection), [goodBefore, unmeasured])
        XCTAssertEqual(
            try SQLiteReader(path: path).connection.scalar("SELECT sum(unmeasured) FROM daily_quality")?.int64, unmeasured)
    }

    /// Files analysed one run at a time (calls continuing across files and runs) end in the
    /// same database as one run over all of them, whatever the order.
    /// A call's `jitter_buffer_ms` is the time-weighted mean of its inbound audio intervals'
    /// `jitter_buffer_ms`, as its `jitter_ms` is of theirs; NULL when none has one.
    func testACallsJitterBufferDelayIsTheMeanOfItsInboundAudioIntervals() throws {
        let logs = try simulate(calls: 12, files: 1, seed: 31)
        let db = dir.appendingPathComponent("jitter-buffer.sqlite").path
        _ = try analyze([logs.path], db: db)
        let rows = try SQLiteReader(path: db).connection.rows(
            """
            SELECT c.call_id, c.jitter_buffer_ms,
                   (SELECT sum(i.jitter_buffer_ms * (i.end_ts - i.start_ts)) / sum(i.end_ts - i.start_ts)
                    FROM intervals i JOIN streams s ON s.call_id = i.call_id AND s.stream_id = i.stream_id
                    WHERE i.call_id = c.call_id AND s.direction = 'inbound' AND s.kind = 'audio'
                      AND i.jitter_buffer_ms IS NOT NULL)
            FROM calls c ORDER BY c.call_id
            """)
        XCTAssertEqual(rows.count, 12)
        XCTAssertGreaterThan(rows.filter { $0[1].double != nil }.count, 0, "some simulated call has a jitter buffer")
        for row in rows {
            let id = row[0].string ?? "?"
            guard let expected = row[2].double else {
                XCTAssertEqual(row[1], .null, id)
                continue
            }
            let stored = try XCTUnwrap(row[1].double, id)
            XCTAssertEqual(stored, expected, accuracy: 1e-9 * max(1, expected), id)
        }
    }

    func testIncrementalRunsEqualOneRun() throws {
        let logs = try simulate(calls: 60, files: 4, seed: 9)
        let files = try FileManager.default.contentsOfDirectory(atPath: logs.path).sorted().map { logs.appendingPathComponent($0).path }
        let once = dir.appendingPathComponent("once.sqlite").path
        let report = try analyze([logs.path], db: once)
        XCTAssertGreaterThan(report.callsInRun, 0)
        let split = dir.appendingPathComponent("split.sqlite").path
        for f in files.reversed() { _ = try analyze([f], db: split) }
        XCTAssertEqual(try dump(split), try dump(once))
    }

    /// A run stopped part way (here: only some files read, as after a kill between commits)
    /// is completed by the next run to exactly the clean result.
    func testInterruptedRunIsCompletedByTheNext() throws {
        let logs = try simulate(calls: 30, files: 3, seed: 5)
        let files = try FileManager.default.contentsOfDirectory(atPath: logs.path).sorted().map { logs.appendingPathComponent($0).path }
        let clean = dir.appendingPathComponent("clean.sqlite").path
        _ = try analyze([logs.path], db: clean)
        let resumed = dir.appendingPathComponent("resumed.sqlite").path
        _ = try analyze([files[1]], db: resumed)
        _ = try analyze([logs.path], db: resumed)
        XCTAssertEqual(try dump(resumed), try dump(clean))
    }

    /// Rollups are rebuilt once, at the end of a run, from the buckets marked pending as calls
    /// were committed. A run that stopped after committing calls leaves marks, and the next run
    /// rebuilds those buckets even when it has no new file to read.
    func testPendingRollupsAreRebuiltByTheNextRun() throws {
        let logs = try simulate(calls: 30, files: 3, seed: 9)
        let db = dir.appendingPathComponent("a.sqlite").path
        _ = try analyze([logs.path], db: db)
        let complete = try dump(db)
        do {  // the store's lock is released at the end of this scope
            let store = try SQLiteStore(path: db)
            XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM rollup_pending")?.int64, 0)
            let buckets = try store.db.rows("SELECT period, bucket_ts FROM rollups WHERE dimension = 'all'")
            XCTAssertFalse(buckets.isEmpty)
            // What a stopped run leaves: committed calls, marked buckets, rollups not yet rebuilt.
            for row in buckets { try store.db.run("INSERT INTO rollup_pending(period, bucket_ts) VALUES (?, ?)", [row[0], row[1]]) }
            try store.db.execute("DELETE FROM rollups")
        }

        let next = try analyze([logs.path], db: db)
        XCTAssertEqual(next.progress.filesDone, 0, "nothing new to read")
        XCTAssertEqual(try dump(db), complete)
        XCTAssertEqual(try SQLiteStore(path: db, forWriting: false).db.scalar("SELECT count(*) FROM rollup_pending")?.int64, 0)
    }
    /// A call continued by new records is merged with its stored material; when that material
    /// cannot be read (damaged, missing) the run stops and names the call rather than replace
    /// the stored call with only its new part.
    func testUnreadableStoredMaterialStopsTheRunAndKeepsTheDatabase() throws {
        let logs = try simulate(calls: 30, files: 3, seed: 5)
        let files = try FileManager.default.contentsOfDirectory(atPath: logs.path).sorted().map { logs.appendingPathComponent($0).path }
        for damage in ["UPDATE call_material SET material = x'00'", "DELETE FROM call_material"] {
            let db = dir.appendingPathComponent("stored-\(damage.prefix(6)).sqlite").path
            _ = try analyze([files[0]], db: db)
            do {
                let store = try SQLiteStore(path: db)
                try store.db.execute(damage)
            }
            let before = try dump(db)
            XCTAssertThrowsError(try analyze([files[1]], db: db), damage) { error in
                guard let e = error as? StoredCallError else { return XCTFail("\(error)") }
                XCTAssertTrue(e.description.contains(e.callID))
                XCTAssertEqual(
                    try? SQLiteStore(path: db, forWriting: false).db.scalar("SELECT count(*) FROM calls WHERE call_id = ?", [.text(e.callID)])?.int64, 1)
            }
            XCTAssertEqual(try dump(db), before, damage)
            XCTAssertEqual(try SQLiteStore(path: db, forWriting: false).db.scalar("SELECT count(*) FROM ingested_files")?.int64, 1, damage)
        }
    }

    /// A log with damage keeps every valid record, and reports the rest by file and line.
    func testDamagedFileKeepsValidRecords() throws {
        let logs = try simulate(calls: 10, files: 1, seed: 11)
        let file = try FileManager.default.contentsOfDirectory(atPath: logs.path).first!
        let path = logs.appendingPathComponent(file).path
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes.removeLast(bytes.count / 3)  // cut the last third, as a crash would
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let db = dir.appendingPathComponent("cut.sqlite").path
        let report = try analyze([logs.path], db: db)
        XCTAssertEqual(report.issueCounts["truncated file"], 1)
        XCTAssertGreaterThan(report.callsInRun, 0)
        XCTAssertTrue(report.firstIssues.contains { $0.file == path && $0.line != nil })
    }

    /// A file of garbage is counted whole, but only its first problems are handed over one by
    /// one (shown and kept); the rest are counted by the reader. Valid records between them are
    /// kept. Read by one reader or shared by three, the counts are the same.
    func testManyBadLinesAreCountedNotHandedOverOneByOne() throws {
        let logs = dir.appendingPathComponent("garbage")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        let good = LogRecord(kind: .event, call: "kept-call", ts: 1_700_000_000_000, body: ["action": "callMetric", "type": "callCreate"])
        let text = String(repeating: "x\n", count: 3_000) + good.jsonLine + "\n" + String(repeating: "{}\n", count: 2_000)
        try text.write(to: logs.appendingPathComponent("garbage.ndjson"), atomically: true, encoding: .utf8)
        for (share, readers) in [(false, 1), (true, 3)] {
            let db = dir.appendingPathComponent("garbage-\(readers).sqlite").path
            var o = AnalyzeRun.Options(paths: [logs.path], database: db)
            o.issuesHandedOver = 10
            o.shareFiles = share
            o.readers = readers
            let run = AnalyzeRun(options: o)
            let handedOver = LockedCounter()
            run.onIssue = { _ in handedOver.add() }
            let report = try run.run()
            XCTAssertEqual(report.issueCounts, ["invalid record": 5_000], "\(readers) readers")
            XCTAssertEqual(report.progress.records, 1)
            XCTAssertEqual(report.callsInRun, 1)
            XCTAssertLessThanOrEqual(handedOver.value, 10 * readers, "\(readers) readers")
            XCTAssertGreaterThanOrEqual(handedOver.value, 10)
            XCTAssertEqual(report.firstIssues.first?.line, 1)
            let skipped = try SQLiteStore(path: db, forWriting: false).db.scalar("SELECT skipped FROM ingested_files")?.int64
            XCTAssertEqual(skipped, 5_000)
        }
    }

    /// A hand-off of one call at a time (the memory check's setting) gives the database of the
    /// default hand-off: the writer is woken at the queue's capacity, never waits for more.
    func testAHandOffOfOneCallGivesTheSameDatabase() throws {
        let logs = try simulate(calls: 30, files: 2, seed: 17)
        var dumps: [String] = []
        for capacity in [2_048, 1] {
            let db = dir.appendingPathComponent("hand-off-\(capacity).sqlite").path
            var o = AnalyzeRun.Options(paths: [logs.path], database: db)
            o.readers = 1
            o.handOffCapacity = capacity
            let report = try AnalyzeRun(options: o).run()
            XCTAssertEqual(report.callsInRun, 30)
            dumps.append(try dump(db))
        }
        XCTAssertEqual(dumps[0], dumps[1])
    }

    /// One file read by several readers side by side, each taking its share of the calls, gives
    /// the database, the ledger entry and the issues of one reader taking the whole file.
    func testFileSharedByReadersEqualsOneReader() throws {
        let logs = try simulate(calls: 40, files: 1, seed: 13)
        let file = logs.appendingPathComponent(try FileManager.default.contentsOfDirectory(atPath: logs.path).first!)
        // Damage every reader sees: a plain-text line after the frames, and a garbage frame.
        var bytes = [UInt8](try Data(contentsOf: file))
        bytes += [0x28, 0xB5, 0x2F, 0xFD] + [UInt8](repeating: 0x41, count: 64)
        try Data(bytes).write(to: file)
        let plain = logs.appendingPathComponent("more.ndjson")
        let record = LogRecord(kind: .event, call: "late-call", ts: 1_700_000_000_000, body: ["action": "callMetric", "type": "callCreate"])
        try (record.jsonLine + "\nnot json\n{\"v\":1,\"kind\":\"event\"}\n").write(to: plain, atomically: true, encoding: .utf8)

        func run(share: Bool, readers: Int, db: String) throws -> (AnalyzeRun.Report, String) {
            var o = AnalyzeRun.Options(paths: [logs.path], database: db)
            o.shareFiles = share
            o.readers = readers
            o.callsPerTransaction = 7
            let report = try AnalyzeRun(options: o).run()
            let ledger = try SQLiteStore(path: db, forWriting: false).db
                .rows("SELECT path, records, skipped, calls FROM ingested_files ORDER BY path")
                .map { $0.map(\.description).joined(separator: "|") }.joined(separator: "\n")
            return (report, try dump(db) + ledger)
        }
        let (whole, wholeDump) = try run(share: false, readers: 1, db: dir.appendingPathComponent("whole.sqlite").path)
        let (shared, sharedDump) = try run(share: true, readers: 3, db: dir.appendingPathComponent("shared.sqlite").path)
        XCTAssertEqual(whole.callsInRun, 41)
        XCTAssertFalse(whole.issueCounts.isEmpty)
        XCTAssertEqual(shared.callsInRun, whole.callsInRun)
        XCTAssertEqual(shared.issueCounts, whole.issueCounts)
        XCTAssertEqual(shared.progress.records, whole.progress.records)
        XCTAssertEqual(shared.progress.textBytes, whole.progress.textBytes)
        XCTAssertEqual(sharedDump, wholeDump)
        XCTAssertEqual(
            Set(shared.firstIssues.map { "\($0.file):\($0.line ?? -1):\($0.category)" }),
            Set(whole.firstIssues.map { "\($0.file):\($0.line ?? -1):\($0.category)" }))
    }

    /// A run over one file shows what has been read of it so far, whether one reader reads it
    /// or several share it, and ends with the ledger's figures. (That a reader tells its lines
    /// in parts is `ReadProgressTests.testAReaderTellsItsProgressInParts`.)
    func testProgressCountsWithinOneFile() throws {
        let logs = try simulate(calls: 120, files: 1, seed: 15)
        let file = try XCTUnwrap(LogFiles.find([logs.path]).files.first)
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
        for readers in [1, 2] {
            let db = dir.appendingPathComponent("progress-\(readers).sqlite").path
            var o = AnalyzeRun.Options(paths: [logs.path], database: db)
            o.readers = readers
            o.progressInterval = 0
            let run = AnalyzeRun(options: o)
            let seen = ProgressLog()  // onProgress runs on the thread that called `run`
            run.onProgress = { p in seen.all.append(p) }
            let report = try run.run()
            let during = seen.all.filter { $0.filesDone == 0 }
            XCTAssertTrue(during.contains { $0.records > 0 && $0.textBytes > 0 && $0.bytesRead > 0 }, "readers \(readers)")
            XCTAssertTrue(during.allSatisfy { $0.bytesToRead == size && $0.bytesRead <= size }, "readers \(readers)")
            XCTAssertTrue(
                during.allSatisfy { $0.records <= report.progress.records && $0.textBytes <= report.progress.textBytes },
                "readers \(readers)")
            let ledger = try SQLiteStore(path: db, forWriting: false).db.rows("SELECT records FROM ingested_files")
            XCTAssertEqual(ledger.map { $0[0].int64 }, [Int64(report.progress.records)])
            XCTAssertEqual(report.progress.bytesRead, size)
        }
    }

    /// A file nothing could be read from is reported on every run, not entered in the ledger
    /// and then skipped as ingested; a readable file beside it is ingested once.
    func testAFileThatCannotBeReadIsReportedAgainNextRun() throws {
        let logs = try simulate(calls: 5, files: 1, seed: 16)
        let gz = logs.appendingPathComponent("old.ndjson.xz").path
        try Data([0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00] + Array("{}\n".utf8)).write(to: URL(fileURLWithPath: gz))
        let db = dir.appendingPathComponent("refused.sqlite").path
        for run in 1...2 {
            let report = try analyze([logs.path, gz], db: db)
            XCTAssertEqual(report.issueCounts, ["unreadable file": 1], "run \(run)")
            XCTAssertEqual(
                report.alreadyIngested.map(\.file), run == 1 ? [] : [try XCTUnwrap(LogFiles.find([logs.path]).files.first)],
                "run \(run)")
        }
        let ledger = try SQLiteStore(path: db, forWriting: false).db.rows("SELECT path FROM ingested_files").compactMap { $0[0].string }
        XCTAssertFalse(ledger.contains(gz))
        XCTAssertEqual(ledger.count, 1)
    }

    /// The ledger counts each file's calls: the distinct call ids of its records, a call that
    /// ends and comes back in the same file once.
    func testLedgerCountsEachFilesDistinctCalls() throws {
        let logs = try simulate(calls: 30, files: 3, seed: 14)
        _ = try analyze([logs.path], db: dir.appendingPathComponent("ledger.sqlite").path)
        let ledger = try SQLiteStore(path: dir.appendingPathComponent("ledger.sqlite").path, forWriting: false).db
            .rows("SELECT path, calls FROM ingested_files")
        XCTAssertEqual(ledger.count, 3)
        for row in ledger {
            let path = try XCTUnwrap(row[0].string)
            var calls = Set<String>()
            LogLineReader(path: path).forEachLine(
                { line, _ in
                    if let r = try? LogRecord(parsing: line), r.kind != .agent { calls.insert(r.call) }
                }, issue: { _ in })
            XCTAssertGreaterThan(calls.count, 0, path)
            XCTAssertEqual(row[1].int64, Int64(calls.count), path)
        }
    }

    /// The default split: whole files, then the last `count % readers` files shared.
    func testWholeFilesThenSharedTailEqualsOneReader() throws {
        let logs = try simulate(calls: 30, files: 5, seed: 14)  // calls continue across files
        func run(readers: Int, share: Bool?, _ name: String) throws -> String {
            var o = AnalyzeRun.Options(paths: [logs.path], database: dir.appendingPathComponent(name).path)
            o.readers = readers
            o.shareFiles = share
            let report = try AnalyzeRun(options: o).run()
            XCTAssertEqual(report.progress.filesDone, 5, name)
            let ledger = try SQLiteStore(path: o.database, forWriting: false).db
                .rows("SELECT path, records, skipped, calls FROM ingested_files ORDER BY path")
                .map { $0.map(\.description).joined(separator: "|") }.joined(separator: "\n")
            return try dump(o.database) + ledger
        }
        let one = try run(readers: 1, share: false, "one.sqlite")
        XCTAssertEqual(try run(readers: 2, share: nil, "two.sqlite"), one)
        XCTAssertEqual(try run(readers: 3, share: nil, "three.sqlite"), one)
        XCTAssertEqual(try run(readers: 7, share: nil, "seven.sqlite"), one)
    }

    /// A call continued in later files is written once per part; the summary counts it once,
    /// with the grade its last part left in the database.
    func testSummaryCountsEachCallOnceWithItsFinalGrade() throws {
        let logs = try simulate(calls: 30, files: 5, seed: 14)
        let db = dir.appendingPathComponent("grades.sqlite").path
        var o = AnalyzeRun.Options(paths: [logs.path], database: db)
        o.readers = 1
        let report = try AnalyzeRun(options: o).run()
        XCTAssertGreaterThan(report.progress.callsWritten, report.callsInRun, "no call was written in parts")
        let stored = try SQLiteStore(path: db, forWriting: false).db.rows("SELECT grade, count(*) FROM calls GROUP BY grade")
        var expected: [Grade: Int] = [:]
        for row in stored { expected[Grade(rawValue: row[0].string!)!] = Int(row[1].int64!) }
        XCTAssertEqual(report.gradesInRun, expected)
        XCTAssertEqual(report.callsInRun, expected.values.reduce(0, +))
    }

    func testAgentRecordsAreReadButMakeNoCall() throws {
        let logs = try simulate(calls: 3, files: 1, seed: 5)
        let extra = logs.appendingPathComponent("agent.ndjson").path
        let note = LogRecord(
            kind: .agent, call: "-", ts: 1_700_000_000_000,
            body: ["dropped": ["stats": 12, "diskFull": 3], "files": ["deleted": 1]])
        try (note.jsonLine + "\n").write(toFile: extra, atomically: true, encoding: .utf8)
        let db = dir.appendingPathComponent("agent.sqlite").path
        let report = try analyze([logs.path], db: db)
        XCTAssertEqual(report.issueCounts, [:])
        let store = try SQLiteStore(path: db, forWriting: false)
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM calls")?.int64, 3)
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM calls WHERE call_id = '-'")?.int64, 0)
        XCTAssertEqual(try store.db.scalar("SELECT records FROM ingested_files WHERE path LIKE '%agent.ndjson'")?.int64, 1)
    }

    func testPseudonymizedRunStoresNoIdentifierAndScoresTheSame() throws {
        let logs = try simulate(calls: 8, files: 2, seed: 21)  // calls continue across the two files
        let extra = logs.appendingPathComponent("people.ndjson").path
        let lines = [
            LogRecord(
                kind: .call, call: "alice-bob-1", ts: 1_700_000_000_000,
                body: [
                    "direction": "outgoing", "user": "alice@example.com", "callee": "+15551234567",
                    "sdkVersion": "1.2.3.4", "labels": ["userId": "u-991", "region": "eu"],
                ]),
            LogRecord(
                kind: .event, call: "alice-bob-1", ts: 1_700_000_001_000,
                body: ["action": "ipChange", "type": "ipChangeStarted", "detail": ["from": "192.0.2.77", "to": "2001:db8::5"]]),
            LogRecord(
                kind: .end, call: "alice-bob-1", ts: 1_700_000_009_000,
                body: ["reason": "failed", "sipReason": "Q.850;cause=16 from 198.51.100.9"]),
        ]
        try (lines.map(\.jsonLine).joined(separator: "\n") + "\n").write(toFile: extra, atomically: true, encoding: .utf8)
        let key = try XCTUnwrap(SipHashKey(hex: "000102030405060708090a0b0c0d0e0f"))

        let plainDB = dir.appendingPathComponent("plain.sqlite").path
        _ = try analyze([logs.path], db: plainDB)
        let privateDB = dir.appendingPathComponent("private.sqlite").path
        var o = AnalyzeRun.Options(paths: [logs.path], database: privateDB)
        o.pseudonymizer = CallPseudonymizer(key: key)
        _ = try AnalyzeRun(options: o).run()

        let plain = try SQLiteStore(path: plainDB, forWriting: false)
        let hidden = try SQLiteStore(path: privateDB, forWriting: false)
        let originalIDs = try plain.db.rows("SELECT call_id FROM calls").compactMap { $0[0].string }
        XCTAssertEqual(originalIDs.count, 9)
        // Same calls, same scores: only the names changed.
        let scores = "SELECT grade, round(mos_cq, 6), round(loss_pct, 6), duration_ms FROM calls ORDER BY 1, 2, 3, 4"
        XCTAssertEqual(try hidden.db.rows(scores).map { $0.map(\.description) }, try plain.db.rows(scores).map { $0.map(\.description) })
        XCTAssertEqual(try hidden.db.scalar("SELECT count(*) FROM calls WHERE call_id LIKE 'anon-%'")?.int64, 9)

        // Nothing identifying anywhere in the database, stored call material included.
        var text = try dump(privateDB)
        for row in try hidden.db.rows("SELECT material FROM call_material") {
            guard case .blob(let bytes) = row[0] else { continue }
            let m = try CallMaterial(decoding: bytes)
            text += m.callID + String(describing: m.info) + String(describing: m.end) + m.events.map(\.detailJSON).joined()
        }
        for secret in originalIDs + ["alice", "+15551234567", "u-991", "192.0.2.77", "2001:db8::5", "198.51.100.9"] {
            XCTAssertFalse(text.contains(secret), "\(secret) is still in the database")
        }
        XCTAssertTrue(text.contains("1.2.3.4"), "versions are not addresses")

        // The same key again maps to the same pseudonyms: a forced second run changes nothing.
        let before = try dump(privateDB)
        o.force = true
        _ = try AnalyzeRun(options: o).run()
        XCTAssertEqual(try dump(privateDB), before)
    }
}

/// The progress reports of one run, kept by the test.
private final class ProgressLog: @unchecked Sendable {
    var all: [AnalyzeRun.Progress] = []
}

/// A count that several threads add to.
final class LockedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }
    func add() { lock.lock(); n += 1; lock.unlock() }
}
