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

    // Open addressing over flat arrays (hash 0 = empty slot): a lookup touches no reference counts.
    private var hashes: [UInt64]
    private var entries: [Entry]
    private var nameRanges: [Range<Int>]
    private var names: [UInt8] = []
    private let mask: Int

    static let shared = FieldTable()

    private init() {
        var list: [(String, Entry)] = NumField.allCases.map { ($0.name, .num($0)) }
            + StrField.allCases.map { ($0.name, .str($0)) }
        list.removeAll { ["bandwidth", "cpu", "other"].contains($0.0) }  // only inside qualityLimitationDurations
        list += [("id", .id), ("type", .type), ("timestamp", .timestamp), ("values", .values),
                 ("qualityLimitationDurations", .qualityLimitationDurations)]
        var size = 1
        while size < list.count * 4 { size <<= 1 }
        mask = size - 1
        hashes = Array(repeating: 0, count: size)
        entries = Array(repeating: .id, count: size)
        nameRanges = Array(repeating: 0..<0, count: size)
        for (name, entry) in list {
            let bytes = Array(name.utf8)
            let h = max(1, bytes.withUnsafeBufferPointer { FieldTable.hash($0) })
            var i = Int(truncatingIfNeeded: h) & mask
            while hashes[i] != 0 { i = (i + 1) & mask }
            hashes[i] = h
            entries[i] = entry
            nameRanges[i] = names.count..<(names.count + bytes.count)
            names += bytes
        }
    }

    /// Length and the first and last eight bytes, mixed: keys differ there, and equal hashes
    /// are confirmed with memcmp, so this only needs to spread the table's few dozen names.
    @inline(__always) static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        let n = bytes.count
        guard let p = bytes.baseAddress else { return 0 }
        var a: UInt64 = 0, b: UInt64 = 0
        if n >= 8 {
            a = UnsafeRawPointer(p).loadUnaligned(as: UInt64.self)
            b = UnsafeRawPointer(p + n - 8).loadUnaligned(as: UInt64.self)
        } else {
            for i in 0..<n { a = a << 8 | UInt64(p[i]) }
        }
        var h = (a &* 0x9E37_79B9_7F4A_7C15) ^ (b &* 0xC2B2_AE3D_27D4_EB4F) ^ UInt64(n)
        h ^= h >> 31
        h = h &* 0x94D0_49BB_1331_11EB
        return h ^ (h >> 29)
    }

    @inline(__always) func lookup(_ key: UnsafeBufferPointer<UInt8>) -> Entry? {
        let h = max(1, FieldTable.hash(key))
        var i = Int(truncatingIfNeeded: h) & mask
        while hashes[i] != 0 {
            if hashes[i] == h {
                let r = nameRanges[i]
                if r.count == key.count, names.withUnsafeBufferPointer({ memcmp($0.baseAddress! + r.lowerBound, key.baseAddress!, key.count) == 0 }) {
                    return entries[i]
                }
            }
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
    /// The chain generation (full report) that last wrote this object.
    var generation: UInt32 = 0
    /// While a delta applies: the numbers and timestamp before it, for the next prediction.
    var previous: [Double] = []
    var previousTimestamp: Double = .nan
    var hasPrevious = false

    /// Remembers the current values before a delta changes them (storage reused across deltas).
    mutating func beforeDelta(keepNumbers: Bool) {
        hasPrevious = true
        previousTimestamp = timestamp
        guard keepNumbers else { return }
        if previous.count != num.count { previous = num; return }
        previous.withUnsafeMutableBufferPointer { d in num.withUnsafeBufferPointer { d.update(fromContentsOf: $0) } }
    }

    @inline(__always) subscript(_ f: NumField) -> Double? {
        let v = num[f.rawValue]
        return v.isNaN ? nil : v
    }

    @inline(__always) subscript(_ f: StrField) -> String? { str[f.rawValue] }

    /// No storage at all: a placeholder while the scanner's reusable object is lent out.
    static let empty: StatObject = {
        var o = StatObject()
        o.previous = []
        o.num = []
        o.rate = []
        o.str = []
        return o
    }()

    /// Back to "nothing read", keeping the storage (the scanner reuses one object per report).
    mutating func reset() {
        type = .other
        timestamp = .nan
        timestampRate = 0
        num.withUnsafeMutableBufferPointer { $0.update(repeating: .nan) }
        rate.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        str.withUnsafeMutableBufferPointer { b in
            for i in b.indices where b[i] != nil { b[i] = nil }
        }
    }

    /// Takes `other`'s values into this object's own storage: no allocation when it is unshared.
    mutating func assign(_ other: StatObject, generation: UInt32) {
        self.generation = generation
        type = other.type
        timestamp = other.timestamp
        timestampRate = other.timestampRate
        num.withUnsafeMutableBufferPointer { d in other.num.withUnsafeBufferPointer { d.update(fromContentsOf: $0) } }
        rate.withUnsafeMutableBufferPointer { d in other.rate.withUnsafeBufferPointer { d.update(fromContentsOf: $0) } }
        str.withUnsafeMutableBufferPointer { d in
            other.str.withUnsafeBufferPointer { o in
                for i in d.indices {
                    switch (d[i], o[i]) {
                    case (nil, nil): break
                    case (let a?, let b?) where a == b: break
                    default: d[i] = o[i]
                    }
                }
            }
        }
    }
}
