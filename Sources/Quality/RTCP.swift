/// RFC 3550 unit conversions and round-trip time, as packet capture reports them.
///
/// Each function is the exact arithmetic whose results are compared with `tshark`: callers rely on
/// the doubles, not only the values, so the order of operations is part of the contract.
package enum RTCPMath {
    /// Compact NTP units (the middle 32 bits of an NTP timestamp, 1/65536 s, as in LSR and DLSR)
    /// to ms.
    @inlinable
    package static func compactNTPMs(_ units: UInt32) -> Double {
        Double(units) * 1000 / 65_536
    }

    /// Interarrival jitter from an RTCP report block (RTP timestamp units) to ms.
    ///
    /// The clock is the payload's RTP clock: 8000 for G.711, 48000 for Opus, 90000 for video.
    /// - Returns: nil when the clock rate is not positive (unknown).
    @inlinable
    package static func jitterMs(timestampUnits: Double, clockRate: Double) -> Double? {
        guard clockRate > 0 else { return nil }
        return timestampUnits * 1000 / clockRate
    }

    /// RTT = A − LSR − DLSR (RFC 3550 §6.4.1), in ms, with A − LSR measured on one clock: the time
    /// from the arrival of the sender report that LSR names to the arrival of the reception report.
    ///
    /// DLSR comes from the other host in compact NTP units. The result is negative when that
    /// host's delay exceeds the elapsed time; what that means is the caller's decision.
    @inlinable
    package static func roundTripTimeMs(sinceSenderReportNanos: Int64, delaySinceLastSenderReport: UInt32) -> Double {
        Double(sinceSenderReportNanos) / 1e6 - compactNTPMs(delaySinceLastSenderReport)
    }

    /// The 8-bit "fraction lost" field of a report block as a fraction in 0..<1 (value/256).
    @inlinable
    package static func fractionLost(_ field: UInt8) -> Double {
        Double(field) / 256
    }
}

/// Running interarrival jitter estimate of RFC 3550 §6.4.1, J += (|D| − J)/16, in milliseconds.
///
/// The update is evaluated as J = (15·J + |D|)/16 in double precision, the form of Wireshark's RTP
/// stream analysis: equal to the RFC's form as real numbers, but the two doubles can differ in the
/// last place, and only this form reproduces `tshark -z rtp,streams` exactly.
package struct InterarrivalJitter: Sendable, Equatable {
    /// Current estimate, ms; 0 before the first `add`.
    @inlinable
    package var milliseconds: Double { estimateMs }
    /// Changed only by `add`.
    @usableFromInline
    var estimateMs = 0.0

    @inlinable
    package init() {}

    /// |D| of RFC 3550 §6.4.1 in ms: how far a packet's arrival is from the arrival of the
    /// previous packet plus the spacing of their RTP timestamps.
    ///
    /// - Parameters:
    ///   - timestampStep: this packet's RTP timestamp less the previous one's, already unwrapped.
    ///   - clockRate: the payload's RTP clock, Hz; must not be 0.
    @inlinable
    package static func transitDifferenceMs(
        arrivalMs: Double, previousArrivalMs: Double, timestampStep: Int64, clockRate: UInt32
    ) -> Double {
        let nominalMs = Double(timestampStep) * 1000 / Double(clockRate)
        return abs(arrivalMs - (previousArrivalMs + nominalMs))
    }

    /// Folds in one packet's |D| (ms) and returns the new estimate.
    @inlinable @discardableResult
    package mutating func add(transitDifferenceMs difference: Double) -> Double {
        estimateMs = (15 * estimateMs + difference) / 16
        return estimateMs
    }
}
