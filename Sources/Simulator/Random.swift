/// Seeded random numbers, so that one seed always gives the same logs, byte for byte.
///
/// `SystemRandomNumberGenerator` cannot be seeded and Foundation's generators differ between
/// platforms; xoshiro256** is small, fast and identical everywhere.

/// SplitMix64: turns one 64-bit seed into well-mixed words (used to seed xoshiro, and to
/// derive an independent stream per call from the run's seed and the call's index).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// xoshiro256** (Blackman and Vigna).
package struct Xoshiro256: RandomNumberGenerator, Sendable {
    private var s0, s1, s2, s3: UInt64

    package init(seed: UInt64) {
        var sm = SplitMix64(seed: seed)
        s0 = sm.next(); s1 = sm.next(); s2 = sm.next(); s3 = sm.next()
    }

    /// An independent stream for item `index` of a run seeded with `seed`: calls can be
    /// generated in any order, on any thread, and still come out the same.
    package init(seed: UInt64, stream index: UInt64) {
        var sm = SplitMix64(seed: seed)
        let a = sm.next()
        var sm2 = SplitMix64(seed: a ^ (index &* 0xD6E8_FEB8_6659_FD93))
        self.init(seed: sm2.next())
    }

    @inline(__always)
    package mutating func next() -> UInt64 {
        let result = ((s1 &* 5) << 7 | (s1 &* 5) >> 57) &* 9
        let t = s1 << 17
        s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3
        s2 ^= t
        s3 = s3 << 45 | s3 >> 19
        return result
    }
}

extension Xoshiro256 {
    /// Uniform in [0, 1).
    @inline(__always)
    package mutating func uniform() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    /// Uniform in [a, b).
    package mutating func uniform(_ a: Double, _ b: Double) -> Double { a + (b - a) * uniform() }

    /// Uniform integer in the closed range.
    package mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.count))
    }

    package mutating func chance(_ p: Double) -> Bool { uniform() < p }

    /// Standard normal (Box-Muller; one value per call keeps the stream position simple).
    package mutating func normal() -> Double {
        let u1 = max(uniform(), 1e-300), u2 = uniform()
        return (-2 * _log(u1)).squareRoot() * _cos(2 * Double.pi * u2)
    }

    package mutating func normal(mean: Double, sd: Double) -> Double { mean + sd * normal() }

    /// Log-normal with the given median; `sigma` is the spread of its logarithm.
    package mutating func logNormal(median: Double, sigma: Double) -> Double {
        median * _exp(sigma * normal())
    }

    /// Poisson count: exact (Knuth) for small means, normal approximation for large ones.
    package mutating func poisson(_ mean: Double) -> Int {
        guard mean > 0 else { return 0 }
        if mean > 30 { return max(0, Int((mean + mean.squareRoot() * normal()).rounded())) }
        let limit = _exp(-mean)
        var k = 0, p = uniform()
        while p > limit { k += 1; p *= uniform() }
        return k
    }

    /// Geometric length ≥ 1 with the given mean (loss bursts).
    package mutating func burstLength(mean: Double) -> Int {
        guard mean > 1 else { return 1 }
        let q = 1 - 1 / mean
        var n = 1
        while uniform() < q && n < 1000 { n += 1 }
        return n
    }

    /// One of `items`, with probability proportional to its weight.
    package mutating func pick<T>(_ items: [(T, Double)]) -> T {
        let total = items.reduce(0) { $0 + $1.1 }
        var r = uniform() * total
        for (item, w) in items {
            if r < w { return item }
            r -= w
        }
        return items[items.count - 1].0
    }

    package mutating func element<T>(_ items: [T]) -> T { items[Int(next() % UInt64(items.count))] }

    /// Uppercase hexadecimal digits.
    package mutating func hex(_ count: Int, upper: Bool = true) -> String {
        let digits = Array((upper ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var out = [UInt8]()
        out.reserveCapacity(count)
        for _ in 0..<count { out.append(digits[Int(next() & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// An SDK-style call id: `7E60066C-C7F3-438A-95B1-DDE8634E1072`.
    package mutating func uuid() -> String {
        "\(hex(8))-\(hex(4))-4\(hex(3))-\(element(["8", "9", "A", "B"]))\(hex(3))-\(hex(12))"
    }

    /// Lowercase UUID, as browsers print track identifiers.
    package mutating func trackID() -> String {
        "\(hex(8, upper: false))-\(hex(4, upper: false))-4\(hex(3, upper: false))-a\(hex(3, upper: false))-\(hex(12, upper: false))"
    }

    /// Characters of the base64 alphabet (ICE ufrags, candidate ids, certificate bodies).
    package mutating func base64(_ count: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out = [UInt8]()
        out.reserveCapacity(count)
        for _ in 0..<count { out.append(alphabet[Int(next() & 63)]) }
        return String(decoding: out, as: UTF8.self)
    }

    package mutating func ssrc() -> UInt32 { UInt32(truncatingIfNeeded: next() >> 17) | 0x1000_0000 }
}

// Plain libm calls keep this file free of Foundation.
#if canImport(Glibc)
import Glibc
@inline(__always) func _log(_ x: Double) -> Double { Glibc.log(x) }
@inline(__always) func _exp(_ x: Double) -> Double { Glibc.exp(x) }
@inline(__always) func _cos(_ x: Double) -> Double { Glibc.cos(x) }
@inline(__always) func _sin(_ x: Double) -> Double { Glibc.sin(x) }
#elseif canImport(Darwin)
import Darwin
@inline(__always) func _log(_ x: Double) -> Double { Darwin.log(x) }
@inline(__always) func _exp(_ x: Double) -> Double { Darwin.exp(x) }
@inline(__always) func _cos(_ x: Double) -> Double { Darwin.cos(x) }
@inline(__always) func _sin(_ x: Double) -> Double { Darwin.sin(x) }
#endif
