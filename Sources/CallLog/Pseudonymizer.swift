/// Replaces IP addresses in call records before they are written, so that logs can leave the
/// device without the users' addresses in them.
///
/// Statistics name addresses in many places: W3C candidates (`address`, `ip`, `relatedAddress`,
/// `url` of a TURN server), `candidate:` SDP lines, legacy goog values (`ipAddress`,
/// `googLocalAddress` / `googRemoteAddress` as `ip:port`), SDK events. Rather than list fields
/// (and miss the next SDK's), every string of a record is scanned for IPv4 and IPv6 literals
/// that stand alone as words; whatever surrounds them (`:port`, `[` `]`, `turn:`, `%zone`)
/// is kept. Certificate fingerprints (`AB:CD:…`), ids and numbers are not addresses and stay.
///
/// Two methods:
/// - **Keyed hash** (`keyedHash`): SipHash-2-4 of the address under a 16-byte key, mapped into
///   reserved space that no real peer uses: IPv4 into 240.0.0.0/4 (28 hash bits), IPv6 into
///   fd00::/8 (120 hash bits). The same address and key always give the same pseudonym, so one
///   user's calls still correlate and candidate pairs still match their candidates; without
///   the key the address cannot be recovered short of trying every IPv4 address *with* it, so
///   keep the key secret (and rotate it to break correlation over time).
/// - **Truncation** (`truncate`): keep the network, zero the host: /24 for IPv4 and /48 for
///   IPv6 by default. Coarser, keyless, and still shows the operator/site.
///
/// Kept unchanged: addresses in the allow-list (the operator's own TURN relays, so relay use
/// stays visible), the unspecified addresses (`0.0.0.0`, `::`) and loopback, which say nothing
/// about anyone. In `call` records, `sdkVersion` and `appVersion` are left alone (a four-part
/// version looks like an IPv4 address).
public struct Pseudonymizer: Sendable {
    public enum Method: Sendable, Equatable {
        case keyedHash(SipHashKey)
        case truncate(ipv4PrefixLength: Int = 24, ipv6PrefixLength: Int = 48)
    }

    public var method: Method
    /// Addresses inside these prefixes are written as they are.
    public var allowList: [IPPrefix]

    public init(method: Method, allowList: [IPPrefix] = []) {
        self.method = method
        self.allowList = allowList
    }

    // MARK: Addresses

    /// The pseudonym of one address (itself when it is allow-listed, unspecified or loopback).
    public func pseudonym(for address: IPAddress) -> IPAddress {
        if address.isUnspecified || address.isLoopback || allowList.contains(where: { $0.contains(address) }) {
            return address
        }
        switch method {
        case .keyedHash(let key):
            switch address {
            case .v4(let a):
                var msg: [UInt8] = [4]
                for s in stride(from: 24, through: 0, by: -8) { msg.append(UInt8(truncatingIfNeeded: a >> UInt32(s))) }
                let h = SipHash24.hash(msg, key: key)
                return .v4(0xF000_0000 | UInt32(truncatingIfNeeded: h) & 0x0FFF_FFFF)
            case .v6(let hi, let lo):
                var msg: [UInt8] = [6]
                for s in stride(from: 56, through: 0, by: -8) { msg.append(UInt8(truncatingIfNeeded: hi >> UInt64(s))) }
                for s in stride(from: 56, through: 0, by: -8) { msg.append(UInt8(truncatingIfNeeded: lo >> UInt64(s))) }
                let h1 = SipHash24.hash(msg + [1], key: key)
                let h2 = SipHash24.hash(msg + [2], key: key)
                return .v6(0xFD00_0000_0000_0000 | (h1 & 0x00FF_FFFF_FFFF_FFFF), h2)
            }
        case .truncate(let p4, let p6):
            return IPPrefix(address: address, length: address.isV4 ? p4 : p6).network
        }
    }

