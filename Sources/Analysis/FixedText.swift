#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Numbers in the texts the analysis stores (finding details, grade reasons).
enum FixedText {
    /// `v` with `places` decimals, exactly as C's `%.*f` prints it (the binary value rounded,
    /// ties to even), as `String(format:)` did: that took about 7 µs a call on Linux, more than
    /// the rest of a call's findings.
    static func decimal(_ v: Double, places: Int) -> String {
        let places = min(max(places, 0), 20)
        return exactDecimal(v, places: places) ?? printed(v, places: places)
    }

    private static let powersOfTen: [UInt64] = [1, 10, 100, 1000]

    /// The digits worked out in integers, for the values the texts hold (up to 3 places, below
    /// 2^53 in magnitude); nil for the rest. A double is m·2^e exactly, so v·10^p rounded is
    /// (m·10^p)·2^e rounded: a shift, with the bits shifted out deciding the rounding.
    /// `vsnprintf` through `withVaList` cost about 10,000 instructions a call, most of them
    /// building the argument list.
    static func exactDecimal(_ v: Double, places: Int) -> String? {
        guard places < powersOfTen.count, v.isFinite, v.magnitude < 0x1p53 else { return nil }
        let scale = powersOfTen[places]
        let m: UInt64, e: Int
        if v.exponentBitPattern == 0 {
            (m, e) = (v.significandBitPattern, -1074)
        } else {
            (m, e) = (v.significandBitPattern | (1 << 52), Int(v.exponentBitPattern) - 1075)
        }
        let scaled = m * scale  // below 2^63: m < 2^53, scale ≤ 1000
        var n: UInt64
        if e >= 0 {
            n = scaled << UInt64(e)  // e is 0 at most here: v is below 2^53
        } else if -e >= 64 {
            n = 0  // below 2^63 / 2^64: under a half
        } else {
            let shift = UInt64(-e)
            n = scaled >> shift
            let rest = scaled & ((1 << shift) - 1), half = UInt64(1) << (shift - 1)
            if rest > half || (rest == half && n & 1 == 1) { n += 1 }
        }
        var text = v.sign == .minus ? "-" : ""  // as C prints it: "-0.00" for -0.001 and -0.0
        text += String(n / scale)
        if places > 0 {
            let fraction = String(n % scale)
            text += "."
            text += String(repeating: "0", count: places - fraction.utf8.count)
            text += fraction
        }
        return text
    }

    static func printed(_ v: Double, places: Int) -> String {
        // `%f` of the largest double is 309 digits, a point and the decimals.
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 340) { buffer in
            _ = withVaList([Int32(places), v]) { vsnprintf(buffer.baseAddress, buffer.count, "%.*f", $0) }
            return String(cString: buffer.baseAddress!)
        }
    }
}
