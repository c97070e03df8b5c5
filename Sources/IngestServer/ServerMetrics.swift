import CallLog
import CoreMetrics
import Prometheus

/// What `GET /metrics` reports: the server's counters, gauges and histograms, recorded through
/// swift-metrics (`Counter`, `Meter`, `Timer`) into this server's own swift-prometheus
/// `PrometheusCollectorRegistry`, which renders Prometheus' text exposition format.
///
/// Each handler is made by the registry itself and handed to the swift-metrics type, rather than
/// through `MetricsSystem.bootstrap` and `PrometheusMetricsFactory`:
/// - the bootstrap is global and allowed once per process, while every `IngestServer` must count
///   its own requests (tests run several servers in one process, one after another and at once);
/// - the factory registers every metric without help text, and the registry refuses (stops the
///   process) a second registration of a name with a different help text, so a family's
///   `# HELP` line is only kept when the registry makes the handler.
///
/// Names, labels and types are those `Data/INGEST.md` documents; dashboards and alerts query them.
/// Every family with fixed labels is registered here, at start, so that it is rendered (at 0)
/// before its first event; requests by status appear with their first reply of that status.
public final class ServerMetrics: Sendable {
    /// The Prometheus registry behind `render()`: one per server.
    public let registry = PrometheusCollectorRegistry()

    private let recordsWritten: CoreMetrics.Counter
    private let recordsDuplicate: CoreMetrics.Counter
    private let recordsRejected: CoreMetrics.Counter
    private let bytesAccepted: CoreMetrics.Counter
    private let bytesRejected: CoreMetrics.Counter
    private let queueBytes: Meter
    private let queueRequests: Meter
    private let filesOpened: CoreMetrics.Counter
    private let writeFailures: CoreMetrics.Counter
    private let connectionsOpen: Meter
    private let connectionsRefused: CoreMetrics.Counter
    private let connectionsRefusedForAddress: CoreMetrics.Counter
    private let flushLatency: CoreMetrics.Timer
    private let requestLatency: CoreMetrics.Timer
    /// One counter per status code replied so far (a handful: the server's own statuses).
    private let requestsByStatus = Locked<[Int: CoreMetrics.Counter]>([:])
    /// Records written so far, for the line printed at stop: the registry's counters are written
    /// to, never read back.
    private let writtenTotal = Locked(0)

    private static var requests: MetricNameDescriptor { name("requests", "total", "HTTP requests answered, by status code.") }

    /// `callstats_serve_METRIC_UNIT` (`UNIT` may be empty), with its help text.
    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "callstats", subsystem: "serve", metricName: metric, unitName: unit, helpText: help)
    }

    /// The histograms' upper bounds, in seconds: from half a millisecond (a group commit on a fast
    /// disk) to 2.5 s (a request held behind a slow fsync).
    static let latencyBounds: [Duration] = [
        .microseconds(500), .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
    ]

    public init() {
        let r = registry
        func counter(_ name: MetricNameDescriptor, _ labels: [(String, String)] = []) -> CoreMetrics.Counter {
            CoreMetrics.Counter(label: name.name, dimensions: labels, handler: r.makeCounter(descriptor: name, labels: labels))
        }
        func meter(_ name: MetricNameDescriptor) -> Meter {
            Meter(label: name.name, dimensions: [], handler: r.makeGauge(descriptor: name))
        }
        func timer(_ name: MetricNameDescriptor) -> CoreMetrics.Timer {
            CoreMetrics.Timer(label: name.name, dimensions: [], handler: r.makeDurationHistogram(descriptor: name, buckets: Self.latencyBounds))
        }
        let records = Self.name(
            "records", "total", "Posted records: written, duplicates of records already written (client retries), rejected.")
        recordsWritten = counter(records, [("outcome", "written")])
        recordsDuplicate = counter(records, [("outcome", "duplicate")])
        recordsRejected = counter(records, [("outcome", "rejected")])
        let bytes = Self.name("record_bytes", "total", "Bytes of posted NDJSON lines (decompressed), accepted or rejected.")
        bytesAccepted = counter(bytes, [("outcome", "accepted")])
        bytesRejected = counter(bytes, [("outcome", "rejected")])
        queueBytes = meter(Self.name("queue", "bytes", "Posted bytes waiting for the writer."))
        queueRequests = meter(Self.name("queue", "requests", "Requests waiting for the writer."))
        filesOpened = counter(Self.name("files_opened", "total", "Log files started."))
        writeFailures = counter(Self.name("write_failures", "total", "Group commits that failed (their requests got 503)."))
        connectionsOpen = meter(Self.name("connections", "", "Connections open."))
        connectionsRefused = counter(
            Self.name("connections_refused", "total", "Connections answered 503 and closed: the limit was reached."))
        connectionsRefusedForAddress = counter(
            Self.name("connections_refused_address", "total", "Connections refused: the bound per client address was reached."))
        flushLatency = timer(Self.name("flush", "seconds", "One group commit: append, flush and fsync."))
        requestLatency = timer(Self.name("request", "seconds", "POST /v1/records from its last body byte to its reply."))
    }

    /// A reply sent; `seconds`: for a POST that was written, from its last body byte to its reply.
    func request(status: Int, seconds: Double?) {
        let counter = requestsByStatus.withLock { counters in
            if let known = counters[status] { return known }
            let labels = [("status", String(status))]
            let made = CoreMetrics.Counter(
                label: Self.requests.name, dimensions: labels, handler: registry.makeCounter(descriptor: Self.requests, labels: labels))
            counters[status] = made
            return made
        }
        counter.increment()
        if let seconds { requestLatency.recordSeconds(seconds) }
    }

    func records(written: Int, duplicates: Int, rejected: Int, bytesAccepted accepted: Int, bytesRejected rejectedBytes: Int) {
        recordsWritten.increment(by: written)
        recordsDuplicate.increment(by: duplicates)
        recordsRejected.increment(by: rejected)
        bytesAccepted.increment(by: accepted)
        bytesRejected.increment(by: rejectedBytes)
        writtenTotal.withLock { $0 += written }
    }

    /// A submission queued for a writer (any shard): the gauges are the sums over the shards.
    func queued(bytes: Int, submissions: Int) {
        queueBytes.increment(by: Double(bytes))
        queueRequests.increment(by: Double(submissions))
    }

    /// Submissions taken off a writer's queue; the same amounts `queued` added for them.
    func dequeued(bytes: Int, submissions: Int) {
        queueBytes.decrement(by: Double(bytes))
        queueRequests.decrement(by: Double(submissions))
    }

    func flushed(seconds: Double) { flushLatency.recordSeconds(seconds) }
    func fileOpened() { filesOpened.increment() }
    func writeFailed() { writeFailures.increment() }

    func connectionOpened() { connectionsOpen.increment() }
    func connectionClosed() { connectionsOpen.decrement() }
    func connectionRefused(forAddress: Bool) { (forAddress ? connectionsRefusedForAddress : connectionsRefused).increment() }

    /// Records written so far (for tests and the shutdown line).
    public var written: Int { writtenTotal.withLock { $0 } }

    /// The exposition text (format 0.0.4): every family with its `# HELP` and `# TYPE` lines.
    public func render() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(4096)
        registry.emit(into: &out)
        return out
    }
}