    /// `text` with every address in it replaced, or nil when it holds none to replace.
    public func scrubbed(_ text: String) -> String? {
        var dots = 0, colons = 0
        for b in text.utf8 {
            if b == UInt8(ascii: ".") { dots += 1 } else if b == UInt8(ascii: ":") { colons += 1 }
        }
        guard dots >= 3 || colons >= 2 else { return nil }
        let bytes = Array(text.utf8)
        var out = [UInt8]()
        var changed = false
        var i = 0, copied = 0
        while i < bytes.count {
            guard Pseudonymizer.isWordByte(bytes[i]) else { i += 1; continue }
            var j = i
            while j < bytes.count, Pseudonymizer.isWordByte(bytes[j]) { j += 1 }
            if let replacement = rewrite(bytes[i..<j]) {
                if !changed { out.reserveCapacity(bytes.count + 16); changed = true }
                out.append(contentsOf: bytes[copied..<i])
                out.append(contentsOf: replacement)
                copied = j
            }
            i = j
        }
        guard changed else { return nil }
        out.append(contentsOf: bytes[copied...])
        return String(decoding: out, as: UTF8.self)
    }

    public func scrub(_ text: String) -> String { scrubbed(text) ?? text }

    /// Replaces addresses in every string inside `value`; returns whether anything changed.
    @discardableResult
    public func scrub(_ value: inout JSONValue) -> Bool {
        switch value {
        case .string(let s):
            guard let t = scrubbed(s) else { return false }
            value = .string(t)
            return true
        case .array(var a):
            value = .null  // keep `a` uniquely referenced while it is edited
            var changed = false
            for i in a.indices where scrub(&a[i]) { changed = true }
            value = .array(a)
            return changed
        case .object(var o):
            value = .null
            let changed = scrub(&o)
            value = .object(o)
            return changed
        case .null, .bool, .number:
            return false
        }
    }

    @discardableResult
    public func scrub(_ object: inout JSONObject, skipping: Set<String> = []) -> Bool {
        var changed = false
        for i in object.entries.indices where !skipping.contains(object.entries[i].key) {
            if scrub(&object.entries[i].value) { changed = true }
        }
        return changed
    }

    /// The record with addresses replaced in all of its fields (not in the envelope).
    public func scrub(_ record: LogRecord) -> LogRecord {
        var r = record
        scrub(&r.body, skipping: record.kind == .call ? ["sdkVersion", "appVersion"] : [])
        return r
    }

    // MARK: Scanning

    /// Bytes of a "word" that may hold an address: letters, digits, `.` and `:`. Anything else
    /// (space, brackets, `/`, `%`, `=`, quotes) separates words.
    static func isWordByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x3A) || b == 0x2E || (b | 0x20 >= 0x61 && b | 0x20 <= 0x7A)
    }

    /// The replacement for one word, when it is (or contains, in a known shape) an address.
    private func rewrite(_ w: ArraySlice<UInt8>) -> [UInt8]? {
        // The whole word: "10.0.0.1", "2001:db8::1".
        if let a = IPAddress(utf8: w) { return replacement(a) }
        // A trailing sentence dot: "from 10.0.0.1."
        if w.last == UInt8(ascii: "."), let a = IPAddress(utf8: w.dropLast()) {
            return replacement(a).map { $0 + [UInt8(ascii: ".")] }
        }
        // IPv4 with a port: "10.254.20.195:61074" (legacy googLocalAddress).
        if let c = w.lastIndex(of: UInt8(ascii: ":")), c > w.startIndex, c + 1 < w.endIndex,
            w[(c + 1)...].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let a = IPAddress(utf8: w[..<c]), a.isV4
        {
            return replacement(a).map { $0 + Array(w[c...]) }
        }
        // A scheme before it: "turn:203.0.113.7:3478", "stun:[…]" is split by the bracket already.
        if let c = w.firstIndex(of: UInt8(ascii: ":")), c > w.startIndex,
            w[..<c].allSatisfy({ $0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A }),
            let rest = rewrite(w[(c + 1)...])
        {
            return Array(w[...c]) + rest
        }
        return nil
    }

    private func replacement(_ a: IPAddress) -> [UInt8]? {
        let p = pseudonym(for: a)
        return p == a ? nil : Array(p.description.utf8)
    }
}

