@testable import MaterialScanning
import Foundation
import XCTest

/// The scanner's number reader must give the same double as Swift's own parser, bit for bit:
/// deltas are restored by adding to these values, so one unit in the last place would change
/// what a delta log restores.
final class JSONCursorTests: XCTestCase {
    func parse(_ text: String) throws -> (value: Double, consumed: Int) {
        var bytes = Array(text.utf8)
        return try bytes.withUnsafeMutableBufferPointer { b throws(JSONCursor.ScanError) in
            var c = JSONCursor(UnsafeBufferPointer(b))
            let v = try c.number()
            return (v, c.pos)
        }
    }

    /// Where the cursor stops after skipping the number at the start of `text`.
    func skipped(_ text: String) throws -> Int {
        var bytes = Array(text.utf8)
        return try bytes.withUnsafeMutableBufferPointer { b throws(JSONCursor.ScanError) in
            var c = JSONCursor(UnsafeBufferPointer(b))
            try c.skipValue()
            return c.pos
        }
    }

    func assertSameAsSwift(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        guard let expected = Double(text) else { return XCTFail("not a number: \(text)", file: file, line: line) }
        // A delimiter after the number, as in a report, more members after it (digits are read a
        // word at a time, so the word holds what follows), and the number at the very end of the line.
        for suffix in [",", "}", #","next":12345678,"more":0.5}"#, ""] {
            do {
                let (v, consumed) = try parse(text + suffix)
                XCTAssertEqual(v.bitPattern, expected.bitPattern, "\(text)\(suffix): \(v) vs \(expected)", file: file, line: line)
                XCTAssertEqual(try skipped(text + suffix), text.utf8.count, "skipping \(text)\(suffix)", file: file, line: line)
                XCTAssertEqual(consumed, text.utf8.count, text, file: file, line: line)
            } catch {
                XCTFail("\(text)\(suffix): \(error)", file: file, line: line)
            }
        }
    }

    func testNumbersAsReportsWriteThem() {
        for text in [
            "0", "-0", "7", "12345678", "123456789", "1234567890123456", "12345678901234567", "1234567890123456789",
            "12345678901234567890", "98765432109876543210123", "1700000000000", "1700000000000.123",
            "0.1", "0.01", "0.00000001234", "0.000000000000000000001", "1.5e3", "2E-5", "-3.25e+2",
            "0.0123456789012345", "0.30000000000000004", "4.35", "123456.78901234", "9007199254740993",
            "9007199254740995", "9007199254740997", "18014398509481985", "18014398509481987", "28.534000000000002",
            "1.7976931348623157e308", "2.2250738585072014e-308", "4.9e-324", "1e-64", "1e-65", "1e64", "1e65",
            "9999999999999999999", "9999999999999999999e40", "1234567890123456789e-60", "123456789012345678e-30",
            "0.1000000000000000055511151231257827", "7.3177701707893310e+15", "1.00000000000000011102230246251565404236316680908203125",
            "1e22", "1e23", "1e-22", "1e-23", "000123", "00.001", "0.100000000", "12345678.12345678",
        ] {
            assertSameAsSwift(text)
        }
    }

