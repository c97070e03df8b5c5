/// Builders for the UDP payloads that call captures carry: RTP, RTCP, STUN, TURN
/// ChannelData and SIP with SDP. Field values are exactly what the caller passes, so tests
/// can compute expected figures by hand.
public enum PcapPayloads {
    public static func rtp(
        seq: UInt16, timestamp: UInt32, ssrc: UInt32, payloadType: UInt8 = 0, marker: Bool = false,
        payloadSize: Int = 160, padding: UInt8 = 0, csrcs: [UInt32] = [], extensionWords: [UInt32]? = nil
    ) -> [UInt8] {
        var b0: UInt8 = 0x80 | UInt8(csrcs.count)
        if padding > 0 { b0 |= 0x20 }
        if extensionWords != nil { b0 |= 0x10 }
        var p: [UInt8] = [b0, (marker ? 0x80 : 0) | payloadType] + PcapBytes.be16(seq) + PcapBytes.be32(timestamp) + PcapBytes.be32(ssrc)
        for c in csrcs { p += PcapBytes.be32(c) }
        if let ext = extensionWords {
            p += PcapBytes.be16(0xBEDE) + PcapBytes.be16(UInt16(ext.count))
            for w in ext { p += PcapBytes.be32(w) }
        }
        p += [UInt8](repeating: 0xD5, count: payloadSize)
        if padding > 0 { p += [UInt8](repeating: 0, count: Int(padding) - 1) + [padding] }
        return p
    }

    public struct ReportBlock {
        public var ssrc: UInt32, fractionLost: UInt8, cumulativeLost: Int32, highestSeq: UInt32
        public var jitter: UInt32, lsr: UInt32, dlsr: UInt32
        public init(ssrc: UInt32, fractionLost: UInt8, cumulativeLost: Int32, highestSeq: UInt32, jitter: UInt32, lsr: UInt32, dlsr: UInt32) {
            self.ssrc = ssrc; self.fractionLost = fractionLost; self.cumulativeLost = cumulativeLost
            self.highestSeq = highestSeq; self.jitter = jitter; self.lsr = lsr; self.dlsr = dlsr
        }
        var bytes: [UInt8] {
            PcapBytes.be32(ssrc) + [fractionLost] + Array(PcapBytes.be32(UInt32(bitPattern: cumulativeLost))[1...]) + PcapBytes.be32(highestSeq)
                + PcapBytes.be32(jitter) + PcapBytes.be32(lsr) + PcapBytes.be32(dlsr)
        }
    }

    static func header(count: Int, type: UInt8, body: [UInt8]) -> [UInt8] {
        [0x80 | UInt8(count), type] + PcapBytes.be16(UInt16(body.count / 4)) + body
    }

    public static func senderReport(ssrc: UInt32, ntp: UInt64, rtpTimestamp: UInt32, packets: UInt32, octets: UInt32, reports: [ReportBlock] = []) -> [UInt8] {
        header(
            count: reports.count, type: 200,
            body: PcapBytes.be32(ssrc) + PcapBytes.be64(ntp) + PcapBytes.be32(rtpTimestamp) + PcapBytes.be32(packets) + PcapBytes.be32(octets)
                + reports.flatMap(\.bytes))
    }

    public static func receiverReport(ssrc: UInt32, reports: [ReportBlock]) -> [UInt8] {
        header(count: reports.count, type: 201, body: PcapBytes.be32(ssrc) + reports.flatMap(\.bytes))
    }

    public static func sdes(ssrc: UInt32, cname: String) -> [UInt8] {
        var chunk = PcapBytes.be32(ssrc) + [1, UInt8(cname.utf8.count)] + Array(cname.utf8) + [0]
        while chunk.count % 4 != 0 { chunk.append(0) }
        return header(count: 1, type: 202, body: chunk)
    }

    public static func bye(ssrc: UInt32, reason: String? = nil) -> [UInt8] {
        var body = PcapBytes.be32(ssrc)
        if let reason {
            body += [UInt8(reason.utf8.count)] + Array(reason.utf8)
            while body.count % 4 != 0 { body.append(0) }
        }
        return header(count: 1, type: 203, body: body)
    }

    /// XR with one VoIP Metrics block (RFC 3611 §4.7).
    public static func xrVoIPMetrics(
        ssrc: UInt32, sourceSSRC: UInt32, lossRate: UInt8, discardRate: UInt8, roundTripDelay: UInt16, rFactor: UInt8, mosLQ: UInt8, mosCQ: UInt8
    ) -> [UInt8] {
        var block: [UInt8] = [7, 0] + PcapBytes.be16(8) + PcapBytes.be32(sourceSSRC)
        block += [lossRate, discardRate, 10, 2] + PcapBytes.be16(100) + PcapBytes.be16(2000) + PcapBytes.be16(roundTripDelay) + PcapBytes.be16(40)
        block += [UInt8(bitPattern: -20), UInt8(bitPattern: -70), 127, 16, rFactor, 127, mosLQ, mosCQ, 0, 0]
        block += PcapBytes.be16(40) + PcapBytes.be16(80) + PcapBytes.be16(200)
        return header(count: 0, type: 207, body: PcapBytes.be32(ssrc) + block)
    }

