import CallLog
import Foundation

/// Several `IngestLog`s side by side, each with its own writer thread and files, a call always
/// going to the same one (its chains live there). Restoring and re-encoding statistics is the
/// writer's main cost; one writer per core spreads it. A request whose records fall into several
/// shards is answered once every shard has made its part durable.
public final class ShardedIngestLog: Sendable {
    let shards: [IngestLog]

    public init(settings: IngestLog.Settings, shards count: Int, metrics: ServerMetrics) throws {
        var logs: [IngestLog] = []
        for i in 0..<max(1, count) {
            var s = settings
            if count > 1 { s.filePrefix = "\(settings.filePrefix)-\(i)" }
            logs.append(try IngestLog(settings: s, metrics: metrics, shard: i))
        }
        shards = logs
    }

    /// FNV-1a of the call id: stable, so a call's records always meet the same chains.
    func shard(of call: String) -> Int {
        guard shards.count > 1 else { return 0 }
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in call.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return Int(h % UInt64(shards.count))
    }

    public func submit(
        _ lines: [RecordBatch.Line], bytes: Int, client: String = "",
        completion: @escaping @Sendable (Result<IngestLog.Outcome, IngestLog.WriteFailure>) -> Void
    ) throws(IngestLog.SubmitError) {
        guard shards.count > 1 else { return try shards[0].submit(lines, bytes: bytes, client: client, completion: completion) }
        var parts = [[RecordBatch.Line]](repeating: [], count: shards.count)
        for line in lines { parts[shard(of: line.record.call)].append(line) }
        let used = parts.indices.filter { !parts[$0].isEmpty }
        guard !used.isEmpty else { return try shards[0].submit([], bytes: bytes, client: client, completion: completion) }
        // Refuse before any part is queued, so that a refused request wrote nothing.
        for i in used { try shards[i].checkRoom(bytes: bytes / used.count) }
        let join = Join(parts: used.count, completion: completion)
        for i in used {
            try shards[i].submit(parts[i], bytes: bytes / used.count, client: client) { join.add($0) }
        }
    }

    public func close() {
        for s in shards { s.close() }
    }

    /// Combines the shards' outcomes of one request.
    final class Join: @unchecked Sendable {
        private let lock = NSLock()
        private var remaining: Int
        private var outcome = IngestLog.Outcome()
        private var failure: IngestLog.WriteFailure?
        private let completion: @Sendable (Result<IngestLog.Outcome, IngestLog.WriteFailure>) -> Void

        init(parts: Int, completion: @escaping @Sendable (Result<IngestLog.Outcome, IngestLog.WriteFailure>) -> Void) {
            remaining = parts
            self.completion = completion
        }

        func add(_ result: Result<IngestLog.Outcome, IngestLog.WriteFailure>) {
            lock.lock()
            switch result {
            case .success(let o):
                outcome.written += o.written
                outcome.duplicates += o.duplicates
                outcome.rejections += o.rejections
                outcome.flushSeconds = max(outcome.flushSeconds, o.flushSeconds)
            case .failure(let f):
                failure = f
            }
            remaining -= 1
            let done = remaining == 0
            let final: Result<IngestLog.Outcome, IngestLog.WriteFailure> = failure.map { .failure($0) } ?? .success(outcome)
            lock.unlock()
            if done { completion(final) }
        }
    }
}
