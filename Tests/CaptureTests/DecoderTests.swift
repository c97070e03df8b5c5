import CallLog
import Capture
import TestSupport
import XCTest

/// Pure decoding on byte arrays: no capture files involved.
final class DecoderTests: XCTestCase {
    func classify(_ bytes: [UInt8]) -> PayloadKind {
        bytes.withUnsafeBytes { PayloadClassifier.classify($0, wireLength: bytes.count) }
    }

    func testClassifierFollowsRFC7983AndRFC5761() {
        XCTAssertEqual(classify(PcapPayloads.rtp(seq: 1, timestamp: 2, ssrc: 3)), .rtp)
        XCTAssertEqual(classify(PcapPayloads.rtp(seq: 1, timestamp: 2, ssrc: 3, payloadType: 111, padding: 4, csrcs: [9], extensionWords: [1, 2])), .rtp)
        // RTCP SR is marker + PT 72: never RTP, always RTCP (rtcp-mux rule).
        XCTAssertEqual(classify(PcapPayloads.senderReport(ssrc: 1, ntp: 2, rtpTimestamp: 3, packets: 4, octets: 5)), .rtcp)
        // PT 72-76 without the marker: reserved, neither.
        XCTAssertEqual(classify(PcapPayloads.rtp(seq: 1, timestamp: 2, ssrc: 3, payloadType: 73)), .other)
        // A padding count larger than the payload is not RTP.
        var bad = PcapPayloads.rtp(seq: 1, timestamp: 2, ssrc: 3, payloadSize: 4, padding: 2)
        bad[bad.count - 1] = 200
        XCTAssertEqual(classify(bad), .other)
        XCTAssertEqual(classify(PcapPayloads.stunBinding(request: true, transaction: Array(repeating: 1, count: 12))), .stun)
        XCTAssertEqual(classify(PcapPayloads.channelData(channel: 0x4000, PcapPayloads.rtp(seq: 1, timestamp: 2, ssrc: 3))), .channelData)
        XCTAssertEqual(classify([22, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), .dtls)
        XCTAssertEqual(classify(Array("OPTIONS sip:a@b SIP/2.0\r\n\r\n".utf8)), .sip)
    }

    func testRTPHeaderFields() throws {
        let bytes = PcapPayloads.rtp(
            seq: 65535, timestamp: 0xFFFF_FFF0, ssrc: 0xDEAD_BEEF, payloadType: 96, marker: true, payloadSize: 20, padding: 3, csrcs: [1, 2],
            extensionWords: [7])
        let h = try XCTUnwrap(bytes.withUnsafeBytes { RTPHeader.parse($0, wireLength: bytes.count) })
        XCTAssertEqual(h.sequenceNumber, 65535)
        XCTAssertEqual(h.timestamp, 0xFFFF_FFF0)
        XCTAssertEqual(h.ssrc, 0xDEAD_BEEF)
        XCTAssertTrue(h.marker)
        XCTAssertEqual(h.payloadType, 96)
        XCTAssertEqual(h.headerLength, 12 + 8 + 8)
        XCTAssertEqual(h.paddingLength, 3)
    }

    func testAddressesFormatLikeWireshark() {
        XCTAssertEqual(IPAddress("2001:4860:4864:6:0:0:0:81")?.description, "2001:4860:4864:6::81")
        XCTAssertEqual(IPAddress("::1")?.description, "::1")
        XCTAssertEqual(IPAddress("2001:db8:0:1:1:1:1:1")?.description, "2001:db8:0:1:1:1:1:1")
        XCTAssertEqual(IPAddress("192.168.1.2")?.description, "192.168.1.2")
        // An IPv4-mapped IPv6 address is IPv6 (a real IPv6 packet may carry one), printed as
        // Wireshark prints it.
        XCTAssertEqual(IPAddress("::ffff:10.0.0.1")?.description, "::ffff:10.0.0.1")
        XCTAssertNotEqual(IPAddress("::ffff:10.0.0.1"), IPAddress("10.0.0.1"))
        XCTAssertEqual(IPAddress("[2001:db8::1]"), IPAddress("2001:db8::1"))
        XCTAssertLessThan(IPAddress("10.0.0.1")!, IPAddress("10.0.0.2")!)
        XCTAssertLessThan(IPAddress("255.255.255.255")!, IPAddress("::1")!)
        XCTAssertNil(IPAddress("1.2.3"))
        XCTAssertNil(IPAddress("1::2::3"))
    }

    func testSDPInSIPAndMegaco() throws {
        let sip = PcapPayloads.sip(callID: "x@y", address: "10.1.1.1", audioPort: 4000, formats: [(0, "PCMU", 8000), (101, "telephone-event", 8000)])
        let m = try XCTUnwrap(sip.withUnsafeBytes { SIPMessage.parse($0) })
        XCTAssertEqual(m.callID, "x@y")
        XCTAssertEqual(m.method, "INVITE")
        XCTAssertEqual(m.media.first?.port, 4000)
        XCTAssertEqual(m.media.first?.rtpmap[101]?.isTelephoneEvent, true)
        let megaco = Array(
            "!/1 [10.0.0.1]:2944\nT=1{C=2{M{L{v=0\nc=IN IP4 10.2.2.2\nm=audio 5004 RTP/AVP 8\n}R{v=0\nc=IN IP4 10.3.3.3\nm=image 6000 udptl t38\n}}}}\n".utf8)
        let g = try XCTUnwrap(megaco.withUnsafeBytes { SIPMessage.parse($0, anyText: true) })
        XCTAssertEqual(g.media.map(\.port), [5004, 6000])
        XCTAssertEqual(g.media.map { $0.address?.description }, ["10.2.2.2", "10.3.3.3"])
        XCTAssertEqual(g.media.map(\.isRTP), [true, false])
    }

    /// SDP lines made only of separators (found by the capture fuzzer: `a=rtpmap:101 /` trapped)
    /// are skipped; the good lines around them still count.
    func testSDPWithEmptyFieldsIsSkippedNotFatal() throws {
        let text =
            "!/1 [10.0.0.1]:2944\nv=0\nc=IN IP4 /\nm=audio / RTP/AVP 0\nm=audio 4000 RTP/AVP 0 101\n"
            + "a=rtpmap:101 /\na=rtpmap:101 //\na=rtpmap:0 PCMU/8000\n"
        let m = try XCTUnwrap(Array(text.utf8).withUnsafeBytes { SIPMessage.parse($0, anyText: true) })
        XCTAssertEqual(m.media.map(\.port), [4000])
        XCTAssertNil(m.media.first?.address)
        XCTAssertEqual(m.media.first?.rtpmap[0]?.clockRate, 8000)
        XCTAssertNil(m.media.first?.rtpmap[101])
    }

    func testBoundedReassemblyGivesUpOnGaps() {
        var r = IPReassembler(maximumDatagrams: 2, timeoutNanos: 1_000)
        let piece = [UInt8](repeating: 1, count: 16)
        func key(_ id: UInt32) -> IPReassembler.Key {
            IPReassembler.Key(source: IPAddress(ipv4: 1), destination: IPAddress(ipv4: 2), identification: id, isIPv6: false)
        }
        for id in 0..<5 as Range<UInt32> {
            _ = piece.withUnsafeBytes { r.add(key: key(id), offset: 16, more: false, bytes: $0, complete: true, timestampNanos: 0) }
        }
        XCTAssertEqual(r.pendingCount, 2)
        XCTAssertEqual(r.abandoned, 3)
        _ = piece.withUnsafeBytes { r.add(key: key(9), offset: 0, more: true, bytes: $0, complete: true, timestampNanos: 10_000) }
        XCTAssertEqual(r.pendingCount, 1)  // the old ones timed out
    }
}
