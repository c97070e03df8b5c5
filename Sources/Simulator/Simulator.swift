import CallLog
import Dispatch
import Foundation

/// What to simulate.
public struct SimulatorConfiguration: Sendable {
    public var calls: Int
    /// Same seed, same bytes.
    public var seed: UInt64 = 1
    /// Seconds between statistics snapshots (the SDK guides recommend 10).
    public var periodSeconds = 10
    /// Calls start within `days` before `endMs`.
    public var endMs: Int64 = SimulatorConfiguration.defaultEndMs
    public var days: Double = 7
    /// Number of output files; nil chooses about one per thousand calls (at least two).
    public var files: Int?
    /// Full reports instead of deltas (for comparing with tools that cannot read deltas).
    public var fullSnapshots = false
    /// zstd level: 3 favours speed, which matters for bulk generation.
    public var compressionLevel: Int32 = 3
    public var workers = 2

    /// 2026-11-22T00:00:00Z: a fixed end, so the default run never depends on the clock.
    public static let defaultEndMs: Int64 = 1_795_305_600_000

    public init(calls: Int, seed: UInt64 = 1) {
        self.calls = calls
        self.seed = seed
    }

    public var startMs: Int64 { endMs - Int64(days * 86_400_000) }

    public var fileCount: Int { max(1, files ?? max(2, min(500, (calls + 999) / 1_000))) }
}

/// What a run wrote.
public struct SimulationSummary: Sendable {
    public var calls = 0
    public var records = 0
    public var files = 0
    /// Calls whose records went to two files.
    public var splitCalls = 0
    /// Bytes on disk (compressed).
    public var bytes = 0
    /// NDJSON bytes before compression.
    public var uncompressedBytes = 0
    public var seconds = 0.0

    mutating func add(_ o: SimulationSummary) {
        calls += o.calls; records += o.records; files += o.files; splitCalls += o.splitCalls
        bytes += o.bytes; uncompressedBytes += o.uncompressedBytes
    }
}

/// Generates realistic call logs: many calls over days, each with its setup events,
/// statistics every period, quality callbacks and an end, in the SDKs' own dialects.
///
/// Deterministic: every call is derived from (seed, index) alone and files are cut at fixed
/// times, so the output is byte-identical whatever the number of worker threads.
public struct Simulator: Sendable {
    public let configuration: SimulatorConfiguration
    /// Every call's first and last record time, sorted by start.
    public let spans: [CallSpan]

    public struct CallSpan: Sendable {
        public var index: Int
        public var startMs: Int64
        public var lastMs: Int64
    }

    public init(_ configuration: SimulatorConfiguration) {
        self.configuration = configuration
        var spans = [CallSpan]()
        spans.reserveCapacity(configuration.calls)
        for i in 0..<configuration.calls {
            let plan = CallPlan(
                index: i, seed: configuration.seed,
                startMs: Simulator.startTime(index: i, configuration: configuration))
            spans.append(CallSpan(index: i, startMs: plan.startMs, lastMs: plan.lastMs))
        }
        spans.sort { ($0.startMs, $0.index) < ($1.startMs, $1.index) }
        self.spans = spans
    }

    /// Call `index`'s plan.
    public func plan(_ index: Int) -> CallPlan {
        CallPlan(index: index, seed: configuration.seed, startMs: Simulator.startTime(index: index, configuration: configuration))
    }

    /// All records of one call, full snapshots, in time order.
    public func records(forCall index: Int) -> [LogRecord] {
        var run = CallRun(plan: plan(index), periodSeconds: configuration.periodSeconds)
        var out = [LogRecord]()
        while let r = run.next() { out.append(r) }
        return out
    }

    /// Calls start more often in working hours than at night, on every day of the range.
    static func startTime(index: Int, configuration: SimulatorConfiguration) -> Int64 {
        var rng = Xoshiro256(seed: configuration.seed ^ 0x5157_4152_5453, stream: UInt64(index))
        let hourWeights: [Double] = [1, 0.6, 0.4, 0.4, 0.5, 0.8, 1.5, 3, 6, 9, 10, 10, 8, 9, 10, 10, 9, 7, 5, 4, 3, 2.5, 2, 1.5]
        let total = configuration.endMs - configuration.startMs
        let days = max(1, Int((Double(total) / 86_400_000).rounded(.up)))
        let day = rng.int(0...(days - 1))
        let hour = rng.pick(hourWeights.enumerated().map { ($0.offset, $0.element) })
        let offset = Int64(day) * 86_400_000 + Int64(hour) * 3_600_000 + Int64(rng.uniform(0, 3_600_000))
        // Ranges shorter than a day (or not whole days) wrap around inside the range.
        return configuration.startMs + offset % max(1, total)
    }

