import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A UDP relay standing in front of one ICE candidate (its "real" address), losing a share of the
/// media that candidate sends: a network uplink with loss, for a call in a real browser.
///
/// Datagrams that reach the relay's port from anyone go to the real address; datagrams from the
/// real address go to the last peer the relay heard from. A peer that was given the relay's
/// address instead of the real one therefore exchanges everything through the relay. Of the
/// datagrams from the real address, RTP and RTCP (first byte 128...191, RFC 7983) are dropped
/// with probability `dropFraction`, decided by a seeded generator so that a run can be repeated;
/// STUN and DTLS are never dropped, so that ICE and the DTLS handshake still complete.
public final class ImpairingRelay: @unchecked Sendable {
    /// What the relay did with the datagrams it received.
    public struct Counts: Sendable, Equatable {
        /// From the real address: RTP forwarded and dropped.
        public var rtpForwarded = 0, rtpDropped = 0
        /// From the real address: RTCP (second byte 192...223, RFC 5761) forwarded and dropped.
        public var rtcpForwarded = 0, rtcpDropped = 0
        /// From the real address: anything else (STUN, DTLS), all forwarded.
        public var otherForwarded = 0
        /// From the real address before any peer was heard from: nowhere to send them.
        public var unroutable = 0
        /// From peers to the real address, all forwarded.
        public var toReal = 0

        public init() {}
    }

    /// One RTP stream's datagrams from the real address.
    public struct StreamCounts: Sendable, Equatable {
        public var forwarded = 0, dropped = 0
        public init(forwarded: Int = 0, dropped: Int = 0) {
            self.forwarded = forwarded
            self.dropped = dropped
        }
    }

    public enum Failure: Error { case socket(String, Int32) }

    /// Where the relay listens (its address, to hand out in place of the real one).
    public let host: String
    public let port: Int
    public let realHost: String
    public let realPort: Int
    public let dropFraction: Double

    private let fd: Int32
    private let real: sockaddr_in
    private let lock = NSLock()
    private var stopping = false
    private let finished = DispatchSemaphore(value: 0)
    private var counts = Counts()
    private var streams: [UInt32: StreamCounts] = [:]
    private var random: SeededGenerator

    /// Opens the relay on `host` (a free port) in front of `realHost`:`realPort` (IPv4) and
    /// starts relaying on a thread of its own, which holds the relay until `stop()`.
    public init(realHost: String, realPort: Int, host: String = "127.0.0.1", dropFraction: Double, seed: UInt64) throws {
        self.realHost = realHost
        self.realPort = realPort
        self.host = host
        self.dropFraction = dropFraction
        random = SeededGenerator(seed: seed)
        real = try ImpairingRelay.address(realHost, realPort)
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw Failure.socket("socket", errno) }
        var local = try ImpairingRelay.address(host, 0)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            let e = errno
            close(fd)
            throw Failure.socket("bind \(host)", e)
        }
        // Video bursts must not overflow the socket while the relay thread waits for a core.
        var size: Int32 = 4 << 20
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        self.fd = fd
        port = ImpairingRelay.localPort(fd)
        let thread = Thread { [self] in run() }
        thread.name = "relay \(host):\(port) -> \(realHost):\(realPort)"
        thread.start()
    }

    /// The counts so far.
    public var snapshot: Counts {
        lock.lock()
        defer { lock.unlock() }
        return counts
    }

    /// RTP datagrams from the real address by SSRC (the header's, readable under SRTP).
    public var streamCounts: [UInt32: StreamCounts] {
        lock.lock()
        defer { lock.unlock() }
        return streams
    }

    /// Stops relaying and closes the socket; returns once the relay's thread is done.
    public func stop() {
        lock.lock()
        let first = !stopping
        stopping = true
        lock.unlock()
        guard first else { return }
        finished.wait()
        close(fd)
    }

    private func run() {
        defer { finished.signal() }
        var buffer = [UInt8](repeating: 0, count: 65536)
        var peer: sockaddr_in?
        var from = sockaddr_in()
        while true {
            lock.lock()
            let stop = stopping
            lock.unlock()
            if stop { return }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            // A short wait, so that `stop` is seen within 100 ms.
            guard poll(&p, 1, 100) > 0 else { continue }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let n = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, bytes.baseAddress, bytes.count, 0, $0, &length) }
                }
            }
            guard n > 0 else { continue }
            if from.sin_addr.s_addr == real.sin_addr.s_addr && from.sin_port == real.sin_port {
                guard let to = peer else {
                    count { $0.unroutable += 1 }
                    continue
                }
                if decide(buffer, n) { send(buffer, n, to) }
            } else {
                peer = from
                count { $0.toReal += 1 }
                send(buffer, n, real)
            }
        }
    }

    /// Whether a datagram from the real address goes on, counting it either way.
    private func decide(_ datagram: [UInt8], _ n: Int) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard (128...191).contains(datagram[0]), n >= 12 else {
            counts.otherForwarded += 1
            return true
        }
        let drop = random.nextUnit() < dropFraction
        if (192...223).contains(datagram[1]) {
            if drop { counts.rtcpDropped += 1 } else { counts.rtcpForwarded += 1 }
        } else {
            if drop { counts.rtpDropped += 1 } else { counts.rtpForwarded += 1 }
            let ssrc = datagram[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            if drop { streams[ssrc, default: StreamCounts()].dropped += 1 } else { streams[ssrc, default: StreamCounts()].forwarded += 1 }
        }
        return !drop
    }

    private func count(_ change: (inout Counts) -> Void) {
        lock.lock()
        change(&counts)
        lock.unlock()
    }

    private func send(_ datagram: [UInt8], _ n: Int, _ to: sockaddr_in) {
        var to = to
        _ = datagram.withUnsafeBytes { bytes in
            withUnsafePointer(to: &to) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, bytes.baseAddress, n, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// The port a bound socket has.
    static func localPort(_ fd: Int32) -> Int {
        var name = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &name) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: name.sin_port))
    }

    static func address(_ host: String, _ port: Int) throws -> sockaddr_in {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &a.sin_addr) == 1 else { throw Failure.socket("address \(host)", EINVAL) }
        return a
    }
}
