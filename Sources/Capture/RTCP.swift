/// A reception report block (RFC 3550 §6.4.1), as found in SR and RR packets.
public struct RTCPReportBlock: Equatable, Sendable {
    /// The source this block reports on.
    public var ssrc: UInt32
    /// Fraction lost since the previous report, in 1/256.
    public var fractionLost: UInt8
    /// Cumulative packets lost (24-bit signed: duplicates can make it negative).
    public var cumulativeLost: Int32
    public var extendedHighestSequence: UInt32
    /// Interarrival jitter in RTP timestamp units.
    public var jitter: UInt32
    /// Middle 32 bits of the NTP timestamp of the last SR received from `ssrc`, 0 if none.
    public var lastSR: UInt32
    /// Delay since that SR, in 1/65536 s.
    public var delaySinceLastSR: UInt32
}

/// RFC 3611 §4.7 VoIP Metrics report block (block type 7).
public struct RTCPVoIPMetrics: Equatable, Sendable {
    public var ssrc: UInt32
    public var lossRate: UInt8
    public var discardRate: UInt8
    public var burstDensity: UInt8
    public var gapDensity: UInt8
    public var burstDuration: UInt16
    public var gapDuration: UInt16
    public var roundTripDelay: UInt16
    public var endSystemDelay: UInt16
    public var signalLevel: Int8
    public var noiseLevel: Int8
    public var residualEchoReturnLoss: UInt8
    public var gmin: UInt8
    public var rFactor: UInt8
    public var externalRFactor: UInt8
    /// MOS in tenths (10-50); 127 means unavailable.
    public var mosLQ: UInt8
    public var mosCQ: UInt8
    public var receiverConfiguration: UInt8
    public var jitterBufferNominal: UInt16
    public var jitterBufferMaximum: UInt16
    public var jitterBufferAbsoluteMaximum: UInt16
}

/// RFC 3611 §4.5 DLRR sub-block: the reply to a receiver's RRTR (§4.4), as RFC 3550's DLSR
/// replies to an SR.
public struct RTCPDLRR: Equatable, Sendable {
    /// The receiver whose RRTR this answers.
    public var ssrc: UInt32
    /// Middle 32 bits of that RRTR's NTP timestamp (LRR).
    public var lastRR: UInt32
    /// Delay since that RRTR, in 1/65536 s (DLRR).
    public var delaySinceLastRR: UInt32
}

/// The round-trip blocks of one XR packet: the sender's RRTR NTP timestamp, its DLRR sub-blocks.
public struct RTCPXRTimes: Equatable, Sendable {
    public var receiverReferenceTime: UInt64?
    public var dlrr: [RTCPDLRR] = []
    public init(receiverReferenceTime: UInt64? = nil, dlrr: [RTCPDLRR] = []) {
        self.receiverReferenceTime = receiverReferenceTime
        self.dlrr = dlrr
    }
}

/// One RTCP packet of a compound datagram.
public enum RTCPPacket: Equatable, Sendable {
    case senderReport(ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32, reports: [RTCPReportBlock])
    case receiverReport(ssrc: UInt32, reports: [RTCPReportBlock])
    /// Source descriptions: CNAME per SSRC (other items are not kept).
    case sourceDescription([(ssrc: UInt32, cname: String?)])
    case goodbye(ssrcs: [UInt32], reason: String?)
    case extendedReport(ssrc: UInt32, voipMetrics: [RTCPVoIPMetrics], blockTypes: [UInt8], times: RTCPXRTimes)
    /// APP, RTPFB, PSFB and others: kept as the packet type only.
    case other(packetType: UInt8, ssrc: UInt32?)

    public static func == (a: RTCPPacket, b: RTCPPacket) -> Bool {
        switch (a, b) {
        case let (.senderReport(a1, a2, a3, a4, a5, a6), .senderReport(b1, b2, b3, b4, b5, b6)):
            a1 == b1 && a2 == b2 && a3 == b3 && a4 == b4 && a5 == b5 && a6 == b6
        case let (.receiverReport(a1, a2), .receiverReport(b1, b2)): a1 == b1 && a2 == b2
        case let (.sourceDescription(x), .sourceDescription(y)):
            x.count == y.count && zip(x, y).allSatisfy { $0.ssrc == $1.ssrc && $0.cname == $1.cname }
        case let (.goodbye(a1, a2), .goodbye(b1, b2)): a1 == b1 && a2 == b2
        case let (.extendedReport(a1, a2, a3, a4), .extendedReport(b1, b2, b3, b4)): a1 == b1 && a2 == b2 && a3 == b3 && a4 == b4
        case let (.other(a1, a2), .other(b1, b2)): a1 == b1 && a2 == b2
        default: false
        }
    }

    public var packetType: UInt8 {
        switch self {
        case .senderReport: 200
        case .receiverReport: 201
        case .sourceDescription: 202
        case .goodbye: 203
        case .extendedReport: 207
        case .other(let pt, _): pt
        }
    }
}

/// A compound RTCP datagram (RFC 3550 §6.1): several packets back to back.
public struct RTCPCompound: Equatable, Sendable {
    public var packets: [RTCPPacket]
    /// True when the datagram ended in a malformed packet; the packets before it are kept.
    public var truncated: Bool

    /// Cheap structural test used for classification: version 2, packet type 192-223 and a
    /// first length that fits. (SRTCP's trailer makes the later lengths unreliable.)
    @inline(__always)
    package static func looksValid(_ p: UnsafeRawBufferPointer) -> Bool {
        guard p.count >= 8, p.u8(0) & 0xC0 == 0x80 else { return false }
        let pt = p.u8(1)
        guard pt >= 192 && pt <= 223 else { return false }
        return (Int(p.u16(2)) + 1) * 4 <= p.count
    }

