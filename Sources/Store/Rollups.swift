import Analysis
import PostgresDatabase
import SQLiteDatabase

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
/// The hour and day buckets rollups are kept in, for both stores.
public enum RollupBuckets {
    public static let hourMs: Int64 = 3_600_000
    public static let dayMs: Int64 = 86_400_000

    /// The hour and day buckets (their starts, epoch ms, UTC) holding each of `callStarts`.
    static func containing(_ callStarts: some Sequence<Int64>) -> (hours: Set<Int64>, days: Set<Int64>) {
        var hours = Set<Int64>(), days = Set<Int64>()
        for t in callStarts {
            hours.insert(floorDiv(t, hourMs) * hourMs)
            days.insert(floorDiv(t, dayMs) * dayMs)
        }
        return (hours, days)
    }
}

extension SQLiteStore {
    /// Rebuilds the hour and day buckets containing each of `callStarts` (epoch ms, UTC).
    public func refreshRollups(forCallStarts callStarts: some Sequence<Int64>) throws {
        let (hours, days) = RollupBuckets.containing(callStarts)
        try rebuild(hours: hours, days: days)
    }

    /// Records that the buckets containing `callStarts` need rebuilding (in the caller's
    /// transaction, with the calls that touched them).
    public func markRollupsPending(forCallStarts callStarts: some Sequence<Int64>) throws {
        let (hours, days) = RollupBuckets.containing(callStarts)
        for (period, starts) in [("hour", hours), ("day", days)] {
            for start in starts {
                try db.run(
                    "INSERT OR IGNORE INTO rollup_pending(period, bucket_ts) VALUES (?, ?)",
                    [.text(period), .integer(start)])
            }
        }
    }

    /// Rebuilds every pending bucket and clears the marks.
    public func refreshPendingRollups() throws {
        var hours = Set<Int64>(), days = Set<Int64>()
        for row in try db.rows("SELECT period, bucket_ts FROM rollup_pending") {
            guard let start = row[1].int64 else { continue }
            switch row[0].string {
            case "hour": hours.insert(start)
            case "day": days.insert(start)
            default: continue
            }
        }
        try rebuild(hours: hours, days: days)
        try db.execute("DELETE FROM rollup_pending")
    }

    /// Rows in `rollups`, all periods and dimensions.
    public func rollupRowCount() throws -> Int {
        Int(try db.scalar("SELECT count(*) FROM rollups")?.int64 ?? 0)
    }

    /// Rebuilds every bucket from scratch.
    public func rebuildAllRollups() throws {
        try db.execute("DELETE FROM rollups")
        try db.execute("DELETE FROM rollup_pending")
        let starts = try db.rows("SELECT DISTINCT start_ts / 3600000 * 3600000 FROM calls").compactMap { $0.first?.int64 }
        try refreshRollups(forCallStarts: starts)
    }

    /// Rebuilds the given buckets (`RollupBuilder`).
    private func rebuild(hours: Set<Int64>, days: Set<Int64>) throws {
        try RollupBuilder.rebuild(hours: hours, days: days, in: SQLiteRollups(store: self))
    }

    /// The rollup row insert, prepared once per connection (it runs for every group of every
    /// rebuilt bucket; finding it by its long SQL text cost more than the insert).
    func rollupInsert() throws -> Statement {
        if let prepared = rollupInsertStatement { return prepared }
        let columns = RollupBuilder.columns
        let statement = try db.statement(
            "INSERT INTO rollups(\(columns.joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))")
        rollupInsertStatement = statement
        return statement
    }

}

