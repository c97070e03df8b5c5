import Analysis
import Foundation
import SQLiteDatabase

/// Removing calls: retention (`callstats prune`) and requests to delete a person's data
/// (`callstats forget`).
///
/// What must stay true:
/// - A call goes whole: its row, streams, intervals, events, findings, peer connections and
///   stored material.
/// - Rollups stay exact: every hour and day bucket a removed call counted in is rebuilt from
///   the calls that remain, in the same transaction, so a reader never sees a bucket that
///   still counts a removed call.
/// - The ledger keeps its entries: a log whose calls were removed is not read again by the
///   next `analyze` (unless `--force`), so retention does not undo itself.
public protocol RetentionStore: AnyObject {
    /// The ids of calls that started before `timestamp` (epoch ms).
    func callIDs(startedBefore timestamp: Int64) throws -> [String]
    /// Every call id with stored material, and the material, `batch` calls at a time.
    func forEachStoredMaterial(batch: Int, _ body: (String, [UInt8]) throws -> Void) throws
    /// The ids among `ids` that the database holds (as a call or as stored material).
    func existingCallIDs(_ ids: [String]) throws -> [String]
    /// Removes the calls whole and rebuilds the rollup buckets they counted in, in one
    /// transaction: an interrupted removal changes nothing.
    func removeCalls(_ ids: [String]) throws -> RemovalCounts
    /// Removes every call that started before `timestamp` (epoch ms) as `removeCalls` does,
    /// and says which.
    func removeCalls(startedBefore timestamp: Int64) throws -> (ids: [String], removal: RemovalCounts)
    /// The database's size and the part of it that is free for reuse, in bytes.
    func fileSpace() throws -> (total: Int64, free: Int64)
    /// Gives free space back (SQLite: `VACUUM` rewrites the file, and its write-ahead log is
    /// emptied into it, waiting up to `readerWaitSeconds` for readers of an older snapshot;
    /// PostgreSQL: `VACUUM` of the tables).
    func reclaimSpace(readerWaitSeconds: Double) throws
}

extension RetentionStore {
    public func removeCalls(startedBefore timestamp: Int64) throws -> (ids: [String], removal: RemovalCounts) {
        let ids = try callIDs(startedBefore: timestamp)
        return (ids, try removeCalls(ids))
    }

    public func forEachStoredMaterial(_ body: (String, [UInt8]) throws -> Void) throws {
        try forEachStoredMaterial(batch: 500, body)
    }
}

/// What a removal took away, in either store.
public struct RemovalCounts: Sendable, Equatable {
    public var calls = 0
    public var streams = 0
    public var intervals = 0
    public var events = 0
    public var findings = 0
    public var peerConnections = 0
    public var materials = 0
    /// Hour and day buckets rebuilt.
    public var rollupBuckets = 0
    public var firstStart: Int64?
    public var lastStart: Int64?

    public init() {}
}

extension SQLiteStore: RetentionStore {

    /// The ids of calls that started before `timestamp` (epoch ms), with stored material of
    /// calls that have no row yet (a call whose end never came and was never written whole).
    public func callIDs(startedBefore timestamp: Int64) throws -> [String] {
        try db.rows("SELECT call_id FROM calls WHERE start_ts < ? ORDER BY start_ts", [.integer(timestamp)]).compactMap { $0[0].string }
    }

    /// Every call id with stored material, and the material: for searches that must look into
    /// what a call's records said (a person's fields), `batch` calls at a time.
    public func forEachStoredMaterial(batch: Int, _ body: (String, [UInt8]) throws -> Void) throws {
        var after: String?
        while true {
            let rows =
                try after.map {
                    try db.rows("SELECT call_id, material FROM call_material WHERE call_id > ? ORDER BY call_id LIMIT ?", [.text($0), .integer(Int64(batch))])
                }
                ?? db.rows("SELECT call_id, material FROM call_material ORDER BY call_id LIMIT ?", [.integer(Int64(batch))])
            for row in rows {
                guard let id = row[0].string, case .blob(let bytes) = row[1] else { continue }
                try body(id, bytes)
            }
            guard rows.count == batch, let last = rows.last?[0].string else { return }
            after = last
        }
    }

    /// The ids among `ids` that the database holds (as a call or as stored material).
    public func existingCallIDs(_ ids: [String]) throws -> [String] {
        try ids.filter { id in
            try db.scalar(
                "SELECT EXISTS (SELECT 1 FROM calls WHERE call_id = ?) OR EXISTS (SELECT 1 FROM call_material WHERE call_id = ?)",
                [.text(id), .text(id)])?.int64 == 1
        }
    }

