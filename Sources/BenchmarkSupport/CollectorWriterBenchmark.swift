import CallLog
import Collector
import Dispatch

/// The collector's writer path for statistics snapshots, as `CallStatsAgent` runs it: a
/// snapshot put on the agent's queue, then the agent's `RotatingLogWriter` drains it (parses
/// the SDK's text, delta-encodes it against its chain, compresses at the agent's level, flushes)
/// into rotating files in `directory`, under the agent's default configuration. One snapshot per
/// drain, as when a call's samples are apart. Left out: sampling the SDK and the writer's
/// dispatch queue (the drain runs on the caller's thread), so the work is one thread's.
/// The clock stands still and never fires a timer: file names, rotation by age and loss reports
/// come out the same on every run.
public final class CollectorWriterBenchmark {
    private let writer: RotatingLogWriter

    public init(directory: String) {
        let configuration = CallStatsAgent.Configuration(directory: directory, app: "callstats-bench", appVersion: "1")
        writer = RotatingLogWriter(configuration: configuration, clock: StoppedClock(instant: 1_795_349_932_000))
    }

    /// Queues `snapshot` of `call` taken at `ts` and drains the queue into the log.
    public func write(_ snapshot: StatsSnapshot, call: String, ts: Int64) {
        writer.queue.push(snapshot: snapshot, call: call, ts: ts)
        writer.drain()
    }

    /// Closes the log file (fsynced); returns what was written, dropped and created.
    public func close() -> CollectorCounters {
        writer.close()
        return writer.queue.counters
    }
}

/// A clock at one instant whose timers never fire.
private struct StoppedClock: AgentClock {
    let instant: Int64

    func now() -> Int64 { instant }

    func repeating(every interval: Int64, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> any Cancellable {
        NeverFires()
    }

    func after(_ delay: Int64, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> any Cancellable {
        NeverFires()
    }

    struct NeverFires: Cancellable {
        func cancel() {}
    }
}
