import CallLog
import IngestServer
import Logging

/// `callstats serve`'s writer path for posted statistics, as `IngestLog` runs it: each posted
/// body parsed into records (`RecordBatch`), then one group commit of it alone, the smallest
/// group (per line: the agent's delta restored against the agent's chain, encoded again against
/// the log's chain, compressed at serve's level; then one flush and one fsync). Left out: HTTP
/// and the writer thread's queue (`commit` runs on the caller's thread; the log has no writer
/// thread), so the work is one thread's.
public final class ServeWriterBenchmark {
    private let log: IngestLog
    private let maxLineBytes = ServeConfiguration(host: "127.0.0.1", port: 0, directory: "").maxLineBytes
    private var outcome = Outcome()

    /// What the log took and refused.
    public struct Outcome: Sendable {
        public var written = 0
        public var duplicates = 0
        public var rejected = 0
        public var failures = 0
    }

    public init(directory: String) throws {
        log = try IngestLog(
            settings: IngestLog.Settings(directory: directory), metrics: ServerMetrics(),
            logger: Logger(label: "callstats-bench", factory: { _ in SwiftLogNoOpLogHandler() }), startsWriterThread: false)
    }

    /// Writes one posted body (NDJSON lines, as an agent posts them) and makes it durable.
    public func post(_ body: [UInt8]) {
        let batch = RecordBatch(parsing: body, maxLineBytes: maxLineBytes)
        outcome.rejected += batch.rejections.count
        let answer = Locked<Result<IngestLog.Outcome, IngestLog.WriteFailure>?>(nil)
        log.commit([IngestLog.Submission(lines: batch.records, bytes: body.count, client: "", completion: { r in answer.withLock { $0 = r } })])
        switch answer.withLock({ $0 }) {
        case .success(let o)?:
            outcome.written += o.written
            outcome.duplicates += o.duplicates
            outcome.rejected += o.rejections.count
        default:
            outcome.failures += 1
        }
    }

    /// Closes the log file (fsynced); returns what was taken and refused.
    public func close() -> Outcome {
        log.close()
        return outcome
    }
}
