import CallLog
import Foundation

/// Why records were lost. Written in `agent` records as counts by reason.
public enum DropReason: String, Sendable, CaseIterable, Codable {
    /// The queue was full (snapshots arriving faster than the disk takes them): the oldest
    /// statistics snapshots went first.
    case queueFull
    /// The disk (or quota) was full.
    case diskFull
    /// The directory or file could not be written (permissions, read-only, not a directory).
    case notWritable
    /// The log directory vanished and could not be created again.
    case directoryMissing
    /// Any other write error.
    case writeError
    /// A statistics string from the SDK that was not a report.
    case badSnapshot
}

/// What the collector did: written, dropped by reason, deleted by the disk cap. Totals since
/// the agent started.
public struct CollectorCounters: Sendable, Equatable {
    public var recordsWritten = 0
    public var snapshotsWritten = 0
    public var dropped: [DropReason: Int] = [:]
    /// Closed log files deleted to stay under the disk cap, and their bytes.
    public var filesDeleted = 0
    public var bytesDeleted = 0
    /// Log files created, and compressed bytes written to them.
    public var filesCreated = 0
    public var bytesWritten = 0
    /// Sampling ticks skipped because the previous fetch of that call had not returned.
    public var samplesSkipped = 0
    /// The queue's high-water marks.
    public var queuePeakRecords = 0
    public var queuePeakBytes = 0
    /// Time the background writer spent parsing, pseudonymising, encoding, compressing and
    /// writing, in seconds.
    public var writerSeconds = 0.0

    public var droppedTotal: Int { dropped.values.reduce(0, +) }
}

/// One thing to write, as queued by the app's threads.
struct QueuedItem {
    enum Payload {
        case record(LogRecord)
        case snapshot(StatsSnapshot)
    }

    var seq: UInt64 = 0
    var call: String
    var ts: Int64
    var payload: Payload
    var bytes: Int
    /// The call's `end`: the writer flushes and fsyncs after it.
    var endsCall = false

    var isStats: Bool {
        if case .snapshot = payload { return true }
        return false
    }
}

extension QueuedItem {
    /// A snapshot as the agent queues it: its size in the queue is the snapshot's and a
    /// record's framing.
    init(snapshot: StatsSnapshot, call: String, ts: Int64) {
        self.init(call: call, ts: ts, payload: .snapshot(snapshot), bytes: snapshot.approximateBytes + 128)
    }
}

/// The bounded queue between the app's threads and the writer, and the loss ledger.
///
/// Statistics snapshots and other records wait in two FIFOs numbered from one sequence, so
/// that "drop the oldest snapshot" is O(1) and the writer still gets everything in arrival
/// order. Snapshots are what is dropped first: each is one of many samples of a call, while
/// an event or an `end` is the only record of what it says.
package final class RecordQueue: Sendable {
    struct Limits {
        var records: Int
        var bytes: Int
    }

    /// Unreported losses, for the next `agent` record.
    struct Losses: Equatable {
        var dropped: [DropReason: Int] = [:]
        var filesDeleted = 0
        var bytesDeleted = 0
        var isEmpty: Bool { dropped.values.allSatisfy { $0 == 0 } && filesDeleted == 0 }

        mutating func add(_ other: Losses) {
            for (k, v) in other.dropped { dropped[k, default: 0] += v }
            filesDeleted += other.filesDeleted
            bytesDeleted += other.bytesDeleted
        }
    }

    /// Everything the app's threads and the writer share.
    private struct State {
        var stats = Ring<QueuedItem>()
        var others = Ring<QueuedItem>()
        var bytes = 0
        var nextSeq: UInt64 = 0
        var wakeRequested = false
        var totals = CollectorCounters()
        var unreported = Losses()

        mutating func count(_ reason: DropReason, _ n: Int) {
            totals.dropped[reason, default: 0] += n
            unreported.dropped[reason, default: 0] += n
        }
    }

    let limits: Limits
    private let state = Locked(State())

    init(limits: Limits) {
        self.limits = Limits(records: max(1, limits.records), bytes: max(1, limits.bytes))
    }

    /// Queues `item`, evicting the oldest snapshots (then the oldest records) while over the
    /// limits. Returns true when the writer should be woken (the first item since it last took).
    func push(_ item: QueuedItem) -> Bool {
        var item = item
        return state.withLock { q in
            item.seq = q.nextSeq
            q.nextSeq &+= 1
            q.bytes += item.bytes
            if item.isStats { q.stats.append(item) } else { q.others.append(item) }
            while q.stats.count + q.others.count > limits.records || q.bytes > limits.bytes {
                guard let evicted = q.stats.popFirst() ?? q.others.popFirst() else { break }
                q.bytes -= evicted.bytes
                q.count(.queueFull, 1)
            }
            q.totals.queuePeakRecords = max(q.totals.queuePeakRecords, q.stats.count + q.others.count)
            q.totals.queuePeakBytes = max(q.totals.queuePeakBytes, q.bytes)
            guard !q.wakeRequested else { return false }
            q.wakeRequested = true
            return true
        }
    }

    /// Queues a snapshot as the agent does (`push(_:)`).
    @discardableResult
    package func push(snapshot: StatsSnapshot, call: String, ts: Int64) -> Bool {
        push(QueuedItem(snapshot: snapshot, call: call, ts: ts))
    }

    /// Everything queued, in arrival order.
    func takeAll() -> [QueuedItem] {
        let (a, b) = state.withLock { q in
            let taken = (q.stats.takeAll(), q.others.takeAll())
            q.bytes = 0
            q.wakeRequested = false
            return taken
        }
        var out = [QueuedItem]()
        out.reserveCapacity(a.count + b.count)
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i].seq < b[j].seq) {
                out.append(a[i]); i += 1
            } else {
                out.append(b[j]); j += 1
            }
        }
        return out
    }

    // MARK: Ledger

    func count(_ reason: DropReason, _ n: Int) {
        guard n > 0 else { return }
        state.withLock { $0.count(reason, n) }
    }

    func update(_ body: (inout CollectorCounters) -> Void) {
        state.withLock { body(&$0.totals) }
    }

    func deleted(files: Int, bytes: Int) {
        state.withLock { q in
            q.totals.filesDeleted += files
            q.totals.bytesDeleted += bytes
            q.unreported.filesDeleted += files
            q.unreported.bytesDeleted += bytes
        }
    }

    /// Takes the losses not yet reported (for an `agent` record).
    func takeUnreported() -> Losses {
        state.withLock { q in
            let u = q.unreported
            q.unreported = Losses()
            return u
        }
    }

    /// Puts losses back when the `agent` record carrying them could not be written.
    func restoreUnreported(_ losses: Losses) {
        state.withLock { $0.unreported.add(losses) }
    }

    var hasUnreported: Bool {
        state.withLock { !$0.unreported.isEmpty }
    }

    package var counters: CollectorCounters {
        state.withLock { $0.totals }
    }
}

/// A FIFO whose removed slots are released at once (an evicted snapshot frees its memory
/// immediately) and compacted now and then.
struct Ring<T> {
    private var items: [T?] = []
    private var head = 0

    var count: Int { items.count - head }

    mutating func append(_ x: T) { items.append(x) }

    mutating func popFirst() -> T? {
        guard head < items.count else { return nil }
        let x = items[head]
        items[head] = nil
        head += 1
        if head >= 64 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return x
    }

    mutating func takeAll() -> [T] {
        let out = items[head...].compactMap { $0 }
        items.removeAll(keepingCapacity: items.count <= 4096)
        head = 0
        return out
    }
}