// MARK: - Addresses

/// An IPv4 or IPv6 address, parsed from and printed as text (RFC 5952 form for IPv6).
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    case v4(UInt32)
    /// High and low 64 bits.
    case v6(UInt64, UInt64)

    public init?(_ text: String) { self.init(utf8: ArraySlice(text.utf8)) }

    public init?(utf8 s: ArraySlice<UInt8>) {
        if let v = IPAddress.parseV4(s) { self = .v4(v); return }
        if let (h, l) = IPAddress.parseV6(s) { self = .v6(h, l); return }
        return nil
    }

    public var isV4: Bool { if case .v4 = self { return true }; return false }

    public var isUnspecified: Bool {
        switch self {
        case .v4(let a): a == 0
        case .v6(let h, let l): h == 0 && l == 0
        }
    }

    public var isLoopback: Bool {
        switch self {
        case .v4(let a): a >> 24 == 127
        case .v6(let h, let l): h == 0 && l == 1
        }
    }

    /// Dotted decimal: four groups of 1-3 digits, each at most 255.
    static func parseV4(_ s: ArraySlice<UInt8>) -> UInt32? {
        guard s.count >= 7, s.count <= 15 else { return nil }
        var value: UInt32 = 0, part: UInt32 = 0, digits = 0, groups = 0
        for b in s {
            if b >= 0x30 && b <= 0x39 {
                part = part * 10 + UInt32(b - 0x30)
                digits += 1
                guard digits <= 3, part <= 255 else { return nil }
            } else if b == UInt8(ascii: ".") {
                guard digits > 0, groups < 3 else { return nil }
                value = value << 8 | part
                groups += 1
                part = 0
                digits = 0
            } else {
                return nil
            }
        }
        guard digits > 0, groups == 3 else { return nil }
        return value << 8 | part
    }

    /// RFC 4291 §2.2 text: eight groups of 1-4 hex digits, one `::` at most, an IPv4 tail allowed.
    static func parseV6(_ s: ArraySlice<UInt8>) -> (UInt64, UInt64)? {
        guard s.count >= 2, s.count <= 45, s.contains(UInt8(ascii: ":")) else { return nil }
        var head = [UInt16](), tail = [UInt16]()
        var sawGap = false
        var i = s.startIndex
        if s[i] == UInt8(ascii: ":") {
            guard s.count >= 2, s[i + 1] == UInt8(ascii: ":") else { return nil }
            sawGap = true
            i += 2
        }
        while i < s.endIndex {
            // One group, or an IPv4 tail.
            var j = i
            while j < s.endIndex, s[j] != UInt8(ascii: ":") { j += 1 }
            let group = s[i..<j]
            if group.contains(UInt8(ascii: ".")) {
                guard j == s.endIndex, let v4 = parseV4(group) else { return nil }
                let parts = [UInt16(v4 >> 16), UInt16(v4 & 0xFFFF)]
                if sawGap { tail += parts } else { head += parts }
                i = j
                break
            }
            guard !group.isEmpty, group.count <= 4 else { return nil }
            var v: UInt16 = 0
            for b in group {
                guard let d = hexValue(b) else { return nil }
                v = v << 4 | UInt16(d)
            }
            if sawGap { tail.append(v) } else { head.append(v) }
            if j == s.endIndex { i = j; break }
            // j is a ':'; "::" opens the gap.
            if j + 1 < s.endIndex, s[j + 1] == UInt8(ascii: ":") {
                guard !sawGap else { return nil }
                sawGap = true
                i = j + 2
            } else {
                guard j + 1 < s.endIndex else { return nil }  // a trailing single ':'
                i = j + 1
            }
        }
        let total = head.count + tail.count
        if sawGap { guard total <= 7 else { return nil } } else { guard total == 8 else { return nil } }
        let groups = head + [UInt16](repeating: 0, count: 8 - total) + tail
        var hi: UInt64 = 0, lo: UInt64 = 0
        for k in 0..<4 { hi = hi << 16 | UInt64(groups[k]) }
        for k in 4..<8 { lo = lo << 16 | UInt64(groups[k]) }
        return (hi, lo)
    }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: b - 0x30
        case 0x61...0x66: b - 0x61 + 10
        case 0x41...0x46: b - 0x41 + 10
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .v4(let a):
            return "\(a >> 24).\(a >> 16 & 255).\(a >> 8 & 255).\(a & 255)"
        case .v6(let hi, let lo):
            let g = (0..<8).map { k -> UInt16 in
                let word = k < 4 ? hi : lo
                return UInt16(truncatingIfNeeded: word >> UInt64(16 * (3 - k % 4)))
            }
            // RFC 5952: the longest run of two or more zero groups (the first of equals) becomes "::".
            var bestStart = -1, bestLength = 1, k = 0
            while k < 8 {
                guard g[k] == 0 else { k += 1; continue }
                var e = k
                while e < 8, g[e] == 0 { e += 1 }
                if e - k > bestLength { bestStart = k; bestLength = e - k }
                k = e
            }
            func hex(_ r: Range<Int>) -> String { r.map { String(g[$0], radix: 16) }.joined(separator: ":") }
            guard bestStart >= 0 else { return hex(0..<8) }
            return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<8)
        }
    }
}

