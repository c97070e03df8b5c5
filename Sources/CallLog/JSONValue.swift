/// A JSON value that keeps object keys in their original order.
///
/// Logs carry SDK reports unchanged, so readers must keep every field (known or not) and
/// writers must reproduce them. Foundation's `JSONSerialization` loses key order and blurs
/// booleans with numbers on Linux, hence this small value type. It is the cold path: the
/// analyser's hot path scans bytes directly and never builds these.
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    public subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    public var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    public var doubleValue: Double? { if case .number(let d) = self { return d }; return nil }
    public var boolValue: Bool? { if case .bool(let b) = self { return b }; return nil }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a }; return nil }
    public var objectValue: JSONObject? { if case .object(let o) = self { return o }; return nil }
    /// The number when it is an integer that Int64 holds (2^63, Int64.max as a Double, is not).
    public var int64Value: Int64? {
        guard case .number(let d) = self else { return nil }
        return Int64(exactly: d)
    }
}

/// An ordered JSON object. Lookups are linear: objects in call logs are small (tens of keys),
/// where a scan beats hashing.
public struct JSONObject: Equatable, Sendable, ExpressibleByDictionaryLiteral {
    public var entries: [(key: String, value: JSONValue)]

    public init() { entries = [] }
    public init(_ entries: [(key: String, value: JSONValue)]) { self.entries = entries }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        entries = elements.map { (key: $0.0, value: $0.1) }
    }

    public subscript(key: String) -> JSONValue? {
        get { entries.first(where: { $0.key == key })?.value }
        set {
            if let i = entries.firstIndex(where: { $0.key == key }) {
                if let newValue { entries[i].value = newValue } else { entries.remove(at: i) }
            } else if let newValue {
                entries.append((key: key, value: newValue))
            }
        }
    }

    public var keys: [String] { entries.map(\.key) }
    public var isEmpty: Bool { entries.isEmpty }
    public var count: Int { entries.count }

    public static func == (a: JSONObject, b: JSONObject) -> Bool {
        a.entries.count == b.entries.count
            && zip(a.entries, b.entries).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements.map { (key: $0.0, value: $0.1) }))
    }
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue {
    /// Equality as JSON defines it: arrays ordered, object members unordered.
    public func isEquivalent(to other: JSONValue) -> Bool {
        switch (self, other) {
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.isEquivalent(to: $1) }
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            return a.entries.allSatisfy { e in b[e.key].map { e.value.isEquivalent(to: $0) } ?? false }
        default:
            return self == other
        }
    }
}

// MARK: - Serialisation

extension JSONValue {
    /// Compact JSON text. Integral numbers within ±2^53 print without a fraction, others in
    /// Swift's shortest round-trip form, so `parse(serialize(x)) == x` for every finite value.
    public func serialized() -> String {
        var out = [UInt8]()
        out.reserveCapacity(256)
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let d): JSONValue.writeNumber(d, to: &out)
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (i, v) in a.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                v.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o): o.write(to: &out)
        }
    }

    static func writeNumber(_ d: Double, to out: inout [UInt8]) {
        if !d.isFinite {
            out.append(contentsOf: "null".utf8)  // JSON has no NaN/Infinity
        } else if d.rounded() == d && abs(d) <= 9_007_199_254_740_992 {
            writeInteger(Int64(d), to: &out)
        } else {
            out.append(contentsOf: d.description.utf8)
        }
    }

    /// The byte a one-letter escape (`\n`, `\"`, …) stands for; nil for `u` (four hex digits
    /// follow) and for anything JSON does not allow.
    @inline(__always) public static func escapedByte(_ letter: UInt8) -> UInt8? {
        switch letter {
        case UInt8(ascii: "\""): 0x22
        case UInt8(ascii: "\\"): 0x5C
        case UInt8(ascii: "/"): 0x2F
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: nil
        }
    }

    /// Whether a `\u` escape's code unit is a high surrogate, which a low one should follow.
    public static func isHighSurrogate(_ unit: UInt32) -> Bool { unit >= 0xD800 && unit < 0xDC00 }

    /// The scalar of a high surrogate and the code unit escaped after it: U+FFFD when that is
    /// not a low surrogate.
    public static func pair(_ high: UInt32, _ low: UInt32) -> UInt32 {
        low >= 0xDC00 && low < 0xE000 ? 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00) : 0xFFFD
    }

    /// Appends a `\u` escape's scalar as UTF-8; a surrogate left alone is U+FFFD.
    public static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        let valid = Unicode.Scalar(scalar) ?? "\u{FFFD}"
        out.append(contentsOf: String(Character(valid)).utf8)
    }

    /// The integer's decimal text, as `String(v)` spells it (no String is made: writers call
    /// this for every counter of every statistics object).
    static func writeInteger(_ v: Int64, to out: inout [UInt8]) {
        if v < 0 { out.append(UInt8(ascii: "-")) }
        var m = v.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var i = 20
            repeat {
                i -= 1
                digits[i] = 0x30 + UInt8(truncatingIfNeeded: m % 10)
                m /= 10
            } while m > 0
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[i...]))
        }
    }

    public static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            // Runs that need no escape are appended whole: most strings are one such run.
            var runStart = 0
            var i = 0
            while i < bytes.count {
                let b = bytes[i]
                i += 1
                guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<(i - 1)]))
                runStart = i
                switch b {
                case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
                case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
                case 0x0A: out.append(contentsOf: "\\n".utf8)
                case 0x0D: out.append(contentsOf: "\\r".utf8)
                case 0x09: out.append(contentsOf: "\\t".utf8)
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: "\\u00".utf8)
                    out.append(hex[Int(b >> 4)])
                    out.append(hex[Int(b & 15)])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        out.append(UInt8(ascii: "\""))
    }
}

