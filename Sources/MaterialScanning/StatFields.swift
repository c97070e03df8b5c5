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
    case totalPausesDuration
    // Audio level (inbound-rtp; media-source and track objects).
    case audioLevel, totalAudioEnergy
    // Data channels.
    case messagesSent, messagesReceived
    case qlBandwidth, qlCPU, qlOther  // qualityLimitationDurations members
    case roundTripTime, totalRoundTripTime, roundTripTimeMeasurements
    // Candidate pair.
    case currentRoundTripTime, responsesReceived
    // Codec.
    case clockRate
    // goog (values are strings in the report; parsed as numbers).
    case googJitterReceived, googRtt, googDecodingCTN, googDecodingPLC, googJitterBufferMs
    case googFrameRateReceived, googFrameWidthReceived, googFrameHeightReceived
    case googFrameRateSent, googFrameWidthSent, googFrameHeightSent
    /// Audio levels, 0-32767: of what is played (`_recv`) and of what is captured (`_send`).
    case audioOutputLevel, audioInputLevel

    static let count = allCases.count

    /// The member's name in a report, spelled out so that renaming a case never changes what is
    /// read (`qlBandwidth`, `qlCPU`, `qlOther`: members of `qualityLimitationDurations`).
    var jsonName: String {
        switch self {
        case .ssrc: "ssrc"
        case .packetsReceived: "packetsReceived"
        case .packetsLost: "packetsLost"
        case .packetsSent: "packetsSent"
        case .bytesReceived: "bytesReceived"
        case .bytesSent: "bytesSent"
        case .jitter: "jitter"
        case .concealedSamples: "concealedSamples"
        case .silentConcealedSamples: "silentConcealedSamples"
        case .concealmentEvents: "concealmentEvents"
        case .totalSamplesReceived: "totalSamplesReceived"
        case .jitterBufferDelay: "jitterBufferDelay"
        case .jitterBufferEmittedCount: "jitterBufferEmittedCount"
        case .framesDecoded: "framesDecoded"
        case .frameWidth: "frameWidth"
        case .frameHeight: "frameHeight"
        case .framesPerSecond: "framesPerSecond"
        case .freezeCount: "freezeCount"
        case .totalFreezesDuration: "totalFreezesDuration"
        case .totalPausesDuration: "totalPausesDuration"
        case .audioLevel: "audioLevel"
        case .totalAudioEnergy: "totalAudioEnergy"
        case .messagesSent: "messagesSent"
        case .messagesReceived: "messagesReceived"
        case .qlBandwidth: "bandwidth"
        case .qlCPU: "cpu"
        case .qlOther: "other"
        case .roundTripTime: "roundTripTime"
        case .totalRoundTripTime: "totalRoundTripTime"
        case .roundTripTimeMeasurements: "roundTripTimeMeasurements"
        case .currentRoundTripTime: "currentRoundTripTime"
        case .responsesReceived: "responsesReceived"
        case .clockRate: "clockRate"
        case .googJitterReceived: "googJitterReceived"
        case .googRtt: "googRtt"
        case .googDecodingCTN: "googDecodingCTN"
        case .googDecodingPLC: "googDecodingPLC"
        case .googJitterBufferMs: "googJitterBufferMs"
        case .googFrameRateReceived: "googFrameRateReceived"
        case .googFrameWidthReceived: "googFrameWidthReceived"
        case .googFrameHeightReceived: "googFrameHeightReceived"
        case .googFrameRateSent: "googFrameRateSent"
        case .googFrameWidthSent: "googFrameWidthSent"
        case .googFrameHeightSent: "googFrameHeightSent"
        case .audioOutputLevel: "audioOutputLevel"
        case .audioInputLevel: "audioInputLevel"
        }
    }

    /// A legacy (goog) member: a string value inside `values`, never predicted by deltas.
    var isLegacy: Bool {
        switch self {
        case .googJitterReceived, .googRtt, .googDecodingCTN, .googDecodingPLC, .googJitterBufferMs,
            .googFrameRateReceived, .googFrameWidthReceived, .googFrameHeightReceived,
            .googFrameRateSent, .googFrameWidthSent, .googFrameHeightSent, .audioOutputLevel, .audioInputLevel:
            true
        default: false
        }
    }
}

