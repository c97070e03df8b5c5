import CallLog
import Dispatch
import Foundation

/// Records call quality from inside an app: samples every attached call's statistics on a
/// timer, records the SDK's events as they happen, and writes log format v1 files
/// (`Data/FORMAT.md`) that `callstats analyze` reads.
///
/// Safe to use from any thread. The app's threads only queue records (no parsing, no I/O):
/// one background writer encodes, compresses and writes them. It never throws into the app
/// and never stops it: when the disk is slow the oldest snapshots are dropped, when it fails
/// records are dropped, and every loss is counted and later written as an `agent` record.
///
/// ```swift
/// let agent = CallStatsAgent(configuration: .init(directory: logsPath, app: "acme-phone", appVersion: "3.2.1"))
/// let recorder = agent.attach(callID: call.id, info: CallInfo(direction: .outgoing, sdk: "kandy-mobile", sdkVersion: "5.14.0"),
///                             call: KandyMobileCall { done in call.getRTPStatistics { done($0) } })
/// recorder.event(SDKEvent(action: "callMetric", type: "callRinging"))
/// recorder.end(KandyEndStatus.end(statusCode: 9901, reason: "Ended by local user"))
/// ```
public final class CallStatsAgent: @unchecked Sendable {
    public struct Configuration: Sendable {
        /// The directory for log files (created when missing, again if it disappears).
        public var directory: String
        public var app: String
        public var appVersion: String
        /// `ios`, `android`, `macos`, `linux`, …; defaults to the platform built for.
        public var platform: String
        /// Seconds between two samples of a call. The SDK guides recommend 10.
        public var interval: Double = 10
        /// How long to wait for the SDK's last snapshot when a call ends, in seconds.
        public var finalSampleTimeout: Double = 2
        /// Queue bounds: records and bytes waiting for the writer. Beyond either, the oldest
        /// snapshots are dropped (counted). 16 MiB holds about 10 minutes of 100 video calls.
        public var queueRecords = 50_000
        public var queueBytes = 16 << 20
        /// A file is closed and a new one started beyond this many compressed bytes or seconds.
        public var fileBytes = 4 << 20
        public var fileAge: Double = 3600
        /// All log files of this agent together stay under this many bytes: the oldest closed
        /// files are deleted first (counted).
        public var diskCap = 64 << 20
        /// Seconds between attempts to write again after a write error.
        public var retryInterval: Double = 10
        /// Losses are reported in an `agent` record at most this often (and at once after a
        /// write error heals, and on shutdown), in seconds.
        public var lossReportInterval: Double = 60
        /// zstd level: 9 writes logs 22 % smaller than 3 at a cost negligible at call rates.
        public var compressionLevel: Int32 = 9
        /// zstd where this build has the library (`.ndjson.zst` files), gzip elsewhere
        /// (`.ndjson.gz`: iOS and the other Apple platforms ship zlib, not zstd). Every reader
        /// reads both; choose gzip elsewhere only to test that path.
        public var compression: LogCompression = .platformDefault
        /// Rewrites IP addresses before anything is written; nil writes them unchanged.
        public var pseudonymizer: Pseudonymizer?
        /// Writes only these members of each statistics object; nil (the default) writes the
        /// SDK's report whole. `StatsMemberFilter(keeping: StatsMemberFilter.essential)` makes
        /// logs about 40 % smaller and keeps everything `callstats analyze` reads
        /// (`callstats bench log-size`); what is dropped cannot be recovered later.
        public var statsMembers: StatsMemberFilter?
        /// File names start with this (`calls-20251121T121850123Z-0001.ndjson.zst`).
        public var filePrefix = "calls"

        public init(directory: String, app: String, appVersion: String, platform: String = CallStatsAgent.defaultPlatform) {
            self.directory = directory
            self.app = app
            self.appVersion = appVersion
            self.platform = platform
        }
    }

    public static var defaultPlatform: String {
        #if os(iOS)
        "ios"
        #elseif os(macOS)
        "macos"
        #elseif os(Android)
        "android"
        #elseif os(Linux)
        "linux"
        #elseif os(Windows)
        "windows"
        #else
        "unknown"
        #endif
    }

    public let configuration: Configuration
    let clock: any AgentClock
    let queue: RecordQueue
    let writer: RotatingLogWriter
    private let writerQueue = DispatchQueue(label: "callstats.collector.writer", qos: .utility)
    private let samplingQueue = DispatchQueue(label: "callstats.collector.sampling", qos: .utility)
    /// The attached calls and whether the agent still records; the `CallSlot`s' fields are
    /// changed only inside `state.withLock` too.
    private struct State {
        var calls: [String: CallSlot] = [:]
        var housekeeping: (any Cancellable)?
        var stopped = false
    }

