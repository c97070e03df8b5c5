import CByteCompare
import CallLog
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A forward-only reader over one line of JSON bytes: reads what is asked for, skips the rest.
///
/// This is the analyser's hot path: a getStats report is ~7 KB of which the metrics need a few
/// hundred bytes. Every method checks bounds and fails with `ScanError` on malformed input,
/// so damaged lines are rejected, never misread.
struct JSONCursor {
    let base: UnsafePointer<UInt8>
    let end: Int
    var pos = 0

    init(_ buffer: UnsafeBufferPointer<UInt8>) {
        base = buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!
        end = buffer.count
    }

    struct ScanError: Error, CustomStringConvertible {
        var message: String
        var offset: Int
        var description: String { "\(message) at byte \(offset + 1)" }
    }

    func fail(_ m: String) -> ScanError { ScanError(message: m, offset: pos) }

    @inline(__always) mutating func skipSpace() {
        while pos < end {
            let c = base[pos]
            if c != 0x20 && c != 0x0A && c != 0x0D && c != 0x09 { return }
            pos += 1
        }
    }

    @inline(__always) mutating func peek() throws(ScanError) -> UInt8 {
        skipSpace()
        guard pos < end else { throw fail("unexpected end of line") }
        return base[pos]
    }

    @inline(__always) mutating func expect(_ c: UInt8) throws(ScanError) {
        guard try peek() == c else { throw fail("expected '\(Character(Unicode.Scalar(c)))'") }
        pos += 1
    }

    /// After a member or element: true if another follows (consumes ','), false at the closer.
    @inline(__always) mutating func next(closer: UInt8) throws(ScanError) -> Bool {
        let c = try peek()
        if c == 0x2C { pos += 1; return true }
        if c == closer { pos += 1; return false }
        throw fail("expected ',' or '\(Character(Unicode.Scalar(closer)))'")
    }

    /// Iterates an object's members: `body` gets each key's raw bytes with the cursor on its value,
    /// and must consume the value.
    @inline(__always) mutating func object(_ body: (inout JSONCursor, UnsafeBufferPointer<UInt8>) throws(ScanError) -> Void) throws(ScanError) {
        try expect(0x7B)
        if try peek() == 0x7D { pos += 1; return }
        repeat {
            let key = try rawString()
            try expect(0x3A)
            try body(&self, key)
        } while try next(closer: 0x7D)
    }

    @inline(__always) mutating func array(_ body: (inout JSONCursor) throws(ScanError) -> Void) throws(ScanError) {
        try expect(0x5B)
        if try peek() == 0x5D { pos += 1; return }
        repeat { try body(&self) } while try next(closer: 0x5D)
    }

    /// A string's bytes between the quotes, escapes left as they are (keys and ids the
    /// analyser compares never need unescaping; `string()` decodes when they do).
    mutating func rawString() throws(ScanError) -> UnsafeBufferPointer<UInt8> {
        guard try peek() == 0x22 else { throw fail("expected a string") }
        pos += 1
        let start = pos
        // Sixteen bytes a step (SSE2): the first quote, backslash or control byte ends the fast
        // path. Past 64 bytes (certificates, long ids) memchr below is faster.
        let head = min(end - start, 64)
        let run = byte_string_run(base + start, head)
        pos = start + run
        if run < head, base[pos] == 0x22 {
            let s = UnsafeBufferPointer(start: base + start, count: run)
            pos += 1
            return s
        }
        // Long strings (certificates): the closing quote found with memchr, and no escape before it.
        if let q = memchr(base + pos, 0x22, end - pos) {
            let close = (base + pos).distance(to: q.assumingMemoryBound(to: UInt8.self)) + pos
            if memchr(base + pos, 0x5C, close - pos) == nil {
                let s = UnsafeBufferPointer(start: base + start, count: close - start)
                pos = close + 1
                return s
            }
        }
        while pos < end {
            let c = base[pos]
            if c == 0x22 {
                let s = UnsafeBufferPointer(start: base + start, count: pos - start)
                pos += 1
                return s
            }
            if c == 0x5C { pos += 2; continue }
            if c < 0x20 { throw fail("control character in string") }
            pos += 1
        }
        throw fail("unterminated string")
    }

