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