    private let state = Locked(State())
    /// Coalesces the writes of snapshots that arrive together (many calls on one tick).
    private let writeDelayMs = 50

    public convenience init(configuration: Configuration) {
        self.init(configuration: configuration, clock: SystemClock(), storage: FileStorage())
    }

    init(configuration: Configuration, clock: any AgentClock, storage: any LogStorage) {
        self.configuration = configuration
        self.clock = clock
        let writer = RotatingLogWriter(configuration: configuration, clock: clock, storage: storage)
        self.writer = writer
        queue = writer.queue
        let period = max(1000, min(CallStatsAgent.ms(configuration.retryInterval), 30_000))
        let housekeeping = clock.repeating(every: period, on: writerQueue) { [weak self] in self?.writer.tick() }
        state.withLock { $0.housekeeping = housekeeping }
    }

    /// An agent the app lets go without `shutdown()`: its timers would otherwise go on firing
    /// (a resumed dispatch timer lives until cancelled), and what is queued is written now.
    /// No closure holds the agent strongly here, so nothing else touches the writer.
    deinit {
        state.withLock { agent in
            agent.housekeeping?.cancel()
            for s in agent.calls.values {
                s.timer?.cancel()
                s.timeout?.cancel()
            }
        }
        writer.close()
    }

    static func ms(_ seconds: Double) -> Int64 { Int64((seconds * 1000).rounded()) }

    // MARK: - Calls

    /// Starts recording a call: writes its `call` record and samples `call` (if given) every
    /// `interval`. Attaching an id that is already attached replaces the earlier one.
    @discardableResult
    public func attach(callID: String, info: CallInfo, call: (any MonitoredCall)? = nil) -> CallRecorder {
        let recorder = CallRecorder(callID: callID, agent: self)
        let now = clock.now()
        var labels = JSONObject()
        for (k, v) in info.labels.sorted(by: { $0.key < $1.key }) { labels[k] = .string(v) }
        let record = LogRecord.callInfo(
            call: callID, ts: now, direction: info.direction.rawValue, sdk: info.sdk, sdkVersion: info.sdkVersion,
            app: configuration.app, appVersion: configuration.appVersion, platform: configuration.platform,
            network: info.network, media: info.media, labels: labels)
        let slot = CallSlot(id: callID, source: call)
        let attached = state.withLock { agent in
            guard !agent.stopped else { return false }
            agent.calls[callID]?.timer?.cancel()
            agent.calls[callID] = slot
            if call != nil {
                slot.timer = clock.repeating(every: max(1, CallStatsAgent.ms(configuration.interval)), on: samplingQueue) { [weak self, weak slot] in
                    guard let self, let slot else { return }
                    self.sample(slot)
                }
            }
            return true
        }
        guard attached else { return recorder }
        enqueue(QueuedItem(call: callID, ts: now, payload: .record(record), bytes: 256))
        call?.connect(recorder)
        return recorder
    }

    /// Calls attached and not yet ended.
    public var attachedCalls: Int {
        state.withLock { $0.calls.count }
    }

    private func sample(_ slot: CallSlot) {
        enum Decision { case idle, skip, fetch(any MonitoredCall) }
        let decision = state.withLock { _ -> Decision in
            guard !slot.ending, let source = slot.source else { return .idle }
            guard !slot.fetching else { return .skip }
            slot.fetching = true
            return .fetch(source)
        }
        let source: any MonitoredCall
        switch decision {
        case .idle: return
        case .skip:
            queue.update { $0.samplesSkipped += 1 }
            return
        case .fetch(let s): source = s
        }
        source.fetchStats { [weak self] snapshot in
            guard let self else { return }
            let late = self.state.withLock { _ in
                slot.fetching = false
                return slot.finished
            }
            if let snapshot, !late { self.enqueue(snapshot: snapshot, callID: slot.id) }
        }
    }

    private func enqueue(snapshot: StatsSnapshot, callID: String) {
        enqueue(QueuedItem(snapshot: snapshot, call: callID, ts: clock.now()))
    }

    private func enqueue(_ item: QueuedItem) {
        guard queue.push(item) else { return }
        writerQueue.asyncAfter(deadline: .now() + .milliseconds(writeDelayMs)) { [weak self] in self?.writer.drain() }
    }

    private func slot(_ callID: String) -> CallSlot? {
        state.withLock { agent in
            guard let s = agent.calls[callID], !s.ending else { return nil }
            return s
        }
    }

    func record(callID: String, event: SDKEvent) {
        guard slot(callID) != nil else { return }
        let r = LogRecord.event(call: callID, ts: event.time ?? clock.now(), action: event.action, type: event.type, detail: event.detail)
        enqueue(QueuedItem(call: callID, ts: r.ts, payload: .record(r), bytes: 128 + event.detail.count * 32))
    }