/// An address prefix such as `203.0.113.0/24`, `2001:db8::/32`, or one address (`198.51.100.7`).
public struct IPPrefix: Hashable, Sendable, CustomStringConvertible {
    public var network: IPAddress
    public var length: Int

    /// `length` is clamped to the family's size; host bits of `address` are cleared.
    public init(address: IPAddress, length: Int) {
        let len = max(0, min(length, address.isV4 ? 32 : 128))
        self.length = len
        switch address {
        case .v4(let a):
            network = .v4(len == 0 ? 0 : a & ~UInt32(0) << UInt32(32 - len))
        case .v6(let h, let l):
            let hm: UInt64 = len >= 64 ? ~0 : (len == 0 ? 0 : ~UInt64(0) << UInt64(64 - len))
            let lm: UInt64 = len <= 64 ? 0 : (len == 128 ? ~0 : ~UInt64(0) << UInt64(128 - len))
            network = .v6(h & hm, l & lm)
        }
    }

    /// Parses `address` or `address/length`; nil when it is neither.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let a = IPAddress(String(parts[0])) else { return nil }
        var len = a.isV4 ? 32 : 128
        if parts.count == 2 {
            guard let n = Int(parts[1]), n >= 0, n <= len else { return nil }
            len = n
        }
        self.init(address: a, length: len)
    }

    public func contains(_ a: IPAddress) -> Bool {
        guard a.isV4 == network.isV4 else { return false }
        return IPPrefix(address: a, length: length).network == network
    }

    public var description: String { "\(network)/\(length)" }
}

// MARK: - SipHash

/// A 128-bit SipHash key.
public struct SipHashKey: Sendable, Equatable {
    public var k0: UInt64
    public var k1: UInt64

    public init(k0: UInt64, k1: UInt64) {
        self.k0 = k0
        self.k1 = k1
    }

    /// Sixteen bytes, read as two little-endian words as the SipHash paper specifies.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        k0 = SipHash24.littleEndianWord(bytes[0..<8])
        k1 = SipHash24.littleEndianWord(bytes[8..<16])
    }

    /// 32 hex digits (the 16 bytes in order), e.g. from a configuration file.
    public init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 32 else { return nil }
        var bytes = [UInt8]()
        for i in stride(from: 0, to: 32, by: 2) {
            guard let b = UInt8(String(decoding: digits[i..<(i + 2)], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(b)
        }
        self.init(bytes: bytes)
    }
}

/// SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012): a keyed
/// 64-bit hash built for short inputs, small enough to carry here without a crypto package.
public enum SipHash24 {
    public static func hash(_ message: [UInt8], key: SipHashKey) -> UInt64 {
        var v0: UInt64 = 0x736f6d6570736575 ^ key.k0
        var v1: UInt64 = 0x646f72616e646f6d ^ key.k1
        var v2: UInt64 = 0x6c7967656e657261 ^ key.k0
        var v3: UInt64 = 0x7465646279746573 ^ key.k1

        @inline(__always) func round() {
            v0 = v0 &+ v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
            v2 = v2 &+ v3; v3 = rotl(v3, 16); v3 ^= v2
            v0 = v0 &+ v3; v3 = rotl(v3, 21); v3 ^= v0
            v2 = v2 &+ v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
        }

        let fullWords = message.count / 8
        for w in 0..<fullWords {
            let m = littleEndianWord(message[(w * 8)..<(w * 8 + 8)])
            v3 ^= m
            round(); round()
            v0 ^= m
        }
        // The last word: remaining bytes, and the message length in the top byte.
        var last = UInt64(truncatingIfNeeded: message.count) << 56
        for (i, b) in message[(fullWords * 8)...].enumerated() { last |= UInt64(b) << UInt64(8 * i) }
        v3 ^= last
        round(); round()
        v0 ^= last
        v2 ^= 0xff
        round(); round(); round(); round()
        return v0 ^ v1 ^ v2 ^ v3
    }

    @inline(__always) static func rotl(_ x: UInt64, _ b: UInt64) -> UInt64 { (x << b) | (x >> (64 - b)) }

    static func littleEndianWord(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        var w: UInt64 = 0
        for (i, b) in bytes.enumerated() { w |= UInt64(b) << UInt64(8 * i) }
        return w
    }
}

// MARK: - Identifiers

/// Keyed pseudonyms of identifiers, and where identifiers are found in records: the one place
/// that `callstats analyze --pseudonymize-key` (`CallPseudonymizer`, on call material) and
/// `callstats serve --pseudonymize-key` (`RecordPrivacy`, on records before they are written)
/// take them from, so that both give the same pseudonyms and miss the same nothing.
///
/// What is replaced, and why each rule holds:
/// - **Identifying fields** (`isIdentifyingField`): a member whose name, lowercased with
///   everything but letters and digits removed, is a person field (`user`, `email`, `phone`,
///   `caller`, `displayName`, …, or any name containing `email`, `phone`, `msisdn`) or a
///   call-id field (`callId`, `sipCallId`), at any depth. Its value is replaced whatever its
///   type: a string by its pseudonym, a number by the pseudonym of its JSON text (a phone number
///   given as a number), an object or array by the pseudonym of its JSON text.
/// - **Known secrets in free text**: the call's own id (and the user part of a SIP Call-ID)
///   wherever it appears inside another string (`statusText`, `sipReason`, event details).
/// - **Shapes that name someone, in any string**: e-mail addresses and SIP URIs' `user@host`
///   (so a SIP Call-ID `user@host` too), `+` and 8-15 digits (an E.164 phone number).
/// - IP addresses stay the `Pseudonymizer`'s work.
///
/// A pseudonym is `anon-` and 16 hex digits of SipHash-2-4 under the key; text already of
/// that form is its own pseudonym, so records pseudonymised at the door and analysed with the
/// same key keep the ids they were written with (and a call posted to `serve` merges with the
/// same call analysed from an app's log).
public struct KeyedIdentifiers: Sendable {
    public let key: SipHashKey

    public init(key: SipHashKey) { self.key = key }

