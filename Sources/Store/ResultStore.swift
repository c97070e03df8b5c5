import Analysis
import MaterialScanning
import PostgresDatabase

/// What the `analyze` and `regrade` jobs need of a results database, and nothing else: the
/// seam where a second backend plugs in. `SQLiteStore` is the SQLite implementation; a
/// PostgreSQL one implements this protocol with the same tables (their column lists,
/// `ResultTables.swift`, give its DDL and inserts too).
///
/// Granularity: one call is written whole by `write` (its rows are bound inside the backend,
/// statically dispatched), so a job generic over `ResultStore` makes one call through the
/// protocol per call, never per row or value.
///
/// Transactions: `begin`, `commit`, `rollback` (or `inTransaction`); every write happens inside
/// one. What is committed together is what an interrupted run keeps: a file's calls commit with
/// its ledger entry, and rollup buckets are marked pending in the transaction of the calls that
/// touched them.
public protocol ResultStore: AnyObject {
    // Transactions
    func begin() throws
    func commit() throws
    /// Undoes the open transaction; quiet, as it runs while another error is reported.
    func rollback()

    // The ledger of files read
    /// The path under which content with this fingerprint was already ingested, if any.
    func ingestedPath(fingerprint: String) throws -> String?
    func recordIngested(_ entry: LedgerEntry, at now: Int64) throws

    // Calls
    /// Whether no call (nor any call's material) is stored.
    func hasNoCalls() throws -> Bool
    func storedCall(_ callID: String) throws -> StoredCallState?
    /// The calls about to be looked up by `storedCall`, in that order (sorted): a store shared
    /// with other writers locks and reads them all at once rather than in a round trip each.
    func prepareLookups(_ callIDs: [String]) throws
    /// Replaces everything stored for the call (`replacing: false`: it is known not stored).
    func write(_ analysis: CallAnalysis, complete: Bool, material: [UInt8]?, replacing: Bool) throws
    /// Every call's analysis, keeping their material (a regrade writes them all again).
    func deleteAllAnalyses() throws

    // Material: each call's compact accumulated inputs
    func materialCount() throws -> Int
    func callsWithoutMaterial() throws -> Int
    /// Up to `limit` calls' material in call-id order, after `callID` (from the first when nil).
    func material(after callID: String?, limit: Int) throws -> [MaterialRecord]

    // The settings the stored calls were graded with
    func recordedSettings() throws -> AnalysisConfig
    func record(settings config: AnalysisConfig) throws
    func settingsForRun(asked: AnalysisConfig?, hasCalls: Bool) throws -> AnalysisConfig
    /// Refuses (`StoreError.otherKey`) a run whose pseudonymisation key fingerprint differs
    /// from the database's; claims it where none is recorded when other writers may race.
    func checkKey(fingerprint: String) throws
    func record(keyFingerprint: String) throws
    /// The quality-model version that graded the stored calls (nil: none recorded).
    func recordedQualityModel() throws -> String?
    func record(qualityModel: String) throws

    // Rollups
    func markRollupsPending(forCallStarts callStarts: some Sequence<Int64>) throws
    func refreshPendingRollups() throws
    func rebuildAllRollups() throws

    // Conversations
    /// Links the legs of conversations among every stored call again (after calls changed).
    func linkConversations() throws

    // Totals
    func totals() throws -> StoreTotals
    func findingCount() throws -> Int

    /// The schema version the store upgraded the database from when it opened it, if it did.
    var upgradedFrom: Int? { get }
    /// Called once a run's writing is done (SQLite: the switch from bulk loading to WAL).
    func endBulkLoad()
    /// Whether other processes may write the database at the same time (PostgreSQL): then no
    /// call is known new without looking it up, and a run commits after each sorted batch of
    /// calls, so that the per-call locks of two writers never wait on each other in a cycle.
    var sharedByOtherWriters: Bool { get }
}

extension ResultStore {
    public func prepareLookups(_ callIDs: [String]) throws {}

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    public func inTransaction<T>(_ body: () throws -> T) throws -> T {
        try begin()
        do {
            let result = try body()
            try commit()
            return result
        } catch {
            rollback()
            throw error
        }
    }
}

extension SQLiteStore: ResultStore {
    /// One writer at a time (`WriterLock`).
    public var sharedByOtherWriters: Bool { false }
}

/// A file in the ledger: content already read, by fingerprint.
public struct LedgerEntry: Sendable {
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

/// What is stored of a call that a new run sees again.
public struct StoredCallState: Sendable {
    public var complete: Bool
    public var startTs: Int64
    public var endTs: Int64
    public var material: [UInt8]?
}

/// One call's stored material.
public struct MaterialRecord: Sendable {
    public var callID: String
    public var material: [UInt8]
}

public struct StoreTotals: Sendable {
    public var calls: Int
    public var byGrade: [String: Int]
    public var files: Int
}
