import Foundation
import Store
import TestSupport
import XCTest

/// PostgreSQL's `interval_rows` and `event_rows` partitioned by day (`PostgresPartitions`): days
/// are made as rows need them, `prune` drops whole days and deletes the edge day's rows of the
/// calls it removes, and a database from before partitions is upgraded in place. Each ends
/// with the rows SQLite holds for the same logs and the same removal.
extension PostgresStoreTests {
    static let dayMs: Int64 = 86_400_000

    /// Four days of simulated calls, in two files.
    func fourDays() throws -> URL {
        let logs = TestPaths.temporaryDirectory("pg-days").appendingPathComponent("logs")
        let sim = try Self.callstats(["simulate", "--calls", "160", "--files", "2", "--seed", "9", "--days", "4", "--out", logs.path])
        XCTAssertEqual(sim.status, 0, sim.err)
        return logs
    }

    func partitionDays(_ url: String, _ table: String) throws -> [Int64] {
        try scalar(
            url,
            """
            SELECT string_agg((substring(pg_get_expr(c.relpartbound, c.oid) from 'FROM \\(''?(-?[0-9]+)')::bigint / \(Self.dayMs))::text, ',' ORDER BY 1)
            FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = '\(table)'::regclass
            """
        ).split(separator: ",").compactMap { Int64($0) }.sorted()
    }

    func testRowsGoToTheDaysTheyFallInMadeAsNeeded() throws {
        let logs = try fourDays()
        let url = try server.createDatabase()
        XCTAssertEqual(try Self.callstats(["analyze", logs.path, "--db", url, "--quiet"]).status, 0)
        for (table, column) in [("interval_rows", "start_ts"), ("event_rows", "ts")] {
            XCTAssertEqual(try scalar(url, "SELECT count(*) FROM pg_partitioned_table WHERE partrelid = '\(table)'::regclass"), "1")
            let rowDays = try scalar(url, "SELECT string_agg(DISTINCT (\(column) / \(Self.dayMs))::text, ',') FROM \(table)")
                .split(separator: ",").compactMap { Int64($0) }
            XCTAssertEqual(rowDays.count, 4, "\(table): the simulation's four days")
            let today = Int64(Date().timeIntervalSince1970 * 1000) / Self.dayMs
            XCTAssertEqual(try partitionDays(url, table), Set(rowDays + [today, today + 1]).sorted(), "\(table): one day a partition")
            // Every row sits in its own day's partition.
            XCTAssertEqual(
                try scalar(
                    url,
                    """
                    SELECT count(*) FROM \(table) t JOIN pg_class c ON c.oid = t.tableoid
                    WHERE c.relname <> '\(table)_' || to_char(to_timestamp(t.\(column) / 1000) AT TIME ZONE 'UTC', 'YYYYMMDD')
                    """), "0")
        }
        let sqlite = logs.deletingLastPathComponent().appendingPathComponent("days.sqlite").path
        XCTAssertEqual(try Self.callstats(["analyze", logs.path, "--db", sqlite, "--quiet"]).status, 0)
        for t in try DatabaseComparison.compareAcrossStores(sqlite, url) {
            XCTAssertTrue(t.same, "\(t.name): \(t.onlyInFirst) only in SQLite, \(t.onlyInSecond) only in PostgreSQL")
        }
    }