    func recordQuality(callID: String, score: Double, direction: String, source: String) {
        guard slot(callID) != nil else { return }
        let r = LogRecord.quality(call: callID, ts: clock.now(), score: score, direction: direction, source: source)
        enqueue(QueuedItem(call: callID, ts: r.ts, payload: .record(r), bytes: 128))
    }

    func end(callID: String, info: CallEnd) {
        let now = clock.now()
        enum Ending { case none, withoutSample(CallSlot), afterSample(CallSlot, any MonitoredCall) }
        let ending = state.withLock { agent -> Ending in
            guard let slot = agent.calls[callID], !slot.ending else { return .none }
            slot.ending = true
            slot.timer?.cancel()
            slot.timer = nil
            slot.endInfo = info
            slot.endRequested = now
            guard let source = slot.source else { return .withoutSample(slot) }
            slot.timeout = clock.after(max(0, CallStatsAgent.ms(configuration.finalSampleTimeout)), on: samplingQueue) { [weak self, weak slot] in
                guard let self, let slot else { return }
                self.finish(slot, nil)
            }
            return .afterSample(slot, source)
        }
        let slot: CallSlot, source: any MonitoredCall
        switch ending {
        case .none: return
        case .withoutSample(let s):
            finish(s, nil)
            return
        case .afterSample(let s, let m): (slot, source) = (s, m)
        }
        samplingQueue.async { [weak self] in
            guard self != nil else { return }
            source.fetchStats { [weak self] snapshot in self?.finish(slot, snapshot) }
        }
    }

    /// The last snapshot (if it came in time), then the `end` record, which the writer
    /// follows with a flush and fsync.
    private func finish(_ slot: CallSlot, _ snapshot: StatsSnapshot?) {
        let endInfo = state.withLock { agent -> CallEnd? in
            guard !slot.finished, let info = slot.endInfo else { return nil }
            slot.finished = true
            slot.timeout?.cancel()
            slot.timeout = nil
            if agent.calls[slot.id] === slot { agent.calls[slot.id] = nil }
            return info
        }
        guard let info = endInfo else { return }
        var endTs = slot.endRequested
        if let snapshot {
            let now = clock.now()
            endTs = max(endTs, now)
            enqueue(QueuedItem(snapshot: snapshot, call: slot.id, ts: now))
        }
        let r = LogRecord.end(
            call: slot.id, ts: endTs, reason: info.reason.rawValue, statusCode: info.statusCode,
            statusText: info.statusText, sipStatus: info.sipStatus, sipReason: info.sipReason,
            durationMs: info.durationMs)
        enqueue(QueuedItem(call: slot.id, ts: endTs, payload: .record(r), bytes: 256, endsCall: true))
    }

    // MARK: - Writer

    /// Totals: written, dropped by reason, deleted by the disk cap, queue high-water marks.
    public var counters: CollectorCounters { queue.counters }

    /// Writes everything queued so far and fsyncs it. Blocks until done: for tests, for an
    /// app moving to the background, or before handing files to an uploader.
    public func flush() {
        samplingQueue.sync {}  // fetches already dispatched (a call's last sample) run first
        writerQueue.sync { writer.drain(sync: true) }
    }

    /// Complete log files, oldest first: every file except the one being written. An
    /// uploader may send and delete these.
    public func closedFiles() -> [String] {
        writerQueue.sync { writer.closedFiles() }
    }

    /// Stops sampling, writes what is queued (and an `agent` record if anything was lost),
    /// and closes the current file. Calls still attached get no `end` record (calls already
    /// ended get theirs, without a last sample the SDK has not delivered yet). Blocks until
    /// the file is closed; the agent records nothing afterwards.
    public func shutdown() {
        samplingQueue.sync {}  // last samples already asked for come first
        let ending = state.withLock { agent in
            agent.stopped = true
            let open = Array(agent.calls.values)
            agent.calls.removeAll()
            agent.housekeeping?.cancel()
            agent.housekeeping = nil
            var ending = [CallSlot]()
            for s in open {
                s.timer?.cancel()
                if s.ending { ending.append(s) } else { s.finished = true }
            }
            return ending
        }
        for s in ending { finish(s, nil) }  // ended, still waiting for the SDK: the end is written
        writerQueue.sync { writer.close() }
    }
}

/// One attached call's sampling state, changed only under the agent's `state` lock.
final class CallSlot: @unchecked Sendable {
    let id: String
    let source: (any MonitoredCall)?
    var timer: (any Cancellable)?
    var timeout: (any Cancellable)?
    var fetching = false
    var ending = false
    var finished = false
    var endInfo: CallEnd?
    var endRequested: Int64 = 0

    init(id: String, source: (any MonitoredCall)?) {
        self.id = id
        self.source = source
    }
}