enum StrField: Int, CaseIterable {
    case kind, codecId, mimeType, state, localCandidateId, remoteCandidateId, candidateType
    case networkType, protocolName, relayProtocol, selectedCandidatePairId, qualityLimitationReason
    case nominated, mediaType
    /// Links from an RTP stream to its media source (sent) or its track (received or sent).
    case mediaSourceId, trackId
    /// A local candidate's STUN or TURN server URL (`turns:…`, `turn:…?transport=tcp`).
    case url
    // goog.
    case googCodecName, googActiveConnection, googLocalCandidateType, googRemoteCandidateType
    case googTransportType, googBandwidthLimitedResolution, googCpuLimitedResolution

    static let count = allCases.count

    /// The member's name in a report, spelled out as `NumField.jsonName` is.
    var jsonName: String {
        switch self {
        case .kind: "kind"
        case .codecId: "codecId"
        case .mimeType: "mimeType"
        case .state: "state"
        case .localCandidateId: "localCandidateId"
        case .remoteCandidateId: "remoteCandidateId"
        case .candidateType: "candidateType"
        case .networkType: "networkType"
        case .protocolName: "protocol"
        case .relayProtocol: "relayProtocol"
        case .selectedCandidatePairId: "selectedCandidatePairId"
        case .qualityLimitationReason: "qualityLimitationReason"
        case .nominated: "nominated"
        case .mediaType: "mediaType"
        case .mediaSourceId: "mediaSourceId"
        case .trackId: "trackId"
        case .url: "url"
        case .googCodecName: "googCodecName"
        case .googActiveConnection: "googActiveConnection"
        case .googLocalCandidateType: "googLocalCandidateType"
        case .googRemoteCandidateType: "googRemoteCandidateType"
        case .googTransportType: "googTransportType"
        case .googBandwidthLimitedResolution: "googBandwidthLimitedResolution"
        case .googCpuLimitedResolution: "googCpuLimitedResolution"
        }
    }
}

/// The types of object the metrics read; every other type (remote-outbound-rtp, certificates,
/// video media sources' frame counts…) is `other`, read for its timestamp only and not held by a
/// chain.
enum StatType: UInt8 {
    case other, inboundRTP, outboundRTP, remoteInbound, candidatePair
    case localCandidate, remoteCandidate, transport, codec
    /// What a sender captures (`media-source`), a track (`track`, of older browsers), a data
    /// channel (`data-channel`): read for audio levels and data-channel traffic.
    case mediaSource, track, dataChannel
    // goog.
    case googSSRC, googCandidatePair, googLocalCandidate, googRemoteCandidate

    /// Whether the metrics read number `f` from an object of this type; the scanner skips the
    /// others unread (a candidate pair's and a transport's byte and packet counters change at
    /// every poll, and no metric takes them from there). `other`, the type of an object whose
    /// type is not read yet, and the legacy types read every number.
    @inline(__always) func reads(_ f: NumField) -> Bool { numbersRead & (1 << UInt64(f.rawValue)) != 0 }

    /// `reads` as a bit per `NumField` (at most 64 of them: `ScannerTests` checks).
    private var numbersRead: UInt64 {
        func bit(_ f: NumField) -> UInt64 { 1 << UInt64(f.rawValue) }
        switch self {
        case .inboundRTP:
            return bit(.ssrc) | bit(.packetsReceived) | bit(.packetsLost) | bit(.bytesReceived) | bit(.jitter)
                | bit(.concealedSamples) | bit(.silentConcealedSamples) | bit(.concealmentEvents) | bit(.totalSamplesReceived)
                | bit(.jitterBufferDelay) | bit(.jitterBufferEmittedCount) | bit(.framesDecoded) | bit(.frameWidth)
                | bit(.frameHeight) | bit(.framesPerSecond) | bit(.freezeCount) | bit(.totalFreezesDuration)
                | bit(.totalPausesDuration) | bit(.audioLevel) | bit(.totalAudioEnergy)
        case .outboundRTP:
            return bit(.ssrc) | bit(.packetsSent) | bit(.bytesSent) | bit(.framesDecoded) | bit(.frameWidth) | bit(.frameHeight)
                | bit(.framesPerSecond) | bit(.qlBandwidth) | bit(.qlCPU) | bit(.qlOther)
        case .remoteInbound:
            return bit(.ssrc) | bit(.packetsLost) | bit(.jitter) | bit(.roundTripTime) | bit(.totalRoundTripTime)
                | bit(.roundTripTimeMeasurements)
        case .candidatePair: return bit(.currentRoundTripTime) | bit(.responsesReceived)
        case .codec: return bit(.clockRate)
        case .mediaSource, .track: return bit(.audioLevel) | bit(.totalAudioEnergy)
        case .dataChannel: return bit(.messagesSent) | bit(.messagesReceived)
        case .localCandidate, .remoteCandidate, .transport: return 0
        case .other, .googSSRC, .googCandidatePair, .googLocalCandidate, .googRemoteCandidate: return ~0
        }
    }

