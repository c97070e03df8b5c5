import CallLog
import Capture
import Foundation
import TestSupport
import XCTest

/// Captures built packet by packet, with figures worked out by hand, then checked against
/// tshark on the same file where tshark is installed.
final class SyntheticCaptureTests: XCTestCase {
    static let t0: Int64 = 1_700_000_000_000_000_000  // epoch nanoseconds
    static let ms: Int64 = 1_000_000

    /// Stream A: PCMU from 10.0.0.1:40000, 20 sequence numbers across the 16-bit wrap
    /// (65530…13). Seq 65534 and 2 are lost, 5 arrives after 6, 10 arrives twice.
    /// Stream B: PCMU from 10.0.0.2:50000, ten packets, the sixth 8 ms late.
    func buildCapture(link: PcapWriter.Link = .ethernet, vlans: [UInt16] = []) -> PcapWriter {
        var w = PcapWriter(link: link)
        var order: [UInt16] = []
        for i in 0..<20 { order.append(UInt16((65530 + i) % 65536)) }
        order.removeAll { $0 == 65534 || $0 == 2 }
        let i5 = order.firstIndex(of: 5)!
        order.swapAt(i5, i5 + 1)
        order.insert(10, at: order.firstIndex(of: 10)! + 1)
        for (slot, seq) in order.enumerated() {
            let index = Int64((Int(seq) - 65530 + 65536) % 65536)
            let payload = PcapPayloads.rtp(seq: seq, timestamp: UInt32(1000 + index * 160), ssrc: 0x1111_1111)
            w.addUDP(
                from: "10.0.0.1", 40000, to: "10.0.0.2", 50000, payload: payload,
                timestampNanos: Self.t0 + Int64(slot) * 20 * Self.ms + Int64(slot) * 1000, vlans: vlans)
        }
        for i in 0..<10 {
            let late: Int64 = i == 5 ? 8 * Self.ms : 0
            let payload = PcapPayloads.rtp(seq: UInt16(100 + i), timestamp: UInt32(5000 + i * 160), ssrc: 0x2222_2222)
            w.addUDP(
                from: "10.0.0.2", 50000, to: "10.0.0.1", 40000, payload: payload,
                timestampNanos: Self.t0 + 5 * Self.ms + Int64(i) * 20 * Self.ms + late, vlans: vlans)
        }
        return w
    }

