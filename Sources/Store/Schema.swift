import Analysis
import CallLog
import Foundation
import SQLiteDatabase

/// The SQLite schema: the product's interface for everyone who queries results.
///
/// `Data/SCHEMA.md` documents every table, column and view; a test checks that each column
/// here is documented there. The tables written per call are described by their column lists
/// (`ResultTables.swift`); the bookkeeping tables, rollups and views are written here.
public enum Schema {
    /// The newest upgrade step's version: a database of this version has every table and
    /// column; one of an older version is upgraded by the steps past it (`migrations`).
    public static let version = migrations.map(\.version).max() ?? 1

    /// Dimensions that rollups break results down by: (name in `rollups.dimension`, column in
    /// `calls`). These are every database's; `rollupDimensions(labelKeys:)` adds the configured
    /// label keys' after them.
    public static let rollupDimensions: [(name: String, column: String)] = [
        ("all", "'*'"),
        ("codec", "audio_codec"),
        ("media", "media"),
        ("platform", "platform"),
        ("sdk", "sdk || ' ' || sdk_version"),
        ("app_version", "app || ' ' || app_version"),
        ("network", "network"),
        ("candidate_type", "local_candidate_type"),
        ("end_reason", "end_reason"),
        ("direction", "direction"),
        ("ice_outcome", "ice_outcome"),
    ]

    /// Every dimension of a database's rollups: the built-in ones, then one per label key its
    /// settings name (`AnalysisConfig.labelDimensions`), `label.<key>`, valued by the key's value
    /// in the `call` record's labels (`calls.labels`; `unknown` for calls without it, as for the
    /// other dimensions). The settings have checked each key (`AnalysisConfig.isLabelKey`: only
    /// letters, digits, `_`, `-` and `.`), so it goes into the JSON path as it is.
    /// `labelValue`: the SQL of a label's value in `calls.labels` (JSON text); SQLite's by default.
    public static func rollupDimensions(
        labelKeys: [String], labelValue: (String) -> String = { "json_extract(labels, '$.\"\($0)\"')" }
    ) -> [(name: String, column: String)] {
        rollupDimensions + labelKeys.filter(AnalysisConfig.isLabelKey).map { key in ("label." + key, labelValue(key)) }
    }

    /// Per-call metrics summarised in rollups: (name prefix, expression over `calls`, the schema
    /// version that added it). Metrics added later follow `unmeasured` in the table, as the
    /// upgrade of an older database adds them.
    public static let rollupMetrics: [(name: String, column: String, addedIn: Int?)] = [
        ("mos", "mos_cq", nil),
        ("loss", "loss_pct", nil),
        ("jitter", "jitter_ms", nil),
        ("rtt", "rtt_ms", nil),
        ("setup", "media_ms", nil),
        ("rest_sent", "rest_sent_ms", 4),
        ("ringing", "ringing_ms", 4),
        ("answer", "answer_ms", 4),
        ("ice_gathering", "ice_gathering_ms", 4),
        ("mos_sent", "mos_cq_sent", 5),
        ("loss_sent", "loss_pct_sent", 5),
    ]

    public static let percentiles: [(name: String, fraction: Double)] = [
        ("p5", 0.05), ("p50", 0.50), ("p90", 0.90), ("p95", 0.95), ("p99", 0.99),
    ]

    /// The rollup columns of the metrics added in `version` (nil: the first ones).
    package static func rollupMetricColumns(addedIn version: Int?) -> [String] {
        rollupMetrics.filter { $0.addedIn == version }.flatMap { m in
            ["\(m.name)_n", "\(m.name)_mean"] + percentiles.map { "\(m.name)_\($0.name)" }
        }
    }

    /// Every metric's rollup columns, in `rollupMetrics`' order.
    static var rollupMetricColumns: [String] {
        rollupMetrics.flatMap { m in ["\(m.name)_n", "\(m.name)_mean"] + percentiles.map { "\(m.name)_\($0.name)" } }
    }