    /// XR with one Receiver Reference Time block (RFC 3611 §4.4): the sender's NTP time.
    public static func xrReceiverReference(ssrc: UInt32, ntp: UInt64) -> [UInt8] {
        header(count: 0, type: 207, body: PcapBytes.be32(ssrc) + [4, 0] + PcapBytes.be16(2) + PcapBytes.be64(ntp))
    }

    /// XR with one DLRR block (RFC 3611 §4.5): per receiver, its RRTR's NTP middle 32 bits (LRR)
    /// and the delay since it arrived in 1/65536 s (DLRR).
    public static func xrDelaySinceReceiverReference(ssrc: UInt32, replies: [(ssrc: UInt32, lrr: UInt32, dlrr: UInt32)]) -> [UInt8] {
        var block: [UInt8] = [5, 0] + PcapBytes.be16(UInt16(3 * replies.count))
        for r in replies { block += PcapBytes.be32(r.ssrc) + PcapBytes.be32(r.lrr) + PcapBytes.be32(r.dlrr) }
        return header(count: 0, type: 207, body: PcapBytes.be32(ssrc) + block)
    }

    public static func stunBinding(request: Bool, transaction: [UInt8], useCandidate: Bool = false, controlling: Bool = false, success: Bool = true) -> [UInt8]
    {
        precondition(transaction.count == 12)
        var attrs: [UInt8] = []
        if request {
            attrs += PcapBytes.be16(0x0006) + PcapBytes.be16(8) + Array("abcd:efg".utf8)
            attrs += PcapBytes.be16(0x0024) + PcapBytes.be16(4) + PcapBytes.be32(0x6E7F_00FF)
            if useCandidate { attrs += PcapBytes.be16(0x0025) + PcapBytes.be16(0) }
            if controlling { attrs += PcapBytes.be16(0x802A) + PcapBytes.be16(8) + PcapBytes.be64(0x0102_0304_0506_0708) }
        } else if success {
            attrs += PcapBytes.be16(0x0020) + PcapBytes.be16(8) + [0, 1] + PcapBytes.be16(0x1234) + PcapBytes.be32(0x0102_0304)
        } else {
            attrs += PcapBytes.be16(0x0009) + PcapBytes.be16(8) + [0, 0, 4, 87] + Array("Role".utf8)
        }
        let type: UInt16 = request ? 0x0001 : (success ? 0x0101 : 0x0111)
        return PcapBytes.be16(type) + PcapBytes.be16(UInt16(attrs.count)) + PcapBytes.be32(0x2112_A442) + transaction + attrs
    }

    public static func channelData(channel: UInt16, _ inner: [UInt8]) -> [UInt8] {
        var p = PcapBytes.be16(channel) + PcapBytes.be16(UInt16(inner.count)) + inner
        while p.count % 4 != 0 { p.append(0) }
        return p
    }

    /// A SIP INVITE (or 200 OK when `response`) whose SDP offers one audio stream.
    public static func sip(
        callID: String, response: Bool = false, address: String, audioPort: UInt16,
        formats: [(pt: UInt8, name: String, rate: UInt32)], bye: Bool = false
    ) -> [UInt8] {
        var sdp = "v=0\r\no=- 1 1 IN IP4 \(address)\r\ns=-\r\nc=IN IP4 \(address)\r\nt=0 0\r\n"
        sdp += "m=audio \(audioPort) RTP/AVP \(formats.map { String($0.pt) }.joined(separator: " "))\r\n"
        for f in formats { sdp += "a=rtpmap:\(f.pt) \(f.name)/\(f.rate)\r\n" }
        let start = bye ? "BYE sip:bob@example.com SIP/2.0" : (response ? "SIP/2.0 200 OK" : "INVITE sip:bob@example.com SIP/2.0")
        var msg = "\(start)\r\nVia: SIP/2.0/UDP \(address):5060;branch=z9hG4bK1\r\nFrom: <sip:alice@example.com>;tag=1\r\n"
        msg += "To: <sip:bob@example.com>\r\nCall-ID: \(callID)\r\nCSeq: 1 \(bye ? "BYE" : "INVITE")\r\n"
        if bye {
            msg += "Content-Length: 0\r\n\r\n"
        } else {
            msg += "Content-Type: application/sdp\r\nContent-Length: \(sdp.utf8.count)\r\n\r\n" + sdp
        }
        return Array(msg.utf8)
    }
}
