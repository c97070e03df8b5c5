#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The statistics the analyser reads. Everything else in a report is skipped unread.
///
/// W3C and legacy goog names map onto one set of slots, so both dialects flow through the
/// same interval maths. Units stay as the source gives them (W3C jitter in seconds, goog in
/// ms); the interval code converts per dialect.
enum NumField: Int, CaseIterable {
    // RTP streams (W3C).
    case ssrc, packetsReceived, packetsLost, packetsSent, bytesReceived, bytesSent, jitter
    case concealedSamples, silentConcealedSamples, concealmentEvents, totalSamplesReceived
    case jitterBufferDelay, jitterBufferEmittedCount
    case framesDecoded, frameWidth, frameHeight, framesPerSecond, freezeCount, totalFreezesDuration
    case pauseCount, totalPausesDuration, totalInterFrameDelay
    case qlBandwidth, qlCPU, qlOther  // qualityLimitationDurations members
    case roundTripTime, totalRoundTripTime, roundTripTimeMeasurements, fractionLost
    // Candidate pair.
    case currentRoundTripTime, responsesReceived
    // Codec.
    case clockRate
    // goog (values are strings in the report; parsed as numbers).
    case googJitterReceived, googRtt, googDecodingCTN, googDecodingPLC, googJitterBufferMs
    case googFrameRateReceived, googFrameWidthReceived, googFrameHeightReceived
    case googFrameRateSent, googFrameWidthSent, googFrameHeightSent

    static let count = allCases.count

    var name: String {
        switch self {
        case .qlBandwidth: "bandwidth"
        case .qlCPU: "cpu"
        case .qlOther: "other"
        default: "\(self)"
        }
    }
}

enum StrField: Int, CaseIterable {
    case kind, codecId, mimeType, localId, state, localCandidateId, remoteCandidateId, candidateType
    case networkType, protocolName, relayProtocol, selectedCandidatePairId, qualityLimitationReason
    case nominated, mediaType
    // goog.
    case googCodecName, googActiveConnection, googLocalCandidateType, googRemoteCandidateType
    case googTransportType, googBandwidthLimitedResolution, googCpuLimitedResolution

    static let count = allCases.count

    var name: String {
        switch self {
        case .protocolName: "protocol"
        default: "\(self)"
        }
    }
}

enum StatType: UInt8 {
    case other, inboundRTP, outboundRTP, remoteInbound, remoteOutbound, candidatePair
    case localCandidate, remoteCandidate, transport, codec
    // goog.
    case googSSRC, googCandidatePair, googLocalCandidate, googRemoteCandidate

    init(name: String) {
        switch name {
        case "inbound-rtp": self = .inboundRTP
        case "outbound-rtp": self = .outboundRTP
        case "remote-inbound-rtp": self = .remoteInbound
        case "remote-outbound-rtp": self = .remoteOutbound
        case "candidate-pair": self = .candidatePair
        case "local-candidate": self = .localCandidate
        case "remote-candidate": self = .remoteCandidate
        case "transport": self = .transport
        case "codec": self = .codec
        case "ssrc": self = .googSSRC
        case "googCandidatePair": self = .googCandidatePair
        case "localcandidate": self = .googLocalCandidate
        case "remotecandidate": self = .googRemoteCandidate
        default: self = .other
        }
    }
}

/// Looks up a field by the raw bytes of its JSON key without building a String.
struct FieldTable {
    enum Entry {
        case num(NumField)
        case str(StrField)
        case id, type, timestamp, values, qualityLimitationDurations
    }

    private var slots: [(hash: UInt64, name: [UInt8], entry: Entry)?]
    private let mask: Int

    static let shared = FieldTable()

    private init() {
        var entries: [(String, Entry)] = NumField.allCases.map { ($0.name, .num($0)) }
            + StrField.allCases.map { ($0.name, .str($0)) }
        entries.removeAll { ["bandwidth", "cpu", "other"].contains($0.0) }  // only inside qualityLimitationDurations
        entries += [("id", .id), ("type", .type), ("timestamp", .timestamp), ("values", .values),
                    ("qualityLimitationDurations", .qualityLimitationDurations)]
        var size = 1
        while size < entries.count * 4 { size <<= 1 }
        mask = size - 1
        slots = Array(repeating: nil, count: size)
        for (name, entry) in entries {
            let bytes = Array(name.utf8)
            let h = FieldTable.hash(bytes[...])
            var i = Int(truncatingIfNeeded: h) & mask
            while slots[i] != nil { i = (i + 1) & mask }
            slots[i] = (h, bytes, entry)
        }
    }

    @inline(__always) static func hash<C: Collection>(_ bytes: C) -> UInt64 where C.Element == UInt8 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h
    }

    @inline(__always) func lookup(_ key: UnsafeBufferPointer<UInt8>) -> Entry? {
        let h = FieldTable.hash(key)
        var i = Int(truncatingIfNeeded: h) & mask
        while let s = slots[i] {
            if s.hash == h && s.name.count == key.count,
               s.name.withUnsafeBufferPointer({ memcmp($0.baseAddress!, key.baseAddress!, key.count) == 0 }) { return s.entry }
            i = (i + 1) & mask
        }
        return nil
    }

    /// Members of `qualityLimitationDurations`.
    static func qualityLimitationField(_ key: UnsafeBufferPointer<UInt8>) -> NumField? {
        switch String(decoding: key, as: UTF8.self) {
        case "bandwidth": .qlBandwidth
        case "cpu": .qlCPU
        case "other": .qlOther
        default: nil
        }
    }
}

/// One statistics object as the analyser keeps it: only the fields it reads.
struct StatObject {
    var type: StatType = .other
    var timestamp: Double = .nan
    var num = [Double](repeating: .nan, count: NumField.count)
    var str = [String?](repeating: nil, count: StrField.count)
    /// Each number's last change, mirroring the log format's prediction (see CallLog/StatsDelta).
    var rate = [Double](repeating: 0, count: NumField.count)
    var timestampRate: Double = 0

    @inline(__always) subscript(_ f: NumField) -> Double? {
        let v = num[f.rawValue]
        return v.isNaN ? nil : v
    }

    @inline(__always) subscript(_ f: StrField) -> String? { str[f.rawValue] }
}