    func session(_ w: PcapWriter, configure: (inout CaptureConfiguration) -> Void = { _ in }) throws -> (
        records: [LogRecord], streams: [StreamKey: RTPStreamSummary], counters: CaptureCounters
    ) {
        var c = CaptureConfiguration()
        c.keepsClosedStreams = true
        configure(&c)
        let box = RecordCollector()
        var s = CaptureSession(configuration: c) { box.records.append($0) }
        let source = try PcapSource.open(bytes: w.bytes)
        try source.feed(&s)
        s.finish()
        return (box.records, Dictionary(s.closedStreams.map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a }), s.counters)
    }

    static let keyA = StreamKey(
        flow: FlowKey(source: Endpoint(address: IPAddress("10.0.0.1")!, port: 40000), destination: Endpoint(address: IPAddress("10.0.0.2")!, port: 50000)),
        ssrc: 0x1111_1111)
    static let keyB = StreamKey(
        flow: FlowKey(source: Endpoint(address: IPAddress("10.0.0.2")!, port: 50000), destination: Endpoint(address: IPAddress("10.0.0.1")!, port: 40000)),
        ssrc: 0x2222_2222)

    /// libpcap's own words reach the user, whole and without the buffer's trailing NULs.
    func testUnreadableCaptureSaysWhy() {
        XCTAssertThrowsError(try PcapSource.open(file: "/nonexistent/capture.pcap")) { error in
            let text = "\(error)"
            XCTAssertTrue(text.hasPrefix("cannot open /nonexistent/capture.pcap: "), text)
            XCTAssertTrue(text.contains("No such file or directory"), text)
            XCTAssertFalse(text.contains("\0"), text)
        }
        XCTAssertThrowsError(try PcapSource.open(bytes: Array("not a capture".utf8))) { error in
            XCTAssertTrue("\(error)".hasPrefix("cannot read capture: "), "\(error)")
            XCTAssertGreaterThan("\(error)".count, "cannot read capture: ".count + 5, "\(error)")
        }
    }

    func testLossReorderDuplicateWrapAndJitterByHand() throws {
        let r = try session(buildCapture())
        let a = try XCTUnwrap(r.streams[Self.keyA]).statistics
        XCTAssertEqual(a.packets, 19)  // 20 sent, 2 lost, 1 duplicated
        XCTAssertEqual(a.expected, 20)  // 65530…13 across the wrap
        XCTAssertEqual(a.lost, 1)  // RFC 3550: the duplicate offsets one loss
        XCTAssertEqual(a.duplicates, 1)
        XCTAssertEqual(a.outOfOrder, 1)
        XCTAssertEqual(a.extendedHighestSequence, 65536 + 13)
        XCTAssertEqual(a.wireshark.expected(), 20)
        XCTAssertEqual(a.wireshark.lost(received: a.packets), 1)

        let b = try XCTUnwrap(r.streams[Self.keyB]).statistics
        XCTAssertEqual(b.packets, 10)
        XCTAssertEqual(b.lost, 0)
        // One packet 8 ms late: J = 8/16 = 0.5, then |−8|: J = 0.5·15/16 + 0.5 = 0.96875.
        XCTAssertEqual(b.maxJitterMs, 0.96875, accuracy: 1e-9)
        XCTAssertEqual(b.maxDeltaMs, 28, accuracy: 1e-9)
        // Then 0.96875·15/16 and so on; the mean runs over the nine packets after the first.
        var j = [0.0, 0, 0, 0, 0.5, 0.96875]
        for _ in 0..<3 { j.append(j.last! * 15 / 16) }
        XCTAssertEqual(b.meanJitterMs, j.reduce(0, +) / 9, accuracy: 1e-9)
        XCTAssertEqual(b.jitterMs, j.last!, accuracy: 1e-9)

        // Records: one call for the 5-tuple pair, a final rtp record per stream, an end.
        let kinds = r.records.map(\.kind.rawValue)
        XCTAssertEqual(kinds.filter { $0 == "call" }.count, 1)
        XCTAssertEqual(kinds.filter { $0 == "rtp" }.count, 2)
        XCTAssertEqual(kinds.last, "end")
        let rtpA = try XCTUnwrap(r.records.first { $0.kind == .rtpStream && $0["ssrc"]?.doubleValue == Double(0x1111_1111) })
        XCTAssertEqual(rtpA.call, "wire:10.0.0.1:40000-10.0.0.2:50000")
        XCTAssertEqual(rtpA["codec"]?.stringValue, "PCMU")
        XCTAssertEqual(rtpA["clockRate"]?.doubleValue, 8000)
        XCTAssertEqual(rtpA["packetsLost"]?.doubleValue, 1)
        XCTAssertEqual(rtpA["packetsDuplicated"]?.doubleValue, 1)
        XCTAssertEqual(rtpA["packetsOutOfOrder"]?.doubleValue, 1)
        XCTAssertEqual(rtpA["bytesReceived"]?.doubleValue, 19 * 160)
        XCTAssertEqual(rtpA["headerBytesReceived"]?.doubleValue, 19 * 12)
        XCTAssertEqual(rtpA.ts, (Self.t0 + 18 * 20 * Self.ms + 18_000) / Self.ms)
    }

    /// The same packets behind other link layers and VLAN tags decode to the same streams.
    func testLinkLayersAndVLANs() throws {
        for (link, vlans) in [(PcapWriter.Link.ethernet, [UInt16(100)]), (.ethernet, [10, 20]), (.linuxSLL, []), (.linuxSLL2, []), (.raw, []), (.null, [])] {
            let r = try session(buildCapture(link: link, vlans: vlans))
            XCTAssertEqual(r.streams[Self.keyA]?.statistics.packets, 19, "\(link) \(vlans)")
            XCTAssertEqual(r.streams[Self.keyB]?.statistics.packets, 10, "\(link) \(vlans)")
        }
    }

    func testIPv6AndFragmentedSIPNameTheCall() throws {
        var w = PcapWriter(link: .ethernet)
        let sdp = PcapPayloads.sip(
            callID: "abc123@example.com", address: "2001:db8::1", audioPort: 30000,
            formats: [(96, "opus", 48000), (101, "telephone-event", 8000)])
        let padded = sdp + Array(String(repeating: "a=x-filler:0123456789\r\n", count: 60).utf8)
        w.addFragmentedUDP(from: "2001:db8::1", 5060, to: "2001:db8::2", 5060, payload: padded, timestampNanos: Self.t0, fragmentSize: 512, reversed: true)
        for i in 0..<50 {
            let p = PcapPayloads.rtp(seq: UInt16(i), timestamp: UInt32(i * 960), ssrc: 0xABCD, payloadType: 96, payloadSize: 80)
            w.addUDP(from: "2001:db8::2", 40000, to: "2001:db8::1", 30000, payload: p, timestampNanos: Self.t0 + Int64(i + 5) * 20 * Self.ms)
        }
        let r = try session(w)
        XCTAssertEqual(r.counters.reassembled, 1)
        let rtp = try XCTUnwrap(r.records.first { $0.kind == .rtpStream })
        XCTAssertEqual(rtp.call, "abc123@example.com")
        XCTAssertEqual(rtp["codec"]?.stringValue, "opus")
        XCTAssertEqual(rtp["clockRate"]?.doubleValue, 48000)
        XCTAssertEqual(rtp["clockRateSource"]?.stringValue, "sdp")
        XCTAssertEqual(rtp["src"]?.stringValue, "[2001:db8::2]:40000")
        XCTAssertEqual(rtp["jitterMs"]?.doubleValue, 0)
        let call = try XCTUnwrap(r.records.first { $0.kind == .call })
        XCTAssertEqual(call["callId"]?.stringValue, "abc123@example.com")
        XCTAssertEqual(call["sdk"]?.stringValue, "wire")
        XCTAssertEqual(call["platform"]?.stringValue, "capture")
        XCTAssertEqual(call["media"], ["audio"])
    }

    func testIntervalsAndIdleTimeout() throws {
        var w = PcapWriter()
        // 25 s of 20 ms packets, a 40 s silence, then 1 s more: three intervals, idle close, reopen.
        var t = Self.t0 - Self.t0 % (10_000 * Self.ms) + 2_000 * Self.ms
        var seq: UInt16 = 0
        func send(_ count: Int) {
            for _ in 0..<count {
                w.addUDP(
                    from: "10.0.0.1", 40000, to: "10.0.0.2", 50000,
                    payload: PcapPayloads.rtp(seq: seq, timestamp: UInt32(seq) * 160, ssrc: 7), timestampNanos: t)
                seq &+= 1
                t += 20 * Self.ms
            }
        }
        send(1250)
        t += 40_000 * Self.ms
        send(50)
        let r = try session(w)
        let rtp = r.records.filter { $0.kind == .rtpStream }
        // Two full intervals; the third ends in the silence and goes out as the final record
        // when the stream is found idle; the second run is a new stream (and a new call).
        XCTAssertEqual(rtp.count, 4)
        XCTAssertEqual(rtp.map { $0["interval"]?["packetsReceived"]?.doubleValue ?? -1 }, [400, 500, 350, 50])
        XCTAssertEqual(rtp[1]["interval"]?["bitrate"]?.doubleValue, 500 * 172 * 8 / 10.0)
        XCTAssertEqual(rtp.map { $0["final"]?.boolValue ?? false }, [false, false, true, true])
        XCTAssertEqual(r.records.filter { $0.kind == .end }.map { $0["reason"]?.stringValue }, ["idle", "captureEnd"])
        XCTAssertEqual(r.records.filter { $0.kind == .call }.count, 2)
    }

    func testRTCPReportsRoundTripAndXR() throws {
        var w = PcapWriter()
        let ntp: UInt64 = 0xE8D4_A510_8000_0000  // middle 32 bits: 0xA5108000
        var sr = PcapPayloads.senderReport(ssrc: 0x1111_1111, ntp: ntp, rtpTimestamp: 1234, packets: 50, octets: 8000)
        sr += PcapPayloads.sdes(ssrc: 0x1111_1111, cname: "alice@example.com")
        w.addUDP(from: "10.0.0.1", 40001, to: "10.0.0.2", 50001, payload: sr, timestampNanos: Self.t0)
        let block = PcapPayloads.ReportBlock(
            ssrc: 0x1111_1111, fractionLost: 64, cumulativeLost: -3, highestSeq: 65_600, jitter: 80, lsr: 0xA510_8000, dlsr: 32768)
        var rr = PcapPayloads.receiverReport(ssrc: 0x2222_2222, reports: [block])
        rr += PcapPayloads.xrVoIPMetrics(
            ssrc: 0x2222_2222, sourceSSRC: 0x1111_1111, lossRate: 13, discardRate: 3, roundTripDelay: 98, rFactor: 85, mosLQ: 41, mosCQ: 40)
        rr += PcapPayloads.bye(ssrc: 0x2222_2222, reason: "done")
        w.addUDP(from: "10.0.0.2", 50001, to: "10.0.0.1", 40001, payload: rr, timestampNanos: Self.t0 + 600 * Self.ms)
        let r = try session(w)
        let rtcp = r.records.filter { $0.kind == .rtcp }
        XCTAssertEqual(rtcp.count, 2)
        XCTAssertEqual(rtcp[0]["types"], [200, 202])
        XCTAssertEqual(rtcp[0]["cname"]?.stringValue, "alice@example.com")
        XCTAssertEqual(rtcp[0]["sr"]?["packetsSent"]?.doubleValue, 50)
        XCTAssertEqual(rtcp[0]["sr"]?["bytesSent"]?.doubleValue, 8000)
        XCTAssertEqual(rtcp[1]["types"], [201, 207, 203])
        let report = try XCTUnwrap(rtcp[1]["reports"]?.arrayValue?.first)
        XCTAssertEqual(report["fractionLost"]?.doubleValue, 0.25)
        XCTAssertEqual(report["packetsLost"]?.doubleValue, -3)
        XCTAssertEqual(report["highestSeq"]?.doubleValue, 65_600)
        XCTAssertEqual(report["dlsrMs"]?.doubleValue, 500)
        // Arrival 600 ms after the SR it names, less 500 ms held by the receiver.
        XCTAssertEqual(report["roundTripTimeMs"]?.doubleValue ?? 0, 100, accuracy: 1e-6)
        let voip = try XCTUnwrap(rtcp[1]["voipMetrics"])
        XCTAssertEqual(voip["lossRate"]?.doubleValue ?? 0, 13.0 / 256, accuracy: 1e-6)
        XCTAssertEqual(voip["roundTripDelayMs"]?.doubleValue, 98)
        XCTAssertEqual(voip["rFactor"]?.doubleValue, 85)
        XCTAssertEqual(voip["mosLq"]?.doubleValue, 4.1)
        XCTAssertEqual(voip["mosCq"]?.doubleValue, 4.0)
        XCTAssertEqual(rtcp[1]["bye"]?["reason"]?.stringValue, "done")
        // RTCP on port+1 joins the call of the RTP pair if there is one; here it makes its own.
        XCTAssertEqual(rtcp[1].call, "wire:10.0.0.1:40001-10.0.0.2:50001")
    }

    func testSTUNChecksAndConsentAndTURN() throws {
        var w = PcapWriter()
        let a = "192.0.2.10", b = "198.51.100.20"
        func tx(_ n: UInt8) -> [UInt8] { [UInt8](repeating: n, count: 12) }
        w.addUDP(from: a, 5000, to: b, 6000, payload: PcapPayloads.stunBinding(request: true, transaction: tx(1), controlling: true), timestampNanos: Self.t0)
        w.addUDP(
            from: a, 5000, to: b, 6000, payload: PcapPayloads.stunBinding(request: true, transaction: tx(2), useCandidate: true, controlling: true),
            timestampNanos: Self.t0 + 10 * Self.ms)
        w.addUDP(from: b, 6000, to: a, 5000, payload: PcapPayloads.stunBinding(request: false, transaction: tx(2)), timestampNanos: Self.t0 + 40 * Self.ms)
        for i in 0..<600 {  // 12 s of media from 100 ms
            w.addUDP(
                from: a, 5000, to: b, 6000, payload: PcapPayloads.rtp(seq: UInt16(i), timestamp: UInt32(i * 960), ssrc: 9, payloadType: 111, payloadSize: 60),
                timestampNanos: Self.t0 + 100 * Self.ms + Int64(i) * 20 * Self.ms)
        }
        // Consent checks 5 s and 11 s after the first check: the longest gap is 6 s.
        w.addUDP(from: a, 5000, to: b, 6000, payload: PcapPayloads.stunBinding(request: true, transaction: tx(3)), timestampNanos: Self.t0 + 5_010 * Self.ms)
        w.addUDP(from: b, 6000, to: a, 5000, payload: PcapPayloads.stunBinding(request: false, transaction: tx(3)), timestampNanos: Self.t0 + 5_030 * Self.ms)
        w.addUDP(from: a, 5000, to: b, 6000, payload: PcapPayloads.stunBinding(request: true, transaction: tx(4)), timestampNanos: Self.t0 + 11_010 * Self.ms)
        // RTP relayed through TURN ChannelData on another pair.
        for i in 0..<20 {
            let inner = PcapPayloads.rtp(seq: UInt16(i), timestamp: UInt32(i * 160), ssrc: 77, payloadSize: 160)
            w.addUDP(from: a, 5002, to: b, 3478, payload: PcapPayloads.channelData(channel: 0x4001, inner), timestampNanos: Self.t0 + Int64(i) * 20 * Self.ms)
        }
        let r = try session(w)
        let ice = try XCTUnwrap(r.records.last { $0.kind == .ice })
        XCTAssertEqual(ice["local"]?.stringValue, "192.0.2.10:5000")
        XCTAssertEqual(ice["remote"]?.stringValue, "198.51.100.20:6000")
        XCTAssertEqual(ice["state"]?.stringValue, "succeeded")
        XCTAssertEqual(ice["nominated"]?.boolValue, true)
        XCTAssertEqual(ice["controlling"]?.stringValue, "192.0.2.10:5000")
        XCTAssertEqual(ice["requestsSent"]?.doubleValue, 4)
        XCTAssertEqual(ice["responsesReceived"]?.doubleValue, 2)
        XCTAssertEqual(ice["rttSamples"]?.doubleValue, 2)
        XCTAssertEqual(ice["minRoundTripTimeMs"]?.doubleValue ?? 0, 20, accuracy: 1e-6)
        XCTAssertEqual(ice["maxRoundTripTimeMs"]?.doubleValue ?? 0, 30, accuracy: 1e-6)
        XCTAssertEqual(ice["checkToMediaMs"]?.doubleValue ?? 0, 100, accuracy: 1e-6)
        XCTAssertEqual(ice["consentChecks"]?.doubleValue, 2)
        XCTAssertEqual(ice["maxConsentGapMs"]?.doubleValue ?? 0, 6000, accuracy: 1e-6)
        let relayed = try XCTUnwrap(r.records.first { $0.kind == .rtpStream && $0["relayed"]?.boolValue == true })
        XCTAssertEqual(relayed["packetsReceived"]?.doubleValue, 20)
        XCTAssertEqual(relayed["codec"]?.stringValue, "PCMU")
        let opus = try XCTUnwrap(r.records.last { $0.kind == .rtpStream && $0["ssrc"]?.doubleValue == 9 })
        XCTAssertEqual(opus["clockRateSource"]?.stringValue, "assumed")
        XCTAssertEqual(opus.call, ice.call)
    }

    /// tshark on the same file must agree on packets, loss, max delta and jitter.
    func testAgreesWithTshark() throws {
        guard let tshark = Tshark.path else { throw XCTSkip("tshark is not installed") }
        let w = buildCapture()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("capture-synthetic-\(getpid()).pcap")
        try w.write(to: file.path)
        defer { try? FileManager.default.removeItem(at: file) }
        let text = try Tshark.run(tshark, ["-r", file.path, "--enable-heuristic", "rtp_udp", "-q", "-z", "rtp,streams"])
        let oracle = TsharkOracle.parse("# command: tshark --enable-heuristic rtp_udp\n" + text)
        XCTAssertEqual(oracle.streams.count, 2)
        let ours = try session(w) { $0 = oracle.configuration }
        for t in oracle.streams {
            let s = try XCTUnwrap(ours.streams[t.key]).statistics
            XCTAssertEqual(s.packets, t.packets)
            XCTAssertEqual(s.wireshark.lost(received: s.packets), t.lost)
            XCTAssertEqual(s.maxDeltaMs, t.maxDeltaMs, accuracy: 0.0011)
            XCTAssertEqual(s.maxJitterMs, t.maxJitterMs, accuracy: 0.0011)
            XCTAssertEqual(s.meanJitterMs, t.meanJitterMs, accuracy: 0.0011)
        }
    }
}

enum Tshark {
    static var path: String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let p = "\(dir)/tshark"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    static func run(_ path: String, _ arguments: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
