import Foundation
import PostgresDatabase

/// The schema in PostgreSQL: the tables and views of `Data/SCHEMA.md`, with the column lists of
/// `ResultTables.swift` mapped to PostgreSQL types (`ColumnValue.postgresType`: TEXT, BIGINT,
/// DOUBLE PRECISION, BYTEA), so that the same logs give the same rows as in SQLite. The views
/// answer the same questions with PostgreSQL's functions.
enum PostgresSchema {
    /// The advisory lock key (`pg_advisory_xact_lock`) under which the schema is created or
    /// upgraded: two workers starting at once would otherwise race to create the same tables.
    static let schemaLock: Int64 = 0x6361_6c6c_0001
    /// The advisory lock key under which commits and rollup rebuilds are serialised
    /// (`PostgresStore.commit`, `refreshPendingRollups`).
    static let commitLock: Int64 = 0x6361_6c6c_0002
    /// The advisory lock key every writing transaction holds shared (`PostgresStore.begin`) and
    /// a removal holds exclusively (`removeListedCalls`): a removal waits for the writes in
    /// progress and new ones wait for it, so no writer merges into a call what it read of it
    /// before the call was removed. One lock, where a lock per removed call would need one
    /// lock-table entry each (a week of calls exhausts `max_locks_per_transaction`).
    static let removalLock: Int64 = 0x6361_6c6c_0003

    static var tables: String {
        """
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        CREATE TABLE IF NOT EXISTS ingested_files (
            path TEXT NOT NULL, fingerprint TEXT NOT NULL PRIMARY KEY, size BIGINT NOT NULL, mtime BIGINT NOT NULL,
            records BIGINT NOT NULL, skipped BIGINT NOT NULL, calls BIGINT NOT NULL, ingested_at BIGINT NOT NULL
        );

        CREATE TABLE IF NOT EXISTS calls (
            \(CallsTable.columnDefinitions(postgres: true))
        );
        CREATE INDEX IF NOT EXISTS calls_start ON calls(start_ts);
        CREATE UNIQUE INDEX IF NOT EXISTS calls_key ON calls(call_key);
        -- Each writer takes a block of 1,024 filing numbers at a time: unique across workers.
        CREATE SEQUENCE IF NOT EXISTS call_keys INCREMENT BY 1024;

        CREATE TABLE IF NOT EXISTS streams (
            \(StreamsTable.columnDefinitions(postgres: true)),
            PRIMARY KEY (call_id, stream_id)
        );

        -- Partitioned by day (PostgresPartitions).
        \(PostgresPartitions.createTable(IntervalsTable.name))

        \(PostgresPartitions.createTable(EventsTable.name))

        CREATE TABLE IF NOT EXISTS peer_connections (
            \(PeerConnectionsTable.columnDefinitions(postgres: true)),
            PRIMARY KEY (call_id, pc_id)
        );

        CREATE TABLE IF NOT EXISTS findings (
            \(FindingsTable.columnDefinitions(postgres: true))
        );
        CREATE INDEX IF NOT EXISTS findings_call ON findings(call_id);
        CREATE INDEX IF NOT EXISTS findings_code ON findings(code, start_ts);

        CREATE TABLE IF NOT EXISTS call_material (
            \(MaterialTable.columnDefinitions(postgres: true))
        );
        -- Material is compressed already: stored out of line without trying to compress it again.
        ALTER TABLE call_material ALTER COLUMN material SET STORAGE EXTERNAL;

        CREATE TABLE IF NOT EXISTS call_conversations (
            call_id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, linked_by TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS call_conversations_id ON call_conversations(conversation_id);

        \(ConferenceSchema.tables(postgres: true))

        CREATE TABLE IF NOT EXISTS rollup_pending (
            period TEXT NOT NULL, bucket_ts BIGINT NOT NULL, PRIMARY KEY (period, bucket_ts)
        );

        CREATE TABLE IF NOT EXISTS rollups (
            period TEXT NOT NULL, bucket_ts BIGINT NOT NULL, dimension TEXT NOT NULL, value TEXT NOT NULL,
            calls BIGINT NOT NULL, good BIGINT NOT NULL, fair BIGINT NOT NULL, poor BIGINT NOT NULL,
            no_media BIGINT NOT NULL, unanswered BIGINT NOT NULL, unmeasured BIGINT NOT NULL DEFAULT 0,
            minutes DOUBLE PRECISION NOT NULL,
            \(Schema.rollupMetricColumns.map { "\($0) DOUBLE PRECISION" }.joined(separator: ", ")),
            PRIMARY KEY (period, bucket_ts, dimension, value)
        );
        """
    }

