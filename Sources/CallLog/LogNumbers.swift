/// Numbers read from logs, turned into integers without trapping.
///
/// A log is untrusted input: a counter can say 1e308, a numeric string "-1e308", and Swift's
/// `Int64(_: Double)` stops the whole process on a value it cannot hold (one bad line would end
/// an analysis of millions). Every conversion of a logged number to an integer goes through
/// these, which answer nil instead; callers treat nil as "not measured".
extension Int64 {
    public init?(logValue v: Double) {
        // 2^63 is exactly representable; every double below it converts.
        guard v.isFinite, v > -9_223_372_036_854_775_808.0, v < 9_223_372_036_854_775_808.0 else { return nil }
        self.init(v)
    }
}

extension Int {
    public init?(logValue v: Double) {
        guard let i = Int64(logValue: v) else { return nil }
        self.init(i)
    }
}

extension UInt32 {
    /// An SSRC as logged (JSON numbers are doubles; some agents log it signed): its low 32 bits,
    /// or nil when the value is no integer at all.
    public init?(ssrc v: Double) {
        guard let i = Int64(logValue: v) else { return nil }
        self.init(truncatingIfNeeded: i)
    }
}

/// Agent timestamps (`ts`): epoch milliseconds, one rule for every reader.
public enum EpochMilliseconds {
    /// ±1e15 ms is ±31,000 years: wider than any real clock, narrow enough that the difference
    /// of two never overflows. Beyond it a `ts` is damage, and the record is reported.
    public static let limit = 1e15

    /// The value as whole milliseconds, or nil when it is not a usable time.
    public static func from(_ v: Double) -> Int64? {
        guard v.isFinite, abs(v) < limit else { return nil }
        return Int64(v.rounded())
    }
}