    /// From the raw bytes of the `type` string: no String is made for the ~20 objects a report has.
    init(raw name: UnsafeBufferPointer<UInt8>) {
        switch name.count {
        case 4 where JSONCursor.equals(name, "ssrc"): self = .googSSRC
        case 5 where JSONCursor.equals(name, "codec"): self = .codec
        case 5 where JSONCursor.equals(name, "track"): self = .track
        case 9 where JSONCursor.equals(name, "transport"): self = .transport
        case 11 where JSONCursor.equals(name, "inbound-rtp"): self = .inboundRTP
        case 12 where JSONCursor.equals(name, "outbound-rtp"): self = .outboundRTP
        case 12 where JSONCursor.equals(name, "media-source"): self = .mediaSource
        case 12 where JSONCursor.equals(name, "data-channel"): self = .dataChannel
        case 14 where JSONCursor.equals(name, "candidate-pair"): self = .candidatePair
        case 14 where JSONCursor.equals(name, "localcandidate"): self = .googLocalCandidate
        case 15 where JSONCursor.equals(name, "local-candidate"): self = .localCandidate
        case 15 where JSONCursor.equals(name, "remotecandidate"): self = .googRemoteCandidate
        case 16 where JSONCursor.equals(name, "remote-candidate"): self = .remoteCandidate
        case 17 where JSONCursor.equals(name, "googCandidatePair"): self = .googCandidatePair
        case 18 where JSONCursor.equals(name, "remote-inbound-rtp"): self = .remoteInbound
        default: self = .other
        }
    }
}

/// Looks up a field by the raw bytes of its JSON key without building a String.
struct FieldTable {
    enum Entry: Equatable {
        case num(NumField)
        case str(StrField)
        case id, type, timestamp, values, qualityLimitationDurations
        /// Not keys: in a member layout, where a legacy `values` object opens (`,"values":{`)
        /// and closes (`}`), its members recorded between them like the object's own.
        case valuesOpen, valuesClose
    }

    // Open addressing over flat arrays (hash 0 = empty slot): a lookup touches no reference counts.
    private var hashes: [UInt64]
    private var entries: [Entry]
    /// Each name's first and last eight bytes (as `words` reads them) and length: names of up to
    /// 16 bytes, nearly all of them, are confirmed by these alone.
    private var firstWords: [UInt64]
    private var lastWords: [UInt64]
    private var nameRanges: [Range<Int>]
    private var names: [UInt8] = []
    private let mask: Int

    static let shared = FieldTable()

    private init() {
        var list: [(String, Entry)] =
            NumField.allCases.map { ($0.jsonName, .num($0)) }
            + StrField.allCases.map { ($0.jsonName, .str($0)) }
        list.removeAll { ["bandwidth", "cpu", "other"].contains($0.0) }  // only inside qualityLimitationDurations
        list += [
            ("id", .id), ("type", .type), ("timestamp", .timestamp), ("values", .values),
            ("qualityLimitationDurations", .qualityLimitationDurations),
        ]
        var size = 1
        while size < list.count * 4 { size <<= 1 }
        mask = size - 1
        hashes = Array(repeating: 0, count: size)
        entries = Array(repeating: .id, count: size)
        firstWords = Array(repeating: 0, count: size)
        lastWords = Array(repeating: 0, count: size)
        nameRanges = Array(repeating: 0..<0, count: size)
        for (name, entry) in list {
            let bytes = Array(name.utf8)
            let (a, b) = bytes.withUnsafeBufferPointer { FieldTable.words($0) }
            let h = FieldTable.hash(a, b, bytes.count)
            var i = Int(truncatingIfNeeded: h) & mask
            while hashes[i] != 0 { i = (i + 1) & mask }
            hashes[i] = h
            entries[i] = entry
            firstWords[i] = a
            lastWords[i] = b
            nameRanges[i] = names.count..<(names.count + bytes.count)
            names += bytes
        }
    }

