/// Hourly and daily rollups by dimension, recomputed per touched bucket.
///
/// A bucket is rebuilt whole from the `calls` table whenever a call starting in it was
/// written, so re-runs and calls that continue in later files keep rollups exact (no
/// incremental sums to drift). Percentiles are nearest-rank: the smallest value with at
/// least p·n values at or below it, so they are always values that occurred.
///
/// A long run marks buckets in `rollup_pending` as it commits calls and rebuilds them once, at
/// its end: rebuilding at every commit re-read a busy day's calls again each time, which grew
/// with the square of the calls per day. A run that stops early leaves its marks, committed
/// with its calls, and the next run rebuilds those buckets too.
extension CallStore {
    public static let hourMs: Int64 = 3_600_000
    public static let dayMs: Int64 = 86_400_000

    /// Rebuilds the hour and day buckets containing each of `callStarts` (epoch ms, UTC).
    public func refreshRollups(forCallStarts callStarts: some Sequence<Int64>) throws {
        let (hours, days) = CallStore.buckets(callStarts)
        for h in hours.sorted() { try rebuildBucket(period: "hour", start: h, length: CallStore.hourMs) }
        for d in days.sorted() { try rebuildBucket(period: "day", start: d, length: CallStore.dayMs) }
    }

    /// Records that the buckets containing `callStarts` need rebuilding (in the caller's
    /// transaction, with the calls that touched them).
    public func markRollupsPending(forCallStarts callStarts: some Sequence<Int64>) throws {
        let (hours, days) = CallStore.buckets(callStarts)
        for (period, starts) in [("hour", hours), ("day", days)] {
            for start in starts {
                try db.run("INSERT OR IGNORE INTO rollup_pending(period, bucket_ts) VALUES (?, ?)",
                           [.text(period), .integer(start)])
            }
        }
    }

    /// Rebuilds every pending bucket and clears the marks.
    public func refreshPendingRollups() throws {
        for row in try db.rows("SELECT period, bucket_ts FROM rollup_pending ORDER BY period, bucket_ts") {
            guard let period = row[0].string, let start = row[1].int64 else { continue }
            switch period {
            case "hour": try rebuildBucket(period: period, start: start, length: CallStore.hourMs)
            case "day": try rebuildBucket(period: period, start: start, length: CallStore.dayMs)
            default: continue
            }
        }
        try db.execute("DELETE FROM rollup_pending")
    }

    /// Rebuilds every bucket from scratch.
    public func rebuildAllRollups() throws {
        try db.execute("DELETE FROM rollups")
        try db.execute("DELETE FROM rollup_pending")
        let starts = try db.rows("SELECT DISTINCT start_ts / 3600000 * 3600000 FROM calls").compactMap { $0.first?.int64 }
        try refreshRollups(forCallStarts: starts)
    }

    private static func buckets(_ callStarts: some Sequence<Int64>) -> (hours: Set<Int64>, days: Set<Int64>) {
        var hours = Set<Int64>(), days = Set<Int64>()
        for t in callStarts {
            hours.insert(floorDiv(t, CallStore.hourMs) * CallStore.hourMs)
            days.insert(floorDiv(t, CallStore.dayMs) * CallStore.dayMs)
        }
        return (hours, days)
    }

    private func rebuildBucket(period: String, start: Int64, length: Int64) throws {
        try db.run("DELETE FROM rollups WHERE period = ? AND bucket_ts = ?", [.text(period), .integer(start)])
        let dims = Schema.rollupDimensions.map { "coalesce(\($0.column), 'unknown')" }.joined(separator: ", ")
        let metrics = Schema.rollupMetrics.map(\.column).joined(separator: ", ")
        let rows = try db.rows(
            "SELECT grade, duration_ms, \(dims), \(metrics) FROM calls WHERE start_ts >= ? AND start_ts < ?",
            [.integer(start), .integer(start + length)], cached: true)
        guard !rows.isEmpty else { return }

        let dimCount = Schema.rollupDimensions.count
        var groups: [GroupKey: Accumulator] = [:]
        for r in rows {
            let grade = r[0].string ?? ""
            let minutes = Double(r[1].int64 ?? 0) / 60_000
            let values = (0..<Schema.rollupMetrics.count).map { r[2 + dimCount + $0].double }
            for (d, dim) in Schema.rollupDimensions.enumerated() {
                let key = GroupKey(dimension: dim.name, value: r[2 + d].description)
                groups[key, default: Accumulator()].add(grade: grade, minutes: minutes, metrics: values)
            }
        }
        let insert = try rollupInsert()
        for (key, acc) in groups {
            try insert.insertRow { r in
                try r.add(period); try r.add(start); try r.add(key.dimension); try r.add(key.value)
                try r.add(acc.calls); try r.add(acc.good); try r.add(acc.fair); try r.add(acc.poor)
                try r.add(acc.noMedia); try r.add(acc.unanswered); try r.add(acc.minutes)
                for m in acc.metrics.indices {
                    var v = acc.metrics[m]
                    v.sort()
                    try r.add(v.count)
                    try r.add(v.isEmpty ? nil : v.reduce(0, +) / Double(v.count))
                    for p in Schema.percentiles { try r.add(CallStore.nearestRank(v, p.fraction)) }
                }
            }
        }
    }

    /// The rollup row insert, prepared once per connection (it runs for every group of every
    /// rebuilt bucket; finding it by its long SQL text cost more than the insert).
    private func rollupInsert() throws -> Statement {
        if let prepared = rollupInsertStatement { return prepared }
        let columns = ["period", "bucket_ts", "dimension", "value", "calls", "good", "fair", "poor", "no_media", "unanswered", "minutes"]
            + Schema.rollupMetricColumns
        let statement = try db.statement(
            "INSERT INTO rollups(\(columns.joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))")
        rollupInsertStatement = statement
        return statement
    }

    /// Nearest-rank percentile of sorted values.
    public static func nearestRank(_ sorted: [Double], _ p: Double) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let rank = Int((p * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    private struct GroupKey: Hashable {
        var dimension: String
        var value: String
    }

    private struct Accumulator {
        var calls = 0, good = 0, fair = 0, poor = 0, noMedia = 0, unanswered = 0
        var minutes = 0.0
        var metrics: [[Double]] = Array(repeating: [], count: Schema.rollupMetrics.count)

        mutating func add(grade: String, minutes m: Double, metrics values: [Double?]) {
            calls += 1
            minutes += m
            switch grade {
            case "good": good += 1
            case "fair": fair += 1
            case "poor": poor += 1
            case "unanswered": unanswered += 1
            default: noMedia += 1
            }
            for (i, v) in values.enumerated() { if let v, v.isFinite { metrics[i].append(v) } }
        }
    }
}

@inline(__always) func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
    let q = a / b
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
}
