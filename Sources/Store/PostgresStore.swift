import Analysis
import Foundation
import MaterialScanning
import PostgresDatabase

/// The PostgreSQL implementation of `ResultStore`: the same tables as the SQLite file
/// (`PostgresSchema`), written by any number of `analyze` processes at once, on any machines.
///
/// What must stay true with several writers:
/// - A call is read, merged and written again under an advisory transaction lock keyed by its
///   id (`storedCall`), held until the transaction commits: a call whose records are split over
///   files read by different processes ends as one run over all its files leaves it. Writers
///   take these locks in call-id order within a transaction and commit after each sorted batch
///   (`sharedByOtherWriters`), so two writers never wait for each other in a cycle.
/// - Every commit takes one advisory lock (`PostgresSchema.commitLock`) first, and so does a
///   rollup rebuild: a rebuild sees every call committed before it, and a call committed after
///   it leaves its bucket marked in `rollup_pending` for the next rebuild. The last writer's
///   rebuild therefore leaves rollups exact.
/// - The ledger entries of a transaction are inserted in its commit, under that lock, with
///   `ON CONFLICT DO NOTHING`: a file two processes both read is recorded once (its records,
///   merged twice, collapse: merging material is idempotent).
/// - A writer killed at any moment loses its open transaction, which the server rolls back;
///   what it committed is whole, and a rerun reads the files not yet in the ledger again.
///
/// Rows of calls, streams, intervals, events, findings and material are sent with COPY, queued
/// per table and flushed before any statement that could read them and at each commit.
public final class PostgresStore {
    let db: PostgresConnection
    private let url: String
    /// Opened when a write needs a day made (`makeNeededPartitions`).
    private var partitionConnection: PostgresConnection?
    /// The URL without its password, for messages.
    public let name: String
    public private(set) var upgradedFrom: Int?

    /// Filing numbers (`call_key`) left in the block this writer took from the sequence.
    private var nextCallKey: Int64 = 0
    private var lastCallKey: Int64 = -1

    /// Rows not yet sent, by table, and the calls they belong to.
    private var pending: [ObjectIdentifier: CopyRows] = [:]
    private var pendingOrder: [(id: ObjectIdentifier, sql: String)] = []
    private var pendingCalls = Set<String>()
    private var pendingBytes = 0
    /// What `prepareLookups` read of calls this transaction has locked and not yet looked up.
    private var prefetched: [String: StoredCallState?] = [:]
    /// Ledger entries of the open transaction, inserted at its commit.
    private var ledger: [(LedgerEntry, Int64)] = []
    private var inTransaction = false
    /// The days each partitioned table has (`PostgresPartitions`), and those queued rows need
    /// that it may lack: made before the rows are sent.
    private var partitionDays: [String: Set<Int64>] = [:]
    private var neededDays: [String: Set<Int64>] = [:]

    /// Bytes of queued rows at which they are sent without waiting for a commit.
    static let flushBytes = 8 << 20

    /// Connects to `url` (`postgres://` or `postgresql://`, libpq's conventions) and creates or
    /// checks the schema.
    public init(url: String) throws {
        db = try PostgresStore.connect(url)
        self.url = url
        name = db.displayName
        do {
            // A commit returns before the server's WAL reaches disk. Safe for a rerun to mend: a
            // server crash loses whole transactions only, each with its files' ledger entries,
            // so the next run reads those files again; nothing is acknowledged to anyone before.
            try db.execute("SET synchronous_commit = off")
            upgradedFrom = try PostgresSchema.migrate(db, name: name)
            for (table, _) in PostgresPartitions.tables { partitionDays[table] = try PostgresPartitions.days(of: table, db) }
        } catch let e as PostgresConnection.Error {
            throw StoreError.server(name: name, reason: e.description, retryable: e.mayPassOnRetry)
        }
        for table in [
            tableOrder(CallsTable.self), tableOrder(StreamsTable.self), tableOrder(IntervalsTable.self),
            tableOrder(EventsTable.self), tableOrder(FindingsTable.self), tableOrder(PeerConnectionsTable.self),
            tableOrder(MaterialTable.self),
        ] { pendingOrder.append(table) }
        // Today's and tomorrow's days made ahead, outside any write: live calls' rows find them.
        let today = PostgresPartitions.day(Int64(Date().timeIntervalSince1970 * 1000))
        for (table, _) in PostgresPartitions.tables { neededDays[table] = [today, today + 1] }
        try makeNeededPartitions()
    }