    /// Columns added by later schema versions, for a database made by an earlier one.
    static var addedColumns: String {
        func added<T: StoredTable>(_ table: T.Type) -> [String] {
            table.columnDescriptions.filter { $0.addedIn != nil }.map {
                "ALTER TABLE \(table.name) ADD COLUMN IF NOT EXISTS \($0.name) \($0.postgresDeclaration);"
            }
        }
        let rollups = Schema.rollupMetrics.filter { $0.addedIn != nil }.flatMap { m in
            Schema.rollupMetricColumns(addedIn: m.addedIn).map { "ALTER TABLE rollups ADD COLUMN IF NOT EXISTS \($0) DOUBLE PRECISION;" }
        }
        return
            (added(CallsTable.self) + added(StreamsTable.self) + added(IntervalsTable.self) + added(EventsTable.self)
            + added(FindingsTable.self) + added(MaterialTable.self) + added(PeerConnectionsTable.self) + rollups).joined(separator: "\n")
    }

    /// The views of `Schema.views`, the same columns and rows: `Views.sql` in PostgreSQL's words.
    static var views: String { Views.sql(.postgres) }

    /// Refuses a database whose tables lack columns this version writes (someone altered a
    /// table): writing into it would fail mid-run, after work was done.
    static func checkColumns(_ db: PostgresConnection, name: String) throws {
        func names<T: StoredTable>(_ t: T.Type) -> (String, [String]) { (t.name, t.columnNames) }
        let expected = [
            names(CallsTable.self), names(StreamsTable.self), names(IntervalsTable.self), names(EventsTable.self),
            names(FindingsTable.self), names(MaterialTable.self), names(PeerConnectionsTable.self), ("rollups", RollupBuilder.columns),
            ("call_conversations", ["call_id", "conversation_id", "linked_by"]),
            names(ConferenceParticipantsTable.self), names(ConferenceMatrixTable.self),
        ]
        let r = try db.query(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()")
        var present: [String: Set<String>] = [:]
        for row in r.rows { if let t = row[0], let c = row[1] { present[t, default: []].insert(c) } }
        for (table, columns) in expected {
            let missing = columns.filter { !(present[table]?.contains($0) ?? false) }
            if !missing.isEmpty { throw StoreError.alteredTable(path: name, table: table, missing: missing) }
        }
    }

    /// Creates the schema in an empty database, brings an older one to `Schema.version`, or
    /// checks a current one; refuses a newer one and a database holding other tables but no
    /// callstats schema version. Under an advisory lock, in one transaction: workers that start
    /// together wait for the first to finish it. Returns the version upgraded from, if any.
    static func migrate(_ db: PostgresConnection, name: String) throws -> Int? {
        try db.execute("BEGIN")
        do {
            try db.query("SELECT pg_advisory_xact_lock($1)", [.text(String(schemaLock))])
            let hasMeta = try db.scalar("SELECT to_regclass('meta') IS NOT NULL") == "t"
            let found = hasMeta ? try db.scalar("SELECT value FROM meta WHERE key = 'schema_version'").flatMap { Int($0) } : nil
            if let found, found > Schema.version {
                throw StoreError.newerSchema(path: name, found: found, supported: Schema.version)
            }
            if let found, found < 3 {
                throw StoreError.olderSchema(path: name, found: found, supported: Schema.version)
            }
            if found == nil {
                let others = try db.scalar(
                    "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name != 'meta'")
                if others != "0" {
                    throw StoreError.notADatabase(path: name, reason: "it has tables but no callstats schema version")
                }
            }
            if found != Schema.version {
                try db.execute(tables)
                try db.execute(addedColumns)
                for step in Schema.migrations where step.version > (found ?? Schema.version) {
                    guard let sql = step.postgres else { continue }
                    try db.execute(sql())
                    try db.query(
                        "INSERT INTO meta(key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                        [.text("migration." + step.name), .text(String(Int64(Date().timeIntervalSince1970 * 1000)))])
                }
            }
            // Views made from other definitions (another release's) are made again, as in
            // SQLite (`Schema.makeViews`): all of them, since they depend on each other.
            let viewsHash = Schema.definitionHash(views)
            let storedHash = hasMeta ? try db.scalar("SELECT value FROM meta WHERE key = 'views_hash'") : nil
            if found != Schema.version || storedHash != viewsHash {
                try db.execute(Schema.viewNames.map { "DROP VIEW IF EXISTS \($0) CASCADE;" }.joined(separator: "\n"))
                try db.execute(views)
                try db.query(
                    "INSERT INTO meta(key, value) VALUES ('views_hash', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                    [.text(viewsHash)])
            }
            if found != Schema.version {
                try db.query(
                    "INSERT INTO meta(key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                    [.text(String(Schema.version))])
            }
            try checkColumns(db, name: name)
            try db.execute("COMMIT")
            return found.flatMap { $0 < Schema.version ? $0 : nil }
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }
}
