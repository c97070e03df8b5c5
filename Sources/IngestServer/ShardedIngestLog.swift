import CallLog
import Foundation
import Logging

/// Several `IngestLog`s side by side, each with its own writer thread and files, a call always
/// going to the same one (its chains live there). Restoring and re-encoding statistics is the
/// writer's main cost; one writer per core spreads it. A request whose records fall into several
/// shards is answered once every shard has made its part durable.
public final class ShardedIngestLog: Sendable {
    let shards: [IngestLog]

    public init(settings: IngestLog.Settings, shards count: Int, metrics: ServerMetrics, logger: Logger) throws {
        var logs: [IngestLog] = []
        for i in 0..<max(1, count) {
            var s = settings
            if count > 1 { s.filePrefix = "\(settings.filePrefix)-\(i)" }
            logs.append(try IngestLog(settings: s, metrics: metrics, logger: logger))
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

    /// Combines the shards' outcomes of one request: `completion` runs once, after the last part
    /// (outside the lock), with the sum of the outcomes or with a failure if any part failed.
    final class Join: Sendable {
        private struct Parts {
            var remaining: Int
            var outcome = IngestLog.Outcome()
            var failure: IngestLog.WriteFailure?
        }
        private let parts: Locked<Parts>
        private let completion: @Sendable (Result<IngestLog.Outcome, IngestLog.WriteFailure>) -> Void

        init(parts: Int, completion: @escaping @Sendable (Result<IngestLog.Outcome, IngestLog.WriteFailure>) -> Void) {
            self.parts = Locked(Parts(remaining: parts))
            self.completion = completion
        }

        func add(_ result: Result<IngestLog.Outcome, IngestLog.WriteFailure>) {
            let final = parts.withLock { p -> Result<IngestLog.Outcome, IngestLog.WriteFailure>? in
                switch result {
                case .success(let o):
                    p.outcome.written += o.written
                    p.outcome.duplicates += o.duplicates
                    p.outcome.rejections += o.rejections
                    p.outcome.flushSeconds = max(p.outcome.flushSeconds, o.flushSeconds)
                case .failure(let f):
                    p.failure = f
                }
                p.remaining -= 1
                guard p.remaining == 0 else { return nil }
                return p.failure.map { .failure($0) } ?? .success(p.outcome)
            }
            if let final { completion(final) }
        }
    }
}
