import Capture
import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Live capture on a veth pair into a private network namespace: RTP and RTCP sent from
/// this process to the namespace side must be measured by the live `PcapSource`.
final class LiveCaptureTests: XCTestCase {
    let namespace = "cstest\(getpid())"
    var hostInterface: String { "csv\(getpid() % 100_000)a" }
    var peerInterface: String { "csv\(getpid() % 100_000)b" }
    let hostAddress = "10.213.7.1"
    let peerAddress = "10.213.7.2"

    func ip(_ args: [String]) -> Bool {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.ipPath!)
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { return false }
        p.waitUntilExit()
        return p.terminationStatus == 0
    }

    static let ipPath: String? = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) }

    func testLiveVethCapture() throws {
        guard getuid() == 0 else { throw XCTSkip("live capture needs root (network namespaces, raw capture)") }
        guard Self.ipPath != nil else { throw XCTSkip("the ip command is not available") }
        guard ip(["netns", "add", namespace]) else { throw XCTSkip("cannot create a network namespace here") }
        defer {
            _ = ip(["link", "del", hostInterface])
            _ = ip(["netns", "del", namespace])
        }
        XCTAssert(ip(["link", "add", hostInterface, "type", "veth", "peer", "name", peerInterface]))
        XCTAssert(ip(["link", "set", peerInterface, "netns", namespace]))
        XCTAssert(ip(["addr", "add", "\(hostAddress)/24", "dev", hostInterface]))
        XCTAssert(ip(["link", "set", hostInterface, "up"]))
        XCTAssert(ip(["netns", "exec", namespace, "ip", "addr", "add", "\(peerAddress)/24", "dev", peerInterface]))
        XCTAssert(ip(["netns", "exec", namespace, "ip", "link", "set", peerInterface, "up"]))

        var options = LiveCaptureOptions()
        options.filter = "udp and host \(peerAddress)"
        options.readTimeoutMs = 50
        let source = try PcapSource.open(interface: hostInterface, options: options)

        // Send 50 PCMU packets 2 ms apart and one sender report, from an ordinary UDP socket.
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        func send(_ bytes: [UInt8], port: UInt16) {
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = port.bigEndian
            inet_pton(AF_INET, peerAddress, &addr.sin_addr)
            _ = bytes.withUnsafeBytes { b in
                withUnsafePointer(to: &addr) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
        }
        for i in 0..<50 {
            send(PcapPayloads.rtp(seq: UInt16(i), timestamp: UInt32(i * 160), ssrc: 0xCAFE), port: 40000)
            usleep(2000)
        }
        send(PcapPayloads.senderReport(ssrc: 0xCAFE, ntp: 1 << 32, rtpTimestamp: 0, packets: 50, octets: 8000), port: 40001)

        let box = RecordCollector()
        var configuration = CaptureConfiguration()
        configuration.keepsClosedStreams = true
        var session = CaptureSession(configuration: configuration) { box.records.append($0) }
        let deadline = Date().addingTimeInterval(3)
        while Date() < deadline && session.counters.rtcpPackets == 0 {
            try source.feed(&session, returnOnTimeout: true)
        }
        XCTAssertNotNil(source.statistics())
        session.finish()
        let stream = try XCTUnwrap(session.closedStreams.first { $0.key.ssrc == 0xCAFE })
        // The first packets may wait for ARP; none may be lost once the stream is seen.
        XCTAssertGreaterThanOrEqual(stream.statistics.packets, 45)
        XCTAssertEqual(stream.statistics.lost, 0)
        XCTAssertEqual(stream.key.flow.destination.description, "\(peerAddress):40000")
        XCTAssertTrue(box.records.contains { $0.kind == .rtcp })
    }
}
