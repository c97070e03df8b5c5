import Foundation
import PostgresDatabase

/// PostgreSQL's tables that grow with time, `interval_rows` and `event_rows`, are partitioned
/// by the UTC day of their own timestamp (`start_ts`, `ts`): one partition a day, named
/// `interval_rows_20261207`, holding `[day, day + 1)` in epoch ms. `prune` then drops whole
/// days, and deletes row by row only the days its cut-off falls inside.
///
/// What must stay true:
/// - Every row of a call lies within the call's `[start_ts, end_ts]` (the analysis makes the
///   call's start its first record's time, or an earlier first packet, and its end the last
///   record's time; `PostgresStore.write` checks it in debug builds). So a day wholly before a
///   cut-off holds rows of calls that started before it only, and a call's rows are found in
///   the days its bounds cover.
/// - A row is never written to a day without its partition: the writer creates the days its
///   queued rows need before it sends them (`PostgresStore.makeNeededPartitions`), and
///   today's and tomorrow's at start.
/// - Days are created with `ATTACH PARTITION`, which takes only a SHARE UPDATE EXCLUSIVE lock on
///   the tables, in a short transaction of its own: writers in the middle of a transaction are
///   not waited for, and two creators of one day are ordered by that lock (the second finds
///   the day made). Dropping a day takes the tables exclusively (`prune`), in the removal's
///   transaction.
package enum PostgresPartitions {
    static let dayMs: Int64 = 86_400_000

    /// The partitioned tables and the column each is partitioned by.
    static let tables: [(name: String, column: String)] = [
        (IntervalsTable.name, "start_ts"), (EventsTable.name, "ts"),
    ]

    /// The UTC day (days since 1970-01-01) that `ts` (epoch ms) falls in.
    static func day(_ ts: Int64) -> Int64 { ts >= 0 ? ts / dayMs : -((-ts - 1) / dayMs) - 1 }

    /// The epoch-ms range `[from, to)` of whole days around a call's bounds: where its rows
    /// are, with a day's margin either side.
    static func dayBounds(_ start: Int64, _ end: Int64) -> (from: Int64, to: Int64) {
        ((day(start) - 1) * dayMs, (day(max(start, end)) + 2) * dayMs)
    }

    /// `interval_rows_20261207` for the day `day` of `table` (quoted where it is used).
    static func partitionName(_ table: String, day: Int64) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: Double(day) * 86_400))
        return table + "_" + String(format: "%04d%02d%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0)
    }

    /// The days `table` has partitions for, read from their bounds, and their names.
    static func partitions(of table: String, _ db: PostgresConnection) throws -> [Int64: String] {
        let r = try db.query(
            """
            SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = to_regclass($1)
            """, [.text(table)])
        var found: [Int64: String] = [:]
        for row in r.rows {
            // "FOR VALUES FROM ('1765065600000') TO ('1765152000000')", with or without quotes
            guard let name = row[0], let bound = row[1], let open = bound.range(of: "FROM (") else { continue }
            let digits = bound[open.upperBound...].prefix { $0 != ")" }.filter { $0 == "-" || $0.isNumber }
            if let ts = Int64(digits) { found[day(ts)] = name }
        }
        return found
    }

    static func days(of table: String, _ db: PostgresConnection) throws -> Set<Int64> {
        Set(try partitions(of: table, db).keys)
    }

    /// Creates the partitions of the days `needed` names per table that the tables lack, in the
    /// caller's transaction (which should be short: other creators wait for its end).
    static func create(_ needed: [String: Set<Int64>], _ db: PostgresConnection) throws {
        guard needed.values.contains(where: { !$0.isEmpty }) else { return }
        // Both tables at once, always in the same order: two creators that each took one and
        // then wanted the other would deadlock.
        try db.execute("LOCK TABLE \(tables.map(\.name).joined(separator: ", ")) IN SHARE UPDATE EXCLUSIVE MODE")
        for (table, _) in tables {
            guard let wanted = needed[table], !wanted.isEmpty else { continue }
            let present = try days(of: table, db)
            for day in wanted.sorted() where !present.contains(day) {
                let partition = partitionName(table, day: day)
                try db.execute(
                    """
                    CREATE TABLE "\(partition)" (LIKE \(table) INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
                    ALTER TABLE \(table) ATTACH PARTITION "\(partition)" FOR VALUES FROM (\(day * dayMs)) TO (\((day + 1) * dayMs));
                    """)
            }
        }
    }

    /// The statements that turn the unpartitioned `interval_rows` and `event_rows` of a
    /// database made before schema 8 into partitioned ones holding the same rows. The views
    /// that read them are dropped first (the upgrade makes them again).
    static var upgradeToPartitions: String {
        var sql = Schema.viewNames.map { "DROP VIEW IF EXISTS \($0) CASCADE;" }
        for (table, column) in tables {
            sql.append(
                """
                DO $$
                DECLARE d BIGINT;
                BEGIN
                    IF EXISTS (SELECT 1 FROM pg_partitioned_table WHERE partrelid = to_regclass('\(table)')) THEN RETURN; END IF;
                    ALTER TABLE \(table) RENAME TO \(table)_unpartitioned;
                    ALTER INDEX IF EXISTS \(table)_call RENAME TO \(table)_unpartitioned_call;
                    \(createTable(table))
                    FOR d IN SELECT DISTINCT floor(\(column)::numeric / \(dayMs))::bigint FROM \(table)_unpartitioned LOOP
                        EXECUTE format('CREATE TABLE %I PARTITION OF \(table) FOR VALUES FROM (%s) TO (%s)',
                            '\(table)_' || to_char(to_timestamp(d * 86400) AT TIME ZONE 'UTC', 'YYYYMMDD'), d * \(dayMs), (d + 1) * \(dayMs));
                    END LOOP;
                    INSERT INTO \(table) SELECT * FROM \(table)_unpartitioned;
                    DROP TABLE \(table)_unpartitioned;
                END $$;
                """)
        }
        return sql.joined(separator: "\n")
    }

    /// The table and its index, partitioned by day.
    static func createTable(_ name: String) -> String {
        switch name {
        case IntervalsTable.name:
            """
            CREATE TABLE IF NOT EXISTS interval_rows (
                \(IntervalsTable.columnDefinitions(postgres: true))
            ) PARTITION BY RANGE (start_ts);
            CREATE INDEX IF NOT EXISTS interval_rows_call ON interval_rows(call_key);
            """
        default:
            """
            CREATE TABLE IF NOT EXISTS event_rows (
                \(EventsTable.columnDefinitions(postgres: true))
            ) PARTITION BY RANGE (ts);
            CREATE INDEX IF NOT EXISTS event_rows_call ON event_rows(call_key, ts);
            """
        }
    }
}