    /// A connection to `url`, or the error that says what to check (the URL, the password,
    /// the server): for the store and its readers alike.
    static func connect(_ url: String) throws -> PostgresConnection {
        do {
            return try PostgresConnection(url: url)
        } catch let e as PostgresConnection.Error {
            throw StoreError.cannotConnect(reason: e.message)
        }
    }

    private func tableOrder<T: StoredTable>(_ t: T.Type) -> (id: ObjectIdentifier, sql: String) {
        (ObjectIdentifier(t), "COPY \(t.name)(\(t.columnNames.joined(separator: ", "))) FROM STDIN")
    }

    /// Runs `body`, turning the connection's errors into store errors that name the server.
    @discardableResult
    func checked<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as PostgresConnection.Error {
            throw StoreError.server(name: name, reason: e.description, retryable: e.mayPassOnRetry)
        }
    }

    @discardableResult
    private func query(_ sql: String, _ parameters: [PostgresValue] = []) throws -> PostgresResult {
        try checked { try db.query(sql, parameters) }
    }

    // MARK: - Queued rows

    private func queue<Table: StoredTable>(_ table: Table.Type, _ row: Table.Row, key: Int64? = nil) {
        withUnsafePointer(to: row) { queue(table, $0, key: key) }
    }

    private func queue<Table: StoredTable>(_ table: Table.Type, _ row: UnsafePointer<Table.Row>, key: Int64?) {
        let id = ObjectIdentifier(table)
        var rows = pending.removeValue(forKey: id) ?? CopyRows()
        let before = rows.data.count
        if let key { rows.add(key) }
        table.copy(row, to: &rows)
        pendingBytes += rows.data.count - before
        pending[id] = rows
    }

    /// Sends every queued row.
    func flush() throws {
        guard pendingBytes > 0 || !pendingCalls.isEmpty else { return }
        try makeNeededPartitions()
        for (id, sql) in pendingOrder {
            guard var rows = pending[id], rows.rows > 0 else { continue }
            try checked { try db.copy(sql, rows: rows) }
            rows.removeAll()
            pending[id] = rows
        }
        pendingBytes = 0
        pendingCalls.removeAll(keepingCapacity: true)
    }

    /// Notes the days of `rows` (by `ts`) that `table` lacks a partition for.
    private func need<Rows: Collection>(_ table: String, _ rows: Rows, ts: (Rows.Element) -> Int64) {
        guard !rows.isEmpty, let known = partitionDays[table] else { return }
        var last: Int64?
        for row in rows {
            let day = PostgresPartitions.day(ts(row))
            if day != last, !known.contains(day) { neededDays[table, default: []].insert(day) }
            last = day
        }
    }

    /// Creates the partitions queued rows need, each in a short transaction of its own, so that
    /// a day made is there for every writer at once and no lock on the tables outlives it. In
    /// the middle of a write that is a second connection (`partitionConnection`): its wait is
    /// one PostgreSQL cannot see, so it is bounded (`lock_timeout`, then a retryable error).
    private func makeNeededPartitions() throws {
        guard neededDays.values.contains(where: { !$0.isEmpty }) else { return }
        let connection: PostgresConnection
        if inTransaction {
            if partitionConnection == nil {
                partitionConnection = try PostgresStore.connect(url)
                try checked { try partitionConnection?.execute("SET lock_timeout = '20s'") }
            }
            connection = partitionConnection!
        } else {
            connection = db
        }
        do {
            try connection.execute("BEGIN")
            do {
                try PostgresPartitions.create(neededDays, connection)
                try connection.execute("COMMIT")
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        } catch let e as PostgresConnection.Error {
            throw StoreError.server(name: name, reason: e.description, retryable: e.mayPassOnRetry || e.sqlState == "55P03")
        }
        for (table, days) in neededDays { partitionDays[table, default: []].formUnion(days) }
        neededDays.removeAll()
    }

    // MARK: - Transactions

    public func begin() throws {
        try checked { try db.execute("BEGIN; SELECT pg_advisory_xact_lock_shared(\(PostgresSchema.removalLock))") }
        inTransaction = true
    }

    /// A transaction that removes calls: it waits for the writes in progress, and new ones
    /// wait for its end (`PostgresSchema.removalLock`).
    func beginRemoval() throws {
        try checked { try db.execute("BEGIN; SELECT pg_advisory_xact_lock(\(PostgresSchema.removalLock))") }
        inTransaction = true
    }

    /// Sends the queued rows, then takes the commit lock, records the ledger entries and commits.
    public func commit() throws {
        try flush()
        try takeCommitLock()
        for (entry, at) in ledger {
            try query(
                """
                INSERT INTO ingested_files(path, fingerprint, size, mtime, records, skipped, calls, ingested_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (fingerprint) DO NOTHING
                """,
                [
                    .text(entry.path), .text(entry.fingerprint), .text(String(entry.size)), .text(String(entry.mtime)),
                    .text(String(entry.records)), .text(String(entry.skipped)), .text(String(entry.calls)), .text(String(at)),
                ])
        }
        ledger.removeAll()
        prefetched.removeAll()
        try checked { try db.execute("COMMIT") }
        inTransaction = false
    }

    public func rollback() {
        for key in Array(pending.keys) { pending[key]?.removeAll() }
        pendingBytes = 0
        pendingCalls.removeAll()
        ledger.removeAll()
        prefetched.removeAll()
        inTransaction = false
        try? db.execute("ROLLBACK")
    }

    /// Reads again which days have partitions, after a transaction that dropped some.
    func forgetPartitions() {
        if let known = try? PostgresPartitions.tables.map({ ($0.name, try PostgresPartitions.days(of: $0.name, db)) }) {
            partitionDays = Dictionary(uniqueKeysWithValues: known)
        }
    }

    private func takeCommitLock() throws {
        try query("SELECT pg_advisory_xact_lock($1)", [.text(String(PostgresSchema.commitLock))])
    }

    // MARK: - Ledger

    public func ingestedPath(fingerprint: String) throws -> String? {
        if let queued = ledger.first(where: { $0.0.fingerprint == fingerprint }) { return queued.0.path }
        return try query("SELECT path FROM ingested_files WHERE fingerprint = $1", [.text(fingerprint)]).rows.first?.first ?? nil
    }

    public func recordIngested(_ entry: LedgerEntry, at now: Int64) throws {
        ledger.append((entry, now))
    }

    // MARK: - Calls

    public func hasNoCalls() throws -> Bool {
        try flush()
        return try query("SELECT EXISTS (SELECT 1 FROM calls) OR EXISTS (SELECT 1 FROM call_material)").rows.first?.first == "f"
    }

    /// Locks the calls in the order given (each writer sorts its batch alike, so no two wait
    /// on each other in a cycle) and reads what is stored of them, in two round trips.
    public func prepareLookups(_ callIDs: [String]) throws {
        var seen = Set<String>()
        let ids = callIDs.filter { seen.insert($0).inserted }
        guard !ids.isEmpty else { return }
        if ids.contains(where: pendingCalls.contains) { try flush() }
        let array = PostgresStore.textArray(ids)
        try query(
            "SELECT pg_advisory_xact_lock(hashtextextended(id, 0)) FROM unnest($1::text[]) WITH ORDINALITY AS u(id, n) ORDER BY n",
            [.text(array)])
        let r = try query(
            """
            SELECT x.id, c.complete, c.start_ts, c.end_ts, m.material, c.call_id IS NOT NULL
            FROM unnest($1::text[]) AS x(id) LEFT JOIN calls c ON c.call_id = x.id LEFT JOIN call_material m ON m.call_id = x.id
            """, [.text(array)])
        for row in r.rows {
            guard let id = row[0] else { continue }
            prefetched[id] = PostgresStore.storedState(row.dropFirst())
        }
    }

    /// `values` as a PostgreSQL text array literal.
    static func textArray(_ values: [String]) -> String {
        "{"
            + values.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
            .joined(separator: ",") + "}"
    }

    /// A row of (complete, start_ts, end_ts, material, has a calls row) as what is stored.
    static func storedState(_ row: ArraySlice<String?>) -> StoredCallState? {
        let v = Array(row)
        let material = v[3].map { PostgresResult.bytes(fromHex: $0) }
        if v[4] == "t" {
            return StoredCallState(
                complete: v[0] == "1", startTs: v[1].flatMap { Int64($0) } ?? 0, endTs: v[2].flatMap { Int64($0) } ?? 0, material: material)
        }
        return material.map { StoredCallState(complete: false, startTs: 0, endTs: 0, material: $0) }
    }

    /// Locks the call (until the transaction ends) and reads what is stored of it.
    public func storedCall(_ callID: String) throws -> StoredCallState? {
        // Read by `prepareLookups` and not written since (a second part of a call is looked up again).
        if let state = prefetched.removeValue(forKey: callID) { return state }
        if pendingCalls.contains(callID) { try flush() }
        try query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [.text(callID)])
        let r = try query(
            """
            SELECT c.complete, c.start_ts, c.end_ts, m.material, c.call_id IS NOT NULL
            FROM (SELECT $1::text AS id) x LEFT JOIN calls c ON c.call_id = x.id LEFT JOIN call_material m ON m.call_id = x.id
            """, [.text(callID)])
        guard let row = r.rows.first else { return nil }
        return PostgresStore.storedState(row[...])
    }

    public func write(_ analysis: CallAnalysis, complete: Bool, material: [UInt8]?, replacing: Bool) throws {
        let id = analysis.call.callID
        if replacing {
            if pendingCalls.contains(id) { try flush() }
            // The stored call's rows are looked for in the days its bounds cover only: the
            // bounds are written into the statement so that the planner leaves the other days
            // alone (and unlocked).
            let stored = try query("SELECT call_key, start_ts, end_ts FROM calls WHERE call_id = $1", [.text(id)]).rows.first
            let keyed: String
            if let stored, let key = Int64(stored[0] ?? ""), let start = Int64(stored[1] ?? ""), let end = Int64(stored[2] ?? "") {
                let (from, to) = PostgresPartitions.dayBounds(start, end)
                keyed = """
                    i AS (DELETE FROM interval_rows WHERE call_key = \(key) AND start_ts >= \(from) AND start_ts < \(to)),
                    e AS (DELETE FROM event_rows WHERE call_key = \(key) AND ts >= \(from) AND ts < \(to)),
                    """
            } else {
                keyed = ""
            }
            try query(
                """
                WITH \(keyed)
                    s AS (DELETE FROM streams WHERE call_id = $1),
                    f AS (DELETE FROM findings WHERE call_id = $1),
                    p AS (DELETE FROM peer_connections WHERE call_id = $1),
                    m AS (DELETE FROM call_material WHERE call_id = $1)
                DELETE FROM calls WHERE call_id = $1
                """, [.text(id)])
        }
        let key = try takeCallKey()
        assert(
            analysis.intervals.allSatisfy { $0.startTs >= analysis.call.startTs && $0.startTs <= analysis.call.endTs }
                && analysis.events.allSatisfy { $0.ts >= analysis.call.startTs && $0.ts <= analysis.call.endTs },
            "a call's rows lie within its bounds (PostgresPartitions)")
        need(IntervalsTable.name, analysis.intervals) { $0.startTs }
        need(EventsTable.name, analysis.events) { $0.ts }
        queue(CallsTable.self, CallRow(summary: analysis.call, complete: complete, key: key))
        analysis.streams.withUnsafeBufferPointer { rows in for i in rows.indices { queue(StreamsTable.self, rows.baseAddress! + i, key: nil) } }
        analysis.intervals.withUnsafeBufferPointer { rows in for i in rows.indices { queue(IntervalsTable.self, rows.baseAddress! + i, key: key) } }
        analysis.events.withUnsafeBufferPointer { rows in for i in rows.indices { queue(EventsTable.self, rows.baseAddress! + i, key: key) } }
        analysis.findings.withUnsafeBufferPointer { rows in for i in rows.indices { queue(FindingsTable.self, rows.baseAddress! + i, key: nil) } }
        analysis.peerConnections.withUnsafeBufferPointer { rows in
            for i in rows.indices { queue(PeerConnectionsTable.self, rows.baseAddress! + i, key: nil) }
        }
        if let material { queue(MaterialTable.self, MaterialRow(callID: id, material: material)) }
        pendingCalls.insert(id)
        if pendingBytes >= Self.flushBytes { try flush() }
    }

    private func takeCallKey() throws -> Int64 {
        if nextCallKey > lastCallKey {
            guard let start = try query("SELECT nextval('call_keys')").rows.first?.first.flatMap({ $0.flatMap { Int64($0) } }) else {
                throw StoreError.server(name: name, reason: "the sequence call_keys gave no value", retryable: false)
            }
            (nextCallKey, lastCallKey) = (start, start + 1023)
        }
        defer { nextCallKey += 1 }
        return nextCallKey
    }

    public func deleteAllAnalyses() throws {
        try flush()
        try checked { try db.execute("TRUNCATE calls, streams, interval_rows, event_rows, findings, peer_connections") }
    }

    // MARK: - Material

    public func materialCount() throws -> Int {
        try flush()
        return Int(try query("SELECT count(*) FROM call_material").rows.first?.first.flatMap { $0 } ?? "0") ?? 0
    }

    public func callsWithoutMaterial() throws -> Int {
        try flush()
        return Int(
            try query("SELECT count(*) FROM calls c WHERE NOT EXISTS (SELECT 1 FROM call_material m WHERE m.call_id = c.call_id)")
                .rows.first?.first.flatMap { $0 } ?? "0") ?? 0
    }

    public func material(after callID: String?, limit: Int) throws -> [MaterialRecord] {
        try flush()
        let r =
            try callID.map {
                try query(
                    "SELECT call_id, material FROM call_material WHERE call_id > $1 COLLATE \"C\" ORDER BY call_id COLLATE \"C\" LIMIT $2",
                    [.text($0), .text(String(limit))])
            } ?? query("SELECT call_id, material FROM call_material ORDER BY call_id COLLATE \"C\" LIMIT $1", [.text(String(limit))])
        return r.rows.map { MaterialRecord(callID: $0[0] ?? "", material: $0[1].map { PostgresResult.bytes(fromHex: $0) } ?? []) }
    }

    // MARK: - Settings

    public func recordedSettings() throws -> AnalysisConfig {
        guard let text = try query("SELECT value FROM meta WHERE key = $1", [.text(MetaKey.settings)]).rows.first?.first ?? nil
        else { return AnalysisConfig() }
        do {
            return try AnalysisConfig(settingsJSON: text, source: "meta.analysis_config")
        } catch {
            throw StoreError.unreadableSettings(path: name, reason: error.description)
        }
    }

    /// Records `config` unless it is recorded already: rewriting the same row would make every
    /// worker's first transaction wait for the others'.
    public func record(settings config: AnalysisConfig) throws {
        if try recordedSettings() == config,
            try query("SELECT 1 FROM meta WHERE key = $1", [.text(MetaKey.settings)]).rows.count == 1
        {
            return
        }
        try query(
            "INSERT INTO meta(key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            [.text(MetaKey.settings), .text(config.settingsJSON)])
    }

    public func recordedQualityModel() throws -> String? {
        try query("SELECT value FROM meta WHERE key = $1", [.text(MetaKey.qualityModel)]).rows.first?.first ?? nil
    }

    /// Written only when it changes, as the settings are.
    public func record(qualityModel version: String) throws {
        guard try recordedQualityModel() != version else { return }
        try query(
            "INSERT INTO meta(key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            [.text(MetaKey.qualityModel), .text(version)])
    }

    /// Workers start together on a new database, none of them seeing calls yet: the settings are
    /// claimed, not compared. The row is inserted only if absent (committed at once), then read
    /// back, so of workers racing, the first insert wins and every other compares against it:
    /// they agree or are refused, and no database holds calls graded two ways. A database with
    /// calls that records no settings was graded with the defaults, which it then claims.
    public func settingsForRun(asked: AnalysisConfig?, hasCalls: Bool) throws -> AnalysisConfig {
        let claimed = hasCalls ? AnalysisConfig() : asked ?? AnalysisConfig()
        try query(
            "INSERT INTO meta(key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
            [.text(MetaKey.settings), .text(claimed.settingsJSON)])
        let recorded = try recordedSettings()
        guard let asked else { return recorded }
        if asked != recorded {
            throw StoreError.otherSettings(path: name, differences: asked.changesText(from: recorded, otherLabel: "database:"))
        }
        return asked
    }

    public func recordedKeyFingerprint() throws -> String? {
        try query("SELECT value FROM meta WHERE key = $1", [.text(MetaKey.keyFingerprint)]).rows.first?.first ?? nil
    }

    /// Claimed as the settings are (inserted if absent, committed at once, read back): of
    /// workers racing on a new database with different keys, one is refused.
    public func checkKey(fingerprint: String) throws {
        try record(keyFingerprint: fingerprint)
        if let recorded = try recordedKeyFingerprint(), recorded != fingerprint {
            throw StoreError.otherKey(path: name, recorded: recorded, asked: fingerprint)
        }
    }

    public func record(keyFingerprint fingerprint: String) throws {
        try query(
            "INSERT INTO meta(key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
            [.text(MetaKey.keyFingerprint), .text(fingerprint)])
    }

    // MARK: - Rollups

    /// Marks the buckets under the commit lock, which the commit just after takes anyway: a
    /// rebuild running meanwhile could otherwise delete a mark already there (seen as done) while
    /// this transaction's calls in its bucket are not yet visible to it. The queued rows are sent
    /// first, so that no writer sends its bulk while holding the lock the others wait for.
    public func markRollupsPending(forCallStarts callStarts: some Sequence<Int64>) throws {
        let (hours, days) = RollupBuckets.containing(callStarts)
        guard !hours.isEmpty || !days.isEmpty else { return }
        try flush()
        try takeCommitLock()
        let periods = hours.map { _ in "hour" } + days.map { _ in "day" }
        let starts = Array(hours) + Array(days)
        try query(
            """
            INSERT INTO rollup_pending(period, bucket_ts) SELECT * FROM unnest($1::text[], $2::bigint[])
            ON CONFLICT DO NOTHING
            """,
            [.text("{" + periods.joined(separator: ",") + "}"), .text("{" + starts.map(String.init).joined(separator: ",") + "}")])
    }

    public func refreshPendingRollups() throws {
        try flush()
        try takeCommitLock()
        var hours = Set<Int64>(), days = Set<Int64>()
        for row in try query("SELECT period, bucket_ts FROM rollup_pending").rows {
            guard let start = row[1].flatMap({ Int64($0) }) else { continue }
            if row[0] == "hour" { hours.insert(start) } else if row[0] == "day" { days.insert(start) }
        }
        try rebuild(hours: hours, days: days)
        try query("DELETE FROM rollup_pending")
    }

    public func rebuildAllRollups() throws {
        try flush()
        try takeCommitLock()
        try query("DELETE FROM rollups")
        try query("DELETE FROM rollup_pending")
        let starts = try query("SELECT DISTINCT start_ts / 3600000 * 3600000 FROM calls").rows.compactMap { $0[0].flatMap { Int64($0) } }
        let (hours, days) = RollupBuckets.containing(starts)
        try rebuild(hours: hours, days: days)
    }

    private func rebuild(hours: Set<Int64>, days: Set<Int64>) throws {
        let storage = PostgresRollups(store: self)
        try RollupBuilder.rebuild(hours: hours, days: days, in: storage)
        guard storage.rows.value.rows > 0 else { return }
        try checked {
            try db.copy("COPY rollups(\(RollupBuilder.columns.joined(separator: ", "))) FROM STDIN", rows: storage.rows.value)
        }
    }

    func rollupCalls(from start: Int64, length: Int64, dimensions: [(name: String, column: String)]) throws -> PostgresResult {
        try query(
            "SELECT \(RollupBuilder.selectedColumns(dimensions)) FROM calls WHERE start_ts >= $1 AND start_ts < $2 ORDER BY start_ts",
            [.text(String(start)), .text(String(start + length))])
    }

    // MARK: - Conversations

    /// As `SQLiteStore.linkConversations`, under the commit lock: the links are recomputed whole,
    /// and two writers doing so at once would each delete the other's.
    public func linkConversations() throws {
        try flush()
        try takeCommitLock()
        var clues = ConversationClues()
        for row in try query(
            "SELECT call_id, labels::jsonb ->> 'conversation' FROM calls WHERE labels LIKE '%\"conversation\"%'"
        ).rows {
            guard let id = row[0], let label = row[1] else { continue }
            clues.labels.append((id, label))
        }
        for row in try query(
            "SELECT call_id, labels::jsonb ->> 'conference' FROM calls WHERE labels LIKE '%\"conference\"%'"
        ).rows {
            guard let id = row[0], let label = row[1] else { continue }
            clues.conferenceLabels.append((id, label))
        }
        for row in try query("SELECT call_id, sdk_call_id FROM calls WHERE sdk_call_id IS NOT NULL").rows {
            guard let id = row[0], let sdk = row[1] else { continue }
            clues.sdkCallIDs.append((id, sdk))
        }
        for row in try query(conversationSSRCPairs).rows {
            guard let a = row[0], let b = row[1] else { continue }
            clues.ssrcPairs.append((a, b))
        }
        try query("DELETE FROM call_conversations")
        var rows = CopyRows()
        for leg in ConversationLinks.legs(clues) {
            rows.add(leg.callID); rows.add(leg.conversation); rows.add(leg.linkedBy)
            rows.endRow()
        }
        if rows.rows > 0 {
            try checked { try db.copy("COPY call_conversations(call_id, conversation_id, linked_by) FROM STDIN", rows: rows) }
        }
        try ConferenceLinking.update(self, config: recordedSettings())
    }

    // MARK: - Totals

    public func totals() throws -> StoreTotals {
        try flush()
        var byGrade: [String: Int] = [:]
        for r in try query("SELECT grade, count(*) FROM calls GROUP BY grade").rows {
            byGrade[r[0] ?? "?"] = Int(r[1] ?? "0") ?? 0
        }
        let files = Int(try query("SELECT count(*) FROM ingested_files").rows.first?.first.flatMap { $0 } ?? "0") ?? 0
        return StoreTotals(calls: byGrade.values.reduce(0, +), byGrade: byGrade, files: files)
    }

    public func findingCount() throws -> Int {
        try flush()
        return Int(try query("SELECT count(*) FROM findings").rows.first?.first.flatMap { $0 } ?? "0") ?? 0
    }

    public func endBulkLoad() {}

    /// Other processes may write the same database at once: a call not written by this run may
    /// still be stored by another, and transactions commit after each sorted batch of calls.
    public var sharedByOtherWriters: Bool { true }
}

extension PostgresStore: ResultStore {}

/// The PostgreSQL store's rollups: calls read with one query per bucket, rows sent with COPY.
final class PostgresRollups: RollupStorage {
    let store: PostgresStore
    let rows = Box(CopyRows())

    init(store: PostgresStore) { self.store = store }

    final class Box<T> {
        var value: T
        init(_ value: T) { self.value = value }
    }

    /// A label's value as text: what SQLite's `json_extract` gives for strings and numbers.
    func dimensions() throws -> [(name: String, column: String)] {
        Schema.rollupDimensions(labelKeys: try store.recordedSettings().labelDimensions) { "(labels::jsonb ->> '\($0)')" }
    }

    func bucketCalls(
        from start: Int64, length: Int64, dimensions: [(name: String, column: String)], values: inout RollupBuilder.DimensionValues
    ) throws -> RollupBuilder.BucketCalls {
        var calls = RollupBuilder.BucketCalls()
        let dimCount = dimensions.count, metricCount = Schema.rollupMetrics.count
        for row in try store.rollupCalls(from: start, length: length, dimensions: dimensions).rows {
            calls.starts.append(row[0].flatMap { Int64($0) } ?? start)
            calls.grades.append(row[1].flatMap { Grade(rawValue: $0) })
            calls.minutes.append(Double(row[2].flatMap { Int64($0) } ?? 0) / 60_000)
            for d in 0..<dimCount { calls.groups.append(values.number(RollupBuilder.GroupKey(dimension: d, value: row[3 + d] ?? "NULL"))) }
            for m in 0..<metricCount {
                let v = row[3 + dimCount + m].flatMap { Double($0) }
                calls.metrics.append(v.flatMap { $0.isFinite ? $0 : nil } ?? .nan)
            }
        }
        return calls
    }

    func deleteBucket(period: String, start: Int64) throws {
        try store.checked {
            try store.db.query("DELETE FROM rollups WHERE period = $1 AND bucket_ts = $2", [.text(period), .text(String(start))])
        }
    }

    func insertRow(_ body: (inout CopyRows) throws -> Void) throws {
        try body(&rows.value)
        rows.value.endRow()
    }
}

extension PostgresStore: ConferenceRowAccess {
    private func listed(_ sql: String) -> String { sql.replacingOccurrences(of: "ID_LIST", with: "SELECT unnest($1::text[])") }

    package func conferenceRows(_ sql: String, values: [String]) throws -> [[String?]] {
        try flush()
        let parameters: [PostgresValue] = sql.contains("ID_LIST") ? [.text(PostgresStore.textArray(values))] : []
        return try checked { try db.query(listed(sql), parameters).rows }
    }

    package func conferenceExecute(_ sql: String, values: [String]) throws {
        try flush()
        try checked { try db.query(listed(sql), [.text(PostgresStore.textArray(values))]) }
    }

    package func insertConference(_ result: ConferenceResult) throws {
        func copy<T: StoredTable>(_ table: T.Type, _ values: [T.Row]) throws {
            guard !values.isEmpty else { return }
            var rows = CopyRows()
            values.withUnsafeBufferPointer { v in for i in v.indices { table.copy(v.baseAddress! + i, to: &rows) } }
            try checked { try db.copy("COPY \(table.name)(\(table.columnNames.joined(separator: ", "))) FROM STDIN", rows: rows) }
        }
        try copy(ConferenceParticipantsTable.self, result.participants)
        try copy(ConferenceMatrixTable.self, result.cells)
        try copy(FindingsTable.self, result.findings)
    }

    package func labelSQL(_ key: String) -> String { "(c.labels::jsonb ->> '\(key)')" }
}
