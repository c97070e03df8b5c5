import PostgresDatabase

/// `prune` and `forget` on PostgreSQL: what `SQLiteStore`'s removal promises (a call goes whole,
/// rollups stay exact, the ledger keeps its entries), while workers may be writing.
///
/// A removal holds the removal lock exclusively (`PostgresSchema.removalLock`): it starts when
/// the writes in progress have committed, and writes that start meanwhile wait for its end, so
/// a worker merging more of a removed call finds it gone (and stores what it read as a new
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
        try removeListedCalls(wholeDaysBefore: nil) {
            _ = try checked {
                try db.query(
                    """
                    INSERT INTO removed_calls SELECT x.id, c.call_key, c.start_ts, c.end_ts
                    FROM (SELECT DISTINCT unnest($1::text[]) AS id) x LEFT JOIN calls c ON c.call_id = x.id
                    """, [.text(Self.textArray(ids))])
            }
        }.removal
    }

    /// Drops the days of `interval_rows` and `event_rows` wholly before the cut-off's day, whose
    /// rows all belong to calls that started before it (`PostgresPartitions`), and deletes the
    /// rest of those calls' rows set by set.
    public func removeCalls(startedBefore timestamp: Int64) throws -> (ids: [String], removal: RemovalCounts) {
        try removeListedCalls(wholeDaysBefore: PostgresPartitions.day(timestamp)) {
            _ = try checked {
                try db.query(
                    "INSERT INTO removed_calls SELECT call_id, call_key, start_ts, end_ts FROM calls WHERE start_ts < $1", [.text(String(timestamp))])
            }
        }
    }

    /// Removes the calls `list` puts in the temporary table `removed_calls` (with their keys and
    /// bounds, read after the removal lock: no write is in progress), in one transaction.
    /// With `wholeDaysBefore`, the partitions of days before it are dropped whole: the tables
    /// are taken exclusively first, so no writer holds rows there that the list could miss.
    private func removeListedCalls(wholeDaysBefore: Int64?, list: () throws -> Void) throws -> (ids: [String], removal: RemovalCounts) {
        try beginRemoval()
        do {
            func run(_ sql: String) throws -> Int { try checked { try db.query(sql).changed } }
            func rows(_ sql: String) throws -> [[String?]] { try checked { try db.query(sql).rows } }
            if wholeDaysBefore != nil {
                try checked { try db.execute("LOCK TABLE interval_rows, event_rows IN ACCESS EXCLUSIVE MODE") }
            }
            try checked {
                try db.execute(
                    "CREATE TEMP TABLE removed_calls (call_id TEXT PRIMARY KEY, call_key BIGINT, start_ts BIGINT, end_ts BIGINT) ON COMMIT DROP")
            }
            try list()
            // No writer is in a transaction now (`beginRemoval`): one merging more of a removed
            // call finds it gone when it starts, and stores what it read as a new call.
            try checked { try db.execute("ANALYZE removed_calls") }
            let ids = try rows("SELECT call_id FROM removed_calls ORDER BY start_ts NULLS LAST, call_id").compactMap { $0[0] }
            let starts = try rows("SELECT start_ts FROM removed_calls WHERE start_ts IS NOT NULL").compactMap { $0[0].flatMap { Int64($0) } }
            var removal = RemovalCounts()
            removal.firstStart = starts.min()
            removal.lastStart = starts.max()
            var keptFrom = Int64.min
            if let before = wholeDaysBefore {
                keptFrom = before * PostgresPartitions.dayMs
                for (table, _) in PostgresPartitions.tables {
                    for (day, partition) in try checked({ try PostgresPartitions.partitions(of: table, db) }) where day < before {
                        let count = Int(try rows("SELECT count(*) FROM \"\(partition)\"").first?[0] ?? "0") ?? 0
                        if table == IntervalsTable.name { removal.intervals += count } else { removal.events += count }
                        try checked { try db.execute("DROP TABLE \"\(partition)\"") }
                    }
                }
            }
            // The removed calls' rows in the days kept, looked for in the days their bounds
            // cover only (written into the statements, so that the planner leaves the other days).
            if let bounds = try rows("SELECT min(start_ts), max(end_ts) FROM removed_calls").first,
                let first = bounds[0].flatMap({ Int64($0) }), let last = bounds[1].flatMap({ Int64($0) })
            {
                let (from, to) = PostgresPartitions.dayBounds(first, last)
                let lower = max(from, keptFrom)
                if lower < to {
                    removal.intervals += try run(
                        "DELETE FROM interval_rows i USING removed_calls r WHERE i.call_key = r.call_key AND i.start_ts >= \(lower) AND i.start_ts < \(to)")
                    removal.events += try run(
                        "DELETE FROM event_rows e USING removed_calls r WHERE e.call_key = r.call_key AND e.ts >= \(lower) AND e.ts < \(to)")
                }
            }
            func deleteListed(_ table: String) throws -> Int {
                try run("DELETE FROM \(table) t USING removed_calls r WHERE t.call_id = r.call_id")
            }
            removal.streams = try deleteListed("streams")
            removal.findings = try deleteListed("findings")
            removal.peerConnections = try deleteListed("peer_connections")
            removal.materials = try deleteListed("call_material")
            removal.calls = try deleteListed("calls")
            let (hours, days) = RollupBuckets.containing(starts)
            try markRollupsPending(forCallStarts: starts)
            try refreshPendingRollups()
            try linkConversations()
            try commit()
            // Dropped days are gone from what this writer knows of them.
            forgetPartitions()
            removal.rollupBuckets = hours.count + days.count
            return (ids, removal)
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