    // MARK: - Files

    /// Where files are cut: at roughly even times, each moved into a call in progress so that
    /// some calls continue in the next file (as when an agent rotates its log).
    public var boundaries: [Int64] {
        let k = configuration.fileCount
        guard k > 1 else { return [] }
        let span = configuration.endMs - configuration.startMs
        var out = [Int64]()
        for i in 1..<k {
            var b = configuration.startMs + span * Int64(i) / Int64(k)
            let j = firstSpan(startingAtOrAfter: b)
            let straddles = spans[max(0, j - 50)..<j].contains { $0.startMs < b - 5_000 && $0.lastMs > b + 5_000 }
            if !straddles, let long = spans[j..<min(spans.count, j + 50)].first(where: { $0.lastMs - $0.startMs > 60_000 }) {
                b = long.startMs + (long.lastMs - long.startMs) / 2
            }
            if let last = out.last, b <= last { b = last + 1 }
            out.append(b)
        }
        return out
    }

    private func firstSpan(startingAtOrAfter t: Int64) -> Int {
        var lo = 0, hi = spans.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if spans[mid].startMs < t { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// Calls (indices into `spans`) with records in each file's time window.
    func callsPerFile(_ boundaries: [Int64]) -> [[Int]] {
        var out = [[Int]](repeating: [], count: boundaries.count + 1)
        func file(_ t: Int64) -> Int {
            var lo = 0, hi = boundaries.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if boundaries[mid] <= t { lo = mid + 1 } else { hi = mid }
            }
            return lo
        }
        for (i, s) in spans.enumerated() {
            for f in file(s.startMs)...file(s.lastMs) { out[f].append(i) }
        }
        return out
    }

    /// Calls `body` with every record whose time lies in [from, to), all calls of `calls`
    /// interleaved in time order (ties: lower call index first).
    public func forEachRecord(
        calls: [Int]? = nil, from: Int64 = .min, to: Int64 = .max,
        _ body: (LogRecord) throws -> Void
    ) rethrows {
        let list = calls ?? Array(spans.indices)
        var heap = RecordHeap()
        var next = 0
        while true {
            while next < list.count, heap.isEmpty || spans[list[next]].startMs <= heap.minTs {
                let span = spans[list[next]]
                next += 1
                var run = CallRun(plan: plan(span.index), periodSeconds: configuration.periodSeconds)
                while let r = run.next() {
                    if r.ts >= to { break }
                    if r.ts >= from { heap.push(r, run: run); break }
                }
            }
            guard let (record, slot) = heap.pop() else { break }
            try body(record)
            heap.advance(slot, before: to)
        }
    }

    /// Writes every call to `directory` (`calls-000.ndjson.zst`, …), files shared out among
    /// the worker threads. `progress` is called now and then, from any thread.
    public func write(to directory: String, progress: (@Sendable (SimulationSummary) -> Void)? = nil) throws -> SimulationSummary {
        let started = DispatchTime.now()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let bounds = boundaries
        let perFile = callsPerFile(bounds)
        let digits = max(3, String(perFile.count - 1).count)
        let shared = Locked(SharedProgress())
        let workers = max(1, min(configuration.workers, perFile.count))
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while let f = shared.withLock({ $0.nextFile(limit: perFile.count) }) {
                do {
                    let name = "calls-" + String(repeating: "0", count: max(0, digits - String(f).count)) + String(f) + ".ndjson.zst"
                    let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
                    unlink(path)  // the writer appends; a re-run must not
                    let from = f == 0 ? Int64.min : bounds[f - 1]
                    let to = f == bounds.count ? Int64.max : bounds[f]
                    let s = try writeFile(path: path, calls: perFile[f], from: from, to: to) { partial in
                        if let progress { progress(shared.withLock { $0.add(partial) }) }
                    }
                    shared.withLock { _ = $0.add(s) }
                } catch {
                    shared.withLock { $0.fail(error) }
                }
            }
        }
        let (failure, summary) = shared.withLock { ($0.error, $0.total) }
        if let failure { throw failure }
        var total = summary
        total.files = perFile.count
        total.calls = spans.count
        total.splitCalls = perFile.reduce(0) { $0 + $1.count } - spans.count
        total.seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        return total
    }

