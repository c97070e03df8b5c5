/// What a payload type number means: a codec name and the RTP clock rate.
public struct PayloadFormat: Hashable, Sendable {
    public var name: String
    /// Timestamp units per second; 0 when unknown (jitter cannot be computed then).
    public var clockRate: UInt32

    public init(name: String, clockRate: UInt32) {
        self.name = name
        self.clockRate = clockRate
    }

    /// RFC 4733 events keep one timestamp for a whole event, so their timestamps say nothing
    /// about arrival timing and they are left out of jitter (as Wireshark does).
    public var isTelephoneEvent: Bool { name.lowercased().hasPrefix("telephone-event") }
}

/// Where a stream's clock rate came from, reported so that readers can judge the jitter.
public enum ClockRateSource: String, Sendable {
    /// RFC 3551 static payload type table.
    case `static`
    /// `a=rtpmap` in SDP seen in the capture.
    case sdp
    /// A dynamic payload type with no SDP: the configured default was assumed.
    case assumed
    /// Not known; jitter is not computed.
    case unknown
}

/// RFC 3551 static payload types (and the two older ones Wireshark still knows).
public enum StaticPayloadTypes {
    /// Index = payload type; nil for unassigned numbers and the dynamic range.
    static let table: [PayloadFormat?] = {
        var t = [PayloadFormat?](repeating: nil, count: 128)
        let entries: [(Int, String, UInt32)] = [
            (0, "PCMU", 8000), (1, "1016", 8000), (2, "G721", 8000), (3, "GSM", 8000),
            (4, "G723", 8000), (5, "DVI4", 8000), (6, "DVI4", 16000), (7, "LPC", 8000),
            (8, "PCMA", 8000), (9, "G722", 8000), (10, "L16", 44100), (11, "L16", 44100),
            (12, "QCELP", 8000), (13, "CN", 8000), (14, "MPA", 90000), (15, "G728", 8000),
            (16, "DVI4", 11025), (17, "DVI4", 22050), (18, "G729", 8000), (19, "CN", 8000),
            (25, "CelB", 90000), (26, "JPEG", 90000), (28, "nv", 90000), (31, "H261", 90000),
            (32, "MPV", 90000), (33, "MP2T", 90000), (34, "H263", 90000),
        ]
        for (pt, name, rate) in entries { t[pt] = PayloadFormat(name: name, clockRate: rate) }
        return t
    }()

    public static func format(_ payloadType: UInt8) -> PayloadFormat? {
        table[Int(payloadType & 0x7F)]
    }

    /// Comfort noise, RFC 3389 (13) and the pre-3551 number (19).
    @inline(__always)
    static func isComfortNoise(_ pt: UInt8) -> Bool { pt == 13 || pt == 19 }

    /// Clock rates of common dynamically numbered encodings, for an `a=rtpmap` that names an
    /// encoding but gives a rate of 0 (malformed, but seen).
    static func clockRate(encodingName: String) -> UInt32 {
        switch encodingName.lowercased() {
        case "opus": 48000
        case "amr", "evrc", "telephone-event", "g726-16", "g726-24", "g726-32", "g726-40", "ilbc", "speex": 8000
        case "amr-wb", "evs", "g7221", "silk": 16000
        case "h264", "h265", "vp8", "vp9", "av1", "h263-1998", "h263-2000", "mp4v-es": 90000
        case "red", "t140": 1000
        default: 0
        }
    }
}
