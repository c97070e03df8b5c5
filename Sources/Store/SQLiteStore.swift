import Analysis
import MaterialScanning
import SQLiteDatabase

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The analysis database: calls, streams, intervals, events, findings, rollups, and the
/// ledger of ingested files that makes re-runs change nothing.
///
/// One writer at a time: `open(path:forWriting:)` takes an exclusive lock on `<db>.lock` and
/// refuses with a clear message while another run holds it. Readers (queries, reports) need
/// no lock: WAL mode lets them read while a run writes.
///
/// A database that this store creates is first filled under a rollback journal, and switched
/// to WAL when the store is done with it (`endBulkLoad`): a new file's pages then go to disk
/// once, where WAL writes each page to the log and copies it again at every checkpoint (6-11 %
/// of the real-shaped benchmark's time, about 4 % of the simulated one's; DECISIONS.md).
/// Meanwhile a reader of the new file can be told "database is locked" while a commit is under
/// way (ours wait up to 5 s), and a reader that keeps reading delays the run's commits, which
/// wait for it as long as it takes and say who it is (`commit`).
///
/// The SQLite implementation of `ResultStore`. Every statement that touches the file is written
/// in this module; `db` is for this package's tests, which inspect the file as SQLite.
public final class SQLiteStore {
    package let db: Database
    public let path: String
    private var writerLock: WriterLock?
    /// Set while the database is written under a rollback journal: one this store created (or,
    /// rarely, one that could not be switched to WAL when it was opened).
    public private(set) var bulkLoading = false
    /// The inserts that run for every call, stream, interval, event and finding, prepared once
    /// and held here: finding a cached statement by its SQL text hashed that text for every row.
    private var inserts: [InsertKey: Statement] = [:]
    /// The same for rollup rows (`Rollups.swift`).
    var rollupInsertStatement: Statement?
    /// The `call_key` the next call written gets: one more than any stored (see `Schema`).
    private var nextCallKey: Int64 = 1
    /// The schema version this store upgraded the database from when it opened it, if it did.
    public private(set) var upgradedFrom: Int?

    /// Opens `path` for writing: creates it, or upgrades an older schema version.
    /// `willUpgrade(from)`: called before a database of an older schema version is upgraded,
    /// which rewrites its intervals and events (a few seconds for 40,000 calls).
    public convenience init(path: String, willUpgrade: ((Int) -> Void)? = nil) throws {
        try self.init(path: path, forWriting: true, willUpgrade: willUpgrade)
    }

    /// `forWriting: false`: read-only, without the writers' lock, for this package's tests that
    /// inspect a file through `db`; readers use `SQLiteReader`.
    package init(path: String, forWriting: Bool, willUpgrade: ((Int) -> Void)? = nil) throws {
        self.path = path
        var lock: WriterLock?
        if forWriting {
            do {
                lock = try WriterLock.acquire(path + ".lock")
            } catch WriterLock.Failure.heldBy(_, let holder) {
                throw StoreError.locked(path: path, holder: holder)
            } catch let failure as WriterLock.Failure {
                throw StoreError.notWritable(path: path, reason: failure.description)
            }
        }
        do {
            (db, upgradedFrom) = try SQLiteStore.openDatabase(path: path, forWriting: forWriting, willUpgrade: willUpgrade)
        } catch {
            lock?.release()
            throw error
        }
        writerLock = lock
        if forWriting {
            bulkLoading = try db.scalar("PRAGMA journal_mode")?.string != "wal"
            nextCallKey = (try db.scalar("SELECT max(call_key) FROM calls")?.int64 ?? 0) + 1
        }
    }