    /// One file: the calls' records in [from, to), interleaved in time order. `progress`
    /// receives what was written since its previous call, every 200 finished calls.
    func writeFile(
        path: String, calls: [Int], from: Int64, to: Int64,
        progress: (SimulationSummary) -> Void
    ) throws -> SimulationSummary {
        var options = LogWriter.Options()
        options.deltaStats = !configuration.fullSnapshots
        options.compressionLevel = configuration.compressionLevel
        let writer = try LogWriter(path: path, options: options)
        var reported = SimulationSummary()
        func sinceReported() -> SimulationSummary {
            SimulationSummary(
                calls: 0, records: writer.records - reported.records,
                bytes: writer.bytesWritten - reported.bytes, uncompressedBytes: writer.textBytes - reported.uncompressedBytes)
        }
        var ends = 0
        try forEachRecord(calls: calls, from: from, to: to) { r in
            try writer.append(r)
            guard r.kind == .end else { return }
            ends += 1
            if ends % 200 == 0 {
                var d = sinceReported()
                d.calls = 200
                progress(d)
                reported.records += d.records; reported.bytes += d.bytes; reported.uncompressedBytes += d.uncompressedBytes
            }
        }
        try writer.close()
        var rest = sinceReported()
        rest.calls = ends % 200
        return rest
    }

    /// Every call as plain NDJSON on a file descriptor (`--out -`), in one time-ordered stream.
    public func writeNDJSON(toPath path: String) throws -> SimulationSummary {
        var options = LogWriter.Options()
        options.deltaStats = !configuration.fullSnapshots
        let writer = try LogWriter(path: path, options: options)
        try forEachRecord { try writer.append($0) }
        try writer.close()
        return SimulationSummary(
            calls: spans.count, records: writer.records, files: 1, bytes: writer.bytesWritten,
            uncompressedBytes: writer.textBytes)
    }
}

/// Work sharing and totals across worker threads, kept in a `Locked` box.
private struct SharedProgress {
    var next = 0
    var total = SimulationSummary()
    var error: Error?

    /// The next file to write, nil once every file is taken or a worker has failed.
    mutating func nextFile(limit: Int) -> Int? {
        guard next < limit, error == nil else { return nil }
        next += 1
        return next - 1
    }

    /// Adds a worker's figures and returns the new total.
    mutating func add(_ s: SimulationSummary) -> SimulationSummary {
        total.add(s)
        return total
    }

    /// Keeps the first failure.
    mutating func fail(_ e: Error) {
        if error == nil { error = e }
    }
}

/// A min-heap of the next record of each active call, ordered by (time, call index).
/// Runs live in slots and the heap moves small (time, call, slot) entries: moving whole
/// runs around cost a tenth of the generation time.
struct RecordHeap {
    private var entries: [(ts: Int64, call: Int, slot: Int)] = []
    private var records: [LogRecord?] = []
    private var runs: [CallRun?] = []
    private var free: [Int] = []

    var isEmpty: Bool { entries.isEmpty }
    var minTs: Int64 { entries[0].ts }

    @inline(__always) private func less(_ a: Int, _ b: Int) -> Bool {
        let x = entries[a], y = entries[b]
        return x.ts != y.ts ? x.ts < y.ts : x.call < y.call
    }

    mutating func push(_ record: LogRecord, run: CallRun) {
        let slot: Int
        if let f = free.popLast() {
            slot = f
            records[slot] = record
            runs[slot] = run
        } else {
            slot = records.count
            records.append(record)
            runs.append(run)
        }
        entries.append((record.ts, run.plan.index, slot))
        siftUp(entries.count - 1)
    }

    /// Pops the earliest record; the run stays in its slot until `next` or `drop`.
    mutating func pop() -> (LogRecord, Int)? {
        guard !entries.isEmpty else { return nil }
        entries.swapAt(0, entries.count - 1)
        let top = entries.removeLast()
        siftDown(0)
        let r = records[top.slot].take()!
        return (r, top.slot)
    }

    /// Advances the run in `slot` and queues its next record if it is before `limit`.
    mutating func advance(_ slot: Int, before limit: Int64) {
        if let r = runs[slot]!.next(), r.ts < limit {
            records[slot] = r
            entries.append((r.ts, runs[slot]!.plan.index, slot))
            siftUp(entries.count - 1)
        } else {
            runs[slot] = nil
            free.append(slot)
        }
    }

    private mutating func siftUp(_ start: Int) {
        var i = start
        while i > 0 {
            let p = (i - 1) / 2
            guard less(i, p) else { break }
            entries.swapAt(i, p)
            i = p
        }
    }

    private mutating func siftDown(_ start: Int) {
        var i = start
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < entries.count && less(l, m) { m = l }
            if r < entries.count && less(r, m) { m = r }
            if m == i { break }
            entries.swapAt(i, m)
            i = m
        }
    }
}