    /// Whether `n` bytes at `a` and `b` are equal: members are a few dozen bytes, where a call
    /// to memcmp costs more than the comparison.
    @inline(__always) static func equal(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        if n < 8 {
            for i in 0..<n where a[i] != b[i] { return false }
            return true
        }
        var i = 0
        while i + 8 <= n {
            if UnsafeRawPointer(a + i).loadUnaligned(as: UInt64.self) != UnsafeRawPointer(b + i).loadUnaligned(as: UInt64.self) { return false }
            i += 8
        }
        return i == n || UnsafeRawPointer(a + n - 8).loadUnaligned(as: UInt64.self) == UnsafeRawPointer(b + n - 8).loadUnaligned(as: UInt64.self)
    }

    /// How many leading bytes of `a` and `b` are equal, up to `n`: an object that changed since
    /// the last report is stepped over up to its first change in one pass, not member by member.
    @inline(__always) static func commonPrefix(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ n: Int) -> Int {
        byte_compare_common_prefix(a, b, n)
    }

    /// Whether `c` can continue a number token (digits, point, exponent, sign).
    @inline(__always) static func continuesNumber(_ c: UInt8) -> Bool {
        c &- 0x30 < 10 || c == 0x2E || c | 0x20 == 0x65 || c == 0x2B || c == 0x2D
    }

    /// A string value, decoded (escapes resolved through the full parser when present).
    mutating func string() throws(ScanError) -> String {
        let raw = try rawString()
        if !raw.contains(0x5C) { return String(decoding: raw, as: UTF8.self) }
        // Rare: re-parse the quoted string with the complete parser.
        let quoted = UnsafeBufferPointer(start: raw.baseAddress! - 1, count: raw.count + 2)
        guard case .string(let s)? = try? JSONValue.parse(quoted) else { throw fail("invalid string escape") }
        return s
    }

    /// A number; a numeric string ("67136", as legacy stats give) is read as its number.
    /// Anything else (null, true, other strings, objects) returns nil and is skipped.
    mutating func numberOrNumericString() throws(ScanError) -> Double? {
        let c = try peek()
        if c == 0x22 {
            // Read where it lies, the closing quote ending the number: a cursor over the string
            // alone is too short for `number`'s one-word path.
            var inPlace = self
            inPlace.pos += 1
            if let v = try? inPlace.number(), inPlace.pos < inPlace.end, inPlace.base[inPlace.pos] == 0x22 {
                pos = inPlace.pos + 1
                return v
            }
            let raw = try rawString()
            var inner = JSONCursor(raw)
            guard inner.end > 0, let v = try? inner.number(), inner.pos == inner.end else { return nil }
            return v
        }
        if c == 0x2D || (c >= 0x30 && c <= 0x39) { return try number() }
        try skipValue()
        return nil
    }

