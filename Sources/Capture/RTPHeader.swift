/// The fixed RTP header (RFC 3550 §5.1) and where the payload lies.
public struct RTPHeader: Equatable, Sendable {
    public var marker: Bool
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    /// Fixed header, CSRC list and header extension.
    public var headerLength: Int
    /// Trailing padding octets (0 without the P bit).
    public var paddingLength: Int

    /// Parses and sanity-checks an RTP header. `wireLength` is the UDP payload length, which
    /// may exceed `bytes.count` when the snap length cut the packet.
    ///
    /// The checks are Wireshark's (`dissect_rtp_heur`): version 2, CSRC list and extension
    /// inside the packet, a padding count that is non-zero and fits. Payload types 72-76 are
    /// refused because RFC 3551 reserves them so that RTCP 200-204 never parses as RTP.
    @inline(__always)
    public static func parse(_ bytes: UnsafeRawBufferPointer, wireLength: Int) -> RTPHeader? {
        guard bytes.count >= 12 else { return nil }
        let b0 = bytes.u8(0)
        guard b0 & 0xC0 == 0x80 else { return nil }
        let b1 = bytes.u8(1)
        let pt = b1 & 0x7F
        if pt >= 72 && pt <= 76 { return nil }
        var length = 12 + Int(b0 & 0x0F) * 4
        if b0 & 0x10 != 0 {
            guard bytes.count >= length + 4 else { return nil }
            length += 4 + Int(bytes.u16(length + 2)) * 4
        }
        guard wireLength >= length else { return nil }
        var padding = 0
        if b0 & 0x20 != 0 && bytes.count == wireLength {
            padding = Int(bytes.u8(bytes.count - 1))
            guard padding > 0, padding <= wireLength - length else { return nil }
        }
        return RTPHeader(
            marker: b1 & 0x80 != 0, payloadType: pt, sequenceNumber: bytes.u16(2),
            timestamp: bytes.u32(4), ssrc: bytes.u32(8), headerLength: length, paddingLength: padding)
    }
}

/// What a UDP payload carries, judged from its first bytes (RFC 7983 demultiplexing, refined).
public enum PayloadKind: Equatable, Sendable {
    case rtp
    case rtcp
    case stun
    /// TURN ChannelData (RFC 8656 §12): a 4-byte header, then the relayed datagram.
    case channelData
    /// DTLS records (first byte 20-63): DTLS-SRTP key exchange, not analysed further.
    case dtls
    case sip
    case other
}

public enum PayloadClassifier {
    /// Classifies by the first octet's range (RFC 7983) and then by structure.
    @inline(__always)
    public static func classify(_ p: UnsafeRawBufferPointer, wireLength: Int) -> PayloadKind {
        guard p.count >= 4 else { return .other }
        let b0 = p.u8(0)
        switch b0 {
        case 0x80...0xBF:
            let b1 = p.u8(1)
            // RFC 5761 §4: with rtcp-mux, RTCP packet types 192-223 are told apart from RTP
            // by this octet (marker bit plus payload type 64-95).
            if b1 >= 192 && b1 <= 223 { return RTCPCompound.looksValid(p) ? .rtcp : .other }
            return RTPHeader.parse(p, wireLength: wireLength) != nil ? .rtp : .other
        case 0x00...0x03:
            return STUNMessage.looksLikeSTUN(p) ? .stun : .other
        case 0x14...0x3F:
            return .dtls
        case 0x40...0x7F:
            if SIPMessage.startsLikeSIP(p) { return .sip }
            return isChannelData(p) ? .channelData : .other
        default:
            return .other
        }
    }

    /// A channel number 0x4000-0x7FFF and a length that matches the datagram (allowing the
    /// padding to four octets that TCP framing needs and UDP senders sometimes keep).
    @inline(__always)
    public static func isChannelData(_ p: UnsafeRawBufferPointer) -> Bool {
        guard p.count >= 4 else { return false }
        let channel = p.u16(0)
        guard channel >= 0x4000 && channel <= 0x7FFF else { return false }
        let length = Int(p.u16(2))
        let rest = p.count - 4
        return length <= rest && rest - length < 4 && length > 0
    }
}
