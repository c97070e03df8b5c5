import CallLog
import Foundation
import TestSupport
import XCTest

/// Slow and greedy clients against a real `callstats serve`: hundreds of connections sending a
/// request head a byte a second (never finishing it, and never idle long enough for the read
/// timeout) from one address, while honest clients post from other loopback addresses. Every
/// loop here is bounded in time and count, and all traffic stays on 127.0.0.0/8.
final class SlowClientTests: XCTestCase {
    var dir: URL!
    var logs: URL { dir.appendingPathComponent("logs") }
    override func setUp() { dir = TestPaths.temporaryDirectory("serve-slow") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    static let attackers = 500
    static let honestClients = 50
    static let requestsPerClient = 10

    /// The attack holds one address's share of the connections and each is cut at the request
    /// deadline with 408; the address's connections past its bound get 503 at once; meanwhile
    /// every honest request is answered 200 and every record it carried is in the logs.
    func testHonestClientsAreServedWhileSlowHeadersHoldConnections() throws {
        // 400 connections in all: 100 (a quarter, the default) from one address.
        let requestTimeout = 3.0
        // A smaller budget of held objects than the default, so that the greedy client below
        // passes it within a few requests of a debug build.
        let heldObjects = 20_000
        let server = try ServeProcess(
            directory: logs,
            arguments: [
                "--max-connections", "400", "--request-timeout", "\(Int(requestTimeout))", "--max-held-objects-per-client", "\(heldObjects)",
            ])
        let attack = SlowHeaderAttack(port: server.port, source: "127.0.0.1", connections: SlowClientTests.attackers)
        let attackThread = Thread { attack.run(seconds: 2 * requestTimeout + 3) }
        attackThread.start()
        // The attack's connections are open and sending before the honest clients start.
        sleep(1)
        let greedy = GreedyChainClient(port: server.port, source: "127.0.0.2", requests: 40)
        let greedyThread = Thread { greedy.run() }
        greedyThread.start()
        let honest = HonestClients.run(port: server.port, clients: SlowClientTests.honestClients, requests: SlowClientTests.requestsPerClient)
        attack.finished.wait()
        greedy.finished.wait()

        // The greedy client's full snapshots are taken until its chains hold the budget, then
        // refused naming it; the server's memory stays far from what the chains would take.
        let perRequest = GreedyChainClient.objectsPerSnapshot
        XCTAssertEqual(greedy.outcomes.count, 40)
        XCTAssertEqual(greedy.outcomes.filter { $0 == "written" }.count, heldObjects / perRequest, "\(greedy.outcomes)")
        XCTAssertEqual(greedy.outcomes.filter { $0 == "too-many-objects-held" }.count, 40 - heldObjects / perRequest, "\(greedy.outcomes)")
        let peak = try XCTUnwrap(server.residentPeakBytes)
        print("serve-figure greedy_chain_requests 40 serve_peak_mib \(peak >> 20)")
        XCTAssertLessThan(peak, 200 << 20, "serve's peak resident size")

        print("serve-figure honest_requests \(honest.statuses.count) ok \(honest.statuses.filter { $0 == 200 }.count) slowest_s \(honest.slowest)")
        XCTAssertEqual(honest.statuses.count, SlowClientTests.honestClients * SlowClientTests.requestsPerClient)
        XCTAssertEqual(honest.statuses.filter { $0 != 200 }, [], "every honest request answered 200")

        let connections = attack.connections
        let cut = connections.filter { $0.reply.hasPrefix("HTTP/1.1 408") }
        let refused = connections.filter { $0.reply.hasPrefix("HTTP/1.1 503") }
        let lifetimes = cut.compactMap { c in c.closed.map { $0.timeIntervalSince(c.opened) } }
        print(
            "serve-figure slow_connections \(connections.count) cut_408 \(cut.count) refused_503 \(refused.count) "
                + "lifetime_s \(lifetimes.min() ?? 0)...\(lifetimes.max() ?? 0)")
        // The first wave: 100 admitted, 400 refused; every admitted one is cut, and the attack
        // reconnects, so a second wave is cut as well.
        XCTAssertGreaterThanOrEqual(cut.count, 2 * 100, "two waves of the address's 100 connections cut")
        XCTAssertGreaterThanOrEqual(refused.count, SlowClientTests.attackers - 100, "past the address's bound: 503")
        XCTAssertTrue(refused.allSatisfy { c in c.closed.map { $0.timeIntervalSince(c.opened) < 1.5 } ?? false }, "refused at once")
        for t in lifetimes {
            XCTAssertGreaterThanOrEqual(t, requestTimeout - 0.2, "not cut before the deadline")
            XCTAssertLessThan(t, requestTimeout + 1.5, "cut at the deadline, not at the read timeout")
        }
        // No connection of the attack got anything else, and none outlived the deadline.
        XCTAssertEqual(connections.filter { $0.closed != nil && !$0.reply.hasPrefix("HTTP/1.1 408") && !$0.reply.hasPrefix("HTTP/1.1 503") }.count, 0)

        let metrics = try RawHTTP.request(port: server.port, method: "GET", path: "/metrics", from: "127.0.0.3")
        let refusedForAddress = metrics.body.firstMatch(of: /callstats_serve_connections_refused_address_total (\d+)/).flatMap { Int($0.1) }
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(refusedForAddress), SlowClientTests.attackers - 100)
        let timedOut = metrics.body.firstMatch(of: /callstats_serve_requests_total\{status="408"\} (\d+)/).flatMap { Int($0.1) }
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(timedOut), cut.count)

        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        let lines = try Binary.cat(logs)
        for i in 0..<SlowClientTests.honestClients {
            for j in 0..<SlowClientTests.requestsPerClient {
                let id = "honest-\(i)-\(j)"
                XCTAssertEqual(lines.filter { $0.contains(#""call":"\#(id)""#) }.count, 2, "both records of \(id) in the logs")
            }
        }
        // The folder analyses: every honest call, and the greedy call with what was taken of it.
        let db = dir.appendingPathComponent("after.sqlite").path
        let analyzed = try runProcess(Binary.callstats, ["analyze", logs.path, "--db", db, "--quiet"])
        XCTAssertEqual(analyzed.status, 0, analyzed.err)
        let calls = try runProcess(Binary.callstats, ["query", "--db", db, "--format", "csv", "SELECT count(*) FROM calls"])
        XCTAssertEqual(calls.out.split(separator: "\n").last, "\(SlowClientTests.honestClients * SlowClientTests.requestsPerClient + 1)")
    }

    /// The same attack with both bounds lifted (no bound per address, a deadline of a day), as
    /// the server was without them: the slow headers hold every connection and honest clients
    /// are refused. This is what the bounds above are measured against.
    func testWithoutTheBoundsTheAttackRefusesHonestClients() throws {
        let server = try ServeProcess(
            directory: logs,
            arguments: ["--max-connections", "400", "--max-connections-per-address", "400", "--request-timeout", "86400"])
        let attack = SlowHeaderAttack(port: server.port, source: "127.0.0.1", connections: SlowClientTests.attackers)
        let attackThread = Thread { attack.run(seconds: 5) }
        attackThread.start()
        sleep(1)
        let honest = HonestClients.run(port: server.port, clients: SlowClientTests.honestClients, requests: 2)
        attack.finished.wait()
        let refused = honest.statuses.filter { $0 == 503 }.count
        print("serve-figure unbounded honest_requests \(honest.statuses.count) refused_503 \(refused)")
        XCTAssertEqual(refused, honest.statuses.count, "every honest request refused while the slow headers stay")
        XCTAssertEqual(attack.connections.filter { $0.reply.hasPrefix("HTTP/1.1 408") }.count, 0, "none cut")
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
    }

    /// The deadline counts from the request's first byte: a head sent slowly leaves less time for
    /// the body, and a request whose body is still arriving at the deadline gets 408 with the
    /// request id, though no gap ever reached the read timeout.
    func testTheDeadlineCountsFromTheFirstByteOfTheHead() throws {
        let server = try ServeProcess(directory: logs, arguments: ["--request-timeout", "3", "--read-timeout", "2"])
        let client = try RawHTTP(port: server.port, receiveTimeout: 10)
        let started = Date()
        let head = Array("POST /v1/records HTTP/1.1\r\nHost: x\r\nContent-Length: 400\r\n\r\n".utf8)
        // The head over about 1.6 s, then the body a byte every 0.2 s: it would need 80 s.
        for chunk in stride(from: 0, to: head.count, by: 8) {
            client.send(Array(head[chunk..<min(head.count, chunk + 8)]))
            usleep(200_000)
        }
        let body = Array((Records.call("c-slow") + "\n").utf8)
        let answer = Locked<RawHTTP.Response?>(nil)
        let reader = Thread {
            let r = try? client.receive()
            answer.withLock { $0 = r }
        }
        reader.start()
        for byte in body.prefix(40) where answer.withLock({ $0 == nil }) {
            client.send([byte])
            usleep(200_000)
        }
        while answer.withLock({ $0 == nil }) && Date().timeIntervalSince(started) < 10 { usleep(50_000) }
        let elapsed = Date().timeIntervalSince(started)
        let r = try XCTUnwrap(answer.withLock { $0 }, "answered")
        XCTAssertEqual(r.status, 408)
        XCTAssertEqual(r.headers["connection"], "close")
        XCTAssertTrue(r.body.contains("of its first byte"), r.body)
        XCTAssertNotNil(r.json?["request"])
        XCTAssertGreaterThanOrEqual(elapsed, 2.8)
        XCTAssertLessThan(elapsed, 4.5, "at the deadline from the first byte, not 3 s after the head")
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        XCTAssertFalse(try Binary.cat(logs).contains { $0.contains("c-slow") })
    }

    /// A request head sent a byte a second (the read timeout never passes) is answered 408 at
    /// the deadline and its connection closed; a keep-alive connection's second request gets a
    /// deadline of its own from its first byte.
    func testASlowHeadIsCutAndAKeptAliveConnectionGetsAFreshDeadline() throws {
        let server = try ServeProcess(directory: logs, arguments: ["--request-timeout", "2"])
        let kept = try RawHTTP(port: server.port, receiveTimeout: 10)
        kept.send("POST /v1/records HTTP/1.1\r\nHost: x\r\nContent-Length: \(Records.call("c-1").utf8.count)\r\n\r\n" + Records.call("c-1"))
        XCTAssertEqual(try kept.receive().status, 200)
        sleep(2)  // idle between requests: no deadline runs
        let started = Date()
        let answer = Locked<RawHTTP.Response?>(nil)
        let reader = Thread {
            let r = try? kept.receive()
            answer.withLock { $0 = r }
        }
        reader.start()
        for byte in Array("POST /v1/records HTTP/1.1\r\nHost: x\r\nX-Pad: aaaaaaaa".utf8) where answer.withLock({ $0 == nil }) {
            kept.send([byte])
            usleep(500_000)
        }
        while answer.withLock({ $0 == nil }) && Date().timeIntervalSince(started) < 8 { usleep(50_000) }
        let r = try XCTUnwrap(answer.withLock { $0 }, "answered")
        XCTAssertEqual(r.status, 408)
        XCTAssertEqual(r.headers["connection"], "close")
        XCTAssertTrue(r.body.contains("first byte"), r.body)
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertGreaterThanOrEqual(elapsed, 1.8)
        XCTAssertLessThan(elapsed, 3.5)
        XCTAssertThrowsError(try kept.receive(), "closed after the 408")
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
    }

    /// `--max-connections-per-address` is a bound of its own: past it, that address's next
    /// connection gets 503 while another address is served, and once one closes the address is
    /// served again.
    func testTheBoundPerAddressRefusesOnlyThatAddress() throws {
        let server = try ServeProcess(directory: logs, arguments: ["--max-connections-per-address", "2"])
        var held = try (0..<2).map { _ in try RawHTTP(port: server.port, from: "127.0.0.5") }
        for c in held {
            c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            XCTAssertEqual(try c.receive().status, 200)
        }
        let refused = try RawHTTP(port: server.port, from: "127.0.0.5").receive()
        XCTAssertEqual(refused.status, 503)
        XCTAssertEqual(refused.headers["retry-after"], "1")
        XCTAssertTrue(refused.body.contains("from your address"), refused.body)
        XCTAssertEqual(try RawHTTP.post(port: server.port, Records.call("c-other") + "\n", from: "127.0.0.6").status, 200)
        held.removeLast()  // closes it
        var again: RawHTTP.Response?
        for _ in 0..<50 where again?.status != 200 {
            again = try? RawHTTP.post(port: server.port, Records.call("c-again") + "\n", from: "127.0.0.5")
            if again?.status != 200 { usleep(20_000) }
        }
        XCTAssertEqual(again?.status, 200, "served again once one of its connections closed")
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
    }

    func testTheBoundsAreRangeChecked() throws {
        for args in [
            ["--request-timeout", "0"], ["--request-timeout", "9223372036854775807"],
            ["--max-connections-per-address", "0"], ["--max-connections-per-address", "-1"],
            ["--tls-cert", "x.pem"],
        ] {
            let r = try Binary.run(["serve", "--listen", "127.0.0.1:0", "--out", logs.path] + args)
            XCTAssertEqual(r.status, 64, "\(args): \(r.err)")
            XCTAssertTrue(r.err.contains(args[0]), r.err)
        }
    }
}

/// One client posting a full statistics snapshot of `objectsPerSnapshot` inbound streams for a
/// new peer connection of one call in each request, on one connection, never ending the call:
/// the chains it opens grow the server's held state until its budget refuses them. `outcomes`:
/// per request, "written" or the rejection's code.
final class GreedyChainClient: @unchecked Sendable {
    static let objectsPerSnapshot = 1_700  // a line of about 250 KB, within --max-line
    let port: Int
    let source: String
    let requests: Int
    let finished = DispatchSemaphore(value: 0)
    private(set) var outcomes: [String] = []

    init(port: Int, source: String, requests: Int) {
        self.port = port
        self.source = source
        self.requests = requests
    }

    func run() {
        defer { finished.signal() }
        let ts = Records.baseTs + 1_000
        _ = try? RawHTTP.post(port: port, Records.call("greedy"), from: source)
        for k in 0..<requests {
            let objects = (0..<Self.objectsPerSnapshot).map { i in
                #"{"id":"IT\#(i)","timestamp":\#(ts),"type":"inbound-rtp","kind":"audio","ssrc":\#(1_000 + i),"packetsReceived":\#(50 * k),"packetsLost":0,"jitter":0.003}"#
            }
            let line =
                #"{"v":1,"kind":"stats","call":"greedy","ts":\#(ts + Int64(k)),"format":"w3c","pc":"pc\#(k)","seq":0,"report":[\#(objects.joined(separator: ","))]}"#
            guard let r = try? RawHTTP.post(port: port, line, from: source) else {
                outcomes.append("no answer")
                continue
            }
            let rejection = (r.json?["rejections"] as? [[String: Any]])?.first?["code"] as? String
            outcomes.append(r.status == 200 && rejection == nil ? "written" : rejection ?? "status \(r.status)")
        }
    }
}

/// Honest clients, each from its own loopback address (127.0.0.10 on), each posting its
/// requests one after the other on new connections: a call record and an event each.
enum HonestClients {
    struct Result {
        var statuses: [Int]
        var slowest: Double
    }

    static func run(port: Int, clients: Int, requests: Int) -> Result {
        let results = Locked((statuses: [Int](), slowest: 0.0))
        let done = DispatchGroup()
        for i in 0..<clients {
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                for j in 0..<requests {
                    let id = "honest-\(i)-\(j)"
                    let body = Records.call(id) + "\n" + Records.event(id, ts: Records.baseTs + 1) + "\n"
                    let started = Date()
                    let status = (try? RawHTTP.post(port: port, body, from: "127.0.0.\(10 + i)"))?.status ?? 0
                    let seconds = Date().timeIntervalSince(started)
                    results.withLock {
                        $0.statuses.append(status)
                        $0.slowest = max($0.slowest, seconds)
                    }
                }
            }
            thread.start()
        }
        _ = done.wait(timeout: .now() + 60)
        return results.withLock { Result(statuses: $0.statuses, slowest: $0.slowest) }
    }
}

/// Connections that send a request head a byte a second and never finish it, from one source
/// address, reopened when the server closes them (as an attacker would), for a bounded time.
/// One thread, non-blocking sockets and `poll`: what each connection was answered and when it
/// was closed is recorded.
final class SlowHeaderAttack: @unchecked Sendable {
    struct Connection {
        var opened: Date
        var closed: Date?
        var reply = ""
    }

