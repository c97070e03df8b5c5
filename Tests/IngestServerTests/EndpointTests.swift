import CallLog
import Foundation
import TestSupport
import XCTest

/// `callstats serve` as a client meets it: the real binary on 127.0.0.1, requests written byte
/// by byte, and what reached the log read back with `callstats cat`.
final class EndpointTests: XCTestCase {
    var dir: URL!
    var logs: URL { dir.appendingPathComponent("logs") }

    override func setUp() { dir = TestPaths.temporaryDirectory("serve") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    func testBatchRepliesWithLineNumbersAndWritesOnlyValidRecords() throws {
        let server = try ServeProcess(directory: logs)
        let body =
            [
                Records.call("c-1"),
                "{not json",
                #"{"v":2,"kind":"stats","call":"c-1","ts":1}"#,
                "[1,2]",
                #"{"kind":"event","call":"c-1","ts":1}"#,
                #"{"v":1,"kind":"event","call":"","ts":1}"#,
                #"{"v":1,"kind":"event","call":"c-1","ts":"soon"}"#,
                Records.event("c-1", ts: Records.baseTs + 5),
            ].joined(separator: "\n") + "\n"
        var bytes = Array(body.utf8)
        bytes += Array(#"{"v":1,"kind":"event","call":"c-"#.utf8) + [0xFF, 0xFE] + Array(#"","ts":1}"#.utf8) + [0x0A]
        let r = try RawHTTP.request(port: server.port, body: bytes)
        XCTAssertEqual(r.status, 200)
        let json = try XCTUnwrap(r.json)
        XCTAssertEqual(json["accepted"] as? Int, 2)
        XCTAssertEqual(json["rejected"] as? Int, 7)
        let rejections = try XCTUnwrap(json["rejections"] as? [[String: Any]])
        let byLine = Dictionary(uniqueKeysWithValues: rejections.map { ($0["line"] as! Int, $0["code"] as! String) })
        XCTAssertEqual(
            byLine,
            [
                2: "invalid-json", 3: "newer-version", 4: "not-an-object", 5: "missing-field",
                6: "invalid-field", 7: "invalid-field", 9: "invalid-utf8",
            ])
        XCTAssertTrue(rejections.allSatisfy { !($0["reason"] as! String).isEmpty })
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0, "SIGTERM stops the server cleanly")
        let lines = try Binary.cat(logs)
        XCTAssertEqual(lines.count, 2, "only the two valid records were written: \(lines)")
    }

    /// A body that starts with a byte-order mark (saved by an editor) keeps its first record.
    func testAByteOrderMarkDoesNotCostTheFirstRecord() throws {
        let server = try ServeProcess(directory: logs)
        let body = [UInt8]([0xEF, 0xBB, 0xBF]) + Array((Records.call("c-bom") + "\n" + Records.event("c-bom", ts: Records.baseTs + 5)).utf8)
        let r = try RawHTTP.request(port: server.port, body: body)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.json?["accepted"] as? Int, 2)
        XCTAssertEqual(r.json?["rejected"] as? Int, 0)
    }

    func testEveryLineRejectedIsUnprocessable() throws {
        let server = try ServeProcess(directory: logs)
        let r = try RawHTTP.post(port: server.port, "nope\n{\"v\":1}\n")
        XCTAssertEqual(r.status, 422)
        XCTAssertEqual(r.json?["rejected"] as? Int, 2)
    }

    func testTokensAreRequiredAndReloadedOnHangup() throws {
        let tokens = dir.appendingPathComponent("tokens")
        try "# the web app\nsecret-one\n\n".write(to: tokens, atomically: true, encoding: .utf8)
        let server = try ServeProcess(directory: logs, arguments: ["--tokens", tokens.path])
        let body = Records.call("c-auth") + "\n"
        let none = try RawHTTP.post(port: server.port, body)
        XCTAssertEqual(none.status, 401)
        XCTAssertNotNil(none.headers["www-authenticate"])
        XCTAssertEqual(try RawHTTP.post(port: server.port, body, headers: ["Authorization": "Bearer wrong"]).status, 401)
        XCTAssertEqual(try RawHTTP.post(port: server.port, body, headers: ["Authorization": "Bearer secret-one"]).status, 200)

        try "secret-two # rotated\n".write(to: tokens, atomically: true, encoding: .utf8)
        server.signal(SIGHUP)
        var reloaded = false
        for _ in 0..<100 where !reloaded {
            usleep(50_000)
            reloaded = server.stdout.contains("reloaded 1 tokens")
        }
        XCTAssertTrue(reloaded, server.stdout)
        XCTAssertEqual(try RawHTTP.post(port: server.port, body, headers: ["Authorization": "Bearer secret-one"]).status, 401)
        XCTAssertEqual(try RawHTTP.post(port: server.port, body, headers: ["Authorization": "Bearer secret-two"]).status, 200)
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        XCTAssertEqual(try Binary.cat(logs).count, 2, "the two authorised posts, nothing from the refused ones")
    }

