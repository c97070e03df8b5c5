import PostgresDatabase

/// `prune` and `forget` on PostgreSQL: what `CallStore`'s removal promises (a call goes whole,
/// rollups stay exact, the ledger keeps its entries), while workers may be writing.
///
/// Each removed call is locked as a writer locks it (`storedCall`), in call-id order, so a worker
/// merging more of the call waits and then finds it gone (and stores what it read as a new
/// call), never half of it; the rollup rebuild and the conversation links run under the commit
/// lock, as a writer's do.
extension PostgresStore: RetentionStore {
    public func callIDs(startedBefore timestamp: Int64) throws -> [String] {
        try checked {
            try db.query("SELECT call_id FROM calls WHERE start_ts < $1 ORDER BY start_ts", [.text(String(timestamp))]).rows
                .compactMap { $0[0] }
        }
    }

    public func forEachStoredMaterial(batch: Int, _ body: (String, [UInt8]) throws -> Void) throws {
        var after: String?
        while true {
            let records = try material(after: after, limit: batch)
            for r in records { try body(r.callID, r.material) }
            guard records.count == batch, let last = records.last else { return }
            after = last.callID
        }
    }

    public func existingCallIDs(_ ids: [String]) throws -> [String] {
        try ids.filter { id in
            try checked {
                try db.scalar(
                    "SELECT EXISTS (SELECT 1 FROM calls WHERE call_id = $1) OR EXISTS (SELECT 1 FROM call_material WHERE call_id = $1)",
                    [.text(id)]) == "t"
            }
        }
    }

    public func removeCalls(_ ids: [String]) throws -> RemovalCounts {
        try begin()
        do {
            var removal = RemovalCounts()
            var starts: [Int64] = []
            func deleted(_ sql: String, _ id: String) throws -> Int {
                Int(try checked { try db.scalar("WITH d AS (\(sql) RETURNING 1) SELECT count(*) FROM d", [.text(id)]) } ?? "0") ?? 0
            }
            for id in Set(ids).sorted() {
                try checked { try db.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [.text(id)]) }
                if let start = try checked({ try db.scalar("SELECT start_ts FROM calls WHERE call_id = $1", [.text(id)]) }).flatMap({ Int64($0) }) {
                    starts.append(start)
                    removal.firstStart = min(removal.firstStart ?? start, start)
                    removal.lastStart = max(removal.lastStart ?? start, start)
                }
                removal.intervals += try deleted("DELETE FROM interval_rows WHERE call_key IN (SELECT call_key FROM calls WHERE call_id = $1)", id)
                removal.events += try deleted("DELETE FROM event_rows WHERE call_key IN (SELECT call_key FROM calls WHERE call_id = $1)", id)
                removal.streams += try deleted("DELETE FROM streams WHERE call_id = $1", id)
                removal.findings += try deleted("DELETE FROM findings WHERE call_id = $1", id)
                removal.peerConnections += try deleted("DELETE FROM peer_connections WHERE call_id = $1", id)
                removal.materials += try deleted("DELETE FROM call_material WHERE call_id = $1", id)
                removal.calls += try deleted("DELETE FROM calls WHERE call_id = $1", id)
            }
            let (hours, days) = RollupBuckets.containing(starts)
            try markRollupsPending(forCallStarts: starts)
            try refreshPendingRollups()
            try linkConversations()
            try commit()
            removal.rollupBuckets = hours.count + days.count
            return removal
        } catch {
            rollback()
            throw error
        }
    }

    /// The database's size; its dead rows are reused by later writes (autovacuum), which
    /// PostgreSQL does not count as free bytes.
    public func fileSpace() throws -> (total: Int64, free: Int64) {
        let size = try checked { try db.scalar("SELECT pg_database_size(current_database())") }
        return (size.flatMap { Int64($0) } ?? 0, 0)
    }

    /// `VACUUM` of the tables removals touch: their dead rows become reusable without locking
    /// out the workers (`VACUUM FULL` would give the space back to the file system, but holds
    /// every table exclusively while it rewrites it).
    public func reclaimSpace(readerWaitSeconds: Double) throws {
        try checked {
            try db.execute("VACUUM calls, streams, interval_rows, event_rows, findings, peer_connections, call_material, rollups, call_conversations")
        }
    }
}