    /// A JSON number. Up to 19 significant digits and an exponent within ±64 are converted
    /// exactly here (one correctly rounded multiply or divide up to 15 digits, `DecimalToDouble`
    /// beyond); the rest go through the standard parser.
    mutating func number() throws(ScanError) -> Double {
        skipSpace()
        // Most numbers in statistics are counters: up to seven digits, the byte after them in
        // the same word and not the start of a fraction or exponent. They take one word and no
        // more (the general path below costs several times as much).
        if pos + 8 <= end {
            let w = UnsafeRawPointer(base + pos).loadUnaligned(as: UInt64.self)
            let n = JSONCursor.nonDigits(w).trailingZeroBitCount >> 3
            if n > 0, n < 8, case let after = base[pos + n], after != 0x2E, after | 0x20 != 0x65 {
                pos += n
                return Double(JSONCursor.value(ofDigits: n, in: w))
            }
        }
        let start = pos
        var negative = false
        if pos < end && base[pos] == 0x2D { negative = true; pos += 1 }
        // Up to 19 significant digits in `mantissa` (leading zeros are not significant), the
        // rest only shift `scale`: past 2^53 the exact path below takes over anyway.
        var mantissa: UInt64 = 0
        var digits = 0
        var scale = 0
        var truncated = false
        let intStart = pos
        while pos < end && base[pos] == 0x30 { pos += 1 }
        takeDigits(&mantissa, &digits)
        while pos < end, base[pos] &- 0x30 < 10 {
            if digits < 19 { mantissa = mantissa &* 10 &+ UInt64(base[pos] &- 0x30); if mantissa > 0 { digits += 1 } } else { scale += 1; truncated = true }
            pos += 1
        }
        guard pos > intStart else { throw fail("invalid number") }
        if pos < end && base[pos] == 0x2E {
            pos += 1
            let f = pos
            if mantissa == 0 { while pos < end && base[pos] == 0x30 { pos += 1; scale -= 1 } }
            let before = pos
            takeDigits(&mantissa, &digits)
            scale -= pos - before
            while pos < end, base[pos] &- 0x30 < 10 {
                if digits < 19 { mantissa = mantissa &* 10 &+ UInt64(base[pos] &- 0x30); if mantissa > 0 { digits += 1 }; scale -= 1 } else { truncated = true }
                pos += 1
            }
            guard pos > f else { throw fail("invalid number") }
        }
        var exponent = 0
        if pos < end && base[pos] | 0x20 == 0x65 {
            pos += 1
            var expNegative = false
            if pos < end && (base[pos] == 0x2B || base[pos] == 0x2D) { expNegative = base[pos] == 0x2D; pos += 1 }
            let e = pos
            while pos < end, base[pos] &- 0x30 < 10 {
                if exponent < 10_000 { exponent = exponent * 10 + Int(base[pos] &- 0x30) }
                pos += 1
            }
            guard pos > e else { throw fail("invalid number") }
            if expNegative { exponent = -exponent }
        }
        let total = scale + exponent
        // Clinger's fast path: a mantissa below 2^53 and a power of ten up to 10^22 are both exact
        // doubles, so one multiply or divide rounds correctly.
        if digits <= 19 && mantissa < 1 << 53 && total >= -22 && total <= 22 {
            let m = Double(mantissa)
            let v = total >= 0 ? m * JSONCursor.powers[total] : m / JSONCursor.powers[-total]
            return negative ? -v : v
        }
        if !truncated, let v = DecimalToDouble.convert(mantissa, total) { return negative ? -v : v }
        let text = String(decoding: UnsafeBufferPointer(start: base + start, count: pos - start), as: UTF8.self)
        guard let v = Double(text) else { throw fail("invalid number") }
        return v
    }

    /// Up to eight digits at a time while they fit in the 19 significant digits: one word is
    /// loaded, its leading run of digits found and converted together (counters and fractions
    /// are mostly 1-7 digits, timestamps 13), a third of the work of one digit at a time. Only
    /// after the first significant digit (`mantissa` > 0 or a nonzero digit next).
    @inline(__always) private mutating func takeDigits(_ mantissa: inout UInt64, _ digits: inout Int) {
        while pos + 8 <= end {
            let w = UnsafeRawPointer(base + pos).loadUnaligned(as: UInt64.self)
            let other = JSONCursor.nonDigits(w)
            let n = other == 0 ? 8 : other.trailingZeroBitCount >> 3
            guard n > 0, digits + n <= 19 else { return }
            mantissa = mantissa &* JSONCursor.integerPowers[n] &+ JSONCursor.value(ofDigits: n, in: w)
            if mantissa > 0 { digits += n }
            pos += n
            if n < 8 { return }
        }
    }

    /// The number the first `n` (1...8) bytes of `w` spell, all of them ASCII digits.
    @inline(__always) static func value(ofDigits n: Int, in w: UInt64) -> UInt64 {
        // The n digits, first one lowest (little-endian), moved up so that they are the last
        // n of eight after zeros (the bytes after them are shifted out): then pairs, fours
        // and eight combine as for eight digits.
        var v = w &- 0x3030_3030_3030_3030
        if n < 8 { v <<= UInt64(8 * (8 - n)) }
        v = (v &* 10) &+ (v >> 8)
        v = (((v & 0x0000_00FF_0000_00FF) &* 0x000F_4240_0000_0064) &+ (((v >> 16) & 0x0000_00FF_0000_00FF) &* 0x0000_2710_0000_0001)) >> 32
        return v & 0xFFFF_FFFF
    }