    func testRandomNumbers() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let intDigits = Int.random(in: 0...20, using: &rng)
            let fracDigits = Int.random(in: 0...20, using: &rng)
            var text = Bool.random(using: &rng) ? "-" : ""
            text +=
                intDigits == 0
                ? "0" : String((0..<intDigits).map { i in Character(String(i == 0 ? Int.random(in: 1...9, using: &rng) : Int.random(in: 0...9, using: &rng))) })
            if fracDigits > 0 {
                // Runs of zeros, as in 0.000012 and 40.0000001.
                text +=
                    "."
                    + String(
                        (0..<fracDigits).map { _ in Int.random(in: 0...3, using: &rng) == 0 ? "0" : Character(String(Int.random(in: 0...9, using: &rng))) })
            }
            if Int.random(in: 0...5, using: &rng) == 0 { text += "e\(Int.random(in: -80...80, using: &rng))" }
            assertSameAsSwift(text)
        }
        // Doubles as Swift prints them (shortest round-trip form), as the simulator and SDKs write,
        // and any double at all from its bits.
        for _ in 0..<20_000 {
            let v = Double.random(in: -1e7...1e7, using: &rng) * pow(10, Double(Int.random(in: -12...8, using: &rng)))
            assertSameAsSwift("\(v)")
        }
        for _ in 0..<20_000 {
            let v = Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &rng) & ~(1 << 63))
            guard v.isFinite else { continue }
            assertSameAsSwift("\(v)")
            assertSameAsSwift(String(format: "%.17g", v))
            assertSameAsSwift(String(format: "%.19g", v))
        }
    }

    func testInvalidNumbersAreRejected() {
        for text in ["-", "1.", "1.e5", "1e", "1e+", ".5", "-.5", "x"] {
            XCTAssertThrowsError(try parse(text), text)
        }
    }

    /// Legacy stats quote their numbers: a string that is exactly a number reads as it, anything
    /// else as absent, and either way the cursor ends after the string's closing quote.
    func testNumericStrings() throws {
        func read(_ value: String, _ suffix: String) throws -> (Double?, Int) {
            var bytes = Array((value + suffix).utf8)
            return try bytes.withUnsafeMutableBufferPointer { b throws(JSONCursor.ScanError) in
                var c = JSONCursor(UnsafeBufferPointer(b))
                let v = try c.numberOrNumericString()
                return (v, c.pos)
            }
        }
        let cases: [(String, Double?)] = [
            (#""67136""#, 67136), (#""0""#, 0), (#""-12""#, -12), (#""1234567890123""#, 1_234_567_890_123),
            (#""0.25""#, 0.25), (#""1e3""#, 1000), (#"" 12""#, 12), (#""""#, nil), (#""12 ""#, nil),
            (#""12abc""#, nil), (#""opus""#, nil), (#""1.""#, nil), (#""\u0031""#, nil), (#""12\"3""#, nil),
            ("12", 12), ("null", nil), ("true", nil), ("[1]", nil),
        ]
        for (value, expected) in cases {
            for suffix in [#","googRtt":"1"}"#, "}", ""] {
                let (v, pos) = try read(value, suffix)
                XCTAssertEqual(v?.bitPattern, expected?.bitPattern, "\(value)\(suffix)")
                XCTAssertEqual(pos, value.utf8.count, "after \(value)\(suffix)")
            }
        }
    }

    func testEqualBytes() {
        let a = Array("\"packetsReceived\":12345,\"jitter\":0.002".utf8)
        var b = a
        a.withUnsafeBufferPointer { pa in
            for n in 0...a.count { XCTAssertTrue(JSONCursor.equal(pa.baseAddress!, pa.baseAddress!, n)) }
        }
        for i in b.indices {
            b[i] ^= 1
            a.withUnsafeBufferPointer { pa in
                b.withUnsafeBufferPointer { pb in
                    for n in 0...a.count {
                        XCTAssertEqual(JSONCursor.equal(pa.baseAddress!, pb.baseAddress!, n), n <= i, "differs at \(i), compared \(n)")
                    }
                }
            }
            b[i] ^= 1
        }
    }

    /// The common prefix is the first differing byte's position, whether that byte falls in a
    /// 32-byte step, an 8-byte word or the bytes after them, and whatever the bytes' alignment.
    func testCommonPrefixFindsTheFirstDifference() {
        let a = (0..<104).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        for offset in 0..<3 {
            let left = [UInt8](repeating: 0, count: offset) + a
            var right = [UInt8](repeating: 0, count: 2 - offset) + a
            left.withUnsafeBufferPointer { l in
                let pa = l.baseAddress! + offset
                for n in 0...a.count {
                    right.withUnsafeBufferPointer { r in
                        XCTAssertEqual(JSONCursor.commonPrefix(pa, r.baseAddress! + 2 - offset, n), n, "equal, \(n) bytes")
                    }
                }
                for i in a.indices {
                    // One bit, then the high bit (a byte the SIMD comparison sees as negative).
                    for flip: UInt8 in [0x01, 0x80] {
                        right[2 - offset + i] ^= flip
                        right.withUnsafeBufferPointer { r in
                            let pb = r.baseAddress! + 2 - offset
                            for n in [i, i + 1, min(a.count, i + 9), min(a.count, i + 33), a.count] {
                                XCTAssertEqual(JSONCursor.commonPrefix(pa, pb, n), min(i, n), "differs at \(i), compared \(n)")
                            }
                        }
                        right[2 - offset + i] ^= flip
                    }
                }
            }
        }
    }
    /// A string's raw bytes end at its closing quote wherever that falls: in a 16-byte step, in
    /// the bytes after the steps, past the 64 bytes the steps cover, or at the buffer's end; an
    /// escaped quote, UTF-8 bytes (negative as signed bytes) and a closing brace do not end it.
    func testRawStringEndsAtTheClosingQuote() throws {
        let pieces = ["a", "Z", "0", " ", "}", ",", ":", "\\\"", "\\\\", "\\n", "\\u0001", "é", "€", "😀", "\u{7F}"]
        var rng = SystemRandomNumberGenerator()
        for length in Array(0...80) + [127, 128, 129, 300] {
            for trial in 0..<6 {
                // The first trial is plain letters, so that every length of a plain run is covered.
                var body = ""
                while body.utf8.count < length {
                    body += trial == 0 ? "k" : pieces.randomElement(using: &rng)!
                }
                for suffix in [#","next":1}"#, ""] {
                    var bytes = Array(("\"" + body + "\"" + suffix).utf8)
                    let result = try bytes.withUnsafeMutableBufferPointer { b throws(JSONCursor.ScanError) in
                        var c = JSONCursor(UnsafeBufferPointer(b))
                        let raw = try c.rawString()
                        return (Array(raw), c.pos)
                    }
                    XCTAssertEqual(result.0, Array(body.utf8), "body \(body.debugDescription), suffix \(suffix)")
                    XCTAssertEqual(result.1, body.utf8.count + 2, "after \(body.debugDescription)")
                }
            }
        }
    }

    /// The table of powers of five, computed again with exact big integers.
    func testPowersOfFiveTable() {
        for (i, q) in (DecimalToDouble.smallestPower...DecimalToDouble.largestPower).enumerated() {
            let expected: (UInt64, UInt64)
            if q >= 0 {
                var p = BigUInt(5).power(q)
                while p.bitWidth < 128 { p.shiftLeft(1) }
                p.shiftRight(p.bitWidth - 128)
                expected = p.top128
            } else {
                let five = BigUInt(5).power(-q)
                let z = five.bitWidth  // 5^n is no power of two: the smallest z with 2^z ≥ 5^n
                var c = BigUInt.powerOfTwo(q >= -27 ? z + 127 : 2 * z + 128)
                c.divide(by: five)
                c.addOne()
                if c.bitWidth > 128 { c.shiftRight(c.bitWidth - 128) }
                expected = c.top128
            }
            XCTAssertEqual(DecimalToDouble.powersOfFive[i].0, expected.0, "5^\(q)")
            XCTAssertEqual(DecimalToDouble.powersOfFive[i].1, expected.1, "5^\(q)")
        }
    }
}

/// Just enough of an unsigned big integer to compute the table again: little-endian 32-bit limbs.
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
