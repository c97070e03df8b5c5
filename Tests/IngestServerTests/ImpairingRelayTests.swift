import Foundation
import TestSupport
import XCTest

/// The conference test's relay on its own, with plain UDP sockets: what it forwards where,
/// what it drops (only media, only from the real address, as often as asked) and that a seed
/// repeats its drops.
final class ImpairingRelayTests: XCTestCase {
    /// A UDP socket on 127.0.0.1 (a free port).
    final class Socket {
        let fd: Int32
        let port: Int

        init() throws {
            fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_addr.s_addr = inet_addr("127.0.0.1")
            let fd = self.fd
            let r = withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard r == 0 else { throw XCTSkip("no UDP socket on 127.0.0.1") }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            port = Int(UInt16(bigEndian: a.sin_port))
        }

        deinit { close(fd) }

        func send(_ bytes: [UInt8], to port: Int) {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            a.sin_port = in_port_t(UInt16(port).bigEndian)
            a.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = bytes.withUnsafeBytes { b in
                withUnsafePointer(to: &a) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
        }

        /// Datagrams until `count` came or none came for `quietMs`, with the port each came from.
        func receiveAll(count: Int = .max, quietMs: Int32 = 50) -> [(bytes: [UInt8], from: Int)] {
            var got: [(bytes: [UInt8], from: Int)] = []
            var buffer = [UInt8](repeating: 0, count: 2048)
            while got.count < count {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&p, 1, quietMs) <= 0 { return got }
                var from = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let n = buffer.withUnsafeMutableBytes { b in
                    withUnsafeMutablePointer(to: &from) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, b.baseAddress, b.count, 0, $0, &length) }
                    }
                }
                if n <= 0 { return got }
                got.append((Array(buffer[0..<n]), Int(UInt16(bigEndian: from.sin_port))))
            }
            return got
        }
    }

    /// RTP (payload type 111) of SSRC 0x01020304, RTCP receiver report, STUN, DTLS.
    static func rtp(_ seq: Int) -> [UInt8] { [0x80, 111, UInt8(seq >> 8 & 0xff), UInt8(seq & 0xff), 0, 0, 0, 0, 1, 2, 3, 4, 0xAA] }
    static let rtcp: [UInt8] = [0x81, 201, 0, 7, 1, 2, 3, 4, 5, 6, 7, 8]
    static let stun: [UInt8] = [0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xA4, 0x42] + [UInt8](repeating: 7, count: 12)
    static let dtls: [UInt8] = [0x17, 0xFE, 0xFD, 0, 1, 0, 0, 0, 0, 0, 9, 0, 1, 0]

    /// The real end sends 1,000 RTP, 100 RTCP, 100 STUN and 100 DTLS datagrams through a
    /// relay that drops a quarter of the media; returns the counts and what the peer received.
    func exchange(seed: UInt64) throws -> (counts: ImpairingRelay.Counts, streams: [UInt32: ImpairingRelay.StreamCounts], received: Int) {
        let real = try Socket(), peer = try Socket()
        let relay = try ImpairingRelay(realHost: "127.0.0.1", realPort: real.port, dropFraction: 0.25, seed: seed)
        defer { relay.stop() }
        real.send(Self.stun, to: relay.port)
        XCTAssertTrue(Self.waitUntil { relay.snapshot.unroutable == 1 }, "nowhere to go before a peer spoke")

        peer.send(Self.stun, to: relay.port)
        let first = real.receiveAll(count: 1, quietMs: 2000)
        XCTAssertEqual(first.map(\.bytes), [Self.stun], "a peer's datagram reaches the real address")
        XCTAssertEqual(first.first?.from, relay.port, "from the relay")

        var received = 0
        for i in 0..<1300 {
            // A batch at a time, so that no socket buffer overflows.
            let datagram = i < 1000 ? Self.rtp(i) : [Self.rtcp, Self.stun, Self.dtls][i % 3]
            real.send(datagram, to: relay.port)
            // (What a slow relay thread forwards late is taken with the next batch, or below.)
            if i % 100 == 99 {
                let got = peer.receiveAll()
                XCTAssertTrue(got.allSatisfy { $0.from == relay.port })
                received += got.count
            }
        }
        XCTAssertTrue(Self.waitUntil { relay.snapshot.handled == 1300 }, "every datagram reached the relay")
        let c = relay.snapshot
        received += peer.receiveAll(count: c.rtpForwarded + c.rtcpForwarded + c.otherForwarded - received, quietMs: 2000).count
        XCTAssertEqual(peer.receiveAll(quietMs: 20).count, 0, "nothing more")
        return (c, relay.streamCounts, received)
    }

    static func waitUntil(_ condition: () -> Bool) -> Bool {
        for _ in 0..<200 where !condition() { usleep(10_000) }
        return condition()
    }

    func testMediaFromTheRealAddressIsDroppedAsAskedAndTheRestPasses() throws {
        let (c, streams, received) = try exchange(seed: 42)
        XCTAssertEqual(c.rtpForwarded + c.rtpDropped, 1000)
        XCTAssertEqual(c.rtcpForwarded + c.rtcpDropped, 100)
        XCTAssertEqual(c.otherForwarded, 200, "STUN and DTLS all forwarded")
        XCTAssertEqual(Double(c.rtpDropped), 250, accuracy: 45, "a quarter of RTP, within 3.3 standard deviations")
        XCTAssertGreaterThan(c.rtcpDropped, 0)
        XCTAssertEqual(c.toReal, 1)
        XCTAssertEqual(received, c.rtpForwarded + c.rtcpForwarded + c.otherForwarded, "the peer got what was forwarded")
        XCTAssertEqual(streams, [0x0102_0304: ImpairingRelay.StreamCounts(forwarded: c.rtpForwarded, dropped: c.rtpDropped)])

        let again = try exchange(seed: 42)
        XCTAssertEqual(again.counts.rtpDropped, c.rtpDropped, "the same seed, the same drops")
        XCTAssertEqual(again.counts.rtcpDropped, c.rtcpDropped)
    }
}

extension ImpairingRelay.Counts {
    /// Datagrams from the real address after a peer spoke.
    fileprivate var handled: Int { rtpForwarded + rtpDropped + rtcpForwarded + rtcpDropped + otherForwarded }
}
