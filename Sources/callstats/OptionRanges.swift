import ArgumentParser

/// The ranges numeric options are checked against before a command runs: a value outside one is
/// a usage error (exit 64) naming the option, never an overflow deep in the run.
enum OptionRange {
    /// Largest byte sizes (bodies, lines, queues): beyond a gibibyte a request or a line is no
    /// longer something to hold in memory.
    static let bytes: ClosedRange<Int> = 1...(1 << 30)
    /// Thread counts.
    static let threads: ClosedRange<Int> = 1...256

    static func check<T: Comparable>(_ name: String, _ value: T, _ range: ClosedRange<T>) throws {
        guard range.contains(value) else {
            throw ValidationError("\(name) must be between \(range.lowerBound) and \(range.upperBound), got \(value)")
        }
    }

    /// A number of seconds, finite and within `range`.
    static func check(_ name: String, seconds value: Double, _ range: ClosedRange<Double>) throws {
        guard value.isFinite, range.contains(value) else {
            throw ValidationError("\(name) must be between \(range.lowerBound) and \(range.upperBound) seconds, got \(value)")
        }
    }
}
