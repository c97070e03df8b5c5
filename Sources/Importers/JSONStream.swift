import CallLog

/// Bytes a `JSONStream` reads: a file (`DumpReader`) or text already in memory.
public protocol JSONByteInput: AnyObject {
    func peek() throws(DumpError) -> UInt8?
    func next() throws(DumpError) -> UInt8?
    /// An error at the current position.
    func error(_ message: String) -> DumpError
    /// Appends the bytes up to the next `"`, `\\` or control byte (not consumed) to `out`;
    /// returns that byte, or nil at the end of the input.
    func stringRun(into out: inout [UInt8]) throws(DumpError) -> UInt8?
    /// Steps over spaces, tabs and line ends.
    func skipWhitespace() throws(DumpError)
    /// Bytes consumed so far (of the decompressed text).
    var offset: Int { get }
}

extension DumpReader: JSONByteInput {}

/// JSON text held in memory (a webrtc-internals series' `values`), read element by element.
public final class MemoryJSONInput: JSONByteInput {
    let bytes: [UInt8]
    var pos = 0
    let place: DumpError

    /// `place` names where the text came from in errors (file, line, and what it is).
    public init(_ bytes: [UInt8], place: DumpError) {
        self.bytes = bytes
        self.place = place
    }

    public var offset: Int { pos }

    @inline(__always) public func peek() -> UInt8? { pos < bytes.count ? bytes[pos] : nil }
    @inline(__always) public func next() -> UInt8? {
        guard pos < bytes.count else { return nil }
        pos += 1
        return bytes[pos - 1]
    }

    public func skipWhitespace() {
        while pos < bytes.count, bytes[pos] == 0x20 || bytes[pos] == 0x0A || bytes[pos] == 0x0D || bytes[pos] == 0x09 { pos += 1 }
    }

    public func stringRun(into out: inout [UInt8]) -> UInt8? {
        let start = pos
        while pos < bytes.count {
            let c = bytes[pos]
            if c == 0x22 || c == 0x5C || c < 0x20 { break }
            pos += 1
        }
        out.append(contentsOf: bytes[start..<pos])
        return pos < bytes.count ? bytes[pos] : nil
    }

    public func error(_ message: String) -> DumpError {
        var e = place
        e.message = "\(place.message): \(message) at character \(pos + 1)"
        return e
    }
}

/// A pull parser over a byte stream: the caller walks objects and arrays member by member
/// and reads, skips or keeps each value, so a dump of any size is read in one pass with only
/// the values it keeps in memory. Values kept whole (`value()`) are limited to `valueLimit`
/// bytes of text; strings to `stringLimit`.
public struct JSONStream<Input: JSONByteInput> {
    public let input: Input
    public var valueLimit = 64 << 20
    public var stringLimit = 64 << 20

    public init(_ input: Input) { self.input = input }

    public func error(_ message: String) -> DumpError { input.error(message) }

    @inline(__always)
    func skipSpace() throws(DumpError) { try input.skipWhitespace() }

    func expect(_ c: UInt8, _ what: String) throws(DumpError) {
        try skipSpace()
        guard let got = try input.next() else { throw error("the text ends where \(what) should be (truncated?)") }
        guard got == c else { throw error("expected \(what), found '\(Character(Unicode.Scalar(got)))'") }
    }

    /// What the next value is: `{`, `[`, `"`, or another byte (number, literal); nil at the end.
    public func peekKind() throws(DumpError) -> UInt8? {
        try skipSpace()
        return try input.peek()
    }

    /// Walks an object: `body` gets each key and must consume its value.
    public func members(_ body: (String) throws(DumpError) -> Void) throws(DumpError) {
        try expect(UInt8(ascii: "{"), "'{'")
        try skipSpace()
        if try input.peek() == UInt8(ascii: "}") { _ = try input.next(); return }
        while true {
            try skipSpace()
            guard try input.peek() == UInt8(ascii: "\"") else {
                if try input.peek() == nil { throw error("the text ends inside an object (truncated?)") }
                throw error("expected a member name")
            }
            let key = try string()
            try expect(UInt8(ascii: ":"), "':'")
            try body(key)
            try skipSpace()
            guard let c = try input.next() else { throw error("the text ends inside an object (truncated?)") }
            if c == UInt8(ascii: ",") { continue }
            if c == UInt8(ascii: "}") { return }
            throw error("expected ',' or '}'")
        }
    }