    /// Normalised person-field names (see `normalizedFieldName`).
    public static let personFieldNames: Set<String> = [
        "user", "userid", "username", "useremail", "userphone", "usernumber", "caller", "callerid", "callername",
        "callee", "calleeid", "calleename", "from", "to", "email", "emailaddress", "mail", "phone", "phonenumber",
        "mobile", "mobilenumber", "msisdn", "displayname", "name", "fullname", "firstname", "lastname", "nickname",
        "sipuri", "aor", "participant", "participantid", "customerid", "accountid",
    ]
    /// Parts that make any name a person field.
    static let personFieldParts = ["email", "phone", "msisdn"]
    /// Normalised names of fields that hold a call's own identifier (the capture's SIP Call-ID).
    public static let callIDFieldNames: Set<String> = ["callid", "sipcallid"]

    /// `name` lowercased, with everything but ASCII letters and digits removed: `e-mail`,
    /// `Email` and `E_Mail` are one name.
    public static func normalizedFieldName(_ name: String) -> String {
        var out = ""
        for b in name.utf8 {
            if b >= 0x41 && b <= 0x5A {
                out.unicodeScalars.append(Unicode.Scalar(b | 0x20))
            } else if (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) {
                out.unicodeScalars.append(Unicode.Scalar(b))
            }
        }
        return out
    }

    /// Whether a member of this name names a person.
    public static func isPersonField(_ name: String) -> Bool {
        let n = normalizedFieldName(name)
        return personFieldNames.contains(n) || personFieldParts.contains { n.contains($0) }
    }

    /// Whether a member of this name holds an identifier to replace whole.
    public static func isIdentifyingField(_ name: String) -> Bool {
        isPersonField(name) || callIDFieldNames.contains(normalizedFieldName(name))
    }

    /// The text a person field's value is matched and pseudonymised by: a string itself, any
    /// other value its JSON text; nil for null and booleans, which name no one.
    public static func identifyingText(_ value: JSONValue) -> String? {
        switch value {
        case .string(let s): s
        case .null, .bool: nil
        case .number, .array, .object: value.serialized()
        }
    }