    /// A cut-off inside the third day: the first two days' partitions are dropped, the third's
    /// keeps the rows of calls that started after the cut-off only, and the rest, the report's
    /// counts included, equal SQLite's call-by-call removal.
    func testPruneDropsWholeDaysAndDeletesTheEdgeDaysRows() throws {
        let logs = try fourDays()
        let url = try server.createDatabase()
        XCTAssertEqual(try Self.callstats(["analyze", logs.path, "--db", url, "--quiet"]).status, 0)
        let sqlite = logs.deletingLastPathComponent().appendingPathComponent("pruned.sqlite").path
        XCTAssertEqual(try Self.callstats(["analyze", logs.path, "--db", sqlite, "--quiet"]).status, 0)
        let firstDay = Int64(try scalar(url, "SELECT min(start_ts) / \(Self.dayMs) FROM calls"))!
        let cutoff = (firstDay + 2) * Self.dayMs + 6 * 3_600_000
        // The edge day holds rows of calls that go: it is pruned row by row.
        XCTAssertGreaterThan(
            Int(
                try scalar(
                    url,
                    "SELECT count(*) FROM interval_rows i JOIN calls c USING (call_key) WHERE c.start_ts < \(cutoff) AND i.start_ts >= \((firstDay + 2) * Self.dayMs)"
                )) ?? 0, 0)
        let kept = try scalar(url, "SELECT count(*) FROM intervals i JOIN calls c USING (call_id) WHERE c.start_ts >= \(cutoff)")
        let before = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(cutoff) / 1000))
        var reports: [String] = []
        for db in [sqlite, url] {
            let prune = try Self.callstats(["prune", "--db", db, "--before", before, "--json"])
            XCTAssertEqual(prune.status, 0, prune.err)
            // The removal's counts, without the database's name and size.
            reports.append(prune.out.replacingOccurrences(of: #""(database|file_bytes|free_bytes)":[^,]*,"#, with: "", options: .regularExpression))
        }
        XCTAssertEqual(reports[0], reports[1])
        XCTAssertTrue(reports[1].contains("\"intervals\":") && !reports[1].contains("\"intervals\":0,"), reports[1])
        XCTAssertFalse(try partitionDays(url, "interval_rows").contains { $0 < firstDay + 2 }, "whole days before the cut-off are dropped")
        XCTAssertFalse(try partitionDays(url, "event_rows").contains { $0 < firstDay + 2 })
        XCTAssertTrue(try partitionDays(url, "interval_rows").contains(firstDay + 2), "the edge day stays")
        XCTAssertEqual(try scalar(url, "SELECT count(*) FROM interval_rows"), kept, "only kept calls' rows remain")
        for t in try DatabaseComparison.compareAcrossStores(sqlite, url) {
            XCTAssertTrue(t.same, "\(t.name): \(t.onlyInFirst) only in SQLite, \(t.onlyInSecond) only in PostgreSQL")
        }
        // Later writes into a dropped day make it again.
        let again = try Self.callstats(["analyze", logs.path, "--db", url, "--force", "--quiet"])
        XCTAssertEqual(again.status, 0, again.err)
        XCTAssertTrue(try partitionDays(url, "interval_rows").contains(firstDay))
    }

    /// A database of schema 7, whose `interval_rows` and `event_rows` are plain tables, is
    /// upgraded by the next run to partitioned ones holding the same rows, and ends equal to a
    /// database made fresh from the same logs.
    func testAnUnpartitionedDatabaseIsUpgradedInPlace() throws {
        let logs = try fourDays()
        let files = try FileManager.default.contentsOfDirectory(atPath: logs.path).filter { $0.contains(".ndjson") }.sorted()
            .map { logs.appendingPathComponent($0).path }
        XCTAssertEqual(files.count, 2)
        let url = try server.createDatabase()
        let database = String(url.split(separator: "/").last!)
        XCTAssertEqual(try Self.callstats(["analyze", files[0], "--db", url, "--quiet"]).status, 0)
        let rows = try scalar(url, "SELECT count(*) FROM interval_rows")
        // Schema 7's layout: the same columns and indexes, unpartitioned.
        var layout = ""
        for (table, index) in [("interval_rows", "call_key"), ("event_rows", "call_key, ts")] {
            layout += """
                CREATE TABLE \(table)_plain (LIKE \(table));
                INSERT INTO \(table)_plain SELECT * FROM \(table);
                DROP TABLE \(table) CASCADE;
                ALTER TABLE \(table)_plain RENAME TO \(table);
                CREATE INDEX \(table)_call ON \(table)(\(index));

                """
        }
        try server.psql(layout + "UPDATE meta SET value = '7' WHERE key = 'schema_version';", database: database)
        XCTAssertEqual(try scalar(url, "SELECT count(*) FROM pg_partitioned_table"), "0")
        XCTAssertEqual(try scalar(url, "SELECT count(*) FROM interval_rows"), rows)

        let upgrade = try Self.callstats(["analyze", logs.path, "--db", url, "--json"])
        XCTAssertEqual(upgrade.status, 0, upgrade.err)
        XCTAssertTrue(upgrade.out.contains("\"upgraded_from\":7"), upgrade.out)
        XCTAssertEqual(try scalar(url, "SELECT count(*) FROM pg_partitioned_table"), "2")
        XCTAssertNotEqual(try scalar(url, "SELECT value FROM meta WHERE key = 'migration.v8-day-partitions'"), "")

        let fresh = try server.createDatabase()
        XCTAssertEqual(try Self.callstats(["analyze", files[0], "--db", fresh, "--quiet"]).status, 0)
        XCTAssertEqual(try Self.callstats(["analyze", logs.path, "--db", fresh, "--quiet"]).status, 0)
        let compared = try Self.callstats(["internal", "compare-databases", url, fresh])
        XCTAssertEqual(compared.status, 0, compared.out + compared.err)
        XCTAssertTrue(compared.out.contains("same rows in every table"), compared.out)
    }
}
