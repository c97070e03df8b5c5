import CallLog
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Bounds the connections open at once. Each costs a descriptor and its buffers; without a
/// bound, a flood of idle connections runs the process out of descriptors (accept then fails
/// for everyone) before any timeout closes them. Past the bound, a new connection is answered
/// `503` with `Retry-After` and closed at once, so a client is told rather than left hanging.
final class ConnectionLimit: Sendable {
    let limit: Int
    private let open = Locked(0)
    private let refused = Locked(0)

    init(limit: Int) { self.limit = max(1, limit) }

    /// Counts `channel` in, or returns false when `limit` are open; a counted channel is counted
    /// out when it closes.
    func admit(_ channel: Channel) -> Bool {
        let admitted = open.withLock { n in
            guard n < limit else { return false }
            n += 1
            return true
        }
        guard admitted else {
            refused.withLock { $0 += 1 }
            return false
        }
        channel.closeFuture.whenComplete { [open] _ in open.withLock { $0 -= 1 } }
        return true
    }

    var openCount: Int { open.withLock { $0 } }
    var refusedCount: Int { refused.withLock { $0 } }

    /// The default bound: the process's open-file limit less room for the log files, the
    /// listening socket and the rest of the process, at most 10,000.
    static var defaultLimit: Int {
        var r = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &r) == 0, r.rlim_cur < rlim_t(Int.max) else { return 10_000 }
        return max(16, min(10_000, Int(r.rlim_cur) - 64))
    }
}

/// The whole reply of a connection over the limit: written as the connection opens, then closed.
final class RefuseConnectionHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    private static let reply: String = {
        let body = #"{"error":"too many connections open; try again shortly","status":503}"# + "\n"
        return "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
    }()

    func channelActive(context: ChannelHandlerContext) {
        let buffer = context.channel.allocator.buffer(string: Self.reply)
        context.writeAndFlush(NIOAny(buffer)).whenComplete { [context] _ in context.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