    /// A call's intervals and events, filed under its `call_key` (version 2), as a table of
    /// schema `version` has them (nil: the current one).
    static func keyedRowTables(atVersion version: Int? = nil) -> String {
        """
        -- Read through the views `intervals` and `events`, which name the call by its id.
        CREATE TABLE IF NOT EXISTS interval_rows (
            \(IntervalsTable.columnDefinitions(atVersion: version))
        );
        -- By call only: every query by call (a replaced call's delete, drill-downs) wants all of a
        -- call's rows, and sorting a call's few intervals costs nothing.
        CREATE INDEX IF NOT EXISTS interval_rows_call ON interval_rows(call_key);

        CREATE TABLE IF NOT EXISTS event_rows (
            \(EventsTable.columnDefinitions(atVersion: version))
        );
        CREATE INDEX IF NOT EXISTS event_rows_call ON event_rows(call_key, ts);
        """
    }

    static var tables: String {
        """
        CREATE TABLE IF NOT EXISTS meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );

        CREATE TABLE IF NOT EXISTS ingested_files (
            path         TEXT NOT NULL,
            fingerprint  TEXT NOT NULL PRIMARY KEY,
            size         INTEGER NOT NULL,
            mtime        INTEGER NOT NULL,
            records      INTEGER NOT NULL,
            skipped      INTEGER NOT NULL,
            calls        INTEGER NOT NULL,
            ingested_at  INTEGER NOT NULL
        );

        CREATE TABLE IF NOT EXISTS calls (
            \(CallsTable.columnDefinitions())
        );
        CREATE INDEX IF NOT EXISTS calls_start ON calls(start_ts);
        -- The number the call's intervals and events are filed under (version 2): given in the
        -- order calls are written, so that their rows and index entries are appended, where call ids
        -- (random) put them on random pages. Its own column, not the rowid, which VACUUM may change.
        CREATE UNIQUE INDEX IF NOT EXISTS calls_key ON calls(call_key);

        CREATE TABLE IF NOT EXISTS streams (
            \(StreamsTable.columnDefinitions()),
            PRIMARY KEY (call_id, stream_id)
        ) WITHOUT ROWID;

        \(keyedRowTables())

        \(peerConnectionTable)

        CREATE TABLE IF NOT EXISTS findings (
            \(FindingsTable.columnDefinitions())
        );
        CREATE INDEX IF NOT EXISTS findings_call ON findings(call_id);
        CREATE INDEX IF NOT EXISTS findings_code ON findings(code, start_ts);

        CREATE TABLE IF NOT EXISTS call_material (
            \(MaterialTable.columnDefinitions())
        );

        \(conversationTable)

        \(ConferenceSchema.tables(postgres: false))

        CREATE TABLE IF NOT EXISTS rollup_pending (
            period TEXT NOT NULL, bucket_ts INTEGER NOT NULL,
            PRIMARY KEY (period, bucket_ts)
        ) WITHOUT ROWID;
        """
    }

    /// The legs of conversations (version 4), recomputed whole whenever calls change
    /// (`SQLiteStore.linkConversations`).
    static let conversationTable = """
        CREATE TABLE IF NOT EXISTS call_conversations (
            call_id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, linked_by TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS call_conversations_id ON call_conversations(conversation_id);
        """

    /// A call's peer connections (version 6), replaced with the call's other rows.
    static var peerConnectionTable: String {
        """
        CREATE TABLE IF NOT EXISTS peer_connections (
            \(PeerConnectionsTable.columnDefinitions()),
            PRIMARY KEY (call_id, pc_id)
        ) WITHOUT ROWID;
        """
    }

    static var rollupTable: String {
        let metrics = rollupMetricColumns(addedIn: nil).map { "\($0) REAL" }.joined(separator: ", ")
        // In the order an upgraded table has them: each version's added at the end.
        let metricsAddedIn4 = rollupMetricColumns(addedIn: 4).map { "\($0) REAL, " }.joined()
        let metricsAddedIn5 = rollupMetricColumns(addedIn: 5).map { "\($0) REAL, " }.joined()
        return """
            CREATE TABLE IF NOT EXISTS rollups (
                period TEXT NOT NULL, bucket_ts INTEGER NOT NULL, dimension TEXT NOT NULL, value TEXT NOT NULL,
                calls INTEGER NOT NULL, good INTEGER NOT NULL, fair INTEGER NOT NULL, poor INTEGER NOT NULL,
                no_media INTEGER NOT NULL, unanswered INTEGER NOT NULL, minutes REAL NOT NULL,
                \(metrics),
                unmeasured INTEGER NOT NULL DEFAULT 0,
                \(metricsAddedIn4)\(metricsAddedIn5)PRIMARY KEY (period, bucket_ts, dimension, value)
            ) WITHOUT ROWID;
            """
    }