    /// The first and last eight bytes (overlapping when shorter than 16; shorter than 8: the
    /// bytes themselves). Together with the length they identify any name of up to 16 bytes.
    @inline(__always) static func words(_ bytes: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64) {
        let n = bytes.count
        guard let p = bytes.baseAddress else { return (0, 0) }
        if n >= 8 {
            return (UnsafeRawPointer(p).loadUnaligned(as: UInt64.self), UnsafeRawPointer(p + n - 8).loadUnaligned(as: UInt64.self))
        }
        var a: UInt64 = 0
        for i in 0..<n { a = a << 8 | UInt64(p[i]) }
        return (a, 0)
    }

    /// Mixes the words and length: only needs to spread the table's few dozen names (never 0).
    @inline(__always) static func hash(_ a: UInt64, _ b: UInt64, _ n: Int) -> UInt64 {
        var h = (a &* 0x9E37_79B9_7F4A_7C15) ^ (b &* 0xC2B2_AE3D_27D4_EB4F) ^ UInt64(n)
        h ^= h >> 31
        h = h &* 0x94D0_49BB_1331_11EB
        return max(1, h ^ (h >> 29))
    }

    @inline(__always) func lookup(_ key: UnsafeBufferPointer<UInt8>) -> Entry? {
        let (a, b) = FieldTable.words(key)
        let h = FieldTable.hash(a, b, key.count)
        var i = Int(truncatingIfNeeded: h) & mask
        while hashes[i] != 0 {
            if hashes[i] == h, firstWords[i] == a, lastWords[i] == b {
                let r = nameRanges[i]
                if r.count == key.count,
                    key.count <= 16
                        || names.withUnsafeBufferPointer({ memcmp($0.baseAddress! + r.lowerBound, key.baseAddress!, key.count) == 0 })
                {
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

/// The fields an object's members have written so far, to find a field written twice.
struct WrittenFields {
    private var numbers: UInt64 = 0
    private var strings: UInt32 = 0
    private var others: UInt8 = 0

    /// False when `entry` writes a field already written, or is legacy `values` (which writes
    /// any field); ids and unknown keys write none.
    mutating func add(_ entry: FieldTable.Entry?) -> Bool {
        switch entry {
        case nil, .id?, .valuesOpen?, .valuesClose?: return true
        case .values?: return false
        case .num(let f)?: return Self.insert(&numbers, UInt64(1) << f.rawValue)
        case .str(let f)?: return Self.insert(&strings, UInt32(1) << f.rawValue)
        case .type?: return Self.insert(&others, 1)
        case .timestamp?: return Self.insert(&others, 2)
        case .qualityLimitationDurations?: return Self.insert(&numbers, Self.qualityLimitationBits)
        }
    }

    private static let qualityLimitationBits = [NumField.qlBandwidth, .qlCPU, .qlOther].reduce(UInt64(0)) { $0 | 1 << $1.rawValue }

    @inline(__always) private static func insert<T: FixedWidthInteger>(_ set: inout T, _ bits: T) -> Bool {
        defer { set |= bits }
        return set & bits == 0
    }
}

extension ChainState {
    /// Where an object lies in `objects`: read through the accessors below, in place (a
    /// `StatObject` copy retains four arrays).
    typealias Slot = ObjectTable.Slot

    @inline(__always) func type(_ i: Slot) -> StatType { objects[i].type }
    /// The number, NaN when the object does not have it.
    @inline(__always) func num(_ i: Slot, _ f: NumField) -> Double { objects[i].num[f.rawValue] }
    @inline(__always) func str(_ i: Slot, _ f: StrField) -> String? { objects[i].str[f.rawValue] }
    @inline(__always) func slot(_ id: String) -> Slot? { objects.index(forKey: id) }
}

/// One statistics object as the analyser keeps it: only the fields it reads.
struct StatObject {
    var type: StatType = .other
    var timestamp: Double = .nan
    var num = [Double](repeating: .nan, count: NumField.count)
    var str = [String?](repeating: nil, count: StrField.count)
    /// Each number's last change, mirroring the log format's prediction (see CallLog/StatsDelta).
    private(set) var rate = [Double](repeating: 0, count: NumField.count)
    /// Whether a rate may be non-zero: only deltas set rates, so objects of full reports skip
    /// clearing them (the arrays were zeroed for every object kept unchanged).
    private(set) var ratesSet = false
    var timestampRate: Double = 0
    /// The chain generation (full report) that last wrote this object.
    var generation: UInt32 = 0
    /// While a delta applies: the numbers and timestamp before it, for the next prediction.
    var previous: [Double] = []
    var previousTimestamp: Double = .nan
    var hasPrevious = false
    /// Which `str` fields the object being read has set (bit per `StrField`), so that reading
    /// into an object that already holds values clears only the strings the report dropped.
    var stringsWritten: UInt32 = 0
    /// Where the timestamp's number lay in the line just read (empty when it was not a plain
    /// number): the scanner's note for recognising the object unchanged next time.
    var timestampValue: Range<Int> = 0..<0

    /// Remembers the current values before a delta changes them (storage reused across deltas).
    mutating func beforeDelta(keepNumbers: Bool) {
        hasPrevious = true
        previousTimestamp = timestamp
        guard keepNumbers else {
            // None kept, so none to compare with should the delta make the object another type
            // (`StatsScanner.updateRates` compares numbers only when they were kept).
            if !previous.isEmpty { previous.removeAll(keepingCapacity: true) }
            return
        }
        if previous.count != num.count { previous = num; return }
        _ = previous.withUnsafeMutableBufferPointer { d in num.withUnsafeBufferPointer { d.update(fromContentsOf: $0) } }
    }

    @inline(__always) subscript(_ f: NumField) -> Double? {
        let v = num[f.rawValue]
        return v.isNaN ? nil : v
    }

    @inline(__always) subscript(_ f: StrField) -> String? { str[f.rawValue] }

    /// Back to "nothing read", keeping the storage (the scanner reuses one object per report).
    mutating func reset() {
        stringsWritten = 0
        timestampValue = 0..<0
        type = .other
        timestamp = .nan
        timestampRate = 0
        num.withUnsafeMutableBufferPointer { $0.update(repeating: .nan) }
        clearRates()
        str.withUnsafeMutableBufferPointer { b in
            for i in b.indices where b[i] != nil { b[i] = nil }
        }
    }

    /// Before reading a report's object into this one in place: numbers, rates, type and
    /// timestamp start over; strings stay until `clearUnwrittenStrings`, so that unchanged
    /// ones are not made again.
    mutating func startOver(generation: UInt32) {
        self.generation = generation
        type = .other
        timestamp = .nan
        timestampRate = 0
        stringsWritten = 0
        timestampValue = 0..<0
        num.withUnsafeMutableBufferPointer { $0.update(repeating: .nan) }
        clearRates()
    }

    /// A full report had this object unchanged but for its timestamp: as if it had been read
    /// again (rates start over, as after any full report).
    mutating func keep(timestamp: Double, generation: UInt32) {
        self.generation = generation
        self.timestamp = timestamp
        timestampRate = 0
        clearRates()
    }

    @inline(__always) mutating func setRate(_ field: Int, to r: Double) {
        rate[field] = r
        if r != 0 { ratesSet = true }
    }

    @inline(__always) private mutating func clearRates() {
        guard ratesSet else { return }
        rate.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        ratesSet = false
    }

    /// Clears the strings that the object just read did not have.
    mutating func clearUnwrittenStrings() {
        let written = stringsWritten
        str.withUnsafeMutableBufferPointer { b in
            for i in b.indices where b[i] != nil && written & (1 << i) == 0 { b[i] = nil }
        }
    }

    /// Becomes a copy of `other` as `StatObject()` followed by `assign` would, in this object's
    /// storage (a recycled object's, whose delta notes are cleared). Every field `assign` does
    /// not set is listed here: `testRecycledStatesAndObjectsEqualFreshOnes` compares all of them.
    mutating func take(_ other: StatObject, generation: UInt32) {
        assign(other, generation: generation)
        previous.removeAll(keepingCapacity: true)
        previousTimestamp = .nan
        hasPrevious = false
        stringsWritten = 0
        timestampValue = 0..<0
    }

    /// Takes `other`'s values into this object's own storage: no allocation when it is unshared.
    mutating func assign(_ other: StatObject, generation: UInt32) {
        self.generation = generation
        type = other.type
        timestamp = other.timestamp
        timestampRate = other.timestampRate
        _ = num.withUnsafeMutableBufferPointer { d in other.num.withUnsafeBufferPointer { d.update(fromContentsOf: $0) } }
        if ratesSet || other.ratesSet {
            _ = rate.withUnsafeMutableBufferPointer { d in other.rate.withUnsafeBufferPointer { d.update(fromContentsOf: $0) } }
            ratesSet = other.ratesSet
        }
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

extension NumField {
    /// Top-level W3C numbers: the ones the log format predicts (nested members are not).
    static let predictable: [NumField] = allCases.filter {
        ![.qlBandwidth, .qlCPU, .qlOther].contains($0) && !$0.isLegacy
    }
}
