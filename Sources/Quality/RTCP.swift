/// RFC 3550 unit conversions shared by packet capture and analysis.
public enum RTCPMath {
    /// Seconds per unit of the compact NTP format (middle 32 bits of an NTP timestamp).
    public static let compactNTPUnitSeconds = 1.0 / 65_536

    /// Interarrival jitter from an RTCP report block (RTP timestamp units) to ms.
    ///
    /// The clock is the payload's RTP clock: 8000 for G.711, 48000 for Opus, 90000 for video.
    /// W3C `jitter` is already in seconds and needs no conversion.
    public static func jitterMs(timestampUnits: Double, clockRate: Double) -> Double? {
        guard clockRate > 0 else { return nil }
        return timestampUnits * 1000 / clockRate
    }

    /// RTT = A − LSR − DLSR (RFC 3550 §6.4.1), all three in compact NTP units, returned in ms.
    ///
    /// Subtraction wraps modulo 2³² so a roll-over of the NTP seconds does not matter.
    /// - Returns: nil when LSR is 0 (no sender report received yet) or the result is negative (clock
    ///   inconsistency between the two hosts).
    public static func roundTripTimeMs(
        arrival: UInt32, lastSenderReport: UInt32, delaySinceLastSenderReport: UInt32
    ) -> Double? {
        guard lastSenderReport != 0 else { return nil }
        let units = Int32(bitPattern: arrival &- lastSenderReport &- delaySinceLastSenderReport)
        guard units >= 0 else { return nil }
        return Double(units) * compactNTPUnitSeconds * 1000
    }

    /// The 8-bit "fraction lost" field of a report block as a fraction in 0..<1 (value/256).
    public static func fractionLost(_ field: UInt8) -> Double {
        Double(field) / 256
    }

    /// The "fraction lost" field for an interval (RFC 3550 A.3): `(lost << 8)/expected`, 0 when nothing
    /// was expected or the interval gained packets (duplicates), capped at 255.
    public static func fractionLostField(expected: Int64, lost: Int64) -> UInt8 {
        guard expected > 0, lost > 0 else { return 0 }
        return UInt8(min(255, (lost << 8) / expected))
    }
}

/// Running interarrival jitter estimate of RFC 3550 §6.4.1 / A.8 (floating-point form):
/// J += (|D| − J)/16, D the change in transit time between consecutive packets.
public struct InterarrivalJitter: Sendable, Equatable {
    /// RTP clock of the stream, Hz.
    public let clockRate: Double
    /// Current estimate, RTP timestamp units.
    public private(set) var timestampUnits: Double = 0
    private var previous: (arrivalSeconds: Double, rtpTimestamp: UInt32)?

    public init(clockRate: Double) {
        self.clockRate = clockRate
    }

    /// Feeds one packet, in arrival order.
    ///
    /// - Parameters:
    ///   - arrivalSeconds: local receive time, any origin.
    ///   - rtpTimestamp: the packet's RTP timestamp; wrap-around is handled.
    public mutating func record(arrivalSeconds: Double, rtpTimestamp: UInt32) {
        if let last = previous {
            let sentDelta = Double(Int32(bitPattern: rtpTimestamp &- last.rtpTimestamp))
            let arrivalDelta = (arrivalSeconds - last.arrivalSeconds) * clockRate
            let d = abs(arrivalDelta - sentDelta)
            timestampUnits += (d - timestampUnits) / 16
        }
        previous = (arrivalSeconds, rtpTimestamp)
    }

    /// The value an RTCP report block carries (truncated to an integer, as in A.8).
    public var reportField: UInt32 {
        UInt32(min(timestampUnits, Double(UInt32.max)))
    }

    /// Current estimate, ms.
    public var milliseconds: Double {
        timestampUnits * 1000 / clockRate
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.clockRate == rhs.clockRate && lhs.timestampUnits == rhs.timestampUnits
            && lhs.previous?.arrivalSeconds == rhs.previous?.arrivalSeconds
            && lhs.previous?.rtpTimestamp == rhs.previous?.rtpTimestamp
    }
}
