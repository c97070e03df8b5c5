import Analysis

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
/// of the real-shaped benchmark's time, about 4 % of the simulated one's; PERFORMANCE.md).
/// Meanwhile a reader of the new file can be told "database is locked" while a commit is under
/// way (ours wait up to 5 s), and a reader that keeps reading for over a minute makes the run's
/// commit fail.
public final class CallStore {
    public let db: Database
    public let path: String
    private var writerLock: WriterLock?
    /// Set while the database is written under a rollback journal: one this store created (or,
    /// rarely, one that could not be switched to WAL when it was opened).
    public private(set) var bulkLoading = false
    /// The inserts that run for every call, stream, interval, event and finding, prepared once
    /// and held here: finding a cached statement by its SQL text hashed that text for every row.
    private var inserts: [Insert: Statement] = [:]
    /// The same for rollup rows (`Rollups.swift`).
    var rollupInsertStatement: Statement?
    /// The `call_key` the next call written gets: one more than any stored (see `Schema`).
    private var nextCallKey: Int64 = 1
    /// The schema version this store upgraded the database from when it opened it, if it did.
    public private(set) var upgradedFrom: Int?

    /// `willUpgrade(from)`: called before a database of an older schema version is upgraded,
    /// which rewrites its intervals and events (a few seconds for 40,000 calls).
    public init(path: String, forWriting: Bool = true, willUpgrade: ((Int) -> Void)? = nil) throws {
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
            (db, upgradedFrom) = try CallStore.openDatabase(path: path, forWriting: forWriting, willUpgrade: willUpgrade)
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
        do {
            let db = try Database(path: path, readOnly: !forWriting)
            if forWriting {
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
                try db.execute("""
                    PRAGMA page_size = 16384; PRAGMA journal_mode = \(isNew ? "DELETE" : "WAL");
                    PRAGMA synchronous = \(isNew ? "FULL" : "NORMAL");
                    PRAGMA cache_size = -262144;
                    """)
                return (db, try Schema.migrate(db, willUpgrade: willUpgrade))
            } else {
                guard try db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'calls'")?.int64 == 1 else {
                    throw StoreError.notADatabase(path: path, reason: "it has no calls table")
                }
            }
            return (db, nil)
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

    public struct FileEntry: Sendable {
        public var path: String
        public var fingerprint: String
        public var size: Int64
        public var mtime: Int64
        public var records: Int
        public var skipped: Int
        public var calls: Int

        public init(path: String, fingerprint: String, size: Int64, mtime: Int64, records: Int, skipped: Int, calls: Int) {
            self.path = path
            self.fingerprint = fingerprint
            self.size = size
            self.mtime = mtime
            self.records = records
            self.skipped = skipped
            self.calls = calls
        }
    }

    /// The path under which content with this fingerprint was already ingested, if any.
    public func ingestedPath(fingerprint: String) throws -> String? {
        try db.scalar("SELECT path FROM ingested_files WHERE fingerprint = ?", [.text(fingerprint)], cached: true)?.string
    }

    public func recordIngested(_ f: FileEntry, at now: Int64) throws {
        try db.run("""
            INSERT OR REPLACE INTO ingested_files(path, fingerprint, size, mtime, records, skipped, calls, ingested_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, [f.path.sqlValue, f.fingerprint.sqlValue, f.size.sqlValue, f.mtime.sqlValue,
                  f.records.sqlValue, f.skipped.sqlValue, f.calls.sqlValue, now.sqlValue])
    }

    // MARK: - Calls

    /// What is stored of a call that a new run sees again.
    public struct StoredCall: Sendable {
        public var complete: Bool
        public var startTs: Int64
        public var endTs: Int64
        public var material: [UInt8]?
    }

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
            for table in ["interval_rows", "event_rows"] {
                try db.run("DELETE FROM \(table) WHERE call_key IN (SELECT call_key FROM calls WHERE call_id = ?)", [.text(id)])
            }
            for table in ["calls", "streams", "findings", "call_material"] {
                try db.run("DELETE FROM \(table) WHERE call_id = ?", [.text(id)])
            }
        }
        let key = nextCallKey
        try insertCall(analysis.call, complete: complete, key: key)
        nextCallKey += 1
        for s in analysis.streams { try insertStream(s) }
        try insertRows(analysis.intervals, Insert.intervals, most: Insert.intervalsPerStatement) { rows, index, r in
            try Self.bindInterval(rows, index, key: key, to: &r)
        }
        try insertRows(analysis.events, Insert.events, most: Insert.eventsPerStatement) { events, index, r in
            let e = events.baseAddress! + index
            try r.add(key); try r.add(e.pointee.ts); try r.add(e.pointee.kind); try r.add(e.pointee.action)
            try r.add(e.pointee.type); try r.add(e.pointee.detailJSON)
        }
        for f in analysis.findings {
            try insert(.finding) { r in
                try r.add(f.callID); try r.add(f.code); try r.add(f.severity.rawValue); try r.add(f.startTs)
                try r.add(f.durationMs); try r.add(f.streamID); try r.add(f.value); try r.add(f.detail)
            }
        }
        if let material { try insert(.material) { r in try r.add(id); try r.add(SQLValue.blob(material)) } }
    }

    /// Deletes every call's analysis (calls, streams, intervals, events, findings), keeping the
    /// material it was made from: a regrade writes them all again. Whole tables at once, which
    /// SQLite empties without visiting their rows (a delete per call took most of a regrade).
    public func deleteAllAnalyses() throws {
        for table in ["calls", "streams", "interval_rows", "event_rows", "findings"] {
            try db.run("DELETE FROM \(table)")
        }
    }

    private enum Insert: Hashable {
        case call, stream, finding, material
        /// `rows` interval (event) rows in one statement: a call has tens to hundreds of
        /// intervals and often tens of events, and one statement per row cost a step, a reset
        /// and the statement's setup each time.
        case intervals(rows: Int), events(rows: Int)

        static let intervalsPerStatement = 32
        static let eventsPerStatement = 16

        /// Full-row inserts list every column in table order.
        var sql: String {
            switch self {
            case .call: Insert.values("calls", 53)
            case .stream: Insert.values("streams", 29)
            case .intervals(let rows): Insert.values("interval_rows", 1 + Schema.intervalColumnTypes.count, rows: rows)
            case .events(let rows): Insert.values("event_rows", 6, rows: rows)
            case .finding: """
                INSERT INTO findings(call_id, code, severity, start_ts, duration_ms, stream_id, value, detail)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """
            case .material: "INSERT INTO call_material(call_id, material) VALUES (?, ?)"
            }
        }

        /// Several rows go in with `OR FAIL`: under the default `ABORT` a statement that writes
        /// several rows must be able to undo its own earlier rows, so SQLite copies every page it
        /// touches, already changed in the transaction, to a statement journal in a temporary
        /// file first (550 MB of writes for 700 real-shaped calls). A failure here rolls the
        /// whole transaction back anyway.
        static func values(_ table: String, _ count: Int, rows: Int = 1) -> String {
            let row = "(" + Array(repeating: "?", count: count).joined(separator: ", ") + ")"
            let verb = rows > 1 ? "INSERT OR FAIL" : "INSERT"
            return "\(verb) INTO \(table) VALUES " + Array(repeating: row, count: rows).joined(separator: ", ")
        }
    }

    /// Inserts one row, its values bound by `row` in column order.
    private func insert(_ kind: Insert, _ row: (inout RowBinder) throws -> Void) throws {
        let statement: Statement
        if let prepared = inserts[kind] {
            statement = prepared
        } else {
            statement = try db.statement(kind.sql)
            inserts[kind] = statement
        }
        try statement.insertRow(row)
    }

    private func insertCall(_ c: CallSummary, complete: Bool, key: Int64) throws {
        try insert(.call) { r in
            try r.add(c.callID); try r.add(c.startTs); try r.add(c.endTs); try r.add(c.durationMs)
            try r.add(c.direction); try r.add(c.sdk); try r.add(c.sdkVersion); try r.add(c.app); try r.add(c.appVersion)
            try r.add(c.platform); try r.add(c.network); try r.add(c.media); try r.add(c.labelsJSON); try r.add(c.source)
            try r.add(c.restSentMs); try r.add(c.ringingMs); try r.add(c.answerMs); try r.add(c.mediaMs)
            try r.add(c.iceOutcome); try r.add(c.iceDisconnects); try r.add(c.iceDisconnectedMs); try r.add(c.ipChanges)
            try r.add(c.reconnects); try r.add(c.localCandidateType); try r.add(c.remoteCandidateType); try r.add(c.transport)
            try r.add(c.relayUsed)
            try r.add(c.endReason); try r.add(c.endStatusCode); try r.add(c.endStatusText); try r.add(c.sipStatus); try r.add(c.sipReason)
            try r.add(c.audioCodec); try r.add(c.videoCodec)
            try r.add(c.mosCQ); try r.add(c.mosLQ); try r.add(c.rFactor); try r.add(c.mosWorst); try r.add(c.videoScore); try r.add(c.videoScoreWorst)
            try r.add(c.lossPct); try r.add(c.jitterMs); try r.add(c.rttMs); try r.add(c.iceRttMs); try r.add(c.concealmentPct)
            try r.add(c.sdkQualityMean); try r.add(c.sdkQualityMin); try r.add(c.clockSkewMs)
            try r.add(c.grade.rawValue); try r.add(c.gradeReason); try r.add(c.findingCount); try r.add(complete)
            try r.add(key)
        }
    }

    private func insertStream(_ s: StreamSummary) throws {
        try insert(.stream) { r in
            try r.add(s.callID); try r.add(s.streamID); try r.add(s.ssrc); try r.add(s.direction.rawValue); try r.add(s.kind.rawValue)
            try r.add(s.codec); try r.add(s.clockRate); try r.add(s.source); try r.add(s.startTs); try r.add(s.endTs)
            try r.add(s.packets); try r.add(s.bytes); try r.add(s.packetsLost); try r.add(s.lossPct)
            try r.add(s.jitterMeanMs); try r.add(s.jitterMaxMs); try r.add(s.rttMeanMs); try r.add(s.bitrateKbps)
            try r.add(s.concealmentPct); try r.add(s.mosMean); try r.add(s.mosMin)
            try r.add(s.fpsMean); try r.add(s.widthMax); try r.add(s.heightMax); try r.add(s.freezeCount); try r.add(s.freezeMs)
            try r.add(s.videoScoreMean); try r.add(s.qualityLimitation); try r.add(s.counterResets)
        }
    }

    /// Rows in blocks of `most`, the rest in blocks of halving sizes (a call's last 31 intervals
    /// took up to 31 one-row statements, at 1.4 times a block row's cost each); rows keep their
    /// order either way. `statement(n)`: the insert of `n` rows.
    /// `bind` binds `rows[i]`, reading it where it lies: handed a row, it got a copy of it (a
    /// retain and a release for each of its strings).
    private func insertRows<Row>(_ rows: [Row], _ statement: (Int) -> Insert, most: Int,
                                 _ bind: (UnsafeBufferPointer<Row>, Int, inout RowBinder) throws -> Void) throws {
        try rows.withUnsafeBufferPointer { rows in
            var start = 0, size = most
            while start < rows.count {
                while rows.count - start < size { size /= 2 }
                try insert(statement(size)) { r in
                    for i in start..<(start + size) { try bind(rows, i, &r) }
                }
                start += size
            }
        }
    }

    private static func bindInterval(_ rows: UnsafeBufferPointer<IntervalMetrics>, _ index: Int, key: Int64, to r: inout RowBinder) throws {
        let i = rows.baseAddress! + index
        try r.add(key); try r.add(i.pointee.streamID); try r.add(i.pointee.startTs); try r.add(i.pointee.endTs)
        try r.add(i.pointee.packets); try r.add(i.pointee.packetsLost); try r.add(i.pointee.lossPct); try r.add(i.pointee.jitterMs)
        try r.add(i.pointee.rttMs); try r.add(i.pointee.iceRttMs); try r.add(i.pointee.bitrateKbps); try r.add(i.pointee.concealmentPct)
        try r.add(i.pointee.jitterBufferMs); try r.add(i.pointee.burstRatio); try r.add(i.pointee.rFactor); try r.add(i.pointee.mosCQ)
        try r.add(i.pointee.mosLQ); try r.add(i.pointee.fps); try r.add(i.pointee.width); try r.add(i.pointee.height)
        try r.add(i.pointee.freezeCount); try r.add(i.pointee.freezeMs); try r.add(i.pointee.videoScore); try r.add(i.pointee.qualityLimitation)
    }

    // MARK: - Summary figures

    public struct Totals: Sendable {
        public var calls: Int
        public var byGrade: [String: Int]
        public var files: Int
    }

    public func totals() throws -> Totals {
        var byGrade: [String: Int] = [:]
        for r in try db.rows("SELECT grade, count(*) FROM calls GROUP BY grade") {
            byGrade[r[0].string ?? "?"] = Int(r[1].int64 ?? 0)
        }
        let files = Int(try db.scalar("SELECT count(*) FROM ingested_files")?.int64 ?? 0)
        return Totals(calls: byGrade.values.reduce(0, +), byGrade: byGrade, files: files)
    }
}
