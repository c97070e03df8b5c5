import CallLog
import Dispatch

/// The one background writer: takes queued records, turns snapshots into `stats` records,
/// pseudonymises, and appends them through `LogWriter` to files that rotate by size and age
/// under a total disk cap. Every method runs on the writer's serial queue.
///
/// Nothing here throws to the app. A failed write drops what was not yet durable (counted by
/// reason), closes the file, and tries a new file after `retryInterval`; the first thing
/// written once that works is an `agent` record with the losses.
///
/// `package` where the benchmarks reach it (`BenchmarkSupport`): they measure this writer,
/// driven as the agent drives it, so what they count is what the collector runs.
package final class RotatingLogWriter {
    struct Settings {
        var directory: String
        var filePrefix: String
        var fileBytes: Int
        var fileAgeMs: Int64
        var diskCapBytes: Int
        var retryIntervalMs: Int64
        var agentRecordIntervalMs: Int64
        var writerOptions: LogWriter.Options
        /// zstd where the platform has it, else gzip (`LogCompression.platformDefault`).
        var compression: LogCompression = .platformDefault
        var pseudonymizer: Pseudonymizer?
        var statsMembers: StatsMemberFilter?
        /// Below this much free space a full disk is not retried (saves opening files that
        /// would fail at once).
        var minimumFreeBytes: Int64 = 256 << 10
    }

    let settings: Settings
    let storage: any LogStorage
    let clock: any AgentClock
    package let queue: RecordQueue

    private var sink: (any LogSink)?
    private var sinkPath = ""
    private var openedAt: Int64 = 0
    private var fileCounter = 0
    /// Records appended since the last successful flush: lost if the flush fails.
    private var unflushed = 0
    private var unflushedSnapshots = 0
    private var unflushedBytes = 0
    /// Bytes of the current file already counted in the totals.
    private var countedBytes = 0
    private var failure: (reason: DropReason, message: String, retryAt: Int64)?
    private var lastAgentRecord: Int64
    private var recovered = false
    /// Losses carried by an `agent` record appended but not yet flushed.
    private var inFlightReport: RecordQueue.Losses?
    private var closed = false

    init(settings: Settings, storage: any LogStorage, clock: any AgentClock, queue: RecordQueue) {
        var s = settings
        // A file must fit under the cap next to the one before it.
        s.fileBytes = max(4 << 10, min(s.fileBytes, s.diskCapBytes / 2))
        self.settings = s
        self.storage = storage
        self.clock = clock
        self.queue = queue
        lastAgentRecord = clock.now()
    }

    /// The writer `CallStatsAgent` runs for `configuration`, with a queue of its bounds.
    convenience init(configuration: CallStatsAgent.Configuration, clock: any AgentClock, storage: any LogStorage) {
        var options = LogWriter.Options()
        options.compressionLevel = configuration.compressionLevel
        let settings = Settings(
            directory: configuration.directory.hasSuffix("/") && configuration.directory.count > 1
                ? String(configuration.directory.dropLast()) : configuration.directory,
            filePrefix: configuration.filePrefix,
            fileBytes: configuration.fileBytes, fileAgeMs: CallStatsAgent.ms(configuration.fileAge),
            diskCapBytes: configuration.diskCap, retryIntervalMs: CallStatsAgent.ms(configuration.retryInterval),
            agentRecordIntervalMs: CallStatsAgent.ms(configuration.lossReportInterval),
            writerOptions: options, compression: configuration.compression, pseudonymizer: configuration.pseudonymizer,
            statsMembers: configuration.statsMembers)
        let queue = RecordQueue(limits: .init(records: configuration.queueRecords, bytes: configuration.queueBytes))
        self.init(settings: settings, storage: storage, clock: clock, queue: queue)
    }

    /// The agent's writer for `configuration` on the real file system.
    package convenience init(configuration: CallStatsAgent.Configuration, clock: any AgentClock) {
        self.init(configuration: configuration, clock: clock, storage: FileStorage())
    }

    /// The last failure, for diagnostics.
    var lastError: String? { failure?.message }

    // MARK: - Writing

    /// Writes everything queued; `sync` fsyncs afterwards.
    package func drain(sync: Bool = false) {
        guard !closed else {
            let items = queue.takeAll()
            countDropped(items, .writeError)
            return
        }
        let items = queue.takeAll()
        let started = DispatchTime.now().uptimeNanoseconds
        defer {
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            queue.update { $0.writerSeconds += seconds }
        }
        let wantsReport = queue.hasUnreported && (failure != nil || agentRecordDue)
        if items.isEmpty && !wantsReport {
            if sync, sink != nil { _ = flush(sync: true) }
            return
        }
        checkFileStillThere()
        guard ensureOpen() else {
            countDropped(items, failure?.reason ?? .writeError)
            return
        }
        writeAgentRecordIfDue()
        var needSync = sync
        for (i, item) in items.enumerated() {
            guard let record = materialize(item) else {
                queue.count(.badSnapshot, 1)
                continue
            }
            guard let sink else {
                countDropped(items[i...], failure?.reason ?? .writeError)
                return
            }
            do {
                unflushed += 1  // counted first: a throwing append has taken the record
                if item.isStats { unflushedSnapshots += 1 }
                try sink.append(record)
            } catch {
                fail(error)
                countDropped(items[(i + 1)...], failure?.reason ?? .writeError)
                return
            }
            if item.endsCall { needSync = true }
            // LogWriter compresses in memory until a flush: flushing every 128 KiB of text
            // keeps a file's size (and so rotation) within a few dozen KiB of the limit. A call's
            // end is a flush point of LogWriter's own; flushing here too (which then writes
            // nothing) counts its records as written, so a later failure never counts them lost.
            unflushedBytes += item.bytes
            guard unflushedBytes >= 128 << 10 || item.endsCall else { continue }
            guard flush(sync: false) else {
                countDropped(items[(i + 1)...], failure?.reason ?? .writeError)
                return
            }
            if sink.bytesWritten >= settings.fileBytes {
                rotate()
                guard ensureOpen() else {
                    countDropped(items[(i + 1)...], failure?.reason ?? .writeError)
                    return
                }
            }
        }
        guard flush(sync: needSync) else { return }
        if sink?.bytesWritten ?? 0 >= settings.fileBytes || clock.now() - openedAt >= settings.fileAgeMs { rotate() }
    }

    /// The periodic housekeeping: rotation by age of an idle file, retry after a failure,
    /// reporting losses that happened while nothing else was written.
    func tick() {
        guard !closed else { return }
        if sink != nil, clock.now() - openedAt >= settings.fileAgeMs {
            drain()
            if sink != nil { rotate() }
            return
        }
        if queue.hasUnreported && (failure != nil || agentRecordDue) {
            drain()
        }
    }

    /// Closes the current file (after writing what is queued and any pending `agent` record).
    package func close() {
        guard !closed else { return }
        lastAgentRecord = .min / 2  // report every loss before closing
        drain(sync: true)
        if sink != nil { rotate() }
        closed = true
    }

    /// Files closed and complete (not the one being written), oldest first.
    func closedFiles() -> [String] {
        storage.files(in: settings.directory)
            .filter { LogFileName.isLog($0.name, prefix: settings.filePrefix) }
            .map { settings.directory + "/" + $0.name }
            .filter { $0 != sinkPath || sink == nil }
            .sorted()
    }

    private var agentRecordDue: Bool {
        recovered || clock.now() - lastAgentRecord >= settings.agentRecordIntervalMs
    }

    private func materialize(_ item: QueuedItem) -> LogRecord? {
        var record: LogRecord
        switch item.payload {
        case .record(let r):
            record = r
        case .snapshot(let s):
            guard let report = s.report() else { return nil }
            record = .stats(call: item.call, ts: item.ts, format: s.format, report: report, peerConnection: s.peerConnection)
        }
        if let f = settings.statsMembers { record = f.apply(to: record) }
        if let p = settings.pseudonymizer { record = p.scrub(record) }
        return record
    }

    private func flush(sync: Bool) -> Bool {
        guard let sink else { return false }
        do {
            try sink.flush(sync: sync)
        } catch {
            fail(error)
            return false
        }
        let total = sink.bytesWritten
        let written = unflushed, snapshots = unflushedSnapshots, newBytes = total - countedBytes
        queue.update {
            $0.recordsWritten += written
            $0.snapshotsWritten += snapshots
            $0.bytesWritten += newBytes
        }
        countedBytes = total
        unflushed = 0
        unflushedSnapshots = 0
        unflushedBytes = 0
        inFlightReport = nil
        return true
    }

    private func writeAgentRecordIfDue() {
        guard let sink, agentRecordDue, queue.hasUnreported else { return }
        let now = clock.now()
        let losses = queue.takeUnreported()
        var body: JSONObject = ["agent": "collector", "event": "dropped", "since": .number(Double(lastAgentRecord))]
        let total = losses.dropped.values.reduce(0, +)
        body["records"] = .number(Double(total))
        var reasons = JSONObject()
        for r in DropReason.allCases { if let n = losses.dropped[r], n > 0 { reasons[r.rawValue] = .number(Double(n)) } }
        body["reasons"] = .object(reasons)
        if losses.filesDeleted > 0 {
            body["filesDeleted"] = .number(Double(losses.filesDeleted))
            body["bytesDeleted"] = .number(Double(losses.bytesDeleted))
        }
        if recovered, let last = lastFailureMessage { body["error"] = .string(last) }
        let record = LogRecord(kind: .agent, call: "-", ts: now, body: body)
        do {
            unflushed += 1
            inFlightReport = losses
            try sink.append(record)
            lastAgentRecord = now
            recovered = false
        } catch {
            fail(error)  // puts the losses back for the next report
        }
    }

    private var lastFailureMessage: String?

    // MARK: - Files

    /// An open file, or false while writing is failing (until the retry time).
    private func ensureOpen() -> Bool {
        if sink != nil { return true }
        let now = clock.now()
        if let f = failure, now < f.retryAt { return false }
        let dir = settings.directory
        let e = storage.prepareDirectory(dir)
        guard e == 0 else {
            setFailure(Platform.reason(for: e), Platform.describe(e))
            return false
        }
        if failure?.reason == .diskFull, let free = storage.availableBytes(dir), free < settings.minimumFreeBytes {
            setFailure(.diskFull, Platform.describe(Platform.noSpace))
            return false
        }
        enforceDiskCap()
        var name: String
        repeat {
            fileCounter += 1
            name = LogFileName.make(prefix: settings.filePrefix, epochMs: now, counter: fileCounter, compression: settings.compression)
        } while storage.exists(dir + "/" + name)
        let path = dir + "/" + name
        switch storage.create(path, options: settings.writerOptions) {
        case .success(let s):
            sink = s
            sinkPath = path
            openedAt = now
            countedBytes = 0
            queue.update { $0.filesCreated += 1 }
            storage.syncDirectory(dir)
            if failure != nil { recovered = true }
            failure = nil
            return true
        case .failure(let err):
            setFailure(err.errno == 0 ? .writeError : Platform.reason(for: err.errno), err.message)
            return false
        }
    }

    /// A log directory removed under a running writer (the app clearing its caches) would
    /// swallow records silently: the open file is gone. Start afresh in a new directory.
    private func checkFileStillThere() {
        guard let s = sink, !storage.exists(sinkPath) else { return }
        try? s.close()
        sink = nil
        countedBytes = 0
    }

    private func rotate() {
        guard let s = sink else { return }
        do {
            try s.close()
        } catch {
            fail(error)
            return
        }
        let total = s.bytesWritten
        let extra = total - countedBytes
        if extra > 0 { queue.update { $0.bytesWritten += extra } }
        sink = nil
        sinkPath = ""
        countedBytes = 0
        storage.syncDirectory(settings.directory)
    }

    /// Deletes the oldest closed files until the closed ones plus a full new file fit the cap.
    private func enforceDiskCap() {
        let dir = settings.directory
        let ours = storage.files(in: dir)
            .filter { LogFileName.isLog($0.name, prefix: settings.filePrefix) && dir + "/" + $0.name != sinkPath }
            .sorted { $0.name < $1.name }
        var total = ours.reduce(0) { $0 + $1.size }
        let budget = settings.diskCapBytes - settings.fileBytes
        var files = 0, bytes = 0
        for f in ours where total > budget {
            guard storage.remove(dir + "/" + f.name) == 0 else { continue }
            total -= f.size
            files += 1
            bytes += f.size
        }
        if files > 0 {
            queue.deleted(files: files, bytes: bytes)
            storage.syncDirectory(dir)
        }
    }

    // MARK: - Failures

    private func fail(_ error: any Error) {
        let code = (error as? LogWriter.WriteError)?.errno ?? (error as? StorageError)?.errno
        let reason = code.map(Platform.reason(for:)) ?? .writeError
        let message = code.map(Platform.describe) ?? "\(error)"
        // What was appended but never flushed is lost with the file.
        var lost = unflushed
        if let report = inFlightReport {
            lost -= 1
            queue.restoreUnreported(report)
            inFlightReport = nil
        }
        queue.count(reason, lost)
        unflushed = 0
        unflushedSnapshots = 0
        unflushedBytes = 0
        // The writer's buffers may hold half-written data; it is dropped, never reused.
        sink = nil
        sinkPath = ""
        countedBytes = 0
        setFailure(reason, message)
    }

    private func setFailure(_ reason: DropReason, _ message: String) {
        failure = (reason, message, clock.now() + settings.retryIntervalMs)
        lastFailureMessage = message
        recovered = false
    }

    private func countDropped<C: Collection>(_ items: C, _ reason: DropReason) where C.Element == QueuedItem {
        queue.count(reason, items.count)
    }
}