    func testRefusesToListenBeyondLoopbackWithoutTokens() throws {
        let r = try Binary.run(["serve", "--listen", "0.0.0.0:0", "--out", logs.path])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.err.contains("refusing to listen on 0.0.0.0 without --tokens"), r.err)
    }

    func testOversizedTruncatedAndBombBodiesGetTheirErrors() throws {
        let server = try ServeProcess(
            directory: logs,
            arguments: [
                "--max-body", "8192", "--max-decoded-body", "65536",
                "--max-line", "1000",
            ])
        // Declared too large: refused before the body is read.
        let big = try RawHTTP.post(port: server.port, String(repeating: Records.call("c-big") + "\n", count: 100))
        XCTAssertEqual(big.status, 413)
        XCTAssertTrue((big.json?["error"] as? String ?? "").contains("8192"))

        // A small gzip body that inflates past the decoded cap.
        let bombPath = dir.appendingPathComponent("bomb.gz")
        let zeros = dir.appendingPathComponent("zeros")
        try Data(count: 4 << 20).write(to: zeros)
        try shell("gzip -9 -c \(zeros.path) > \(bombPath.path)")
        let bomb = try [UInt8](Data(contentsOf: bombPath))
        XCTAssertLessThan(bomb.count, 8192)
        let inflated = try RawHTTP.request(port: server.port, headers: ["Content-Encoding": "gzip"], body: bomb)
        XCTAssertEqual(inflated.status, 413)
        XCTAssertTrue((inflated.json?["error"] as? String ?? "").contains("decompressed"), inflated.body)

        // A zstd body cut short.
        let ndjson = dir.appendingPathComponent("b.ndjson")
        try (Records.call("c-z") + "\n" + Records.event("c-z", ts: Records.baseTs + 1) + "\n").write(to: ndjson, atomically: true, encoding: .utf8)
        try shell("zstd -q -c \(ndjson.path) > \(ndjson.path).zst")
        let zst = try [UInt8](Data(contentsOf: URL(fileURLWithPath: ndjson.path + ".zst")))
        let cut = try RawHTTP.request(port: server.port, headers: ["Content-Encoding": "zstd"], body: Array(zst.dropLast(6)))
        XCTAssertEqual(cut.status, 400)
        XCTAssertTrue((cut.json?["error"] as? String ?? "").contains("truncated"), cut.body)
        let whole = try RawHTTP.request(port: server.port, headers: ["Content-Encoding": "zstd"], body: zst)
        XCTAssertEqual(whole.status, 200)
        XCTAssertEqual(whole.json?["written"] as? Int, 2)

        // Unknown encoding.
        XCTAssertEqual(try RawHTTP.request(port: server.port, headers: ["Content-Encoding": "br"], body: zst).status, 415)

        // The HTTP body ends before its Content-Length (the client half-closes).
        let c = try RawHTTP(port: server.port)
        c.send("POST /v1/records HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n" + Records.call("c-cut"))
        c.shutdownWrite()
        let short = try c.receive()
        XCTAssertEqual(short.status, 400)
        XCTAssertTrue(short.body.contains("ended in the middle"), short.body)

        // A line over --max-line is rejected by number; the rest of the batch is taken.
        let long = #"{"v":1,"kind":"event","call":"c-long","ts":1,"action":"x","type":"y","pad":""# + String(repeating: "a", count: 1200) + "\"}"
        let mixed = try RawHTTP.post(port: server.port, Records.call("c-long") + "\n" + long + "\n")
        XCTAssertEqual(mixed.status, 200)
        let rejection = (mixed.json?["rejections"] as? [[String: Any]])?.first
        XCTAssertEqual(rejection?["line"] as? Int, 2)
        XCTAssertEqual(rejection?["code"] as? String, "line-too-long")

        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        let written = try Binary.cat(logs)
        XCTAssertEqual(written.count, 3, "the zstd batch and the call of the mixed batch: \(written)")
        XCTAssertFalse(written.contains { $0.contains("c-big") || $0.contains("c-cut") })
    }

    func testSlowClientGetsRequestTimeoutAndOthersAreServed() throws {
        let server = try ServeProcess(directory: logs, arguments: ["--read-timeout", "1"])
        let slow = try RawHTTP(port: server.port)
        slow.send("POST /v1/records HTTP/1.1\r\nHost: x\r\nContent-Length: 400\r\n\r\n{\"v\":1,")
        // Meanwhile another client is served at once.
        let other = try RawHTTP.post(port: server.port, Records.call("c-fast") + "\n")
        XCTAssertEqual(other.status, 200)
        let r = try slow.receive()
        XCTAssertEqual(r.status, 408)
        XCTAssertEqual(r.headers["connection"], "close")
        // An idle keep-alive connection is closed without a reply.
        let idle = try RawHTTP(port: server.port)
        XCTAssertThrowsError(try idle.receive())
    }

    /// Past `--max-connections`, a new connection is answered 503 with Retry-After and closed;
    /// once one closes, connections are served again.
    func testConnectionsPastTheLimitAreRefusedWithRetryAfter() throws {
        let server = try ServeProcess(directory: logs, arguments: ["--max-connections", "3"])
        var idle = try (0..<3).map { _ in try RawHTTP(port: server.port) }
        // The three are counted once the server has accepted them: a request on each proves it.
        for c in idle {
            c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            XCTAssertEqual(try c.receive().status, 200)
        }
        let refused = try RawHTTP(port: server.port).receive()
        XCTAssertEqual(refused.status, 503)
        XCTAssertEqual(refused.headers["retry-after"], "1")
        XCTAssertEqual(refused.headers["connection"], "close")
        XCTAssertTrue(refused.body.contains("too many connections"), refused.body)
        idle.removeLast()  // closes it
        var served: RawHTTP.Response?
        for _ in 0..<50 where served?.status != 200 {
            served = try? RawHTTP.request(port: server.port, method: "GET", path: "/metrics")
            if served?.status != 200 { usleep(20_000) }
        }
        let metrics = try XCTUnwrap(served, "served again after a connection closed")
        XCTAssertEqual(metrics.status, 200)
        let refusedCount = metrics.body.firstMatch(of: /callstats_serve_connections_refused_total (\d+)/).flatMap { Int($0.1) }
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(refusedCount), 1)
        // A gauge's value is a float in the exposition (`3.0`).
        let open = metrics.body.firstMatch(of: /\ncallstats_serve_connections (\S+)\n/).flatMap { Double($0.1) }
        XCTAssertEqual(open, 3, "two idle and this one: \(metrics.body)")
    }

    /// A writer that cannot keep up: with room for one waiting request only, concurrent clients
    /// get 503 with Retry-After while the writer syncs, nothing of a refused batch is written,
    /// and clients that send again once told leave every record written exactly once.
    func testAFullWriterQueueRefusesWith503AndRetriesLoseNothing() throws {
        let server = try ServeProcess(directory: logs, arguments: ["--max-queue", "1", "--writers", "1"])
        let clients = 12, batches = 25
        let refusals = Locked([String: Int]())
        let failures = Locked([String]())
        DispatchQueue.concurrentPerform(iterations: clients) { c in
            for b in 0..<batches {
                let id = "q-\(c)"
                var lines = b == 0 ? [Records.call(id)] : []
                lines.append(Records.event(id, ts: Records.baseTs + Int64(b) * 10, type: "mark-\(b)"))
                let body = lines.joined(separator: "\n")
                var attempts = 0
                while true {
                    attempts += 1
                    guard let r = try? RawHTTP.post(port: server.port, body, headers: ["Callstats-Batch": "\(id)-\(b)"]) else {
                        failures.withLock { $0.append("\(id) batch \(b): no reply") }
                        return
                    }
                    if r.status == 200 { break }
                    guard r.status == 503, r.headers["retry-after"] != nil, attempts < 500 else {
                        failures.withLock { $0.append("\(id) batch \(b): \(r.status) \(r.body)") }
                        return
                    }
                    refusals.withLock { $0[r.json?["error"] as? String ?? r.body, default: 0] += 1 }
                    usleep(2_000)  // Retry-After says a second; a test does not wait that long
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        let refused = refusals.withLock { $0 }
        XCTAssertGreaterThan(refused.values.reduce(0, +), 0, "no request was refused: the queue never filled")
        XCTAssertTrue(refused.keys.allSatisfy { $0.contains("writer is behind") }, "\(refused)")
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        let events = try Binary.cat(logs).filter { $0.contains(#""kind":"event""#) }
        XCTAssertEqual(events.count, clients * batches, "every event written once")
        XCTAssertEqual(Set(events).count, clients * batches)
    }

    func testRetriedBatchIsAnsweredAgainAndWrittenOnce() throws {
        let server = try ServeProcess(directory: logs)
        let body = [
            Records.call("c-r"), Records.stats("c-r", ts: Records.baseTs + 1000, seq: 0),
            Records.stats("c-r", ts: Records.baseTs + 2000, seq: 1),
        ].joined(separator: "\n")
        let first = try RawHTTP.post(port: server.port, body, headers: ["Callstats-Batch": "b-1"])
        let again = try RawHTTP.post(port: server.port, body, headers: ["Callstats-Batch": "b-1"])
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(again.status, 200)
        XCTAssertEqual(again.headers["callstats-batch-replayed"], "true")
        XCTAssertEqual(first.body, again.body)
        // Without the batch id, snapshots already written are recognised by their seq.
        let third = try RawHTTP.post(port: server.port, body)
        XCTAssertEqual(third.json?["duplicates"] as? Int, 2)
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        let lines = try Binary.cat(logs)
        XCTAssertEqual(lines.filter { $0.contains(#""kind":"stats""#) }.count, 2, "\(lines)")
    }

    /// A chain that grows past the objects one peer connection may hold (`StatsChainBounds`)
    /// is refused by line with the bound named, and the server forgets the chain (its next delta
    /// misses its base) rather than holding it: what one client sends cannot grow the server's
    /// memory. A full snapshot within the bound starts the chain again.
    func testAChainPastTheObjectBoundIsRefusedAndForgotten() throws {
        let server = try ServeProcess(directory: logs)
        let ts = Records.baseTs + 1000
        func object(_ id: String) -> String {
            #"{"id":"\#(id)","timestamp":\#(ts),"type":"inbound-rtp","kind":"audio","ssrc":1,"packetsReceived":1}"#
        }
        let added = StatsChainBounds.maximumObjects
        let body = [
            Records.call("c-g"),
            Records.stats("c-g", ts: ts, seq: 0),
            #"{"v":1,"kind":"stats","call":"c-g","ts":\#(ts + 1000),"format":"w3c","pc":"a","seq":1,"base":0,"delta":{"put":[\#((0..<added).map { object("N\($0)") }.joined(separator: ","))]}}"#,
            #"{"v":1,"kind":"stats","call":"c-g","ts":\#(ts + 2000),"format":"w3c","pc":"a","seq":2,"base":1,"delta":{}}"#,
            Records.stats("c-g", ts: ts + 3000, seq: 3),
        ].joined(separator: "\n")
        let r = try RawHTTP.post(port: server.port, body)
        XCTAssertEqual(r.status, 200)
        let rejections = try XCTUnwrap(r.json?["rejections"] as? [[String: Any]])
        XCTAssertEqual(rejections.map { $0["line"] as! Int }, [3, 4])
        XCTAssertEqual(rejections.map { $0["code"] as! String }, ["too-many-objects", "missing-base"])
        XCTAssertEqual(
            rejections.first?["reason"] as? String,
            "the snapshot holds \(added + 1) statistics objects, over the limit of \(added) for one peer connection")
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        let stats = try Binary.cat(logs).filter { $0.contains(#""kind":"stats""#) }
        XCTAssertEqual(stats.count, 2, "the snapshots within the bound are written: \(stats.count)")
    }

    func testTooManyCallsFromOneClient() throws {
        let server = try ServeProcess(directory: logs, arguments: ["--max-calls-per-client", "3"])
        let three = (1...3).map { Records.call("c-\($0)") }.joined(separator: "\n")
        XCTAssertEqual(try RawHTTP.post(port: server.port, three).status, 200)
        let more = try RawHTTP.post(port: server.port, Records.call("c-4"))
        XCTAssertEqual(more.status, 429)
        XCTAssertNotNil(more.headers["retry-after"])
        XCTAssertEqual(
            try RawHTTP.post(port: server.port, Records.event("c-2", ts: Records.baseTs + 9)).status, 200,
            "calls already admitted go on")
    }

    func testCORSPreflightHealthMetricsAndAgent() throws {
        let server = try ServeProcess(directory: logs, arguments: ["--allow-origin", "https://app.example"])
        let pre = try RawHTTP.request(
            port: server.port, method: "OPTIONS",
            headers: [
                "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type",
            ])
        XCTAssertEqual(pre.status, 204)
        XCTAssertEqual(pre.headers["access-control-allow-origin"], "https://app.example")
        XCTAssertTrue(pre.headers["access-control-allow-headers"]?.contains("Authorization") ?? false)
        let denied = try RawHTTP.request(port: server.port, method: "OPTIONS", headers: ["Origin": "https://evil.example"])
        XCTAssertEqual(denied.status, 403)
        let post = try RawHTTP.post(port: server.port, Records.call("c-cors"), headers: ["Origin": "https://app.example"])
        XCTAssertEqual(post.headers["access-control-allow-origin"], "https://app.example")

        XCTAssertEqual(try RawHTTP.request(port: server.port, method: "GET", path: "/healthz").status, 200)
        let agent = try RawHTTP.request(port: server.port, method: "GET", path: "/agent.js")
        XCTAssertEqual(agent.status, 200)
        XCTAssertTrue(agent.body.contains("function attach(pc, options)"))
        let module = try RawHTTP.request(port: server.port, method: "GET", path: "/agent.mjs")
        XCTAssertTrue(module.body.hasPrefix("globalThis.__callstatsAgentURL = import.meta.url;"))
        XCTAssertTrue(module.body.contains("export const attach = globalThis.callstats.attach;"))
        let metrics = try RawHTTP.request(port: server.port, method: "GET", path: "/metrics").body
        XCTAssertTrue(metrics.contains("callstats_serve_requests_total{status=\"204\"} 1"), metrics)
        XCTAssertTrue(metrics.contains("callstats_serve_records_total{outcome=\"written\"} 1"), metrics)
        XCTAssertTrue(metrics.contains("callstats_serve_flush_seconds_count 1"), metrics)
        XCTAssertEqual(try RawHTTP.request(port: server.port, method: "GET", path: "/nothing").status, 404)
        XCTAssertEqual(try RawHTTP.request(port: server.port, method: "GET", path: "/v1/records").status, 405)
    }

    func testPseudonymisedAtTheDoorWithoutTheClientAddress() throws {
        let key = "000102030405060708090a0b0c0d0e0f"
        let server = try ServeProcess(directory: logs, arguments: ["--pseudonymize-key", key, "--keep-address", "203.0.113.0/24"])
        let call = #"{"v":1,"kind":"call","call":"alice-call","ts":1795349930000,"user":"alice@example.com","platform":"web"}"#
        let ice =
            #"{"v":1,"kind":"event","call":"alice-call","ts":1795349930001,"action":"ipChange","type":"ipChangeStarted","detail":{"from":"198.51.100.7","relay":"203.0.113.9"}}"#
        XCTAssertEqual(try RawHTTP.post(port: server.port, call + "\n" + ice).status, 200)
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        let text = try Binary.cat(logs).joined(separator: "\n")
        XCTAssertFalse(text.contains("alice"), text)
        XCTAssertFalse(text.contains("198.51.100.7"), text)
        XCTAssertTrue(text.contains("203.0.113.9"), "allow-listed addresses stay")
        XCTAssertTrue(text.contains("\"call\":\"anon-"), text)
        XCTAssertFalse(text.contains("127.0.0.1"), "the client's address is not written by default")
    }

    func testClientAddressWhenAsked() throws {
        let server = try ServeProcess(directory: logs, arguments: ["--record-client-address"])
        XCTAssertEqual(try RawHTTP.post(port: server.port, Records.call("c-addr")).status, 200)
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        XCTAssertTrue(try Binary.cat(logs).joined().contains(#""clientAddress":"127.0.0.1""#))
    }

    private func shell(_ command: String) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", command]
        try p.run()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, command)
    }
}