/// What a rollup row holds and how it is computed from a bucket's calls: one definition for
/// both stores, which only read the calls (`RollupStorage.bucketCalls`, the columns of
/// `selectedColumns`) and write the rows (`columns`, in that order). A grade or a dimension
/// added later is added here and in `Schema.rollupDimensions` / `rollupMetrics` only.
package enum RollupBuilder {
    /// Nearest-rank percentile of sorted values.
    package static func nearestRank(_ sorted: [Double], _ p: Double) -> Double? {
        nearestRank(sorted[...], p)
    }

    static func nearestRank(_ sorted: ArraySlice<Double>, _ p: Double) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let rank = Int((p * Double(sorted.count)).rounded(.up))
        return sorted[sorted.startIndex + min(max(rank, 1), sorted.count) - 1]
    }

    /// The columns of a rollup row, in the order `insertRow` writes them.
    package static var columns: [String] {
        ["period", "bucket_ts", "dimension", "value", "calls", "good", "fair", "poor", "no_media", "unanswered", "unmeasured", "minutes"]
            + Schema.rollupMetricColumns
    }

    /// What is read of each call of a bucket, in the order `BucketCalls.append` takes it:
    /// start, grade, duration, each dimension's value (text, 'unknown' when NULL), each metric.
    package static func selectedColumns(_ dimensions: [(name: String, column: String)]) -> String {
        let dims = dimensions.map { "coalesce(\($0.column), 'unknown')" }.joined(separator: ", ")
        let metrics = Schema.rollupMetrics.map(\.column).joined(separator: ", ")
        return "start_ts, grade, duration_ms, \(dims), \(metrics)"
    }

    /// Rebuilds the given buckets. The calls of a day are read once, for the day and for those of
    /// its hours that are rebuilt (reading them again per hour cost as much as the grouping).
    static func rebuild<Storage: RollupStorage>(hours: Set<Int64>, days: Set<Int64>, in storage: Storage) throws {
        guard !hours.isEmpty || !days.isEmpty else { return }
        var hoursLeft = hours
        var values = DimensionValues()
        // The database's settings, recorded in this transaction before any rebuild of it: every
        // bucket of a database has the same dimensions (other label dimensions come only with a
        // regrade, which rebuilds them all).
        let dimensions = try storage.dimensions()
        for day in days.sorted() {
            let calls = try storage.bucketCalls(from: day, length: RollupBuckets.dayMs, dimensions: dimensions, values: &values)
            try replaceBucket(in: storage, period: "day", start: day, with: calls, in: 0..<calls.count, dimensions: dimensions, values: values)
            // The day's calls come in start order: each hour's are a run of them.
            var i = 0
            while i < calls.count {
                let hour = floorDiv(calls.starts[i], RollupBuckets.hourMs) * RollupBuckets.hourMs
                var j = i + 1
                while j < calls.count, calls.starts[j] < hour + RollupBuckets.hourMs { j += 1 }
                if hoursLeft.remove(hour) != nil {
                    try replaceBucket(in: storage, period: "hour", start: hour, with: calls, in: i..<j, dimensions: dimensions, values: values)
                }
                i = j
            }
        }
        // Hours whose day is not rebuilt (a mark left alone), and marked hours without calls now.
        for hour in hoursLeft.sorted() {
            let calls = try storage.bucketCalls(from: hour, length: RollupBuckets.hourMs, dimensions: dimensions, values: &values)
            try replaceBucket(in: storage, period: "hour", start: hour, with: calls, in: 0..<calls.count, dimensions: dimensions, values: values)
        }
    }

    /// Replaces one bucket's rows with those of `calls[range]`.
    private static func replaceBucket<Storage: RollupStorage>(
        in storage: Storage, period: String, start: Int64, with calls: BucketCalls, in range: Range<Int>,
        dimensions: [(name: String, column: String)], values: DimensionValues
    ) throws {
        try storage.deleteBucket(period: period, start: start)
        guard !range.isEmpty else { return }
        let dimCount = dimensions.count, metricCount = Schema.rollupMetrics.count

        // Each call's group in every dimension.
        var groupIndex = [Int](repeating: -1, count: values.keys.count)  // by value number
        var groups: [Accumulator] = []
        var keys: [GroupKey] = []
        var groupOf = [Int](repeating: 0, count: range.count * dimCount)
        for (n, c) in range.enumerated() {
            for d in 0..<dimCount {
                let value = calls.groups[c * dimCount + d]
                var g = groupIndex[value]
                if g < 0 {
                    g = groups.count
                    groupIndex[value] = g
                    groups.append(Accumulator())
                    keys.append(values.keys[value])
                }
                groupOf[n * dimCount + d] = g
                groups[g].add(grade: calls.grades[c], minutes: calls.minutes[c])
            }
        }
        // Each metric's values sorted once for the bucket, then handed out in that order: every
        // group's values arrive sorted (sorting each group's own cost nine times as much). A
        // group's values lie together in one array per metric, at `starts[m][g]..<starts[m][g + 1]`.
        var values = [[Double]](repeating: [], count: metricCount)
        var starts = [[Int]](repeating: [], count: metricCount)
        var sortedCalls: [(value: Double, n: Int)] = []
        var filled = [Int](repeating: 0, count: groups.count + 1)
        for m in 0..<metricCount {
            sortedCalls.removeAll(keepingCapacity: true)
            for (n, c) in range.enumerated() {
                let v = calls.metrics[c * metricCount + m]
                if !v.isNaN { sortedCalls.append((v, n)) }
            }
            sortedCalls.sort { $0.value < $1.value }
            for k in filled.indices { filled[k] = 0 }
            for (_, n) in sortedCalls {
                for d in 0..<dimCount { filled[groupOf[n * dimCount + d] + 1] += 1 }
            }
            for g in 0..<groups.count { filled[g + 1] += filled[g] }
            starts[m] = filled
            var out = [Double](repeating: 0, count: filled[groups.count])
            for (v, n) in sortedCalls {
                for d in 0..<dimCount {
                    let g = groupOf[n * dimCount + d]
                    out[filled[g]] = v
                    filled[g] += 1
                }
            }
            values[m] = out
        }

        for (g, acc) in groups.enumerated() {
            try storage.insertRow { r in
                try r.add(period); try r.add(start); try r.add(dimensions[keys[g].dimension].name); try r.add(keys[g].value)
                try r.add(acc.calls); try r.add(acc.good); try r.add(acc.fair); try r.add(acc.poor)
                try r.add(acc.noMedia); try r.add(acc.unanswered); try r.add(acc.unmeasured); try r.add(acc.minutes)
                for m in 0..<metricCount {
                    let v = values[m][starts[m][g]..<starts[m][g + 1]]
                    // The count is a metric column like the others (REAL, DOUBLE PRECISION).
                    try r.add(Double(v.count))
                    try r.add(v.isEmpty ? nil : v.reduce(0, +) / Double(v.count))
                    for p in Schema.percentiles { try r.add(nearestRank(v, p.fraction)) }
                }
            }
        }
    }

    /// A group: one value of one dimension (an index into the rebuild's dimensions,
    /// `Schema.rollupDimensions(labelKeys:)`).
    package struct GroupKey: Hashable {
        var dimension: Int
        var value: String
    }

    /// The groups of one rebuild, numbered as they are first met: a call's values are looked up
    /// once, when its row is read, and its buckets (its day and its hour) group it by number.
    /// Looking up each call's values per bucket hashed every String twice, a fifth of a rebuild.
    package struct DimensionValues {
        private(set) var keys: [GroupKey] = []
        private var numbers: [GroupKey: Int] = [:]

        mutating func number(_ key: GroupKey) -> Int {
            if let known = numbers[key] { return known }
            numbers[key] = keys.count
            keys.append(key)
            return keys.count - 1
        }
    }

    /// The rollup inputs of a bucket's calls, column by column; `groups` (value numbers in
    /// `DimensionValues`) and `metrics` hold one row per call (NaN: no finite value).
    package struct BucketCalls {
        var starts: [Int64] = []
        var grades: [Grade?] = []
        var minutes: [Double] = []
        var groups: [Int] = []
        var metrics: [Double] = []
        var count: Int { starts.count }
    }

    private struct Accumulator {
        var calls = 0, good = 0, fair = 0, poor = 0, noMedia = 0, unanswered = 0, unmeasured = 0
        var minutes = 0.0

        mutating func add(grade: Grade?, minutes m: Double) {
            calls += 1
            minutes += m
            switch grade {
            case .good: good += 1
            case .fair: fair += 1
            case .poor: poor += 1
            case .unanswered: unanswered += 1
            case .unmeasured: unmeasured += 1
            case .noMedia, nil: noMedia += 1
            }
        }
    }
}