    private static func openDatabase(path: String, forWriting: Bool, willUpgrade: ((Int) -> Void)?) throws -> (Database, upgradedFrom: Int?) {
        guard forWriting else { return (try openForReading(path: path), nil) }
        do {
            let db = try Database(path: path)
            try Schema.check(db)  // before the journal mode changes: a refused file stays as it was
            // A new file (no tables yet) is filled under a rollback journal (see the type's
            // comment), synced in full at commits: with `NORMAL`, SQLite's documentation allows
            // a power failure to corrupt a rollback-journal database on some file systems (a
            // WAL one it does not). An existing file is written under WAL, so that readers never wait.
            let isNew = try db.scalar("SELECT count(*) FROM sqlite_master")?.int64 == 0
            // A commit under the rollback journal waits for readers to finish: a minute, not
            // the 5 s a reader waits, before the run fails.
            if isNew { db.setBusyTimeout(milliseconds: 60_000) }
            // 16 KiB pages (a new file only; before WAL, which fixes the size): bulk inserts
            // into indexes keyed by call id touch fewer pages (a quarter less time inserting
            // the benchmark's intervals than with 4 KiB). A 256 MiB page cache keeps the
            // indexes' pages in memory within a transaction: with 64 MiB, 40,000 simulated
            // calls in one day made SQLite read 1.3 GB and write 1.9 GB for a 313 MB
            // database, with 256 MiB 0.4 GB and 1.4 GB (and 0.2 GB more memory).
            try db.execute(
                """
                PRAGMA page_size = 16384; PRAGMA journal_mode = \(isNew ? "DELETE" : "WAL");
                PRAGMA synchronous = \(isNew ? "FULL" : "NORMAL");
                PRAGMA cache_size = -262144;
                """)
            return (db, try Schema.migrate(db, willUpgrade: willUpgrade))
        } catch let e as Database.Error where e.code == 26 /* SQLITE_NOTADB */ {
            throw StoreError.notADatabase(path: path, reason: e.message)
        }
    }