    /// Walks an array: `body` gets each element's index and must consume the element.
    public func elements(_ body: (Int) throws(DumpError) -> Void) throws(DumpError) {
        try expect(UInt8(ascii: "["), "'['")
        try skipSpace()
        if try input.peek() == UInt8(ascii: "]") { _ = try input.next(); return }
        var i = 0
        while true {
            try body(i)
            i += 1
            try skipSpace()
            guard let c = try input.next() else { throw error("the text ends inside an array (truncated?)") }
            if c == UInt8(ascii: ",") { continue }
            if c == UInt8(ascii: "]") { return }
            throw error("expected ',' or ']'")
        }
    }

    /// The next value, whole.
    public func value() throws(DumpError) -> JSONValue {
        var budget = valueLimit
        return try value(depth: 0, budget: &budget)
    }

    /// The next value if it is a string; any other value is read and nil returned.
    public func stringValue() throws(DumpError) -> String? {
        if try peekKind() == UInt8(ascii: "\"") { return try string() }
        _ = try value()
        return nil
    }

    /// Steps over the next value without keeping it. Nesting is limited as in `value()`
    /// (`JSONValue.maximumDepth`): each level takes stack, and a dump nested 20,000 deep would
    /// overflow it; deeper text is an error at its place, never a crash.
    public func skip() throws(DumpError) { try skip(depth: 0) }

    private func skip(depth: Int) throws(DumpError) {
        switch try peekKind() {
        case UInt8(ascii: "{"):
            guard depth < JSONValue.maximumDepth else { throw tooDeep() }
            try members { _ throws(DumpError) in try skip(depth: depth + 1) }
        case UInt8(ascii: "["):
            guard depth < JSONValue.maximumDepth else { throw tooDeep() }
            try elements { _ throws(DumpError) in try skip(depth: depth + 1) }
        case UInt8(ascii: "\""): try skipString()
        default: _ = try scalar()
        }
    }

    /// True when only white space is left.
    public func atEnd() throws(DumpError) -> Bool { try peekKind() == nil }

    private func tooDeep() -> DumpError {
        error("nesting deeper than \(JSONValue.maximumDepth) levels at byte \(input.offset + 1)")
    }

    private func value(depth: Int, budget: inout Int) throws(DumpError) -> JSONValue {
        guard depth < JSONValue.maximumDepth else { throw tooDeep() }
        budget -= 8
        guard budget > 0 else { throw error("a value larger than \(valueLimit >> 20) MiB") }
        switch try peekKind() {
        case UInt8(ascii: "{"):
            var o = JSONObject()
            var b = budget
            try members { (key: String) throws(DumpError) in
                b -= key.utf8.count
                o.entries.append((key: key, value: try value(depth: depth + 1, budget: &b)))
            }
            budget = b
            return .object(o)
        case UInt8(ascii: "["):
            var a = [JSONValue]()
            var b = budget
            try elements { _ throws(DumpError) in a.append(try value(depth: depth + 1, budget: &b)) }
            budget = b
            return .array(a)
        case UInt8(ascii: "\""):
            let s = try string()
            budget -= s.utf8.count
            guard budget > 0 else { throw error("a value larger than \(valueLimit >> 20) MiB") }
            return .string(s)
        case nil:
            throw error("the text ends where a value should be (truncated?)")
        default:
            return try scalar()
        }
    }

    private func scalar() throws(DumpError) -> JSONValue {
        guard let c = try input.peek() else { throw error("the text ends where a value should be (truncated?)") }
        switch c {
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw error("unexpected character '\(Character(Unicode.Scalar(c)))'")
        }
    }

    private func literal(_ word: String) throws(DumpError) {
        for w in word.utf8 {
            guard let c = try input.next() else { throw error("the text ends inside '\(word)' (truncated?)") }
            guard c == w else { throw error("invalid literal (expected '\(word)')") }
        }
    }

