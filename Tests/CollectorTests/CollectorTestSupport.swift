import Analysis
import CallLog
@testable import Collector
import Dispatch
import Foundation
import MaterialScanning
import TestSupport
import XCTest

/// A clock the test moves by hand: timers fire, in time order, on their queues, inside
/// `advance`. Timing assertions are then exact instead of depending on the machine's load.
final class ManualClock: AgentClock, @unchecked Sendable {
    private struct Task {
        let id: Int
        var due: Int64
        let interval: Int64?
        let queue: DispatchQueue
        let body: @Sendable () -> Void
    }

    private struct Handle: Cancellable {
        let clock: ManualClock
        let id: Int
        func cancel() { clock.cancel(id) }
    }

    private let lock = NSLock()
    private var time: Int64
    /// A binary heap on (due, id); cancelled tasks are skipped when they surface.
    private var heap: [Task] = []
    private var cancelled = Set<Int>()
    private var nextID = 0

    init(start: Int64 = 1_795_349_930_000) { time = start }

    func now() -> Int64 {
        lock.lock(); defer { lock.unlock() }
        return time
    }

    func repeating(every interval: Int64, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> Cancellable {
        add(delay: interval, interval: interval, queue: queue, body: body)
    }

    func after(_ delay: Int64, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> Cancellable {
        add(delay: delay, interval: nil, queue: queue, body: body)
    }

    private func add(delay: Int64, interval: Int64?, queue: DispatchQueue, body: @escaping @Sendable () -> Void) -> Cancellable {
        lock.lock(); defer { lock.unlock() }
        nextID += 1
        push(Task(id: nextID, due: time + delay, interval: interval, queue: queue, body: body))
        return Handle(clock: self, id: nextID)
    }

    private func cancel(_ id: Int) {
        lock.lock(); defer { lock.unlock() }
        cancelled.insert(id)
    }

    /// Timers scheduled and not cancelled (repeating ones count until cancelled).
    var activeTimers: Int {
        lock.lock(); defer { lock.unlock() }
        return heap.filter { !cancelled.contains($0.id) }.count
    }

    /// Moves time forward by `ms`, running every timer that falls due on the way, in order.
    func advance(by ms: Int64) {
        lock.lock()
        let target = time + ms
        lock.unlock()
        while true {
            lock.lock()
            while let top = heap.first, cancelled.contains(top.id) { cancelled.remove(top.id); pop() }
            guard var task = heap.first, task.due <= target else {
                time = target
                lock.unlock()
                return
            }
            pop()
            time = max(time, task.due)
            if let i = task.interval {
                task.due += i
                push(task)
            }
            lock.unlock()
            task.queue.sync(execute: task.body)
        }
    }

    private static func less(_ a: Task, _ b: Task) -> Bool { (a.due, a.id) < (b.due, b.id) }

    private func push(_ t: Task) {
        heap.append(t)
        var i = heap.count - 1
        while i > 0 {
            let p = (i - 1) / 2
            guard Self.less(heap[i], heap[p]) else { break }
            heap.swapAt(i, p)
            i = p
        }
    }

    private func pop() {
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < heap.count, Self.less(heap[l], heap[m]) { m = l }
            if r < heap.count, Self.less(heap[r], heap[m]) { m = r }
            guard m != i else { return }
            heap.swapAt(i, m)
            i = m
        }
    }
}

/// The real file system with a switch that makes it full, and optional slowness: what a
/// phone does when storage runs out, or when flash is slower than the snapshots coming in.
final class FaultyStorage: LogStorage, @unchecked Sendable {
    private let base = FileStorage()
    private let lock = NSLock()
    private var _full = false
    private var _syncs = 0
    /// Microseconds each flush takes.
    var flushDelayMicroseconds: UInt32 = 0

    private var gate: DispatchSemaphore?
    private var _blocked = 0

    /// Makes every flush wait until `release()`: a disk that has stopped taking data.
    func hold() { lock.lock(); gate = DispatchSemaphore(value: 0); lock.unlock() }

    func release() {
        lock.lock()
        let g = gate
        gate = nil
        let n = _blocked
        lock.unlock()
        for _ in 0..<n { g?.signal() }
    }

    /// Flushes waiting at the gate.
    var blocked: Int { lock.lock(); defer { lock.unlock() }; return _blocked }

    func waitAtGate() {
        lock.lock()
        guard let g = gate else { lock.unlock(); return }
        _blocked += 1
        lock.unlock()
        g.wait()
        lock.lock()
        _blocked -= 1
        lock.unlock()
    }

    /// Flushes that asked for fsync.
    var syncs: Int { lock.lock(); defer { lock.unlock() }; return _syncs }
    func countSync() { lock.lock(); _syncs += 1; lock.unlock() }

    var full: Bool {
        get { lock.lock(); defer { lock.unlock() }; return _full }
        set { lock.lock(); _full = newValue; lock.unlock() }
    }

    func prepareDirectory(_ path: String) -> Int32 { base.prepareDirectory(path) }

    func create(_ path: String, options: LogWriter.Options) -> Result<any LogSink, StorageError> {
        if full { return .failure(StorageError(errno: ENOSPC, message: "No space left on device")) }
        return base.create(path, options: options).map { FaultySink(inner: $0, storage: self) }
    }

