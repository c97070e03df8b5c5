/// A pcap link-layer header type (the `LINKTYPE_*` / `DLT_*` numbers in a capture file).
public struct LinkType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// BSD loopback: a 4-byte address family in the capturing host's byte order.
    public static let null = LinkType(rawValue: 0)
    public static let ethernet = LinkType(rawValue: 1)
    /// Raw IP as numbered on some BSDs (`DLT_RAW` = 12 or 14 there).
    public static let rawBSD12 = LinkType(rawValue: 12)
    public static let rawBSD14 = LinkType(rawValue: 14)
    /// Raw IPv4 or IPv6, the version nibble tells which.
    public static let raw = LinkType(rawValue: 101)
    /// OpenBSD loopback: like `null` but the family is in network byte order.
    public static let loop = LinkType(rawValue: 108)
    /// Linux "cooked" capture v1 (`any` interface).
    public static let linuxSLL = LinkType(rawValue: 113)
    public static let ipv4 = LinkType(rawValue: 228)
    public static let ipv6 = LinkType(rawValue: 229)
    /// Linux "cooked" capture v2.
    public static let linuxSLL2 = LinkType(rawValue: 276)

    public var isSupported: Bool {
        [0, 1, 12, 14, 101, 108, 113, 228, 229, 276].contains(rawValue)
    }

    public var description: String {
        switch rawValue {
        case 0: "NULL"
        case 1: "EN10MB"
        case 12, 14, 101: "RAW"
        case 108: "LOOP"
        case 113: "LINUX_SLL"
        case 228: "IPV4"
        case 229: "IPV6"
        case 276: "LINUX_SLL2"
        default: "DLT \(rawValue)"
        }
    }
}
