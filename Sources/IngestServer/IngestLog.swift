import CallLog
import Foundation
import Logging

/// The server's log writer: one thread that appends posted records to rotating zstd files
/// through CallLog's `LogWriter` (the writer the in-app collector's rotating writer is built
/// on) and acknowledges them only after they are flushed and fsynced.
///
/// Group commit: every submission waiting when the thread wakes is appended, then one flush and
/// one fsync cover them all, then all of them are answered. A submission is answered after its
/// records are on disk or with an error, never before; what was answered as written survives
/// a SIGKILL of the server the next moment.
///
/// Statistics deltas are restored to full snapshots here, per chain (call, peer connection,
/// format), and `LogWriter` encodes them again against its own chains, so every file segment
/// starts its chains in full as the format requires, whatever the client's batches were. A
/// snapshot whose `seq` is not newer than its chain's last is a client's retry: it is counted
/// as a duplicate and not written again.
public final class IngestLog: @unchecked Sendable {
    public struct Settings: Sendable {
        public var directory: String
        public var filePrefix = "ingest"
        /// A file is closed and a new one started past this many bytes on disk…
        public var fileBytes = 64 << 20
        /// …or once it is this old.
        public var fileAgeMs: Int64 = 3_600_000
        /// Posted bytes waiting for the writer; beyond this submissions are refused (503).
        public var maxQueueBytes = 64 << 20
        /// Chains of calls with no record for this long are forgotten (memory stays bounded by
        /// the calls that are live); a later delta of such a call is refused as missing its base.
        public var callIdleMs: Int64 = 15 * 60_000
        /// The statistics objects one client's open chains may hold in this log's memory (summed
        /// over its calls and peer connections; each chain is bounded by `StatsChainBounds`). A
        /// snapshot that would take a client past it is refused (`too-many-objects-held`) and its
        /// chain forgotten: what one client posts cannot grow the server's memory past it.
        public var maxHeldObjectsPerClient = 100_000
        public var writerOptions = LogWriter.Options()
        public var privacy: RecordPrivacy?

        public init(directory: String) { self.directory = directory }
    }

    /// What happened to one submission's records.
    public struct Outcome: Sendable {
        public var written = 0
        public var duplicates = 0
        public var rejections: [LineRejection] = []
        /// Time from the group's first append to the end of its fsync.
        public var flushSeconds = 0.0
    }

    public enum SubmitError: Error, Equatable, CustomStringConvertible {
        case queueFull(queuedBytes: Int)
        case closed
        public var description: String {
            switch self {
            case .queueFull(let b): "the writer is behind (\(b) bytes waiting)"
            case .closed: "the server is shutting down"
            }
        }
    }

    public struct WriteFailure: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    package struct Submission {
        var lines: [RecordBatch.Line]
        var bytes: Int
        /// Who posted it (`RequestHandler.clientKey`): whose budget its chains count against.
        var client: String
        var completion: @Sendable (Result<Outcome, WriteFailure>) -> Void

        package init(
            lines: [RecordBatch.Line], bytes: Int, client: String, completion: @escaping @Sendable (Result<Outcome, WriteFailure>) -> Void
        ) {
            self.lines = lines
            self.bytes = bytes
            self.client = client
            self.completion = completion
        }
    }

    public let settings: Settings
    private let condition = NSCondition()
    private var pending: [Submission] = []
    private var pendingBytes = 0
    private var stopping = false
    private var stopped = false
    private var thread: Thread?

    // Writer-thread state.
    private var writer: LogWriter?
    private var openedAt: Int64 = 0
    private var fileCounter = 0
    /// Bounded as every reader is (`StatsChainBounds`): what one client posts cannot grow a
    /// chain, and so the server's memory, past it.
    private var decoder = StatsDeltaDecoder(maximumObjects: StatsChainBounds.maximumObjects)
    private var lastSeq: [StatsChainKey: Int64] = [:]
    private var chainsByCall: [String: [StatsChainKey]] = [:]
    private var lastActivity: [String: Int64] = [:]
    /// Each held chain's objects and the client it counts against, and each client's sum.
    private var heldByChain: [StatsChainKey: (client: String, objects: Int)] = [:]
    private var heldByClient: [String: Int] = [:]
    private var lastIdleSweep: Int64 = 0
    private let metrics: ServerMetrics
    /// Files started and closed (`.info`), and files that could not be closed (`.error`).
    private let logger: Logger