    func files(in directory: String) -> [(name: String, size: Int)] { base.files(in: directory) }
    func remove(_ path: String) -> Int32 { base.remove(path) }
    func exists(_ path: String) -> Bool { base.exists(path) }
    func availableBytes(_ path: String) -> Int64? { full ? 0 : base.availableBytes(path) }
    func syncDirectory(_ directory: String) { base.syncDirectory(directory) }
}

/// Holds records until a flush, like the disk: a flush on a full disk loses them.
final class FaultySink: LogSink {
    let inner: any LogSink
    unowned let storage: FaultyStorage
    private var pending: [LogRecord] = []
    private(set) var flushes = 0

    init(inner: any LogSink, storage: FaultyStorage) {
        self.inner = inner
        self.storage = storage
    }

    func append(_ record: LogRecord) throws { pending.append(record) }

    func flush(sync: Bool) throws {
        storage.waitAtGate()
        if storage.flushDelayMicroseconds > 0 { usleep(storage.flushDelayMicroseconds) }
        guard !storage.full else {
            pending.removeAll()
            throw StorageError(errno: ENOSPC, message: "No space left on device")
        }
        for r in pending { try inner.append(r) }
        pending.removeAll()
        try inner.flush(sync: sync)
        flushes += 1
        if sync { storage.countSync() }
    }

    func close() throws {
        try flush(sync: true)
        try inner.close()
    }

    var bytesWritten: Int { inner.bytesWritten }
}

/// A call whose statistics come from a closure, synchronously.
struct FakeCall: MonitoredCall {
    let next: @Sendable () -> StatsSnapshot?
    func fetchStats(_ completion: @escaping @Sendable (StatsSnapshot?) -> Void) { completion(next()) }
}

/// A thread-safe counter for closures.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func next() -> Int {
        lock.lock(); defer { lock.unlock() }
        n += 1
        return n - 1
    }
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }
}

enum Logs {
    static func directory(_ name: String = "collector") -> String {
        TestPaths.temporaryDirectory(name).path
    }

    static func configuration(_ dir: String) -> CallStatsAgent.Configuration {
        var c = CallStatsAgent.Configuration(directory: dir, app: "test-app", appVersion: "1.0", platform: "linux")
        c.lossReportInterval = 0
        return c
    }

    /// The log files in `dir`, oldest first.
    static func files(_ dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [])
            .filter { $0.hasSuffix(".ndjson.zst") || $0.hasSuffix(".ndjson.gz") }.sorted().map { dir + "/" + $0 }
    }

    /// Every record of every file in `dir`, deltas restored, failing the test on damage. The
    /// newest file may still be open: it ends inside its zstd frame (gzip member), after its last flush.
    static func records(_ dir: String, file: StaticString = #filePath, line: UInt = #line) -> [LogRecord] {
        var out = [LogRecord]()
        let all = files(dir)
        for (i, f) in all.enumerated() {
            let (records, issues) = LogReader(path: f).readAll()
            let unexpected = issues.filter { !(i == all.count - 1 && $0.category == .truncatedFile) }
            XCTAssertEqual(unexpected, [], "issues reading \(f)", file: file, line: line)
            out += records
        }
        return out
    }

    /// The concatenated decompressed text of all files in `dir` (what reaches the disk).
    static func text(_ dir: String) -> String {
        var out = [UInt8]()
        for f in files(dir) {
            guard let d = FileManager.default.contents(atPath: f) else { continue }
            out += f.hasSuffix(".gz") ? GzipDecoder.decompressAll(Array(d)).output : ZstdDecoder.decompressAll(Array(d)).output
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The analysis of every call in `dir`'s files, by call id, read as `callstats analyze` reads them.
    static func analyze(_ dir: String) throws -> [String: CallAnalysis] {
        var ingestor = RecordIngestor()
        var failures: [String] = []
        let all = files(dir)
        for f in all {
            LogLineReader(path: f).forEachLine(
                { line, n in
                    if case .skipped(_, let message) = ingestor.ingest(line) { failures.append("\(f):\(n): \(message)") }
                },
                issue: { issue in
                    // The newest file may still be open (it ends after its last flush).
                    if !(f == all.last && issue.category == .truncatedFile) { failures.append(issue.description) }
                })
        }
        if let first = failures.first { XCTFail(first) }
        var out: [String: CallAnalysis] = [:]
        var byCall: [String: CallMaterial] = [:]
        for m in ingestor.takeAll() {
            if var existing = byCall[m.callID] { existing.merge(m); byCall[m.callID] = existing } else { byCall[m.callID] = m }
        }
        for (id, m) in byCall { out[id] = CallAnalyzer.analyze(m, config: AnalysisConfig()) }
        return out
    }

    /// Fails unless the logs in `dir` analyse to exactly what those in `reference` do.
    static func assertSameAnalysis(
        _ dir: String, as reference: String, calls: Set<String>,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let expected = try analyze(reference), got = try analyze(dir)
        XCTAssertEqual(Set(expected.keys), calls, file: file, line: line)
        for (call, e) in expected {
            let g = try XCTUnwrap(got[call], file: file, line: line)
            XCTAssertEqual(g.call, e.call, call, file: file, line: line)
            XCTAssertEqual(g.streams, e.streams, call, file: file, line: line)
            XCTAssertEqual(g.findings, e.findings, call, file: file, line: line)
            XCTAssertEqual(g.intervals, e.intervals, call, file: file, line: line)
        }
    }
}

/// The shared Chromium recording's W3C snapshots, or a skip when `../shared/data` is absent.
enum Recording {
    static func load() throws -> ChromiumRecording {
        guard let url = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is absent") }
        return try ChromiumRecording(url: url)
    }
}
