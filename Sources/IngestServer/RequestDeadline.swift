import Logging
import NIOCore

/// What the request deadline asks of the connection's request handler when it passes.
protocol RequestDeadlineOwner: AnyObject {
    /// Answers the request under way with 408 (or closes after the reply owed); false when no
    /// request head has been parsed, so the deadline answers itself.
    func requestDeadlinePassed() -> Bool
}

/// The deadline for a whole request: it starts with the request's first byte (with the
/// connection's opening for its first request, so a TLS handshake counts too) and ends with the
/// request's last byte. It sits before the HTTP parser so that a request head sent a byte at a
/// time is bounded as well: the read timeout alone is reset by every byte, and a deadline
/// started once the head is parsed never starts for a head that never ends. Without it, slow
/// clients hold their connections for as long as they like and every other client is refused
/// once they hold them all.
///
/// Between two requests of a kept-alive connection no deadline runs (the read timeout closes an
/// idle connection). The request handler says when a request's head was parsed and when the
/// request ended; all of it runs on the connection's event loop.
final class RequestDeadlineHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    private let metrics: ServerMetrics
    private let logger: Logger
    weak var owner: RequestDeadlineOwner?
    private var context: ChannelHandlerContext?
    /// When the request under way began; nil between requests.
    private var startedAt: NIODeadline?
    private var timer: Scheduled<Void>?
    /// Whether any byte arrived since the deadline started (a connection that sent nothing is
    /// closed without a reply).
    private var received = false
    /// The deadline passed before a head was parsed and the 408 is written: what still arrives
    /// is not parsed.
    private var expired = false

    init(timeout: TimeAmount, metrics: ServerMetrics, logger: Logger) {
        self.timeout = timeout
        self.metrics = metrics
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !expired else { return }
        if startedAt == nil { start(context: context) }
        received = true
        context.fireChannelRead(data)
    }

    /// When the request whose head was just parsed began.
    var requestStart: NIODeadline { startedAt ?? .now() }

    /// The request's last byte arrived: its deadline is met. The next byte starts the next one.
    func requestEnded() {
        timer?.cancel()
        timer = nil
        startedAt = nil
        received = false
    }

    private func start(context: ChannelHandlerContext) {
        let now = NIODeadline.now()
        startedAt = now
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: now + timeout) { bound.value.passed() }
    }

    private func passed() {
        timer = nil
        guard let context else { return }
        if owner?.requestDeadlinePassed() == true { return }
        guard received else {
            context.close(promise: nil)
            return
        }
        expired = true
        // The head never came whole: no parsed request to answer, so the reply is written here,
        // below the HTTP encoder, and the connection closed.
        let seconds = timeout.nanoseconds / 1_000_000_000
        let body = #"{"error":"the request did not arrive whole within \#(seconds) s of its first byte","status":408}"# + "\n"
        let reply =
            "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n\r\n" + body
        metrics.request(status: 408, seconds: nil)
        logger.warning("from \(context.remoteAddress?.ipAddress ?? "-"): 408 request head not whole within \(seconds) s")
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: reply))).whenComplete { _ in
            bound.value.close(promise: nil)
        }
    }
}
