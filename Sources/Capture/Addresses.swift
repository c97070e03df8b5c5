import CallLog

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
        address.isV4 ? "\(address):\(port)" : "[\(address)]:\(port)"
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