    /// The columns of `intervals` and `events` after the call id, as their rows hold them.
    static var intervalColumns: String { IntervalsTable.columnNames.dropFirst().joined(separator: ", ") }
    static var eventColumns: String { EventsTable.columnNames.dropFirst().joined(separator: ", ") }

    /// The questions people ask first, as views, and the call's intervals and events by call id:
    /// `Views.sql` in SQLite's words.
    package static var views: String { Views.sql(.sqlite) }

    /// A hash of the views' definitions, kept in `meta.views_hash`. A database whose views were
    /// made from other definitions (another release's) gets every view made again when it is
    /// next opened for writing, whatever its schema version says: a changed view needs no
    /// upgrade step of its own.
    package static func definitionHash(_ sql: String) -> String { String(XXH64.hash(Array(sql.utf8)), radix: 16) }

    /// Makes the views, first dropping them all when `meta.views_hash` says they were made from
    /// other definitions (views depend on each other: all are made again together).
    static func makeViews(_ db: Database) throws {
        let hash = definitionHash(views)
        if try db.scalar("SELECT value FROM meta WHERE key = 'views_hash'")?.string != hash {
            for name in viewNames.reversed() { try db.execute("DROP VIEW IF EXISTS \(name)") }
        }
        try db.execute(views)
        try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('views_hash', ?)", [.text(hash)])
    }

    /// `columns` (comma-separated) each qualified with `table`.
    static func prefixed(_ table: String, _ columns: String) -> String {
        columns.split(separator: ",").map { "\(table).\($0.trimmingCharacters(in: .whitespacesAndNewlines))" }.joined(separator: ", ")
    }

    /// Version 1 filed intervals and events under the call id itself, in tables of those names.
    /// Its calls get their keys in the order they were written, their rows move to the keyed
    /// tables (a row without its call, which version 1 never wrote, has no key to go under), and
    /// the views take the old names. The keyed tables are made as version 2 had them: columns
    /// added since come with their own versions' migrations.
    static var upgradeFrom1: String {
        let intervalColumns = IntervalsTable.columnDescriptions.filter { $0.addedIn == nil }.dropFirst().map(\.name).joined(separator: ", ")
        let eventColumns = EventsTable.columnDescriptions.filter { $0.addedIn == nil }.dropFirst().map(\.name).joined(separator: ", ")
        return """
            ALTER TABLE calls ADD COLUMN call_key INTEGER;
            UPDATE calls SET call_key = rowid;
            \(keyedRowTables(atVersion: 2))
            INSERT INTO interval_rows(call_key, \(intervalColumns)) SELECT c.call_key, \(prefixed("i", intervalColumns))
                FROM intervals i JOIN calls c USING (call_id) ORDER BY i.rowid;
            INSERT INTO event_rows(call_key, \(eventColumns)) SELECT c.call_key, \(prefixed("e", eventColumns))
                FROM events e JOIN calls c USING (call_id) ORDER BY e.rowid;
            DROP TABLE intervals;
            DROP TABLE events;
            """
    }

    /// One step of an older database's upgrade: it brings a database of `version - 1` to
    /// `version`, in its own transaction, and is recorded in `meta` (`migration.<name>`: when).
    package struct Migration {
        package var version: Int
        package var name: String
        /// What the step does, for people (it says why an upgrade can take a while).
        var summary: String
        /// Made when the step is applied: listing the steps (as `version` does) builds no SQL.
        var sql: () -> String
        /// The step in PostgreSQL, for the steps its `CREATE ... IF NOT EXISTS` and added
        /// columns (`PostgresSchema.migrate`) do not cover; run in the upgrade's transaction.
        var postgres: (() -> String)? = nil
    }

