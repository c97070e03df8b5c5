import Simulator

/// The simulator's SplitMix64, so that property tests replay the same cases and a relay drops
/// the same packets on every run.
public typealias SeededGenerator = SplitMix64

extension SplitMix64 {
    /// Uniform in [0, 1).
    public mutating func nextUnit() -> Double { Double(next() >> 11) / Double(UInt64(1) << 53) }
}
