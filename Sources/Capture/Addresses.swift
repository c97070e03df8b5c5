/// An IPv4 or IPv6 address in 16 bytes, hashable without allocation.
///
/// IPv4 addresses are kept in their IPv4-mapped IPv6 form (`::ffff:a.b.c.d`), so one type
/// serves both families and a flow key stays a small fixed-size value. A real IPv6 packet
/// carrying a mapped address is therefore indistinguishable from IPv4; that never happens on
/// the wire in practice.
public struct IPAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    public init(ipv4 value: UInt32) {
        high = 0
        low = 0x0000_FFFF_0000_0000 | UInt64(value)
    }

    public var isIPv4: Bool { high == 0 && low >> 32 == 0xFFFF }

    /// The IPv4 address as a 32-bit number, or nil for IPv6.
    public var ipv4Value: UInt32? { isIPv4 ? UInt32(truncatingIfNeeded: low) : nil }

    public static func < (a: IPAddress, b: IPAddress) -> Bool {
        a.high != b.high ? a.high < b.high : a.low < b.low
    }

    /// Parses dotted-quad IPv4 or RFC 4291 IPv6 text (with `::`, optional IPv4 tail, no zone).
    public init?(_ text: some StringProtocol) {
        let s = text.hasPrefix("[") && text.hasSuffix("]") ? text.dropFirst().dropLast() : text[...]
        if !s.contains(":") {
            guard let v = IPAddress.parseIPv4(s) else { return nil }
            self.init(ipv4: v)
            return
        }
        guard let words = IPAddress.parseIPv6(s) else { return nil }
        var h: UInt64 = 0
        var l: UInt64 = 0
        for i in 0..<4 { h = h << 16 | UInt64(words[i]) }
        for i in 4..<8 { l = l << 16 | UInt64(words[i]) }
        self.init(high: h, low: l)
    }

    static func parseIPv4(_ s: some StringProtocol) -> UInt32? {
        var value: UInt32 = 0
        var parts = 0
        for part in s.split(separator: ".", omittingEmptySubsequences: false) {
            guard part.count >= 1, part.count <= 3, let n = UInt32(part), n <= 255 else { return nil }
            value = value << 8 | n
            parts += 1
        }
        return parts == 4 ? value : nil
    }

    static func parseIPv6(_ s: some StringProtocol) -> [UInt16]? {
        // Split at the one "::" allowed, without Foundation.
        let chars = Array(s)
        var halves: [String] = []
        var current = ""
        var i = 0
        while i < chars.count {
            if chars[i] == ":", i + 1 < chars.count, chars[i + 1] == ":" {
                halves.append(current)
                current = ""
                i += 2
            } else {
                current.append(chars[i])
                i += 1
            }
        }
        halves.append(current)
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [UInt16]? {
            if part.isEmpty { return [] }
            var out = [UInt16]()
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            for (i, f) in fields.enumerated() {
                if i == fields.count - 1, f.contains(".") {
                    guard let v4 = parseIPv4(f) else { return nil }
                    out.append(UInt16(v4 >> 16))
                    out.append(UInt16(v4 & 0xFFFF))
                } else {
                    guard f.count >= 1, f.count <= 4, let w = UInt16(f, radix: 16) else { return nil }
                    out.append(w)
                }
            }
            return out
        }
        guard let head = groups(halves[0]) else { return nil }
        if halves.count == 1 { return head.count == 8 ? head : nil }
        guard let tail = groups(halves[1]), head.count + tail.count < 8 else { return nil }
        return head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
    }

    /// Dotted quad for IPv4, RFC 5952 canonical text for IPv6.
    public var description: String {
        if let v4 = ipv4Value {
            return "\(v4 >> 24).\(v4 >> 16 & 0xFF).\(v4 >> 8 & 0xFF).\(v4 & 0xFF)"
        }
        var words = [UInt16]()
        for i in 0..<4 { words.append(UInt16(truncatingIfNeeded: high >> (48 - 16 * UInt64(i)))) }
        for i in 0..<4 { words.append(UInt16(truncatingIfNeeded: low >> (48 - 16 * UInt64(i)))) }
        // Longest run of two or more zero groups becomes "::" (the first such run on a tie).
        var bestStart = -1, bestLength = 1
        var i = 0
        while i < 8 {
            if words[i] == 0 {
                var j = i
                while j < 8 && words[j] == 0 { j += 1 }
                if j - i > bestLength { bestStart = i; bestLength = j - i }
                i = j
            } else {
                i += 1
            }
        }
        func hex(_ r: ArraySlice<UInt16>) -> String { r.map { String($0, radix: 16) }.joined(separator: ":") }
        if bestStart < 0 { return hex(words[...]) }
        return hex(words[0..<bestStart]) + "::" + hex(words[(bestStart + bestLength)...])
    }
}

/// An IP address and UDP port.
public struct Endpoint: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var address: IPAddress
    public var port: UInt16

    public init(address: IPAddress, port: UInt16) {
        self.address = address
        self.port = port
    }

    public static func < (a: Endpoint, b: Endpoint) -> Bool {
        a.address != b.address ? a.address < b.address : a.port < b.port
    }

    /// `a.b.c.d:port`, or `[v6]:port`.
    public var description: String {
        address.isIPv4 ? "\(address):\(port)" : "[\(address)]:\(port)"
    }
}

/// A directed UDP flow: source and destination endpoints.
public struct FlowKey: Hashable, Sendable, CustomStringConvertible {
    public var source: Endpoint
    public var destination: Endpoint

    public init(source: Endpoint, destination: Endpoint) {
        self.source = source
        self.destination = destination
    }

    public var reversed: FlowKey { FlowKey(source: destination, destination: source) }

    /// The same value for both directions: the smaller endpoint first.
    public var unordered: FlowKey { source <= destination ? self : reversed }

    public var description: String { "\(source) > \(destination)" }
}

/// One RTP stream: a directed flow and the sender's SSRC, as RFC 3550 and Wireshark key them.
public struct StreamKey: Hashable, Sendable, CustomStringConvertible {
    public var flow: FlowKey
    public var ssrc: UInt32

    public init(flow: FlowKey, ssrc: UInt32) {
        self.flow = flow
        self.ssrc = ssrc
    }

    public var description: String { "\(flow) ssrc=\(hexSSRC(ssrc))" }
}

/// `0x` and eight upper-case hex digits, as Wireshark prints SSRCs.
func hexSSRC(_ v: UInt32) -> String {
    let digits = String(v, radix: 16, uppercase: true)
    return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
}