/// Where rollups are read from and written to (one per store).
package protocol RollupStorage {
    associatedtype Writer: RollupRowWriter
    /// The dimensions of this database's rollups: every database's, and its configured labels'
    /// (`Schema.rollupDimensions(labelKeys:)`, in this store's SQL).
    func dimensions() throws -> [(name: String, column: String)]
    /// The rollup inputs of the calls starting in `[start, start + length)`, in start order.
    func bucketCalls(
        from start: Int64, length: Int64, dimensions: [(name: String, column: String)], values: inout RollupBuilder.DimensionValues
    ) throws -> RollupBuilder.BucketCalls
    func deleteBucket(period: String, start: Int64) throws
    /// One row, its values added in `RollupBuilder.columns` order.
    func insertRow(_ body: (inout Writer) throws -> Void) throws
}

/// Takes a rollup row's values in column order.
package protocol RollupRowWriter {
    mutating func add(_ value: String) throws
    mutating func add(_ value: Int64) throws
    mutating func add(_ value: Int) throws
    mutating func add(_ value: Double) throws
    mutating func add(_ value: Double?) throws
}

extension RowBinder: RollupRowWriter {}
extension CopyRows: RollupRowWriter {}

/// The SQLite store's rollups.
struct SQLiteRollups: RollupStorage {
    let store: SQLiteStore