    /// The steps written by hand, in version order. The tables' added columns (`addedIn:` in
    /// their column lists, `ResultTables.swift`) make the steps of their versions themselves.
    static var namedMigrations: [Migration] {
        [
            Migration(version: 2, name: "v2-call-keys", summary: "every interval and event is rewritten", sql: { upgradeFrom1 }),
            Migration(
                version: 4, name: "v4-conversations",
                summary: "links the legs of one conversation (table call_conversations, views conversation_legs and conversations)",
                sql: { conversationTable }),
            Migration(
                version: 5, name: "v5-sent-direction-rollups",
                summary: "adds the sent direction's MOS and loss to the rollups (rollups.mos_sent_*, rollups.loss_sent_*; "
                    + "every rollup bucket rebuilt from the calls' stored mos_cq_sent and loss_pct_sent)",
                sql: { upgradeFrom4 }),
            // Calls stored before keep no rows here until `callstats regrade` analyses them again.
            Migration(
                version: 6, name: "v6-peer-connections",
                summary: "adds the table peer_connections (calls stored before get their rows at the next regrade)",
                sql: { peerConnectionTable }),
            // Conferences are made at the end of the upgrading run for every stored call.
            Migration(
                version: 7, name: "v7-conferences",
                summary: "adds the tables conference_participants and conference_matrix and the views conferences and "
                    + "conference_offenders (stored calls' conferences are linked at the end of the upgrading run)",
                sql: { ConferenceSchema.tables(postgres: false) }),
            // SQLite's tables stay as they are: a file is pruned call by call.
            Migration(
                version: 8, name: "v8-day-partitions",
                summary: "PostgreSQL: interval_rows and event_rows become partitioned by day (every row copied once); "
                    + "SQLite: nothing changes",
                sql: { "" }, postgres: { PostgresPartitions.upgradeToPartitions }),
        ]
    }

    /// Version 5: the sent direction's rollup metrics. Rollups are rebuilt from `calls`, never
    /// written per call: every bucket is marked for the rebuild that ends the upgrading run, so
    /// that the new columns say what `calls` says (NULL until then, never a wrong figure).
    static var upgradeFrom4: String {
        let columns = rollupMetricColumns(addedIn: 5).map { "ALTER TABLE rollups ADD COLUMN \($0) REAL;" }
        return (columns + ["INSERT OR IGNORE INTO rollup_pending(period, bucket_ts) SELECT DISTINCT period, bucket_ts FROM rollups;"])
            .joined(separator: "\n")
    }

    /// Every upgrade step, in the order they apply.
    package static var migrations: [Migration] {
        var added: [Int: [(column: String, sql: String)]] = [:]
        func addColumns<T: StoredTable>(_ table: T.Type) {
            for c in table.columnDescriptions {
                guard let version = c.addedIn else { continue }
                added[version, default: []].append(("\(table.name).\(c.name)", "ALTER TABLE \(table.name) ADD COLUMN \(c.name) \(c.declaration);"))
            }
        }
        addColumns(CallsTable.self)
        addColumns(StreamsTable.self)
        addColumns(IntervalsTable.self)
        addColumns(EventsTable.self)
        addColumns(FindingsTable.self)
        addColumns(MaterialTable.self)
        addColumns(PeerConnectionsTable.self)
        // Rollups are rebuilt from `calls`, never written per call: their added columns are here,
        // and every bucket is marked for the rebuild that ends the upgrading run, so that the new
        // count equals what `calls` says. A call keeps the grade it was stored with until
        // `callstats regrade` grades it again.
        added[4, default: []].append(
            (
                "rollups.unmeasured, the setup phases' and ICE gathering's percentiles, the direction and ICE outcome "
                    + "dimensions (every rollup bucket rebuilt; calls stored before keep their grade until callstats regrade)",
                """
                ALTER TABLE rollups ADD COLUMN unmeasured INTEGER NOT NULL DEFAULT 0;
                \(rollupMetricColumns(addedIn: 4).map { "ALTER TABLE rollups ADD COLUMN \($0) REAL;" }.joined(separator: "\n"))
                CREATE TABLE IF NOT EXISTS rollup_pending (
                    period TEXT NOT NULL, bucket_ts INTEGER NOT NULL, PRIMARY KEY (period, bucket_ts)) WITHOUT ROWID;
                INSERT OR IGNORE INTO rollup_pending(period, bucket_ts) SELECT DISTINCT period, bucket_ts FROM rollups;
                """
            ))
        let generated = added.map { version, statements in
            Migration(
                version: version, name: "v\(version)-added-columns",
                summary: "adds " + statements.map(\.column).joined(separator: ", "),
                sql: { statements.map(\.sql).joined(separator: "\n") })
        }
        return (namedMigrations + generated).sorted { ($0.version, $0.name) < ($1.version, $1.name) }
    }