    /// A read-only connection to a callstats database (one with a `calls` table).
    static func openForReading(path: String) throws -> Database {
        do {
            let db = try Database(path: path, readOnly: true)
            guard try db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'calls'")?.int64 == 1 else {
                if let writer = WriterLock.holder(path + ".lock") { throw StoreError.beingCreated(path: path, writer: writer) }
                throw StoreError.notADatabase(path: path, reason: "it has no calls table")
            }
            return db
        } catch let e as Database.Error where e.code == 26 /* SQLITE_NOTADB */ {
            throw StoreError.notADatabase(path: path, reason: e.message)
        }
    }

    deinit {
        endBulkLoad()
        releaseLock()
    }

    /// Switches a database that this store created to WAL, so that later runs write while
    /// readers read. Outside a transaction; it fails harmlessly while another connection has the
    /// file open (the next run that opens it for writing switches it).
    public func endBulkLoad() {
        guard bulkLoading else { return }
        bulkLoading = false
        _ = try? db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
    }

    private func releaseLock() {
        writerLock?.release()
        writerLock = nil
    }

    // MARK: - Ledger

    /// The path under which content with this fingerprint was already ingested, if any.
    public func ingestedPath(fingerprint: String) throws -> String? {
        try db.scalar("SELECT path FROM ingested_files WHERE fingerprint = ?", [.text(fingerprint)], cached: true)?.string
    }

    public func recordIngested(_ f: LedgerEntry, at now: Int64) throws {
        try db.run(
            """
            INSERT OR REPLACE INTO ingested_files(path, fingerprint, size, mtime, records, skipped, calls, ingested_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                f.path.sqlValue, f.fingerprint.sqlValue, f.size.sqlValue, f.mtime.sqlValue,
                f.records.sqlValue, f.skipped.sqlValue, f.calls.sqlValue, now.sqlValue,
            ])
    }

    // MARK: - Calls

    public typealias StoredCall = StoredCallState

    /// Whether no call (nor any call's material) is stored. A run into such a database knows a
    /// call is new until it has written it, and skips `storedCall`'s two lookups for it.
    public func hasNoCalls() throws -> Bool {
        try db.scalar("SELECT EXISTS (SELECT 1 FROM calls) OR EXISTS (SELECT 1 FROM call_material)")?.int64 == 0
    }

    public func storedCall(_ callID: String) throws -> StoredCall? {
        guard let row = try db.rows("SELECT complete, start_ts, end_ts FROM calls WHERE call_id = ?", [.text(callID)], cached: true).first else {
            if case .blob(let m)? = try db.scalar("SELECT material FROM call_material WHERE call_id = ?", [.text(callID)], cached: true) {
                return StoredCall(complete: false, startTs: 0, endTs: 0, material: m)
            }
            return nil
        }
        var material: [UInt8]?
        if case .blob(let m)? = try db.scalar("SELECT material FROM call_material WHERE call_id = ?", [.text(callID)], cached: true) {
            material = m
        }
        return StoredCall(complete: row[0].int64 == 1, startTs: row[1].int64 ?? 0, endTs: row[2].int64 ?? 0, material: material)
    }

    /// Replaces everything stored for the call with `analysis`. `material` (the call's compact
    /// accumulated inputs) is kept for every call: records of a call that arrive later — a
    /// continuation in a new file, or the same records again — merge with it exactly.
    /// `replacing: false` is for a call the caller knows is not stored yet: it skips the deletes.
    public func write(_ analysis: CallAnalysis, complete: Bool, material: [UInt8]?, replacing: Bool = true) throws {
        let id = analysis.call.callID
        if replacing {
            // The keyed rows first, while the call's row still gives their key.
            for table in [IntervalsTable.name, EventsTable.name] {
                try db.run("DELETE FROM \(table) WHERE call_key IN (SELECT call_key FROM calls WHERE call_id = ?)", [.text(id)])
            }
            for table in [CallsTable.name, StreamsTable.name, PeerConnectionsTable.name, FindingsTable.name, MaterialTable.name] {
                try db.run("DELETE FROM \(table) WHERE call_id = ?", [.text(id)])
            }
        }
        let key = nextCallKey
        try insertRow(CallsTable.self, CallRow(summary: analysis.call, complete: complete, key: key))
        nextCallKey += 1
        try insertRows(StreamsTable.self, analysis.streams)
        try insertRows(IntervalsTable.self, analysis.intervals, key: key, most: Self.intervalsPerStatement)
        try insertRows(EventsTable.self, analysis.events, key: key, most: Self.eventsPerStatement)
        try insertRows(FindingsTable.self, analysis.findings)
        try insertRows(PeerConnectionsTable.self, analysis.peerConnections)
        if let material { try insertRow(MaterialTable.self, MaterialRow(callID: id, material: material)) }
    }

    /// Deletes every call's analysis (calls, streams, intervals, events, findings, peer connections), keeping the
    /// material it was made from: a regrade writes them all again. Whole tables at once, which
    /// SQLite empties without visiting their rows (a delete per call took most of a regrade).
    public func deleteAllAnalyses() throws {
        for table in [CallsTable.name, StreamsTable.name, IntervalsTable.name, EventsTable.name, FindingsTable.name, PeerConnectionsTable.name] {
            try db.run("DELETE FROM \(table)")
        }
    }

    /// `rows` interval (event) rows in one statement: a call has tens to hundreds of intervals
    /// and often tens of events, and one statement per row cost a step, a reset and the
    /// statement's setup each time.
    static let intervalsPerStatement = 32
    static let eventsPerStatement = 16

    /// A prepared insert: a table, and how many rows one statement writes.
    private struct InsertKey: Hashable {
        var table: ObjectIdentifier
        var rows: Int
    }

    /// The insert of `rows` rows into `table`, prepared once.
    private func insertStatement<Table: StoredTable>(_ table: Table.Type, rows: Int) throws -> Statement {
        let key = InsertKey(table: ObjectIdentifier(table), rows: rows)
        if let prepared = inserts[key] { return prepared }
        let statement = try db.statement(table.insertSQL(rows: rows))
        inserts[key] = statement
        return statement
    }

    private func insertRow<Table: StoredTable>(_ table: Table.Type, _ row: Table.Row) throws {
        precondition(table.keyColumn == nil, "\(table.name) rows are inserted with their call's key")
        try withUnsafePointer(to: row) { row in
            try insertStatement(table, rows: 1).insertRow { r in try table.bind(row, to: &r) }
        }
    }

    /// Rows in blocks of `most`, the rest in blocks of halving sizes (a call's last 31 intervals
    /// took up to 31 one-row statements, at 1.4 times a block row's cost each); rows keep their
    /// order either way. Each row is bound where it lies: handed a row, a binder got a copy of
    /// it (a retain and a release for each of its strings). `key`: the call's `call_key`, for
    /// a table that files rows under it.
    func insertRows<Table: StoredTable>(_ table: Table.Type, _ rows: [Table.Row], key: Int64? = nil, most: Int = 1) throws {
        precondition((key != nil) == (table.keyColumn != nil), "\(table.name): a key exactly when the table has one")
        try rows.withUnsafeBufferPointer { rows in
            var start = 0, size = most
            while start < rows.count {
                while rows.count - start < size { size /= 2 }
                try insertStatement(table, rows: size).insertRow { r in
                    for i in start..<(start + size) {
                        if let key { try r.add(key) }
                        try table.bind(rows.baseAddress! + i, to: &r)
                    }
                }
                start += size
            }
        }
    }

    // MARK: - Summary figures

    public func totals() throws -> StoreTotals {
        var byGrade: [String: Int] = [:]
        for r in try db.rows("SELECT grade, count(*) FROM calls GROUP BY grade") {
            byGrade[r[0].string ?? "?"] = Int(r[1].int64 ?? 0)
        }
        let files = Int(try db.scalar("SELECT count(*) FROM ingested_files")?.int64 ?? 0)
        return StoreTotals(calls: byGrade.values.reduce(0, +), byGrade: byGrade, files: files)
    }

    public func findingCount() throws -> Int {
        Int(try db.scalar("SELECT count(*) FROM \(FindingsTable.name)")?.int64 ?? 0)
    }

    // MARK: - Transactions

    /// Starts a write transaction, taking the write lock at once (`BEGIN IMMEDIATE`): a run
    /// learns that another holds the file before it has done any work.
    public func begin() throws { try db.execute("BEGIN IMMEDIATE") }

    /// Commits. A commit under the rollback journal (a new database) waits for readers to finish
    /// (`setReaderWait`); when they are still reading after that, the transaction stays open,
    /// `onReaderWait` is told who reads, and the commit is tried again, as often as it takes: a
    /// reader delays a run, never loses its work.
    public func commit() throws {
        while true {
            do {
                try db.execute("COMMIT")
                return
            } catch let e as Database.Error where e.code & 0xFF == 5 /* SQLITE_BUSY */ && db.isInTransaction {
                onReaderWait?(FileLockHolders.describe(path))
            }
        }
    }

    /// Told, each time a commit has waited `setReaderWait` for readers and goes on waiting, which
    /// processes hold a lock on the file (`FileLockHolders.describe`).
    public var onReaderWait: ((String) -> Void)?

    /// How long one attempt to commit to a new database (rollback journal) waits for readers
    /// before `onReaderWait` is told and the commit is tried again (60 s unless set).
    public func setReaderWait(seconds: Double) {
        guard bulkLoading else { return }
        db.setBusyTimeout(milliseconds: Int32(max(1, min(seconds * 1000, Double(Int32.max)))))
    }

    /// Undoes the open transaction. Quiet: it runs while another error is being reported.
    public func rollback() { try? db.execute("ROLLBACK") }

    // MARK: - Material

    public func materialCount() throws -> Int {
        Int(try db.scalar("SELECT count(*) FROM \(MaterialTable.name)")?.int64 ?? 0)
    }

    /// Calls stored without material (which a regrade cannot analyse again).
    public func callsWithoutMaterial() throws -> Int {
        Int(try db.scalar("SELECT count(*) FROM calls WHERE call_id NOT IN (SELECT call_id FROM call_material)")?.int64 ?? 0)
    }

    /// Up to `limit` calls' material in call-id order, those after `callID` (from the first
    /// when nil: any id, even an empty one, is taken).
    public func material(after callID: String?, limit: Int) throws -> [MaterialRecord] {
        let rows =
            try callID.map {
                try db.rows(
                    "SELECT call_id, material FROM call_material WHERE call_id > ? ORDER BY call_id LIMIT ?",
                    [.text($0), .integer(Int64(limit))], cached: true)
            } ?? db.rows("SELECT call_id, material FROM call_material ORDER BY call_id LIMIT ?", [.integer(Int64(limit))], cached: true)
        return rows.map { row in
            let bytes: [UInt8] = if case .blob(let b) = row[1] { b } else { [] }
            return MaterialRecord(callID: row[0].string ?? "", material: bytes)
        }
    }
}