    func dimensions() throws -> [(name: String, column: String)] {
        Schema.rollupDimensions(labelKeys: try store.recordedSettings().labelDimensions)
    }

    func bucketCalls(
        from start: Int64, length: Int64, dimensions: [(name: String, column: String)], values: inout RollupBuilder.DimensionValues
    ) throws -> RollupBuilder.BucketCalls {
        let statement = try store.db.statement(
            "SELECT \(RollupBuilder.selectedColumns(dimensions)) FROM calls WHERE start_ts >= ? AND start_ts < ? ORDER BY start_ts")
        defer { statement.reset() }
        try statement.bind([.integer(start), .integer(start + length)])
        var calls = RollupBuilder.BucketCalls()
        let dimCount = dimensions.count, metricCount = Schema.rollupMetrics.count
        while try statement.step() {
            calls.starts.append(statement.value(0).int64 ?? start)
            calls.grades.append(statement.value(1).string.flatMap { Grade(rawValue: $0) })
            calls.minutes.append(Double(statement.value(2).int64 ?? 0) / 60_000)
            for d in 0..<dimCount {
                calls.groups.append(values.number(RollupBuilder.GroupKey(dimension: d, value: statement.value(3 + d).description)))
            }
            for m in 0..<metricCount {
                let v = statement.value(3 + dimCount + m).double
                calls.metrics.append(v.flatMap { $0.isFinite ? $0 : nil } ?? .nan)
            }
        }
        return calls
    }

    func deleteBucket(period: String, start: Int64) throws {
        try store.db.run("DELETE FROM rollups WHERE period = ? AND bucket_ts = ?", [.text(period), .integer(start)])
    }

    func insertRow(_ body: (inout RowBinder) throws -> Void) throws {
        try store.rollupInsert().insertRow(body)
    }
}