    /// What upgrading a database of schema `version` does, for people: each step's summary.
    public static func upgradeSummary(from version: Int) -> String {
        migrations.filter { $0.version > version }.map(\.summary).joined(separator: "; ")
    }

    /// Creates the schema in a new database, upgrades an older one, or checks a current one.
    ///
    /// Refused, with a message that says what to do (see `check`): a newer schema, an older one
    /// with no upgrade step, and an SQLite database that callstats did not create. An older one
    /// is upgraded by each step of `migrations` past its version, in order, each in its own
    /// transaction (a step that fails leaves the database at the version before it).
    /// Returns the version the database was upgraded from, nil when none was.
    /// `willUpgrade(from)` is called before an older database is upgraded (it can take minutes).
    @discardableResult
    static func migrate(_ db: Database, willUpgrade: ((Int) -> Void)? = nil) throws -> Int? {
        try check(db)
        try db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        let found = try storedVersion(db)
        if let found, found < version {
            willUpgrade?(found)
            var reached = found
            for step in migrations where step.version > found {
                do {
                    try db.transaction {
                        try db.execute(step.sql())
                        try recordVersion(step.version, in: db)
                        try db.run(
                            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                            [.text("migration." + step.name), .text(String(Int64(Date().timeIntervalSince1970 * 1000)))])
                    }
                } catch let e as Database.Error {
                    // Rolled back: say so, and which file, rather than SQLite's message about the SQL alone.
                    throw StoreError.upgradeFailed(
                        path: db.path, found: found, supported: version, step: step.name,
                        reached: reached, reason: e.message)
                }
                reached = step.version
            }
        }
        try db.transaction {
            // The views name the tables' columns: made again after an upgrade added some.
            if found.map({ $0 < version }) == true {
                try db.execute("DROP VIEW IF EXISTS intervals; DROP VIEW IF EXISTS events; DROP VIEW IF EXISTS daily_quality;")
            }
            try db.execute(tables)
            try db.execute(rollupTable)
            try makeViews(db)
            try recordVersion(version, in: db)
        }
        return found.flatMap { $0 < version ? $0 : nil }
    }

    static func storedVersion(_ db: Database) throws -> Int? {
        try db.scalar("SELECT value FROM meta WHERE key = 'schema_version'")?.string.flatMap(Int.init)
    }

    private static func recordVersion(_ version: Int, in db: Database) throws {
        try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", [.text(String(version))])
    }

    /// The refusals of `migrate`, changing nothing (run before anything is written):
    /// - a newer schema: a newer callstats wrote it;
    /// - an older schema without an upgrade step (before version 1);
    /// - tables but no schema version: someone else's SQLite database. Adding our tables to
    ///   it, or writing into a same-named table of another shape, would damage it.
    static func check(_ db: Database) throws {
        let hasMeta = try db.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'")?.int64 == 1
        let current = hasMeta ? try db.scalar("SELECT value FROM meta WHERE key = 'schema_version'")?.string.flatMap(Int.init) : nil
        if let current, current > version {
            throw StoreError.newerSchema(path: db.path, found: current, supported: version)
        }
        if let current, current < 1 {
            throw StoreError.olderSchema(path: db.path, found: current, supported: version)
        }
        if current == nil {
            let others = try db.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name != 'meta'")?.int64 ?? 0
            if others > 0 { throw StoreError.notADatabase(path: db.path, reason: "it has tables but no callstats schema version") }
        }
    }
}

