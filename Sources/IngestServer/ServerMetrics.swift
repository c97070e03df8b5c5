import Foundation

/// Counters behind `GET /metrics`, in Prometheus' text exposition format (version 0.0.4).
/// Every method takes one lock briefly; nothing here allocates per request beyond a dictionary
/// slot for a status code not seen before.
public final class ServerMetrics: @unchecked Sendable {
    private let lock = NSLock()
    private var requestsByStatus: [Int: Int] = [:]
    private var recordsWritten = 0
    private var recordsDuplicate = 0
    private var recordsRejected = 0
    private var bytesAccepted = 0
    private var bytesRejected = 0
    private var queueBytes: [Int: Int] = [:]
    private var queueSubmissions: [Int: Int] = [:]
    private var filesOpened = 0
    private var writeFailures = 0
    private var flushLatency = Histogram()
    private var requestLatency = Histogram()
    /// The server's connection count, read when rendered.
    var connections: ConnectionLimit?

    public init() {}

    struct Histogram {
        static let bounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
        var counts = [Int](repeating: 0, count: Histogram.bounds.count)
        var sum = 0.0
        var count = 0

        mutating func observe(_ v: Double) {
            for (i, b) in Histogram.bounds.enumerated() where v <= b { counts[i] += 1 }
            sum += v
            count += 1
        }

        func render(_ name: String, help: String, into out: inout String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
            for (i, b) in Histogram.bounds.enumerated() { out += "\(name)_bucket{le=\"\(b)\"} \(counts[i])\n" }
            out += "\(name)_bucket{le=\"+Inf\"} \(count)\n\(name)_sum \(sum)\n\(name)_count \(count)\n"
        }
    }

    private func locked(_ body: () -> Void) {
        lock.lock()
        body()
        lock.unlock()
    }

    func request(status: Int, seconds: Double?) {
        locked {
            requestsByStatus[status, default: 0] += 1
            if let seconds { requestLatency.observe(seconds) }
        }
    }

    func records(written: Int, duplicates: Int, rejected: Int, bytesAccepted accepted: Int, bytesRejected rejectedBytes: Int) {
        locked {
            recordsWritten += written
            recordsDuplicate += duplicates
            recordsRejected += rejected
            bytesAccepted += accepted
            bytesRejected += rejectedBytes
        }
    }

    func setQueue(shard: Int, bytes: Int, submissions: Int) {
        locked {
            queueBytes[shard] = bytes
            queueSubmissions[shard] = submissions
        }
    }

    func flushed(seconds: Double) { locked { flushLatency.observe(seconds) } }
    func fileOpened() { locked { filesOpened += 1 } }
    func writeFailed() { locked { writeFailures += 1 } }

    /// Records written so far (for tests and the shutdown line).
    public var written: Int {
        lock.lock()
        defer { lock.unlock() }
        return recordsWritten
    }

    public func render() -> String {
        lock.lock()
        defer { lock.unlock() }
        var out = ""
        out += "# HELP callstats_serve_requests_total HTTP requests answered, by status code.\n"
        out += "# TYPE callstats_serve_requests_total counter\n"
        for (status, n) in requestsByStatus.sorted(by: { $0.key < $1.key }) {
            out += "callstats_serve_requests_total{status=\"\(status)\"} \(n)\n"
        }
        out += "# HELP callstats_serve_records_total Posted records: written, duplicates of records already written (client retries), rejected.\n"
        out += "# TYPE callstats_serve_records_total counter\n"
        out += "callstats_serve_records_total{outcome=\"written\"} \(recordsWritten)\n"
        out += "callstats_serve_records_total{outcome=\"duplicate\"} \(recordsDuplicate)\n"
        out += "callstats_serve_records_total{outcome=\"rejected\"} \(recordsRejected)\n"
        out += "# HELP callstats_serve_record_bytes_total Bytes of posted NDJSON lines (decompressed), accepted or rejected.\n"
        out += "# TYPE callstats_serve_record_bytes_total counter\n"
        out += "callstats_serve_record_bytes_total{outcome=\"accepted\"} \(bytesAccepted)\n"
        out += "callstats_serve_record_bytes_total{outcome=\"rejected\"} \(bytesRejected)\n"
        out += "# HELP callstats_serve_queue_bytes Posted bytes waiting for the writer.\n# TYPE callstats_serve_queue_bytes gauge\n"
        out += "callstats_serve_queue_bytes \(queueBytes.values.reduce(0, +))\n"
        out += "# HELP callstats_serve_queue_requests Requests waiting for the writer.\n# TYPE callstats_serve_queue_requests gauge\n"
        out += "callstats_serve_queue_requests \(queueSubmissions.values.reduce(0, +))\n"
        out += "# HELP callstats_serve_files_opened_total Log files started.\n# TYPE callstats_serve_files_opened_total counter\n"
        out += "callstats_serve_files_opened_total \(filesOpened)\n"
        out += "# HELP callstats_serve_write_failures_total Group commits that failed (their requests got 503).\n"
        out += "# TYPE callstats_serve_write_failures_total counter\n"
        out += "callstats_serve_write_failures_total \(writeFailures)\n"
        if let connections {
            out += "# HELP callstats_serve_connections Connections open.\n# TYPE callstats_serve_connections gauge\n"
            out += "callstats_serve_connections \(connections.openCount)\n"
            out += "# HELP callstats_serve_connections_refused_total Connections answered 503 and closed: the limit was reached.\n"
            out += "# TYPE callstats_serve_connections_refused_total counter\n"
            out += "callstats_serve_connections_refused_total \(connections.refusedCount)\n"
            out += "# HELP callstats_serve_connections_refused_address_total Connections refused: the bound per client address was reached.\n"
            out += "# TYPE callstats_serve_connections_refused_address_total counter\n"
            out += "callstats_serve_connections_refused_address_total \(connections.refusedForAddressCount)\n"
        }
        flushLatency.render("callstats_serve_flush_seconds", help: "One group commit: append, flush and fsync.", into: &out)
        requestLatency.render("callstats_serve_request_seconds", help: "POST /v1/records from its last body byte to its reply.", into: &out)
        return out
    }
}