    /// Eight bytes with each ASCII digit byte zeroed and every other byte nonzero: a digit's
    /// high nibble is 3 and adding 6 does not carry into it. A carry out of a non-digit byte only
    /// reaches the bytes after it, which the callers never take.
    @inline(__always) static func nonDigits(_ w: UInt64) -> UInt64 {
        ((w & 0xF0F0_F0F0_F0F0_F0F0) | (((w &+ 0x0606_0606_0606_0606) & 0xF0F0_F0F0_F0F0_F0F0) >> 4)) ^ 0x3333_3333_3333_3333
    }

    /// Steps over a run of digits a word at a time (see `takeDigits`).
    @inline(__always) private mutating func skipDigits() {
        while pos + 8 <= end {
            let other = JSONCursor.nonDigits(UnsafeRawPointer(base + pos).loadUnaligned(as: UInt64.self))
            if other != 0 {
                pos += other.trailingZeroBitCount >> 3
                return
            }
            pos += 8
        }
        while pos < end, base[pos] &- 0x30 < 10 { pos += 1 }
    }

    /// Powers of ten as written: a literal table is laid out at compile time, where one computed
    /// at first use was checked for initialisation at every number.
    static let powers: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]
    static let integerPowers: [UInt64] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000]

    /// Skips one value of any kind, checking its structure (depth-limited).
    mutating func skipValue(depth: Int = 0) throws(ScanError) {
        guard depth < JSONValue.maximumDepth else { throw fail("nesting too deep") }
        let c = try peek()
        switch c {
        case 0x22: _ = try rawString()
        case 0x7B:
            try object { cursor, _ throws(ScanError) in try cursor.skipValue(depth: depth + 1) }
        case 0x5B:
            try array { cursor throws(ScanError) in try cursor.skipValue(depth: depth + 1) }
        case 0x74: try literal(4)  // true
        case 0x66: try literal(5)  // false
        case 0x6E: try literal(4)  // null
        default: try skipNumber()
        }
    }

    /// Checks a number's syntax without converting it: most numbers in a report are skipped.
    private mutating func skipNumber() throws(ScanError) {
        if pos < end && base[pos] == 0x2D { pos += 1 }
        let intStart = pos
        skipDigits()
        guard pos > intStart else { throw fail("invalid number") }
        if pos < end && base[pos] == 0x2E {
            pos += 1
            let f = pos
            skipDigits()
            guard pos > f else { throw fail("invalid number") }
        }
        if pos < end && base[pos] | 0x20 == 0x65 {
            pos += 1
            if pos < end && (base[pos] == 0x2B || base[pos] == 0x2D) { pos += 1 }
            let e = pos
            while pos < end, base[pos] &- 0x30 < 10 { pos += 1 }
            guard pos > e else { throw fail("invalid number") }
        }
    }

    private mutating func literal(_ n: Int) throws(ScanError) {
        guard pos + n <= end else { throw fail("invalid literal") }
        let ok: Bool
        switch n {
        case 4:
            ok =
                (base[pos] == 0x74 && base[pos + 1] == 0x72 && base[pos + 2] == 0x75 && base[pos + 3] == 0x65)
                || (base[pos] == 0x6E && base[pos + 1] == 0x75 && base[pos + 2] == 0x6C && base[pos + 3] == 0x6C)
        default: ok = base[pos] == 0x66 && base[pos + 1] == 0x61 && base[pos + 2] == 0x6C && base[pos + 3] == 0x73 && base[pos + 4] == 0x65
        }
        guard ok else { throw fail("invalid literal") }
        pos += n
    }

    /// True if `s` is exactly these (unescaped) bytes; `s` is only borrowed for its UTF-8.
    @inline(__always) static func same(_ s: inout String, _ raw: UnsafeBufferPointer<UInt8>) -> Bool {
        s.withUTF8 { u in
            u.count == raw.count && (raw.isEmpty || memcmp(u.baseAddress!, raw.baseAddress!, raw.count) == 0)
        }
    }

    /// True if the bytes equal the ASCII text.
    @inline(__always) static func equals(_ b: UnsafeBufferPointer<UInt8>, _ s: StaticString) -> Bool {
        guard b.count == s.utf8CodeUnitCount else { return false }
        let p = s.utf8Start
        for i in 0..<b.count where b[i] != p[i] { return false }
        return true
    }
}
