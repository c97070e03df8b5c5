import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An HTTP endpoint on 127.0.0.1 that opens an `ImpairingRelay` on request, for a page whose ICE
/// candidates are only known once the browser gathered them:
/// `GET /relay?leg=NAME&ip=A.B.C.D&port=N` opens a relay in front of that candidate (listening
/// on the same address, so that the candidate stays on the network it was gathered on) and
/// answers `{"ip":"A.B.C.D","port":M}`, with CORS open to any page. Requests are answered one at
/// a time, on a thread of the broker's own, which holds the broker until `stop()`.
public final class RelayBroker: @unchecked Sendable {
    public let port: Int
    public let dropFraction: Double

    private let fd: Int32
    private let seed: UInt64
    private let lock = NSLock()
    private var stopping = false
    private let finished = DispatchSemaphore(value: 0)
    private var opened: [(leg: String, relay: ImpairingRelay)] = []

    /// Every relay gets `dropFraction`; the n-th one opened is seeded with `seed + n`.
    public init(dropFraction: Double, seed: UInt64) throws {
        self.dropFraction = dropFraction
        self.seed = seed
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ImpairingRelay.Failure.socket("socket", errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var local = try ImpairingRelay.address("127.0.0.1", 0)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            let e = errno
            close(fd)
            throw ImpairingRelay.Failure.socket("listen", e)
        }
        self.fd = fd
        port = ImpairingRelay.localPort(fd)
        let thread = Thread { [self] in serve() }
        thread.name = "relay broker :\(port)"
        thread.start()
    }

    /// The relays opened so far, in order, with the leg each was asked for.
    public var relays: [(leg: String, relay: ImpairingRelay)] {
        lock.lock()
        defer { lock.unlock() }
        return opened
    }

    /// Stops answering, then stops every relay.
    public func stop() {
        lock.lock()
        let first = !stopping
        stopping = true
        lock.unlock()
        guard first else { return }
        finished.wait()
        close(fd)
        for r in relays { r.relay.stop() }
    }

    private func serve() {
        defer { finished.signal() }
        while true {
            lock.lock()
            let stop = stopping
            lock.unlock()
            if stop { return }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            let client = accept(fd, nil, nil)
            guard client >= 0 else { continue }
            answer(client)
            close(client)
        }
    }

    private func answer(_ client: Int32) {
        // A page that stalls must not hold the broker for long.
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var request = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !request.containsHeaderEnd && request.count < 65536 {
            let n = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            request += chunk[0..<n]
        }
        let line = String(decoding: request, as: UTF8.self).prefix { $0 != "\r" && $0 != "\n" }
        let parts = line.split(separator: " ")
        var status = "404 Not Found", body = #"{"error":"unknown request"}"#
        if parts.count >= 2, parts[0] == "GET", let url = URLComponents(string: "http://broker" + parts[1]), url.path == "/relay" {
            let query = Dictionary((url.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
            if let ip = query["ip"], let realPort = Int(query["port"] ?? ""), let leg = query["leg"] {
                do {
                    let relay = try open(leg: leg, ip: ip, port: realPort)
                    status = "200 OK"
                    body = #"{"ip":"\#(relay.host)","port":\#(relay.port)}"#
                } catch {
                    status = "400 Bad Request"
                    body = #"{"error":"no relay for \#(ip):\#(realPort)"}"#
                }
            } else {
                status = "400 Bad Request"
                body = #"{"error":"leg, ip and port are needed"}"#
            }
        }
        let response =
            "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nAccess-Control-Allow-Origin: *\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        let bytes = Array(response.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(client, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            sent += n
        }
    }

    private func open(leg: String, ip: String, port realPort: Int) throws -> ImpairingRelay {
        lock.lock()
        let n = UInt64(opened.count)
        lock.unlock()
        let relay = try ImpairingRelay(realHost: ip, realPort: realPort, host: ip, dropFraction: dropFraction, seed: seed &+ n)
        lock.lock()
        opened.append((leg, relay))
        lock.unlock()
        return relay
    }
}

extension [UInt8] {
    fileprivate var containsHeaderEnd: Bool {
        count >= 4 && indices.dropLast(3).contains { self[$0] == 13 && self[$0 + 1] == 10 && self[$0 + 2] == 13 && self[$0 + 3] == 10 }
    }
}
