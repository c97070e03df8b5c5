/// An IPv4 or IPv6 address, parsed from and printed as text (RFC 5952 form for IPv6): the one
/// address type, of the pseudonymiser, the capture's flows and serve's configuration. A small
/// fixed-size value, hashable without allocation (a capture keys every packet's flow by two).
public enum IPAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    case v4(UInt32)
    /// High and low 64 bits.
    case v6(UInt64, UInt64)

    /// Text as in a URL or SDP: `192.0.2.1`, `2001:db8::1`, `[2001:db8::1]`.
    public init?(_ text: some StringProtocol) {
        var s = ArraySlice(text.utf8)
        if s.first == UInt8(ascii: "["), s.last == UInt8(ascii: "]") { s = s.dropFirst().dropLast() }
        self.init(utf8: s)
    }

    public init(ipv4 value: UInt32) { self = .v4(value) }

    public init(high: UInt64, low: UInt64) { self = .v6(high, low) }

    /// IPv4 before IPv6, each in numeric order.
    public static func < (a: IPAddress, b: IPAddress) -> Bool {
        switch (a, b) {
        case (.v4(let x), .v4(let y)): x < y
        case (.v6(let xh, let xl), .v6(let yh, let yl)): xh != yh ? xh < yh : xl < yl
        case (.v4, .v6): true
        case (.v6, .v4): false
        }
    }

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
        case .v6(0, let lo) where lo >> 32 == 0xFFFF:
            // RFC 5952 §5: an IPv4-mapped address ends in dotted decimal, as Wireshark prints it.
            return "::ffff:" + IPAddress.v4(UInt32(truncatingIfNeeded: lo)).description
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
