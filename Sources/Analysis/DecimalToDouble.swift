/// Exact conversion of `w × 10^q` (w up to 19 digits) to the nearest double, without text.
///
/// Browsers print doubles in their shortest round-trip form, which is often 16-17 significant
/// digits (`28.534000000000002`, counters scaled by fractions): too many for the one-multiply
/// fast path, and the standard parser needs a String per number. This is the Eisel-Lemire
/// algorithm (Lemire, "Number Parsing at a Gigabyte per Second", 2021, as in fast_float):
/// one or two 64×64-bit multiplications by a 128-bit power of five, correctly rounded; with the
/// full 128-bit table no fallback is needed (Mushtak and Lemire, 2023). The table here covers
/// 10^-64 to 10^64, which reports never leave; outside it the caller uses the standard parser.
enum DecimalToDouble {
    static let smallestPower = -64
    static let largestPower = 64

    /// The double nearest `w × 10^q`, or nil when `q` is outside the table.
    static func convert(_ w: UInt64, _ q: Int) -> Double? {
        if w == 0 { return 0 }
        guard q >= smallestPower, q <= largestPower else { return nil }
        let lz = w.leadingZeroBitCount
        let wn = w << lz
        let (hi5, lo5) = powersOfFive[q - smallestPower]
        // 55 bits of precision are needed: 52 explicit, the implicit one, one to round and one
        // that the product may lack. When the product's low bits below those are all ones, the
        // second product decides.
        var (high, low) = wn.multipliedFullWidth(by: hi5)
        let precisionMask: UInt64 = .max >> 55
        if high & precisionMask == precisionMask {
            let second = wn.multipliedFullWidth(by: lo5).high
            let (sum, carry) = low.addingReportingOverflow(second)
            low = sum
            if carry { high &+= 1 }
        }
        let upperBit = Int(high >> 63)
        let shift = upperBit + 64 - 52 - 3
        var mantissa = high >> UInt64(shift)
        var power2 = ((152_170 + 65_536) * q) >> 16 + 63 + upperBit - lz + 1023
        guard power2 > 0 else { return nil }  // subnormal: left to the standard parser
        // Exactly between two doubles (possible only where 5^q fits in 64 bits): round to even.
        if low <= 1, q >= -4, q <= 23, mantissa & 3 == 1, mantissa << UInt64(shift) == high {
            mantissa &= ~1
        }
        mantissa += mantissa & 1
        mantissa >>= 1
        if mantissa >= 2 << 52 {
            mantissa = 1 << 52
            power2 += 1
        }
        mantissa &= ~(1 << 52)
        guard power2 < 0x7FF else { return nil }
        return Double(bitPattern: UInt64(power2) << 52 | mantissa)
    }

    /// 5^q for q in `smallestPower...largestPower`, normalised to 128 bits (top bit set):
    /// truncated for q ≥ 0, and for q < 0 `⌊2^b / 5^-q⌋ + 1` truncated, as the algorithm needs.
    static let powersOfFive: [(UInt64, UInt64)] = (smallestPower...largestPower).map { q in
        if q >= 0 {
            var p = BigUInt(5).power(q)
            while p.bitWidth < 128 { p.shiftLeft(1) }
            p.shiftRight(p.bitWidth - 128)
            return p.top128
        }
        let five = BigUInt(5).power(-q)
        let z = five.bitWidth - (five.isPowerOfTwo ? 1 : 0)  // smallest z with 2^z ≥ 5^-q
        let b = q >= -27 ? z + 127 : 2 * z + 128
        var c = BigUInt.powerOfTwo(b)
        c.divide(by: five)
        c.addOne()
        if c.bitWidth > 128 { c.shiftRight(c.bitWidth - 128) }
        return c.top128
    }
}

/// Just enough of an unsigned big integer to build the table once: little-endian 32-bit limbs.
private struct BigUInt {
    var limbs: [UInt32]

    init(_ v: UInt32) { limbs = [v] }

    static func powerOfTwo(_ n: Int) -> BigUInt {
        var r = BigUInt(0)
        r.limbs = Array(repeating: 0, count: n / 32 + 1)
        r.limbs[n / 32] = 1 << UInt32(n % 32)
        return r
    }

    var bitWidth: Int {
        guard let i = limbs.lastIndex(where: { $0 != 0 }) else { return 0 }
        return i * 32 + (32 - limbs[i].leadingZeroBitCount)
    }

    var isPowerOfTwo: Bool { limbs.reduce(0) { $0 + $1.nonzeroBitCount } == 1 }

    func power(_ n: Int) -> BigUInt {
        var r = BigUInt(1)
        for _ in 0..<n { r.multiply(by: limbs[0]) }
        return r
    }

    mutating func multiply(by m: UInt32) {
        var carry: UInt64 = 0
        for i in limbs.indices {
            let v = UInt64(limbs[i]) * UInt64(m) + carry
            limbs[i] = UInt32(truncatingIfNeeded: v)
            carry = v >> 32
        }
        if carry > 0 { limbs.append(UInt32(carry)) }
    }

    mutating func addOne() {
        for i in limbs.indices {
            limbs[i] &+= 1
            if limbs[i] != 0 { return }
        }
        limbs.append(1)
    }

    mutating func shiftLeft(_ n: Int) {
        for _ in 0..<n { multiply(by: 2) }
    }

    mutating func shiftRight(_ n: Int) {
        guard n > 0 else { return }
        let words = n / 32, bits = UInt32(n % 32)
        limbs = Array(limbs.dropFirst(words))
        if bits > 0 {
            for i in limbs.indices {
                let next = i + 1 < limbs.count ? limbs[i + 1] : 0
                limbs[i] = limbs[i] >> bits | next << (32 - bits)
            }
        }
    }

    /// Long division by a big divisor, bit by bit (the table is built once, from small numbers).
    mutating func divide(by d: BigUInt) {
        var quotient = BigUInt(0)
        quotient.limbs = Array(repeating: 0, count: limbs.count)
        var remainder = BigUInt(0)
        for bit in stride(from: bitWidth - 1, through: 0, by: -1) {
            remainder.shiftLeft(1)
            if limbs[bit / 32] >> UInt32(bit % 32) & 1 == 1 { remainder.limbs[0] |= 1 }
            if !remainder.isLess(than: d) {
                remainder.subtract(d)
                quotient.limbs[bit / 32] |= 1 << UInt32(bit % 32)
            }
        }
        self = quotient
    }

    func isLess(than other: BigUInt) -> Bool {
        let n = max(limbs.count, other.limbs.count)
        for i in stride(from: n - 1, through: 0, by: -1) {
            let a = i < limbs.count ? limbs[i] : 0, b = i < other.limbs.count ? other.limbs[i] : 0
            if a != b { return a < b }
        }
        return false
    }

    mutating func subtract(_ other: BigUInt) {
        var borrow: Int64 = 0
        for i in limbs.indices {
            var v = Int64(limbs[i]) - borrow - (i < other.limbs.count ? Int64(other.limbs[i]) : 0)
            borrow = 0
            if v < 0 { v += 1 << 32; borrow = 1 }
            limbs[i] = UInt32(v)
        }
    }

    /// The value, which has at most 128 bits, as (high, low) 64-bit words.
    var top128: (UInt64, UInt64) {
        func limb(_ i: Int) -> UInt64 { i < limbs.count ? UInt64(limbs[i]) : 0 }
        return (limb(3) << 32 | limb(2), limb(1) << 32 | limb(0))
    }
}