    public static func parse(_ p: UnsafeRawBufferPointer) -> RTCPCompound? {
        guard looksValid(p) else { return nil }
        var packets: [RTCPPacket] = []
        var offset = 0
        var truncated = false
        while offset + 4 <= p.count {
            let b0 = p.u8(offset)
            let pt = p.u8(offset + 1)
            let length = (Int(p.u16(offset + 2)) + 1) * 4
            guard b0 & 0xC0 == 0x80, pt >= 192, pt <= 223, offset + length <= p.count else {
                truncated = true  // typically the SRTCP index and authentication tag
                break
            }
            let body = p.slice(from: offset, count: length)
            let count = Int(b0 & 0x1F)
            if let packet = parsePacket(pt: pt, count: count, body: body) {
                packets.append(packet)
            } else {
                truncated = true
                break
            }
            offset += length
        }
        return packets.isEmpty ? nil : RTCPCompound(packets: packets, truncated: truncated)
    }

    static func parsePacket(pt: UInt8, count: Int, body p: UnsafeRawBufferPointer) -> RTCPPacket? {
        switch pt {
        case 200:
            guard p.count >= 28 + 24 * count else { return nil }
            return .senderReport(
                ssrc: p.u32(4), ntpTimestamp: p.u64(8), rtpTimestamp: p.u32(16),
                packetCount: p.u32(20), octetCount: p.u32(24), reports: reportBlocks(p, at: 28, count: count))
        case 201:
            guard p.count >= 8 + 24 * count else { return nil }
            return .receiverReport(ssrc: p.u32(4), reports: reportBlocks(p, at: 8, count: count))
        case 202:
            var chunks: [(ssrc: UInt32, cname: String?)] = []
            var o = 4
            for _ in 0..<count {
                guard o + 4 <= p.count else { break }
                let ssrc = p.u32(o)
                o += 4
                var cname: String?
                while o < p.count {
                    let type = p.u8(o)
                    if type == 0 { break }
                    guard o + 2 <= p.count else { break }
                    let len = Int(p.u8(o + 1))
                    guard o + 2 + len <= p.count else { break }
                    if type == 1 { cname = String(decoding: p.slice(from: o + 2, count: len), as: UTF8.self) }
                    o += 2 + len
                }
                o = (o / 4 + 1) * 4  // the null item, then padding to a 32-bit boundary
                chunks.append((ssrc, cname))
            }
            return .sourceDescription(chunks)
        case 203:
            guard p.count >= 4 + 4 * count else { return nil }
            let ssrcs = (0..<count).map { p.u32(4 + 4 * $0) }
            var reason: String?
            let r = 4 + 4 * count
            if r < p.count {
                let len = Int(p.u8(r))
                if len > 0, r + 1 + len <= p.count { reason = String(decoding: p.slice(from: r + 1, count: len), as: UTF8.self) }
            }
            return .goodbye(ssrcs: ssrcs, reason: reason)
        case 207:
            guard p.count >= 8 else { return nil }
            var metrics: [RTCPVoIPMetrics] = []
            var types: [UInt8] = []
            var times = RTCPXRTimes()
            var o = 8
            while o + 4 <= p.count {
                let bt = p.u8(o)
                let blockLength = (Int(p.u16(o + 2)) + 1) * 4
                guard o + blockLength <= p.count else { break }
                types.append(bt)
                if bt == 4, blockLength >= 12 {
                    times.receiverReferenceTime = p.u64(o + 4)
                } else if bt == 5 {
                    var k = o + 4
                    while k + 12 <= o + blockLength {
                        times.dlrr.append(RTCPDLRR(ssrc: p.u32(k), lastRR: p.u32(k + 4), delaySinceLastRR: p.u32(k + 8)))
                        k += 12
                    }
                }
                if bt == 7, blockLength >= 36 {
                    let b = p.slice(from: o, count: blockLength)
                    metrics.append(
                        RTCPVoIPMetrics(
                            ssrc: b.u32(4), lossRate: b.u8(8), discardRate: b.u8(9), burstDensity: b.u8(10),
                            gapDensity: b.u8(11), burstDuration: b.u16(12), gapDuration: b.u16(14),
                            roundTripDelay: b.u16(16), endSystemDelay: b.u16(18),
                            signalLevel: Int8(bitPattern: b.u8(20)), noiseLevel: Int8(bitPattern: b.u8(21)),
                            residualEchoReturnLoss: b.u8(22), gmin: b.u8(23), rFactor: b.u8(24),
                            externalRFactor: b.u8(25), mosLQ: b.u8(26), mosCQ: b.u8(27),
                            receiverConfiguration: b.u8(28), jitterBufferNominal: b.u16(30),
                            jitterBufferMaximum: b.u16(32), jitterBufferAbsoluteMaximum: b.u16(34)))
                }
                o += blockLength
            }
            return .extendedReport(ssrc: p.u32(4), voipMetrics: metrics, blockTypes: types, times: times)
        default:
            return .other(packetType: pt, ssrc: p.count >= 8 ? p.u32(4) : nil)
        }
    }

    static func reportBlocks(_ p: UnsafeRawBufferPointer, at start: Int, count: Int) -> [RTCPReportBlock] {
        (0..<count).map { i in
            let o = start + 24 * i
            let word = p.u32(o + 4)
            // Sign-extend the 24-bit cumulative loss.
            let lost = Int32(bitPattern: (word & 0x00FF_FFFF) << 8) >> 8
            return RTCPReportBlock(
                ssrc: p.u32(o), fractionLost: UInt8(word >> 24), cumulativeLost: lost,
                extendedHighestSequence: p.u32(o + 8), jitter: p.u32(o + 12),
                lastSR: p.u32(o + 16), delaySinceLastSR: p.u32(o + 20))
        }
    }
}