    /// Whether `text` already is a pseudonym (`anon-` and 16 lowercase hex digits).
    public static func isPseudonym(_ text: String) -> Bool {
        let u = Array(text.utf8)
        guard u.count == 21, u.starts(with: Array("anon-".utf8)) else { return false }
        return u[5...].allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// The pseudonym of an identifier.
    public func identifier(_ text: String) -> String {
        if KeyedIdentifiers.isPseudonym(text) { return text }
        let h = SipHash24.hash(Array(text.utf8), key: key)
        let hex = String(h, radix: 16)
        return "anon-" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The strings of a call's id to look for inside other text: the id, and the user part of
    /// a `user@host` id (a SIP Call-ID), each of at least 4 characters (shorter ones would
    /// match inside ordinary words).
    public static func secrets(ofCallID id: String) -> [String] {
        guard !isPseudonym(id), id != "-" else { return [] }
        var out: [String] = []
        if id.utf8.count >= 4 { out.append(id) }
        if let at = id.firstIndex(of: "@") {
            let user = String(id[..<at])
            if user.utf8.count >= 4 { out.append(user) }
        }
        return out
    }

    /// Replaces the values of identifying fields in `object` and everything inside it.
    @discardableResult
    public func replaceIdentifyingFields(in object: inout JSONObject) -> Bool {
        var changed = false
        for i in object.entries.indices {
            if KeyedIdentifiers.isIdentifyingField(object.entries[i].key) {
                guard let text = KeyedIdentifiers.identifyingText(object.entries[i].value) else { continue }
                object.entries[i].value = .string(identifier(text))
                changed = true
            } else if replaceIdentifyingFields(in: &object.entries[i].value) {
                changed = true
            }
        }
        return changed
    }

    @discardableResult
    public func replaceIdentifyingFields(in value: inout JSONValue) -> Bool {
        switch value {
        case .object(var o):
            value = .null
            let changed = replaceIdentifyingFields(in: &o)
            value = .object(o)
            return changed
        case .array(var a):
            value = .null
            var changed = false
            for i in a.indices where replaceIdentifyingFields(in: &a[i]) { changed = true }
            value = .array(a)
            return changed
        case .null, .bool, .number, .string:
            return false
        }
    }

    /// `text` with every occurrence of `secrets` and every e-mail address, SIP user part and
    /// E.164 number replaced by its pseudonym; nil when there was nothing to replace.
    public func scrubbed(_ text: String, secrets: [String]) -> String? {
        var s = text
        var changed = false
        for secret in secrets where s.contains(secret) {
            s = s.replacing(secret, with: identifier(secret))
            changed = true
        }
        if let t = replacingShapes(in: s) {
            s = t
            changed = true
        }
        return changed ? s : nil
    }

    /// Replaces, in every string inside `value`, what `scrubbed(_:secrets:)` replaces.
    @discardableResult
    public func scrub(_ value: inout JSONValue, secrets: [String]) -> Bool {
        switch value {
        case .string(let s):
            guard let t = scrubbed(s, secrets: secrets) else { return false }
            value = .string(t)
            return true
        case .array(var a):
            value = .null
            var changed = false
            for i in a.indices where scrub(&a[i], secrets: secrets) { changed = true }
            value = .array(a)
            return changed
        case .object(var o):
            value = .null
            let changed = scrub(&o, secrets: secrets)
            value = .object(o)
            return changed
        case .null, .bool, .number:
            return false
        }
    }

    @discardableResult
    public func scrub(_ object: inout JSONObject, secrets: [String], skipping: Set<String> = []) -> Bool {
        var changed = false
        for i in object.entries.indices where !skipping.contains(object.entries[i].key) {
            if scrub(&object.entries[i].value, secrets: secrets) { changed = true }
        }
        return changed
    }

    /// E-mail addresses (`local@domain.tld`, so SIP URIs' `user@host` and SIP Call-IDs too) and
    /// `+` followed by 8-15 digits, each replaced whole by its pseudonym.
    private func replacingShapes(in text: String) -> String? {
        var hasAt = false, hasPlus = false
        for b in text.utf8 {
            if b == UInt8(ascii: "@") { hasAt = true } else if b == UInt8(ascii: "+") { hasPlus = true }
        }
        guard hasAt || hasPlus else { return nil }
        let bytes = Array(text.utf8)
        var out = [UInt8]()
        var copied = 0, i = 0
        var changed = false
        func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
        func isLocal(_ b: UInt8) -> Bool {
            isDigit(b) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x7A) || b == 0x2E || b == 0x5F || b == 0x25 || b == 0x2B || b == 0x2D
                || b >= 0x80
        }
        func replace(_ range: Range<Int>) {
            out.append(contentsOf: bytes[copied..<range.lowerBound])
            out.append(contentsOf: identifier(String(decoding: bytes[range], as: UTF8.self)).utf8)
            copied = range.upperBound
            changed = true
        }
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "@") {
                var start = i
                while start > copied, isLocal(bytes[start - 1]) { start -= 1 }
                var end = i + 1
                var dots = 0
                while end < bytes.count, isLocal(bytes[end]) || bytes[end] == UInt8(ascii: "-") {
                    if bytes[end] == UInt8(ascii: ".") { dots += 1 }
                    end += 1
                }
                while end > i + 1, bytes[end - 1] == UInt8(ascii: ".") { end -= 1; dots -= 1 }
                if start < i, end > i + 1, dots > 0 || end - i > 4 {
                    replace(start..<end)
                    i = end
                    continue
                }
            } else if bytes[i] == UInt8(ascii: "+"), i + 1 < bytes.count, isDigit(bytes[i + 1]),
                i == 0 || !isDigit(bytes[i - 1])
            {
                var end = i + 1
                while end < bytes.count, isDigit(bytes[end]) { end += 1 }
                if (8...15).contains(end - i - 1) {
                    replace(i..<end)
                    i = end
                    continue
                }
            }
            i += 1
        }
        guard changed else { return nil }
        out.append(contentsOf: bytes[copied...])
        return String(decoding: out, as: UTF8.self)
    }
}
