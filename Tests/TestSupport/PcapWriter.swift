import Foundation

/// Writes classic pcap captures (microsecond or nanosecond timestamps) with Ethernet, Linux
/// cooked (SLL/SLL2), raw IP or BSD loopback framing, so that tests can build captures with
/// exactly known contents and run both the capture engine and tshark on them.
public struct PcapWriter {
    public enum Link: Int32 {
        case null = 0, ethernet = 1, raw = 101, linuxSLL = 113, linuxSLL2 = 276
    }

    public let link: Link
    public let nanosecond: Bool
    public private(set) var bytes: [UInt8] = []
    public private(set) var frameCount = 0
    var ipIdentification: UInt16 = 1

    public init(link: Link = .ethernet, nanosecond: Bool = false) {
        self.link = link
        self.nanosecond = nanosecond
        bytes.append(contentsOf: PcapBytes.le32(nanosecond ? 0xA1B2_3C4D : 0xA1B2_C3D4))
        bytes.append(contentsOf: PcapBytes.le16(2) + PcapBytes.le16(4))
        bytes.append(contentsOf: PcapBytes.le32(0) + PcapBytes.le32(0))
        bytes.append(contentsOf: PcapBytes.le32(262_144))
        bytes.append(contentsOf: PcapBytes.le32(UInt32(link.rawValue)))
    }

    /// Appends one frame, as captured (the original length equals the captured length
    /// unless `originalLength` says otherwise).
    public mutating func add(frame: [UInt8], timestampNanos: Int64, originalLength: Int? = nil) {
        let seconds = UInt32(timestampNanos / 1_000_000_000)
        let fraction = timestampNanos % 1_000_000_000
        bytes.append(contentsOf: PcapBytes.le32(seconds))
        bytes.append(contentsOf: PcapBytes.le32(UInt32(nanosecond ? fraction : fraction / 1000)))
        bytes.append(contentsOf: PcapBytes.le32(UInt32(frame.count)))
        bytes.append(contentsOf: PcapBytes.le32(UInt32(originalLength ?? frame.count)))
        bytes.append(contentsOf: frame)
        frameCount += 1
    }

    /// Appends a UDP datagram between two `address:port` endpoints (IPv4 or IPv6 text),
    /// optionally behind 802.1Q tags (Ethernet only).
    public mutating func addUDP(
        from source: String, _ sourcePort: UInt16, to destination: String, _ destinationPort: UInt16,
        payload: [UInt8], timestampNanos: Int64, vlans: [UInt16] = []
    ) {
        let packets = ipPackets(from: source, sourcePort, to: destination, destinationPort, payload: payload, fragmentSize: nil)
        for p in packets { add(frame: frame(ip: p.bytes, isIPv6: p.isIPv6, vlans: vlans), timestampNanos: timestampNanos) }
    }

    /// Appends a UDP datagram split into IP fragments carrying at most `fragmentSize` bytes
    /// of IP payload each (a multiple of 8). `order` permutes the fragments.
    public mutating func addFragmentedUDP(
        from source: String, _ sourcePort: UInt16, to destination: String, _ destinationPort: UInt16,
        payload: [UInt8], timestampNanos: Int64, fragmentSize: Int, reversed: Bool = false
    ) {
        var packets = ipPackets(from: source, sourcePort, to: destination, destinationPort, payload: payload, fragmentSize: fragmentSize)
        if reversed { packets.reverse() }
        for (i, p) in packets.enumerated() {
            add(frame: frame(ip: p.bytes, isIPv6: p.isIPv6, vlans: []), timestampNanos: timestampNanos + Int64(i) * 1000)
        }
    }

