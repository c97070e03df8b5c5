import CallLog
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Bounds the connections open at once, in all and from one client address. Each costs a
/// descriptor and its buffers; without a bound, a flood of idle or slow connections runs the
/// process out of descriptors (accept then fails for everyone) before any timeout closes them,
/// and without a bound per address one client can hold every connection the server allows, so
/// that every other client is refused. Past either bound, a new connection is answered `503`
/// with `Retry-After` and closed at once, so a client is told rather than left hanging.
///
/// An IPv6 client is counted by its /64: one host is given a whole /64 and can pick any address
/// in it. An IPv4 address (IPv4-mapped IPv6 included) counts as itself.
final class ConnectionLimit: Sendable {
    enum Admission: Equatable {
        case admitted
        /// `limit` connections are open.
        case full
        /// `perAddressLimit` connections are open from this client's address.
        case fullForAddress
    }

    let limit: Int
    let perAddressLimit: Int
    private struct Counts {
        var open = 0
        /// Only addresses with a connection open: an entry goes when its last connection closes,
        /// so the table holds at most `limit` entries whatever clients do.
        var byAddress: [String: Int] = [:]
    }
    private let counts = Locked(Counts())
    /// Where connections opened, closed and refused are counted (`/metrics`).
    private let metrics: ServerMetrics?

    init(limit: Int, perAddressLimit: Int? = nil, metrics: ServerMetrics? = nil) {
        self.limit = max(1, limit)
        self.perAddressLimit = max(1, min(self.limit, perAddressLimit ?? Self.defaultPerAddressLimit(limit: limit)))
        self.metrics = metrics
    }

    /// Counts `channel` in, or says which bound it would pass; a counted channel is counted out
    /// when it closes.
    func admit(_ channel: Channel) -> Admission {
        let key = channel.remoteAddress.map(Self.addressKey) ?? ""
        let admission = counts.withLock { c -> Admission in
            guard c.open < limit else { return .full }
            let fromAddress = c.byAddress[key, default: 0]
            guard fromAddress < perAddressLimit else { return .fullForAddress }
            c.open += 1
            c.byAddress[key] = fromAddress + 1
            return .admitted
        }
        guard admission == .admitted else {
            metrics?.connectionRefused(forAddress: admission == .fullForAddress)
            return admission
        }
        metrics?.connectionOpened()
        channel.closeFuture.whenComplete { [counts, metrics] _ in
            counts.withLock { c in
                c.open -= 1
                let left = c.byAddress[key, default: 1] - 1
                c.byAddress[key] = left > 0 ? left : nil
            }
            metrics?.connectionClosed()
        }
        return .admitted
    }

    /// The address a client is counted by: IPv4 as it is, IPv6 by its first 64 bits.
    static func addressKey(_ address: SocketAddress) -> String {
        switch address {
        case .v6(let a):
            let bytes = withUnsafeBytes(of: a.address.sin6_addr) { Array($0) }
            let mappedIPv4 = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
            if mappedIPv4 { return bytes[12..<16].map(String.init).joined(separator: ".") }
            return bytes[0..<8].map { String($0, radix: 16) }.joined(separator: ":") + "::/64"
        default:
            return address.ipAddress ?? ""
        }
    }

    /// The default bound: the process's open-file limit less room for the log files, the
    /// listening socket and the rest of the process, at most 10,000.
    static var defaultLimit: Int {
        var r = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &r) == 0, r.rlim_cur < rlim_t(Int.max) else { return 10_000 }
        return max(16, min(10_000, Int(r.rlim_cur) - 64))
    }

    /// The default bound per address: a quarter of `limit`, kept between 8 and 256 (and never
    /// above `limit`). Enough for the connections of many browsers behind one NAT (a page's
    /// agent keeps one or two), while at least three quarters of a large `limit` stay for other
    /// addresses whatever one address does.
    static func defaultPerAddressLimit(limit: Int) -> Int { min(limit, max(8, min(256, limit / 4))) }
}

/// The whole reply of a connection over the limit: written as the connection opens, then closed.
final class RefuseConnectionHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    private let reply: String

    init(_ admission: ConnectionLimit.Admission) {
        let message =
            admission == .fullForAddress
            ? "too many connections open from your address; try again shortly"
            : "too many connections open; try again shortly"
        let body = #"{"error":"\#(message)","status":503}"# + "\n"
        reply =
            "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
    }

    func channelActive(context: ChannelHandlerContext) {
        let buffer = context.channel.allocator.buffer(string: reply)
        context.writeAndFlush(NIOAny(buffer)).whenComplete { [context] _ in context.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