    /// Removes the calls `ids` whole and rebuilds the rollup buckets they counted in, in one
    /// transaction: an interrupted removal changes nothing.
    public func removeCalls(_ ids: [String]) throws -> RemovalCounts {
        try db.transaction {
            var removal = RemovalCounts()
            var starts: [Int64] = []
            for id in ids {
                let key = try db.scalar("SELECT call_key FROM calls WHERE call_id = ?", [.text(id)])?.int64
                if let start = try db.scalar("SELECT start_ts FROM calls WHERE call_id = ?", [.text(id)])?.int64 {
                    starts.append(start)
                    removal.firstStart = min(removal.firstStart ?? start, start)
                    removal.lastStart = max(removal.lastStart ?? start, start)
                }
                if let key {
                    removal.intervals += try deleteCounting("DELETE FROM interval_rows WHERE call_key = ?", .integer(key))
                    removal.events += try deleteCounting("DELETE FROM event_rows WHERE call_key = ?", .integer(key))
                }
                removal.streams += try deleteCounting("DELETE FROM streams WHERE call_id = ?", .text(id))
                removal.findings += try deleteCounting("DELETE FROM findings WHERE call_id = ?", .text(id))
                removal.peerConnections += try deleteCounting("DELETE FROM peer_connections WHERE call_id = ?", .text(id))
                removal.materials += try deleteCounting("DELETE FROM call_material WHERE call_id = ?", .text(id))
                removal.calls += try deleteCounting("DELETE FROM calls WHERE call_id = ?", .text(id))
            }
            let buckets = Set(starts.map { floorDiv($0, RollupBuckets.hourMs) }).count + Set(starts.map { floorDiv($0, RollupBuckets.dayMs) }).count
            try refreshRollups(forCallStarts: starts)
            try linkConversations()
            removal.rollupBuckets = buckets
            return removal
        }
    }

    private func deleteCounting(_ sql: String, _ value: SQLValue) throws -> Int {
        try db.run(sql, [value])
        return db.changes
    }

    /// The database file's size and the part of it that is free pages, in bytes.
    public func fileSpace() throws -> (total: Int64, free: Int64) {
        let pageSize = try db.scalar("PRAGMA page_size")?.int64 ?? 0
        let pages = try db.scalar("PRAGMA page_count")?.int64 ?? 0
        let free = try db.scalar("PRAGMA freelist_count")?.int64 ?? 0
        return (pages * pageSize, free * pageSize)
    }

    /// Gives free pages back to the file system and removes the bytes of deleted rows from
    /// disk: `VACUUM` rewrites the database (which needs as much free disk as it is large), and
    /// under WAL the rewritten pages first go to the write-ahead log, the old ones staying in
    /// the file. So the log is then checkpointed into the file and truncated; a reader holding
    /// an older snapshot keeps that from completing, and is waited for up to
    /// `readerWaitSeconds`. Success means neither the file nor its log holds a deleted byte;
    /// otherwise `ReclaimError` says which readers keep them.
    public func reclaimSpace(readerWaitSeconds: Double) throws {
        try db.execute("VACUUM")
        guard try db.scalar("PRAGMA journal_mode")?.string == "wal" else { return }
        let deadline = Date().addingTimeInterval(max(0, readerWaitSeconds))
        while true {
            // (busy, frames in the log, frames checkpointed): 0 busy after TRUNCATE means every
            // frame is in the file and the log is empty.
            let result = try db.rows("PRAGMA wal_checkpoint(TRUNCATE)").first ?? []
            if result.first?.int64 == 0 { return }
            guard Date() < deadline else {
                throw ReclaimError(path: path, readers: FileLockHolders.describe(path + "-shm"), waitedSeconds: readerWaitSeconds)
            }
            usleep(100_000)
        }
    }

    /// `VACUUM` ran, but readers of an older snapshot keep the deleted rows' bytes in the
    /// write-ahead log and in the file's old pages.
    public struct ReclaimError: Error, CustomStringConvertible {
        public var path: String
        public var readers: String
        public var waitedSeconds: Double
        public var description: String {
            "\(path): the calls are removed, but their bytes are still on disk (in \(path)-wal and the file's old pages): "
                + "readers hold an older snapshot after \(Int(waitedSeconds)) s of waiting: \(readers); "
                + "close them and run the command with --vacuum again"
        }
    }
}