    public func write(to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    // MARK: Framing

    func frame(ip: [UInt8], isIPv6: Bool, vlans: [UInt16]) -> [UInt8] {
        let etherType: UInt16 = isIPv6 ? 0x86DD : 0x0800
        switch link {
        case .ethernet:
            var f: [UInt8] = [0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01]
            for (i, vlan) in vlans.enumerated() {
                f += PcapBytes.be16(i == 0 && vlans.count > 1 ? 0x88A8 : 0x8100) + PcapBytes.be16(vlan)
            }
            f += PcapBytes.be16(etherType)
            f += ip
            while f.count < 60 { f.append(0) }  // Ethernet minimum frame, padding after IP
            return f
        case .linuxSLL:
            return PcapBytes.be16(0) + PcapBytes.be16(1) + PcapBytes.be16(6) + [0x02, 0, 0, 0, 0, 0x01, 0, 0] + PcapBytes.be16(etherType) + ip
        case .linuxSLL2:
            return PcapBytes.be16(etherType) + PcapBytes.be16(0) + PcapBytes.be32(2) + PcapBytes.be16(1) + [0, 6] + [0x02, 0, 0, 0, 0, 0x01, 0, 0] + ip
        case .raw:
            return ip
        case .null:
            return PcapBytes.le32(isIPv6 ? 30 : 2) + ip
        }
    }

    struct IPPacket { var bytes: [UInt8]; var isIPv6: Bool }

    mutating func ipPackets(
        from source: String, _ sourcePort: UInt16, to destination: String, _ destinationPort: UInt16,
        payload: [UInt8], fragmentSize: Int?
    ) -> [IPPacket] {
        let isIPv6 = source.contains(":")
        let src = isIPv6 ? PcapBytes.ipv6Bytes(source) : PcapBytes.ipv4Bytes(source)
        let dst = isIPv6 ? PcapBytes.ipv6Bytes(destination) : PcapBytes.ipv4Bytes(destination)
        var udp = PcapBytes.be16(sourcePort) + PcapBytes.be16(destinationPort) + PcapBytes.be16(UInt16(8 + payload.count)) + PcapBytes.be16(0) + payload
        // UDP checksum over the pseudo-header.
        var pseudo = src + dst
        pseudo += isIPv6 ? PcapBytes.be32(UInt32(udp.count)) + [0, 0, 0, 17] : [0, 17] + PcapBytes.be16(UInt16(udp.count))
        var sum = PcapBytes.checksum(pseudo + udp)
        if sum == 0 { sum = 0xFFFF }
        udp[6] = UInt8(sum >> 8)
        udp[7] = UInt8(sum & 0xFF)

        let id = ipIdentification
        ipIdentification &+= 1
        var pieces: [(offset: Int, bytes: [UInt8], more: Bool)] = []
        if let size = fragmentSize, udp.count > size {
            var o = 0
            while o < udp.count {
                let end = min(o + size, udp.count)
                pieces.append((o, Array(udp[o..<end]), end < udp.count))
                o = end
            }
        } else {
            pieces = [(0, udp, false)]
        }
        let fragmented = pieces.count > 1
        return pieces.map { piece in
            if isIPv6 {
                var body = piece.bytes
                var next: UInt8 = 17
                if fragmented {
                    body = [17, 0] + PcapBytes.be16(UInt16(piece.offset) | (piece.more ? 1 : 0)) + PcapBytes.be32(UInt32(id)) + body
                    next = 44
                }
                return IPPacket(bytes: [0x60, 0, 0, 0] + PcapBytes.be16(UInt16(body.count)) + [next, 64] + src + dst + body, isIPv6: true)
            }
            var h: [UInt8] = [0x45, 0] + PcapBytes.be16(UInt16(20 + piece.bytes.count)) + PcapBytes.be16(id)
            h += PcapBytes.be16(UInt16(piece.offset / 8) | (piece.more ? 0x2000 : 0))
            h += [64, 17, 0, 0] + src + dst
            let c = PcapBytes.checksum(h)
            h[10] = UInt8(c >> 8)
            h[11] = UInt8(c & 0xFF)
            return IPPacket(bytes: h + piece.bytes, isIPv6: false)
        }
    }
}

/// Byte-order and checksum helpers for building packets.
public enum PcapBytes {
    public static func checksum(_ data: [UInt8]) -> UInt16 {
        var sum: UInt32 = 0
        var i = 0
        while i + 1 < data.count { sum += UInt32(data[i]) << 8 | UInt32(data[i + 1]); i += 2 }
        if i < data.count { sum += UInt32(data[i]) << 8 }
        while sum >> 16 != 0 { sum = (sum & 0xFFFF) + (sum >> 16) }
        return ~UInt16(sum)
    }

    public static func ipv4Bytes(_ s: String) -> [UInt8] { s.split(separator: ".").map { UInt8($0)! } }

    public static func ipv6Bytes(_ s: String) -> [UInt8] {
        let halves = s.components(separatedBy: "::")
        func words(_ t: String) -> [UInt16] { t.isEmpty ? [] : t.split(separator: ":").map { UInt16($0, radix: 16)! } }
        let head = words(halves[0])
        let tail = halves.count > 1 ? words(halves[1]) : []
        let all = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        return all.flatMap { be16($0) }
    }

    public static func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
    public static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    public static func be64(_ v: UInt64) -> [UInt8] { be32(UInt32(v >> 32)) + be32(UInt32(v & 0xFFFF_FFFF)) }
    public static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    public static func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
}