    let port: Int
    let source: String
    let count: Int
    let finished = DispatchSemaphore(value: 0)
    private(set) var connections: [Connection] = []

    /// A head with no end: the request line, then one header that never finishes.
    private static let head = Array("POST /v1/records HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".utf8)

    init(port: Int, source: String, connections: Int) {
        self.port = port
        self.source = source
        count = connections
    }

    private func open() -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok =
            RawHTTP.bind(fd, to: source)
            && withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            } == 0
        guard ok else {
            close(fd)
            return nil
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    func run(seconds: Double) {
        defer { finished.signal() }
        let end = Date().addingTimeInterval(seconds)
        // Per slot: its descriptor (-1 when closed), its connection's index, bytes sent.
        var slots = [(fd: Int32, index: Int, sent: Int)]()
        func reopen(_ slot: Int?) {
            guard let fd = open() else { return }
            connections.append(Connection(opened: Date()))
            let entry = (fd: fd, index: connections.count - 1, sent: 0)
            if let slot { slots[slot] = entry } else { slots.append(entry) }
        }
        for _ in 0..<count { reopen(nil) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < end {
            // One byte on every open connection (the head grows by a byte a second).
            for s in slots.indices where slots[s].fd >= 0 {
                let byte = slots[s].sent < Self.head.count ? Self.head[slots[s].sent] : UInt8(ascii: "a")
                var b = byte
                _ = send(slots[s].fd, &b, 1, Int32(MSG_NOSIGNAL))
                slots[s].sent += 1
            }
            // Then a second of watching for replies and closes.
            let tick = Date().addingTimeInterval(1)
            while Date() < tick && Date() < end {
                var fds = slots.filter { $0.fd >= 0 }.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
                let wait = Int32(max(1, min(tick, end).timeIntervalSinceNow * 1000))
                guard poll(&fds, nfds_t(fds.count), wait) > 0 else { continue }
                for p in fds where p.revents != 0 {
                    guard let s = slots.firstIndex(where: { $0.fd == p.fd }) else { continue }
                    let n = recv(p.fd, &buffer, buffer.count, 0)
                    if n > 0 {
                        connections[slots[s].index].reply += String(decoding: buffer[0..<n], as: UTF8.self)
                        continue
                    }
                    if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { continue }
                    connections[slots[s].index].closed = Date()
                    close(p.fd)
                    slots[s].fd = -1
                }
            }
            // Closed connections come back (one reopening per slot a second).
            for s in slots.indices where slots[s].fd < 0 && Date() < end { reopen(s) }
        }
        for s in slots where s.fd >= 0 { close(s.fd) }
    }
}