extension JSONObject {
    public func write(to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        for (i, e) in entries.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONValue.writeString(e.key, to: &out)
            out.append(UInt8(ascii: ":"))
            e.value.write(to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}

// MARK: - Parsing

/// Why a line is not valid JSON, with the byte offset where parsing stopped.
public struct JSONParseError: Error, Equatable, CustomStringConvertible, Sendable {
    public var message: String
    public var offset: Int
    public var description: String { "\(message) at byte \(offset + 1)" }
}

extension JSONValue {
    /// Nesting deeper than this is refused: a hostile log must not exhaust the stack.
    public static let maximumDepth = 64

    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        var bytes = Array(text.utf8)
        return try bytes.withUnsafeMutableBufferPointer { buf throws(JSONParseError) in
            try parse(UnsafeBufferPointer(buf))
        }
    }

    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> JSONValue {
        var p = JSONParser(bytes: bytes)
        p.skipSpace()
        let v = try p.value(depth: 0)
        p.skipSpace()
        guard p.pos == bytes.count else { throw p.fail("trailing characters after the JSON value") }
        return v
    }
}

struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var pos = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    func fail(_ m: String) -> JSONParseError { JSONParseError(message: m, offset: pos) }

    mutating func skipSpace() {
        while pos < bytes.count {
            let c = bytes[pos]
            guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
            pos += 1
        }
    }

    mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth < JSONValue.maximumDepth else { throw fail("nesting deeper than \(JSONValue.maximumDepth)") }
        guard pos < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[pos] {
        case UInt8(ascii: "{"):
            pos += 1
            var o = JSONObject()
            skipSpace()
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "}") { pos += 1; return .object(o) }
            while true {
                skipSpace()
                guard pos < bytes.count, bytes[pos] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
                let k = try string()
                skipSpace()
                guard pos < bytes.count, bytes[pos] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                pos += 1
                skipSpace()
                o.entries.append((key: k, value: try value(depth: depth + 1)))
                skipSpace()
                guard pos < bytes.count else { throw fail("unterminated object") }
                if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
                if bytes[pos] == UInt8(ascii: "}") { pos += 1; return .object(o) }
                throw fail("expected ',' or '}'")
            }
        case UInt8(ascii: "["):
            pos += 1
            var a = [JSONValue]()
            skipSpace()
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "]") { pos += 1; return .array(a) }
            while true {
                skipSpace()
                a.append(try value(depth: depth + 1))
                skipSpace()
                guard pos < bytes.count else { throw fail("unterminated array") }
                if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
                if bytes[pos] == UInt8(ascii: "]") { pos += 1; return .array(a) }
                throw fail("expected ',' or ']'")
            }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        default: return .number(try number())
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let n = word.utf8CodeUnitCount
        guard pos + n <= bytes.count else { throw fail("unexpected end of input") }
        for i in 0..<n where bytes[pos + i] != word.utf8Start[i] { throw fail("invalid literal") }
        pos += n
    }

    mutating func number() throws(JSONParseError) -> Double {
        let start = pos
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "-") { pos += 1 }
        let intStart = pos
        while pos < bytes.count, bytes[pos] >= 0x30, bytes[pos] <= 0x39 { pos += 1 }
        guard pos > intStart else { pos = start; throw fail("invalid value") }
        if pos < bytes.count, bytes[pos] == UInt8(ascii: ".") {
            pos += 1
            let f = pos
            while pos < bytes.count, bytes[pos] >= 0x30, bytes[pos] <= 0x39 { pos += 1 }
            guard pos > f else { throw fail("invalid number") }
        }
        if pos < bytes.count, bytes[pos] | 0x20 == UInt8(ascii: "e") {
            pos += 1
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "+") || bytes[pos] == UInt8(ascii: "-") { pos += 1 }
            let e = pos
            while pos < bytes.count, bytes[pos] >= 0x30, bytes[pos] <= 0x39 { pos += 1 }
            guard pos > e else { throw fail("invalid number") }
        }
        if let d = JSONParser.exactDecimal(UnsafeBufferPointer(rebasing: bytes[start..<pos])) { return d }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<pos]), as: UTF8.self)
        guard let d = Double(text) else { throw fail("invalid number") }
        return d
    }

    /// Powers of ten that are exact doubles.
    private static let exactPowersOfTen: [Double] = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15]

    /// The value of `-?digits(.digits)?` with at most 15 digits in all, without making a String:
    /// the digits as an integer (below 2^53, so exact) divided by an exact power of ten is
    /// correctly rounded (IEEE division), the same double `Double(String)` gives. nil for
    /// anything else (exponents, more digits): those take `Double(String)`.
    static func exactDecimal(_ text: UnsafeBufferPointer<UInt8>) -> Double? {
        var i = 0
        let negative = text.first == UInt8(ascii: "-")
        if negative { i = 1 }
        var mantissa: Int64 = 0
        var digits = 0
        var fractionDigits = 0
        var inFraction = false
        while i < text.count {
            let c = text[i]
            if c >= 0x30 && c <= 0x39 {
                mantissa = mantissa * 10 + Int64(c - 0x30)
                digits += 1
                if inFraction { fractionDigits += 1 }
            } else if c == UInt8(ascii: "."), !inFraction {
                inFraction = true
            } else {
                return nil
            }
            i += 1
        }
        guard digits > 0, digits <= 15 else { return nil }
        let magnitude = Double(mantissa) / exactPowersOfTen[fractionDigits]
        return negative ? -magnitude : magnitude
    }

    mutating func string() throws(JSONParseError) -> String {
        pos += 1  // opening quote
        let start = pos
        // Fast path: no escapes.
        while pos < bytes.count {
            let c = bytes[pos]
            if c == UInt8(ascii: "\"") {
                let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<pos]), as: UTF8.self)
                pos += 1
                return s
            }
            if c == UInt8(ascii: "\\") { break }
            if c < 0x20 { throw fail("control character in string") }
            pos += 1
        }
        var out = Array(UnsafeBufferPointer(rebasing: bytes[start..<pos]))
        while pos < bytes.count {
            let c = bytes[pos]
            if c == UInt8(ascii: "\"") {
                pos += 1
                return String(decoding: out, as: UTF8.self)
            }
            if c < 0x20 { throw fail("control character in string") }
            if c != UInt8(ascii: "\\") { out.append(c); pos += 1; continue }
            pos += 1
            guard pos < bytes.count else { break }
            let e = bytes[pos]
            pos += 1
            if let byte = JSONValue.escapedByte(e) {
                out.append(byte)
            } else if e == UInt8(ascii: "u") {
                var scalar = try hex4()
                // A high surrogate pairs with the low one after it.
                if JSONValue.isHighSurrogate(scalar), pos + 1 < bytes.count, bytes[pos] == UInt8(ascii: "\\"),
                    bytes[pos + 1] == UInt8(ascii: "u")
                {
                    pos += 2
                    scalar = JSONValue.pair(scalar, try hex4())
                }
                JSONValue.appendUTF8(scalar, to: &out)
            } else {
                throw fail("invalid escape")
            }
        }
        throw fail("unterminated string")
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard pos + 4 <= bytes.count else { throw fail("short \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[pos]
            let d: UInt8
            switch c {
            case 0x30...0x39: d = c - 0x30
            case 0x41...0x46: d = c - 0x41 + 10
            case 0x61...0x66: d = c - 0x61 + 10
            default: throw fail("invalid \\u escape")
            }
            v = v << 4 | UInt32(d)
            pos += 1
        }
        return v
    }
}