    private func number() throws(DumpError) -> Double {
        var text = [UInt8]()
        while let c = try input.peek(),
            (c >= 0x30 && c <= 0x39) || c == UInt8(ascii: "-") || c == UInt8(ascii: "+") || c == UInt8(ascii: ".")
                || c == UInt8(ascii: "e") || c == UInt8(ascii: "E")
        {
            text.append(c)
            _ = try input.next()
            guard text.count < 64 else { throw error("invalid number") }
        }
        // Integers (most counters) directly; the rest through the standard library's parser.
        if text.count < 16, !text.isEmpty,
            text.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) || (text[0] == 0x2D && text.count > 1 && text.dropFirst().allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }))
        {
            var v = 0
            for c in text where c != 0x2D { v = v * 10 + Int(c - 0x30) }
            return Double(text[0] == 0x2D ? -v : v)
        }
        guard let d = Double(String(decoding: text, as: UTF8.self)) else { throw error("invalid number") }
        return d
    }

    private func skipString() throws(DumpError) {
        _ = try input.next()  // opening quote
        while let c = try input.next() {
            if c == UInt8(ascii: "\"") { return }
            if c == UInt8(ascii: "\\") { _ = try input.next() }
        }
        throw error("the text ends inside a string (truncated?)")
    }

    /// A string (the next byte must be its opening quote).
    public func string() throws(DumpError) -> String {
        String(decoding: try stringBytes(), as: UTF8.self)
    }

    /// A string's UTF-8 bytes, escapes resolved.
    public func stringBytes() throws(DumpError) -> [UInt8] {
        try skipSpace()
        guard try input.next() == UInt8(ascii: "\"") else { throw error("expected a string") }
        var out = [UInt8]()
        while true {
            _ = try input.stringRun(into: &out)
            if out.count > stringLimit { throw error("a string longer than \(stringLimit >> 20) MiB") }
            guard let c = try input.next() else { throw error("the text ends inside a string (truncated?)") }
            if c == UInt8(ascii: "\"") { return out }
            if c != UInt8(ascii: "\\") {
                out.append(c)  // a control byte: kept as it is
                continue
            }
            guard let e = try input.next() else { throw error("the text ends inside a string (truncated?)") }
            if let byte = JSONValue.escapedByte(e) {
                out.append(byte)
            } else if e == UInt8(ascii: "u") {
                var scalar = try hex4()
                // A high surrogate pairs with the low one after it.
                if JSONValue.isHighSurrogate(scalar), try input.peek() == UInt8(ascii: "\\") {
                    _ = try input.next()
                    guard try input.next() == UInt8(ascii: "u") else { throw error("invalid escape") }
                    scalar = JSONValue.pair(scalar, try hex4())
                }
                JSONValue.appendUTF8(scalar, to: &out)
            } else {
                throw error("invalid escape")
            }
        }
    }

    private func hex4() throws(DumpError) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let c = try input.next() else { throw error("the text ends inside a \\u escape (truncated?)") }
            let d: UInt8
            switch c {
            case 0x30...0x39: d = c - 0x30
            case 0x41...0x46: d = c - 0x41 + 10
            case 0x61...0x66: d = c - 0x61 + 10
            default: throw error("invalid \\u escape")
            }
            v = v << 4 | UInt32(d)
        }
        return v
    }
}

/// The elements of one JSON array, read one at a time (a webrtc-internals series' values:
/// `"[1,2,3]"`), so that a peer connection's series are turned into snapshots in one pass
/// with only their text in memory.
public struct JSONArrayCursor {
    let stream: JSONStream<MemoryJSONInput>
    public private(set) var finished = false

    public init(_ bytes: [UInt8], place: DumpError) throws(DumpError) {
        stream = JSONStream(MemoryJSONInput(bytes, place: place))
        try stream.expect(UInt8(ascii: "["), "'['")
        try stream.skipSpace()
        if stream.input.peek() == UInt8(ascii: "]") {
            _ = stream.input.next()
            finished = true
        }
    }

    /// The next element; nil after the last.
    public mutating func next() throws(DumpError) -> JSONValue? {
        guard !finished else { return nil }
        let v = try stream.value()
        try stream.skipSpace()
        guard let c = stream.input.next() else { throw stream.error("the array ends without ']'") }
        if c == UInt8(ascii: "]") { finished = true } else if c != UInt8(ascii: ",") { throw stream.error("expected ',' or ']'") }
        return v
    }

    /// How many elements are left (reads them without keeping them).
    /// Counts by the commas outside strings and nested values; the values' own syntax is
    /// checked when they are read.
    public static func count(_ bytes: [UInt8], place: DumpError) throws(DumpError) -> Int {
        var depth = 0, commas = 0
        var inString = false, escaped = false, any = false
        for b in bytes {
            if inString {
                if escaped { escaped = false } else if b == 0x5C { escaped = true } else if b == 0x22 { inString = false }
                continue
            }
            switch b {
            case 0x22: inString = true; any = true
            case 0x5B, 0x7B: depth += 1; if depth > 1 { any = true }
            case 0x5D, 0x7D: depth -= 1
            case 0x2C where depth == 1: commas += 1
            case 0x20, 0x0A, 0x0D, 0x09: break
            default: if depth >= 1 { any = true }
            }
        }
        guard depth == 0, !inString, bytes.first(where: { $0 > 0x20 }) == 0x5B else {
            var e = place
            e.message += ": not a complete JSON array"
            throw e
        }
        return any ? commas + 1 : 0
    }
}