public enum StoreError: Error, CustomStringConvertible {
    case newerSchema(path: String, found: Int, supported: Int)
    case olderSchema(path: String, found: Int, supported: Int)
    case locked(path: String, holder: String)
    case notWritable(path: String, reason: String)
    /// A reader came while the run that creates the database had not yet committed its tables.
    case beingCreated(path: String, writer: String)
    case notADatabase(path: String, reason: String)
    /// `step` failed and was rolled back; the database is at version `reached` (`found`, unless
    /// earlier steps succeeded).
    case upgradeFailed(path: String, found: Int, supported: Int, step: String, reached: Int, reason: String)
    /// The run asked for other analysis settings than the stored calls were graded with.
    case otherSettings(path: String, differences: String)
    /// The run's pseudonymisation key (its fingerprint, or "none") is not the database's.
    case otherKey(path: String, recorded: String, asked: String)
    case unreadableSettings(path: String, reason: String)
    /// A PostgreSQL server could not be reached, or refused the connection.
    case cannotConnect(reason: String)
    /// A PostgreSQL server refused a statement, or the connection to it was lost mid-run;
    /// `retryable` when running the command again may succeed as it is.
    case server(name: String, reason: String, retryable: Bool)
    /// A table lacks columns of its schema version: it was changed by hand.
    case alteredTable(path: String, table: String, missing: [String])

    public var description: String {
        switch self {
        case .newerSchema(let p, let f, let s):
            "\(p) has schema version \(f), newer than this callstats understands (\(s)); upgrade callstats"
        case .olderSchema(let p, let f, let s):
            "\(p) has schema version \(f), older than this callstats writes (\(s)) and it cannot be upgraded; analyse the logs into a new database"
        case .locked(let p, let h):
            "\(p) is being written by another callstats run (analyze or regrade: \(h)); wait for it to finish or use another --db"
        case .notADatabase(let p, let r): "\(p) is not a callstats database: \(r)"
        case .notWritable(let p, let r): "\(p) cannot be written: \(r)"
        case .beingCreated(let p, let w):
            "\(p) is being created by another callstats run (\(w)); try again once it has made its first commit"
        case .upgradeFailed(let p, let f, let s, let step, let reached, let r) where reached == f:
            "\(p) has schema version \(f); upgrading it to \(s) failed (step \(step)) and changed nothing (\(r)); run again, or analyse the logs into a new database"
        case .upgradeFailed(let p, let f, let s, let step, let reached, let r):
            "\(p) had schema version \(f); upgrading it to \(s) failed at step \(step), which changed nothing: it now has version \(reached) (\(r)); run again, or analyse the logs into a new database"
        case .otherSettings(let p, let d):
            "\(p) holds calls graded with other settings than this run asks for: \(d). "
                + "Regrade them first (callstats regrade --db \(p) with the same --config or --set), "
                + "leave --config and --set out to use the database's settings, or use another --db"
        case .otherKey(let p, let recorded, _) where recorded == MetaKey.noKeyFingerprint:
            "\(p) was written without --pseudonymize-key (its call ids are not pseudonyms), and this run gives a key: "
                + "one call would be stored under two ids. Leave --pseudonymize-key out, or analyse into a new --db"
        case .otherKey(let p, _, let asked) where asked == MetaKey.noKeyFingerprint:
            "\(p) is pseudonymised (written with --pseudonymize-key), and this run gives no key: it would store raw call ids in it. "
                + "Give the key it was written with, or analyse into a new --db"
        case .otherKey(let p, let recorded, let asked):
            "\(p) was pseudonymised with another --pseudonymize-key than this run's (key fingerprint \(recorded), this run's \(asked)): "
                + "one call would get two pseudonyms. Give the key it was written with, or analyse into a new --db"
        case .unreadableSettings(let p, let r):
            "\(p): the analysis settings it records (meta.analysis_config) cannot be read: \(r)"
        case .cannotConnect(let r):
            "\(r); check the --db URL (host, port, user, database), the password (PGPASSWORD or ~/.pgpass) and that the server runs"
        case .server(let n, let r, true):
            "PostgreSQL \(n): \(r); what was committed stays, and running the same command again completes the work"
        case .server(let n, let r, false):
            "PostgreSQL \(n): \(r); what was committed stays; a rerun fails the same way until this is fixed"
        case .alteredTable(let p, let t, let m):
            "\(p): table \(t) lacks the column\(m.count == 1 ? "" : "s") \(m.joined(separator: ", ")) of its schema version "
                + "(changed by hand?); restore the table, or analyse into a new database"
        }
    }
}
