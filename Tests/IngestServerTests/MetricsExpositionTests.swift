import Foundation
import TestSupport
import XCTest

/// `GET /metrics` read by a parser that is not ours: the Prometheus project's Python client
/// (`prometheus_client.parser`), which groups samples into families by their `# TYPE` lines and
/// turns any sample that does not belong to the family before it into an untyped family of its
/// own. What it reads must be what `Data/INGEST.md` documents, with the values the requests
/// posted here make.
final class MetricsExpositionTests: XCTestCase {
    private var work: URL!
    private var logs: URL { work.appendingPathComponent("logs") }

    override func setUpWithError() throws {
        work = TestPaths.temporaryDirectory("metrics-exposition")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: work)
    }

    /// One family as the parser gives it.
    private struct Family: Decodable {
        struct Sample: Decodable {
            var name: String
            var labels: [String: String]
            var value: Double
        }
        var name: String
        var type: String
        var help: String
        var samples: [Sample]
    }

    private static let parse = """
        import json, sys
        from prometheus_client.parser import text_string_to_metric_families
        families = [
            {"name": f.name, "type": f.type, "help": f.documentation,
             "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in f.samples]}
            for f in text_string_to_metric_families(sys.stdin.read())
        ]
        json.dump(families, sys.stdout)
        """

    /// A Python that has `prometheus_client`: Debian's (`python3-prometheus-client`, which `make
    /// test-deps` installs, goes there), else the one on the PATH. In CI its absence is a failure.
    private func python() throws -> String {
        for candidate in ["/usr/bin/python3", "python3"] {
            if let r = try? runProcess(URL(fileURLWithPath: "/usr/bin/env"), [candidate, "-c", "import prometheus_client.parser"]), r.status == 0 {
                return candidate
            }
        }
        let message = "no python3 with prometheus_client (apt-get install python3-prometheus-client)"
        if ProcessInfo.processInfo.environment["CI"] != nil { XCTFail(message) }
        throw XCTSkip(message)
    }

    func testMetricsParsedByPrometheusClient() throws {
        let python = try python()
        let server = try ServeProcess(directory: logs, arguments: ["--writers", "1"])
        let call = Records.call("c-m")
        let stats = Records.stats("c-m", ts: Records.baseTs + 1000, seq: 1)
        let notJSON = "not json"
        let broken = "{oops"

        let first = try RawHTTP.post(port: server.port, call + "\n" + stats)
        XCTAssertEqual(first.status, 200, first.body)
        XCTAssertEqual(first.json?["written"] as? Int, 2, first.body)
        // The same snapshot again (a client's retry) and a line that is no record.
        let second = try RawHTTP.post(port: server.port, stats + "\n" + notJSON)
        XCTAssertEqual(second.status, 200, second.body)
        XCTAssertEqual(second.json?["duplicates"] as? Int, 1, second.body)
        XCTAssertEqual(second.json?["rejected"] as? Int, 1, second.body)
        XCTAssertEqual(try RawHTTP.post(port: server.port, broken).status, 422)
        XCTAssertEqual(try RawHTTP.request(port: server.port, method: "GET", path: "/nothing").status, 404)

        let served = try RawHTTP.request(port: server.port, method: "GET", path: "/metrics")
        XCTAssertEqual(served.status, 200)
        XCTAssertEqual(served.headers["content-type"], "text/plain; version=0.0.4")
        let exposition = work.appendingPathComponent("metrics.txt")
        try Data(served.body.utf8).write(to: exposition)
        let parsed = try runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), [python, "-c", Self.parse], standardInput: try FileHandle(forReadingFrom: exposition))
        XCTAssertEqual(parsed.status, 0, parsed.err + "\n" + served.body)
        let families = try JSONDecoder().decode([Family].self, from: Data(parsed.out.utf8))
        let byName = Dictionary(families.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        XCTAssertEqual(byName.count, families.count, "each family once: \(families.map(\.name))")

        // Every family of Data/INGEST.md, of its type, with its help text; nothing the parser could
        // not place (an untyped family is a sample outside the family its name belongs to).
        // The parser names a counter's family without `_total`, its samples with it.
        let documented: [String: String] = [
            "callstats_serve_requests": "counter", "callstats_serve_records": "counter", "callstats_serve_record_bytes": "counter",
            "callstats_serve_queue_bytes": "gauge", "callstats_serve_queue_requests": "gauge",
            "callstats_serve_files_opened": "counter", "callstats_serve_write_failures": "counter",
            "callstats_serve_connections": "gauge", "callstats_serve_connections_refused": "counter",
            "callstats_serve_connections_refused_address": "counter",
            "callstats_serve_flush_seconds": "histogram", "callstats_serve_request_seconds": "histogram",
        ]
        XCTAssertEqual(Set(byName.keys), Set(documented.keys), served.body)
        for (name, type) in documented {
            XCTAssertEqual(byName[name]?.type, type, name)
            XCTAssertFalse(byName[name]?.help.isEmpty ?? true, "\(name) has help text")
        }

        /// The value of the one sample of `family` named `sample` with exactly `labels`.
        func value(_ family: String, _ sample: String, _ labels: [String: String] = [:]) -> Double? {
            let matches = byName[family]?.samples.filter { $0.name == sample && $0.labels == labels } ?? []
            XCTAssertLessThanOrEqual(matches.count, 1, "\(sample)\(labels)")
            return matches.first?.value
        }

        // Requests by status: the three POSTs (two 200, one 422) and the 404; /metrics is counted
        // once answered, so not in its own reply.
        let requests = byName["callstats_serve_requests"]?.samples ?? []
        XCTAssertEqual(Set(requests.map(\.labels)), [["status": "200"], ["status": "422"], ["status": "404"]], served.body)
        XCTAssertEqual(value("callstats_serve_requests", "callstats_serve_requests_total", ["status": "200"]), 2)
        XCTAssertEqual(value("callstats_serve_requests", "callstats_serve_requests_total", ["status": "422"]), 1)
        XCTAssertEqual(value("callstats_serve_requests", "callstats_serve_requests_total", ["status": "404"]), 1)

        let records = "callstats_serve_records_total"
        XCTAssertEqual(
            Set((byName["callstats_serve_records"]?.samples ?? []).map(\.labels)),
            [["outcome": "written"], ["outcome": "duplicate"], ["outcome": "rejected"]])
        XCTAssertEqual(value("callstats_serve_records", records, ["outcome": "written"]), 2)
        XCTAssertEqual(value("callstats_serve_records", records, ["outcome": "duplicate"]), 1)
        XCTAssertEqual(value("callstats_serve_records", records, ["outcome": "rejected"]), 2)
        // Bytes of the lines as posted, without their newlines: the duplicate was accepted too.
        let bytes = "callstats_serve_record_bytes_total"
        XCTAssertEqual(value("callstats_serve_record_bytes", bytes, ["outcome": "accepted"]), Double(call.utf8.count + 2 * stats.utf8.count))
        XCTAssertEqual(value("callstats_serve_record_bytes", bytes, ["outcome": "rejected"]), Double(notJSON.utf8.count + broken.utf8.count))

        XCTAssertEqual(value("callstats_serve_queue_bytes", "callstats_serve_queue_bytes"), 0, "every request answered: nothing waits")
        XCTAssertEqual(value("callstats_serve_queue_requests", "callstats_serve_queue_requests"), 0)
        XCTAssertEqual(value("callstats_serve_files_opened", "callstats_serve_files_opened_total"), 1)
        XCTAssertEqual(value("callstats_serve_write_failures", "callstats_serve_write_failures_total"), 0)
        XCTAssertEqual(value("callstats_serve_connections_refused", "callstats_serve_connections_refused_total"), 0)
        XCTAssertEqual(value("callstats_serve_connections_refused_address", "callstats_serve_connections_refused_address_total"), 0)
        // This one at least; the earlier ones are counted until the server sees them close.
        let open = try XCTUnwrap(value("callstats_serve_connections", "callstats_serve_connections"))
        XCTAssertTrue((1...6).contains(open), "\(open) connections")

        // One group commit per POST (one writer, requests one after another), each timed; every
        // POST that reached the writer timed from its last byte to its reply.
        let bounds = ["0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0", "2.5", "+Inf"]
        for (family, count) in [("callstats_serve_flush_seconds", 3.0), ("callstats_serve_request_seconds", 3.0)] {
            XCTAssertEqual(value(family, family + "_count"), count, family)
            let buckets = (byName[family]?.samples ?? []).filter { $0.name == family + "_bucket" }
            XCTAssertEqual(buckets.map { $0.labels["le"] ?? "" }, bounds, family)
            XCTAssertEqual(buckets.last?.value, count, "\(family): +Inf holds every observation")
            XCTAssertEqual(buckets.map(\.value), buckets.map(\.value).sorted(), "\(family): cumulative buckets")
            let sum = try XCTUnwrap(value(family, family + "_sum"), family)
            XCTAssertTrue(sum > 0 && sum < 30, "\(family) sum \(sum) s")
        }
    }
}