    public convenience init(settings: Settings, metrics: ServerMetrics, logger: Logger) throws {
        try self.init(settings: settings, metrics: metrics, logger: logger, startsWriterThread: true)
    }

    /// Without the writer thread, only the caller's `commit(_:)` writes, and `close()` closes
    /// the file: nothing else touches the writer's state then (`submit` would queue for no one).
    package init(settings: Settings, metrics: ServerMetrics, logger: Logger, startsWriterThread: Bool) throws {
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: settings.directory, isDirectory: &isDirectory) {
            do {
                try FileManager.default.createDirectory(atPath: settings.directory, withIntermediateDirectories: true)
            } catch {
                throw WriteFailure(message: "cannot create \(settings.directory): \(error.localizedDescription)")
            }
        } else if !isDirectory.boolValue {
            throw WriteFailure(message: "\(settings.directory) is not a directory")
        }
        guard access(settings.directory, W_OK) == 0 else {
            throw WriteFailure(message: "\(settings.directory) is not writable: \(String(cString: strerror(errno)))")
        }
        guard startsWriterThread else { return }
        let t = Thread { [unowned self] in self.run() }
        t.name = "ingest-writer"
        thread = t
        t.start()
    }

    /// Throws what `submit` would for a request of `bytes` now.
    func checkRoom(bytes: Int) throws(SubmitError) {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { throw .closed }
        guard pendingBytes + bytes <= settings.maxQueueBytes || pending.isEmpty else {
            throw .queueFull(queuedBytes: pendingBytes)
        }
    }

    /// Queues records; `completion` runs on the writer thread once they are durable (or not).
    public func submit(
        _ lines: [RecordBatch.Line], bytes: Int, client: String = "",
        completion: @escaping @Sendable (Result<Outcome, WriteFailure>) -> Void
    ) throws(SubmitError) {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { throw .closed }
        guard pendingBytes + bytes <= settings.maxQueueBytes || pending.isEmpty else {
            throw .queueFull(queuedBytes: pendingBytes)
        }
        pending.append(Submission(lines: lines, bytes: bytes, client: client, completion: completion))
        pendingBytes += bytes
        metrics.queued(bytes: bytes, submissions: 1)
        condition.signal()
    }

    /// Writes everything queued, closes the file (fsynced) and stops the thread.
    public func close() {
        guard thread != nil else {
            closeFile()
            return
        }
        condition.lock()
        stopping = true
        condition.signal()
        while !stopped { condition.wait() }
        condition.unlock()
    }

    // MARK: - The writer thread

    private func run() {
        while true {
            condition.lock()
            while pending.isEmpty && !stopping {
                _ = condition.wait(until: Date(timeIntervalSinceNow: 1))
                if pending.isEmpty { break }
            }
            let group = pending
            let finishing = stopping && pending.isEmpty
            metrics.dequeued(bytes: pendingBytes, submissions: pending.count)
            pending.removeAll(keepingCapacity: true)
            pendingBytes = 0
            condition.unlock()

            if !group.isEmpty { commit(group) }
            housekeeping()
            if finishing {
                closeFile()
                condition.lock()
                stopped = true
                condition.broadcast()
                condition.unlock()
                return
            }
        }
    }

    /// Appends every submission's records (`append`), then one flush and fsync for the group,
    /// then answers each: the group commit. Runs on the writer thread, or on the caller's when
    /// the log has none.
    package func commit(_ group: [Submission]) {
        let started = DispatchTime.now().uptimeNanoseconds
        var outcomes = [Outcome](repeating: Outcome(), count: group.count)
        var failure: WriteFailure?
        let now = EpochClock.nowMs()
        do {
            let w = try openWriter()
            for (i, submission) in group.enumerated() {
                for line in submission.lines {
                    try append(line, from: submission.client, to: w, outcome: &outcomes[i], now: now)
                }
            }
            try w.flush(sync: true)
        } catch let e as WriteFailure {
            failure = e
        } catch {
            failure = WriteFailure(message: "\(error)")
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        if let failure {
            // What was appended to the failed file is not known to be on disk: drop the file and
            // every chain, so the clients' retries (deltas) are refused as missing their base
            // and re-sent in full rather than taken as duplicates.
            abandonFile()
            for s in group { s.completion(.failure(failure)) }
            metrics.writeFailed()
            logger.error("records of \(group.count) requests not written (each answered 503): \(failure.message)")
            return
        }
        metrics.flushed(seconds: seconds)
        for (i, s) in group.enumerated() {
            outcomes[i].flushSeconds = seconds
            s.completion(.success(outcomes[i]))
        }
        if let w = writer, w.bytesWritten >= settings.fileBytes { closeFile() }
    }

    private func append(_ line: RecordBatch.Line, from client: String, to w: LogWriter, outcome: inout Outcome, now: Int64) throws {
        var record = line.record
        // Pseudonymised first: the chains hold pseudonymised snapshots, and a delta is
        // pseudonymised as posted (a few changed members) rather than the whole report it
        // restores to; the snapshot is the same either way (`pseudonymised(_:with:)`).
        if let privacy = settings.privacy { record = IngestLog.pseudonymised(record, with: privacy) }
        var restored: RestoredSnapshot?
        if record.kind == .stats, let key = StatsChainKey(record: record) {
            if let seq = record["seq"]?.int64Value, let last = lastSeq[key], seq <= last {
                outcome.duplicates += 1
                return
            }
            do {
                (record, restored) = try decoder.restore(record)
            } catch {
                let code: String
                switch error {
                case .missingBase: code = LineRejection.Code.missingBase
                case .malformed: code = LineRejection.Code.malformedDelta
                case .tooManyObjects: code = LineRejection.Code.tooManyObjects
                }
                // The chain is counted for as long as the decoder holds it (a malformed delta leaves it).
                if decoder.objectCount(of: key) == 0 { release(chain: key) }
                outcome.rejections.append(LineRejection(line: line.number, code: code, reason: error.description))
                return
            }
            if let held = hold(chain: key, for: client) {
                decoder.forget(chain: key)
                release(chain: key)
                lastSeq[key] = nil
                outcome.rejections.append(
                    LineRejection(
                        line: line.number, code: LineRejection.Code.tooManyObjectsHeld,
                        reason:
                            "this client's open statistics chains would hold \(held) objects, over the limit of \(settings.maxHeldObjectsPerClient) "
                            + "(--max-held-objects-per-client); the chain is forgotten: end calls, or send fewer objects"))
                return
            }
            if lastSeq[key] == nil { chainsByCall[key.call, default: []].append(key) }
            lastSeq[key] = record["seq"]?.int64Value ?? (lastSeq[key] ?? -1) + 1
            lastActivity[key.call] = now
        }
        if record.kind == .end { forget(call: record.call) }
        // The writer numbers snapshots itself (its own chains); the client's numbering is gone.
        if record.kind == .stats {
            record.body["seq"] = nil
            record.body["base"] = nil
        }
        try w.append(record, restored: restored)
        outcome.written += 1
    }

    /// `privacy.apply(to: record)`, and for a statistics delta also its object ids where they
    /// are member names (`set`, `inc`, `unset`), pseudonymised as every string of a report is.
    ///
    /// What must stay true: restoring the pseudonymised delta against the pseudonymised base
    /// gives the pseudonymised restored snapshot, as `apply` on the full report would. It holds
    /// because a statistics record's pseudonymisation replaces string values one by one (each
    /// through the address pseudonymiser, then the keyed identifiers) and never a member name:
    /// every string a restored report holds comes from its base or from the delta, pseudonymised
    /// by the same function; the ids the delta names objects by (keys of `set`, `inc` and
    /// `unset`, values of `del`, `order` and `put`'s `id`) are mapped as the objects' `id`s
    /// were; `unset` lists member names, which stay as posted. Two ids of one report that
    /// pseudonymise alike (an address becomes an address, so two of them may) leave the chain
    /// unindexed: its deltas are refused as missing their base, and the agent's full snapshots
    /// that follow are written.
    static func pseudonymised(_ record: LogRecord, with privacy: RecordPrivacy) -> LogRecord {
        var out = privacy.apply(to: record)
        guard out.kind == .stats, case .object(let posted)? = record["delta"], case .object(var delta)? = out["delta"] else {
            return out
        }
        let secrets = KeyedIdentifiers.secrets(ofCallID: record.call)
        func text(_ s: String) -> String {
            let a = privacy.addresses.scrubbed(s) ?? s
            return privacy.identifiers.scrubbed(a, secrets: secrets) ?? a
        }
        for member in ["set", "inc", "unset"] {
            guard case .object(var byID)? = delta[member] else { continue }
            for i in byID.entries.indices { byID.entries[i].key = text(byID.entries[i].key) }
            if member == "unset", case .object(let names)? = posted[member], names.count == byID.count {
                for i in byID.entries.indices { byID.entries[i].value = names.entries[i].value }
            }
            delta[member] = .object(byID)
        }
        out["delta"] = .object(delta)
        return out
    }

    private func forget(call: String) {
        decoder.forget(call: call)
        for key in chainsByCall.removeValue(forKey: call) ?? [] {
            lastSeq[key] = nil
            release(chain: key)
        }
        lastActivity[call] = nil
    }

    /// Counts the chain's objects (as the decoder now holds them) against the client that
    /// started it; returns the sum it would reach, without counting it, when that passes the
    /// client's bound.
    private func hold(chain key: StatsChainKey, for client: String) -> Int? {
        let objects = decoder.objectCount(of: key)
        let previous = heldByChain[key]
        let owner = previous?.client ?? client
        let total = (heldByClient[owner] ?? 0) - (previous?.objects ?? 0) + objects
        guard total <= settings.maxHeldObjectsPerClient else { return total }
        heldByChain[key] = (owner, objects)
        heldByClient[owner] = total
        return nil
    }

    private func release(chain key: StatsChainKey) {
        guard let (owner, objects) = heldByChain.removeValue(forKey: key) else { return }
        let left = (heldByClient[owner] ?? 0) - objects
        heldByClient[owner] = left > 0 ? left : nil
    }

    private func housekeeping() {
        let now = EpochClock.nowMs()
        if writer != nil, now - openedAt >= settings.fileAgeMs { closeFile() }
        guard now - lastIdleSweep >= 60_000 else { return }
        lastIdleSweep = now
        for (call, seen) in lastActivity where now - seen >= settings.callIdleMs { forget(call: call) }
    }

    // MARK: - Files

    private func openWriter() throws -> LogWriter {
        if let writer { return writer }
        let now = EpochClock.nowMs()
        var path: String
        repeat {
            fileCounter += 1
            path = settings.directory + "/" + LogFileName.make(prefix: settings.filePrefix, epochMs: now, counter: fileCounter, compression: .zstd)
        } while FileManager.default.fileExists(atPath: path)
        let w: LogWriter
        do { w = try LogWriter(path: path, options: settings.writerOptions) } catch {
            throw WriteFailure(message: "\(error)")
        }
        // The new name must survive a crash too, or an fsynced file could be unreachable.
        syncDirectory(settings.directory)
        writer = w
        openedAt = now
        metrics.fileOpened()
        logger.info("writing \(path)")
        return w
    }

    private func closeFile() {
        guard let w = writer else { return }
        writer = nil
        do {
            try w.close()
            logger.info("closed \(w.path) (\(w.bytesWritten) bytes)")
        } catch {
            metrics.writeFailed()
            logger.error("closing \(w.path) failed: \(error)")
        }
    }

    private func abandonFile() {
        if let w = writer {
            try? w.close()
            // A file whose first write failed (a full disk) holds nothing: removed, so that
            // failed group commits leave no file behind.
            var st = stat()
            if stat(w.path, &st) == 0, st.st_size == 0 {
                unlink(w.path)
                syncDirectory(settings.directory)
            }
        }
        writer = nil
        decoder.reset()
        lastSeq.removeAll()
        chainsByCall.removeAll()
        lastActivity.removeAll()
        heldByChain.removeAll()
        heldByClient.removeAll()
    }

    private func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY)
        guard fd >= 0 else { return }
        fsync(fd)
        Foundation.close(fd)
    }
}

enum EpochClock {
    static func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
