import CallLog
import Foundation
import TestSupport
import XCTest

/// SIGKILL while clients post: what got a success reply is on disk, clients' retries fill in
/// the rest, and `analyze` counts nothing twice.
final class KillTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("serve-kill") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// The current server's port, 0 while none runs.
    final class Port: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func get() -> Int { lock.lock(); defer { lock.unlock() }; return value }
        func set(_ v: Int) { lock.lock(); value = v; lock.unlock() }
    }

    final class Acknowledged: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var lines: [String] = []
        private(set) var failedAttempts = 0
        func add(_ l: [String]) { lock.lock(); lines += l; lock.unlock() }
        func failed() { lock.lock(); failedAttempts += 1; lock.unlock() }
        var count: Int { lock.lock(); defer { lock.unlock() }; return lines.count }
    }

    /// A record as posted and as written: the same but for the snapshot numbering (`seq`), which
    /// the server's writer gives its own chains.
    static func identity(_ line: String) -> String {
        guard var r = try? LogRecord(parsing: line) else { return line }
        r.body["seq"] = nil
        return r.jsonLine
    }

    func testKilledServerLosesNothingAcknowledged() throws {
        let logs = dir.appendingPathComponent("logs")
        let clients = 4, batches = 40, perBatch = 10
        let port = Port()
        var server: ServeProcess? = try ServeProcess(directory: logs)
        port.set(server!.port)
        let acknowledged = Acknowledged()
        let group = DispatchGroup()
        for c in 0..<clients {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let call = "kill-\(c)"
                var seq = 0
                for b in 0..<batches {
                    var lines = b == 0 ? [Records.call(call)] : []
                    while lines.count < perBatch {
                        let ts = Records.baseTs + Int64(seq) * 1000
                        lines.append(seq % 3 == 2 ? Records.event(call, ts: ts, type: "unmute") : Records.stats(call, ts: ts, seq: seq))
                        seq += 1
                    }
                    let body = lines.joined(separator: "\n")
                    // The same batch, under the same id, until one reply says it is written.
                    var done = false
                    for _ in 0..<2000 where !done {
                        let p = port.get()
                        if p != 0, let r = try? RawHTTP.post(port: p, body, headers: ["Callstats-Batch": "\(call)-\(b)"]),
                            r.status == 200
                        {
                            acknowledged.add(lines)
                            done = true
                        } else {
                            acknowledged.failed()
                            usleep(20_000)
                        }
                    }
                }
            }
        }
        // Kill twice while the clients post, restarting on the same folder each time.
        for _ in 0..<2 {
            let before = acknowledged.count
            let deadline = Date().addingTimeInterval(30)
            while acknowledged.count < before + 60 && Date() < deadline { usleep(10_000) }
            server!.signal(SIGKILL)
            server!.wait()
            port.set(0)
            let ackedAtKill = Set(acknowledged.lines.map(KillTests.identity))
            let onDisk = Set(try Binary.cat(logs).map(KillTests.identity))
            let missing = ackedAtKill.subtracting(onDisk)
            XCTAssertTrue(missing.isEmpty, "\(missing.count) acknowledged records not on disk after SIGKILL, e.g. \(missing.first ?? "")")
            server = try ServeProcess(directory: logs)
            port.set(server!.port)
        }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success)
        server!.signal(SIGTERM)
        XCTAssertEqual(server!.wait(), 0)

        XCTAssertEqual(acknowledged.count, clients * batches * perBatch, "every batch was acknowledged in the end")
        XCTAssertGreaterThan(acknowledged.failedAttempts, 0, "some posts failed while the server was down")
        let onDisk = try Binary.cat(logs)
        XCTAssertTrue(
            Set(acknowledged.lines.map(KillTests.identity)).isSubset(of: Set(onDisk.map(KillTests.identity))),
            "every record is in the log")

        // analyze counts each event once, however often a retry wrote it.
        let db = dir.appendingPathComponent("calls.sqlite").path
        let analyzed = try Binary.run(["analyze", logs.path, "--db", db, "--quiet"])
        XCTAssertTrue([0, 3].contains(analyzed.status), analyzed.err)
        let q = try Binary.run([
            "query", "--db", db, "--format", "csv",
            "SELECT call_id, count(*) FROM events WHERE action = 'callState' GROUP BY call_id ORDER BY call_id",
        ])
        let expectedEvents = (0..<(batches * perBatch - 1)).filter { $0 % 3 == 2 }.count
        let rows = q.out.split(separator: "\n").dropFirst().map(String.init)
        XCTAssertEqual(rows, (0..<clients).map { "kill-\($0),\(expectedEvents)" }, q.out + q.err)
        print("kill-figure acknowledged=\(acknowledged.count) failed-attempts=\(acknowledged.failedAttempts) lines-on-disk=\(onDisk.count)")
    }
}
