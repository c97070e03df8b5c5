import CallLog
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// Shared by every connection of one server.
final class ServerContext: Sendable {
    let configuration: ServeConfiguration
    let log: ShardedIngestLog
    let metrics: ServerMetrics
    let tokens: TokenList?
    let clients: ClientState
    let logger: Logger
    /// Requests between their first byte and their reply (shutdown waits for them).
    let inFlight = Locked(0)
    /// The number of the last request begun.
    private let requestNumbers = Locked(0)

    init(configuration: ServeConfiguration, log: ShardedIngestLog, metrics: ServerMetrics, tokens: TokenList?, logger: Logger) {
        self.configuration = configuration
        self.log = log
        self.metrics = metrics
        self.tokens = tokens
        self.logger = logger
        clients = ClientState(
            maxBatches: configuration.rememberedBatches,
            maxCallsPerPeriod: configuration.maxCallsPerClient, periodMs: configuration.callPeriodMs)
    }

    /// `r-` and a number: named in every error reply and log line about a request.
    func takeRequestID() -> String { "r-\(requestNumbers.withLock { n in n += 1; return n })" }

    func requestBegan() { inFlight.withLock { $0 += 1 } }
    func requestEnded() { inFlight.withLock { $0 -= 1 } }
}

/// One connection's HTTP requests. Routes:
/// `POST /v1/records`, `OPTIONS *` (CORS preflight), `GET /healthz`, `GET /metrics`, `GET /agent.js`.
///
/// A request's body is collected (up to `maxBodyBytes`) and handled at its end; the reply to a
/// POST waits for the writer's fsync. Requests on one connection are answered in order (NIO's
/// pipelining handler holds the next until the previous reply is written).
final class RequestHandler: ChannelInboundHandler, RequestDeadlineOwner {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let server: ServerContext
    private var config: ServeConfiguration { server.configuration }

    private struct Request {
        var head: HTTPRequestHead
        var id: String
        var body: [UInt8] = []
        var startedAt: NIODeadline
    }

    private var request: Request?
    /// The current request was answered early (an error before its end): ignore the rest of it.
    private var discarding = false
    /// A reply is owed (the request reached its end and is being processed).
    private var awaitingReply = false
    private var closeAfterReply = false
    private var remoteAddress = ""
    /// The whole-request deadline, kept by a handler before the HTTP parser (it sees the head's
    /// bytes); told here when each request's head is parsed and when it ends.
    private let deadline: RequestDeadlineHandler
    private var context: ChannelHandlerContext?

    init(server: ServerContext, deadline: RequestDeadlineHandler) {
        self.server = server
        self.deadline = deadline
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func channelActive(context: ChannelHandlerContext) {
        remoteAddress = context.remoteAddress?.ipAddress ?? ""
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if request != nil { server.requestEnded() }
        request = nil
        context.fireChannelInactive()
    }

    // MARK: - Reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            discarding = false
            let id = server.takeRequestID()
            request = Request(head: head, id: id, startedAt: deadline.requestStart)
            server.requestBegan()
            headReceived(context: context, head: head, id: id)
        case .body(let buffer):
            guard !discarding, request != nil else { return }
            if request!.body.count + buffer.readableBytes > config.maxBodyBytes {
                return fail(
                    context: context, status: .payloadTooLarge,
                    "the request body exceeds \(config.maxBodyBytes) bytes (--max-body)", close: true)
            }
            buffer.withUnsafeReadableBytes { request!.body.append(contentsOf: $0) }
        case .end:
            deadline.requestEnded()
            guard !discarding, let r = request else {
                discarding = false
                return
            }
            awaitingReply = true
            route(context: context, r)
        }
    }

    private func headReceived(context: ChannelHandlerContext, head: HTTPRequestHead, id: String) {
        guard head.method == .POST, path(head) == "/v1/records" else { return }
        if let length = head.headers.first(name: "content-length").flatMap(Int.init), length > config.maxBodyBytes {
            return fail(
                context: context, status: .payloadTooLarge,
                "the request body is \(length) bytes, over the limit of \(config.maxBodyBytes) (--max-body)", close: true)
        }
        // A browser sends `Origin` with every POST, and a simple one (text/plain, no preflight)
        // reaches the server whatever the answer to a preflight would have been: refusing it here,
        // before its body is read, is what keeps pages of other origins from writing. Requests
        // without `Origin` come from agents that are not browsers and are not judged by it.
        if let origin = head.headers.first(name: "origin"), allowedOrigin(origin) == nil {
            return fail(context: context, status: .forbidden, "origin \(origin) is not allowed (--allow-origin)", close: true)
        }
        if let problem = authorizationProblem(head) {
            return fail(
                context: context, status: .unauthorized, problem, close: true,
                extraHeaders: [("WWW-Authenticate", "Bearer realm=\"callstats\"")])
        }
    }

    private func path(_ head: HTTPRequestHead) -> String {
        String(head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
    }

    private func queryValue(_ head: HTTPRequestHead, _ name: String) -> String? {
        guard let q = head.uri.split(separator: "?", maxSplits: 1).dropFirst().first else { return nil }
        for pair in q.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if kv.first == Substring(name), kv.count == 2 { return String(kv[1]).removingPercentEncoding }
        }
        return nil
    }

    /// The token this request presents (`Authorization: Bearer`, or `?token=` for `sendBeacon`,
    /// which cannot set headers).
    private func token(_ head: HTTPRequestHead) -> String? {
        if let auth = head.headers.first(name: "authorization") {
            let parts = auth.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" { return parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return queryValue(head, "token")
    }

    private func authorizationProblem(_ head: HTTPRequestHead) -> String? {
        guard let tokens = server.tokens else { return nil }
        guard let t = token(head) else { return "no bearer token (Authorization: Bearer TOKEN)" }
        return tokens.contains(t) ? nil : "the bearer token is not valid"
    }

    /// Who a request comes from, for batch ids and call limits: its token, or its address.
    private func clientKey(_ head: HTTPRequestHead) -> String {
        if server.tokens != nil, let t = token(head) { return "token:" + t }
        return "address:" + remoteAddress
    }

    // MARK: - Routes

    private func route(context: ChannelHandlerContext, _ r: Request) {
        let p = path(r.head)
        switch (r.head.method, p) {
        case (.OPTIONS, _):
            preflight(context: context, r)
        case (.POST, "/v1/records"):
            postRecords(context: context, r)
        case (.GET, "/healthz"), (.HEAD, "/healthz"):
            reply(context: context, status: .ok, contentType: "application/json", body: Array("{\"status\":\"ok\"}\n".utf8))
        case (.GET, "/metrics"):
            if config.metricsTokenRequired, let problem = authorizationProblem(r.head) {
                return fail(
                    context: context, status: .unauthorized, problem,
                    extraHeaders: [("WWW-Authenticate", "Bearer realm=\"callstats\"")])
            }
            reply(context: context, status: .ok, contentType: "text/plain; version=0.0.4", body: server.metrics.render())
        case (.GET, "/agent.js"), (.HEAD, "/agent.js"):
            reply(
                context: context, status: .ok, contentType: "text/javascript; charset=utf-8", body: PackageResources.agent_js,
                extraHeaders: [("Cache-Control", "max-age=300")])
        case (.GET, "/agent.mjs"), (.HEAD, "/agent.mjs"):
            reply(
                context: context, status: .ok, contentType: "text/javascript; charset=utf-8", body: RequestHandler.agentModule,
                extraHeaders: [("Cache-Control", "max-age=300"), ("Access-Control-Allow-Origin", "*")])
        case (_, "/v1/records"), (_, "/healthz"), (_, "/metrics"), (_, "/agent.js"), (_, "/agent.mjs"):
            fail(context: context, status: .methodNotAllowed, "\(r.head.method) is not allowed on \(p)")
        default:
            fail(context: context, status: .notFound, "no such path: \(p) (POST /v1/records, GET /healthz, /metrics, /agent.js)")
        }
    }

    private func preflight(context: ChannelHandlerContext, _ r: Request) {
        guard let origin = r.head.headers.first(name: "origin"), allowedOrigin(origin) != nil else {
            let named = r.head.headers.first(name: "origin") ?? "(none)"
            return fail(context: context, status: .forbidden, "origin \(named) is not allowed (--allow-origin)")
        }
        reply(
            context: context, status: .noContent, contentType: nil, body: [],
            extraHeaders: [
                ("Access-Control-Allow-Methods", "POST, GET, OPTIONS"),
                ("Access-Control-Allow-Headers", "Authorization, Content-Type, Content-Encoding, Callstats-Batch"),
                ("Access-Control-Max-Age", "600"),
            ])
    }

    /// The value for `Access-Control-Allow-Origin`, when the origin may post.
    private func allowedOrigin(_ origin: String) -> String? {
        if config.allowOrigins.contains("*") { return "*" }
        return config.allowOrigins.contains(origin) ? origin : nil
    }

    private func postRecords(context: ChannelHandlerContext, _ r: Request) {
        guard let encoding = ContentEncoding(header: r.head.headers.first(name: "content-encoding")) else {
            let named = r.head.headers.first(name: "content-encoding") ?? ""
            return fail(
                context: context, status: .unsupportedMediaType,
                "Content-Encoding \(named) is not supported (identity, gzip, zstd)")
        }
        let text: [UInt8]
        do {
            text = try BodyDecoding.decode(r.body, encoding: encoding, limit: config.maxDecodedBytes)
        } catch {
            if case .tooLarge = error {
                return fail(context: context, status: .payloadTooLarge, "\(error) (--max-decoded-body)", close: true)
            }
            return fail(context: context, status: .badRequest, error.description)
        }
        var batch = RecordBatch(parsing: text, maxLineBytes: config.maxLineBytes)
        let client = clientKey(r.head)
        let batchKey = r.head.headers.first(name: "callstats-batch").map { client + "\u{0}" + $0 }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        if let batchKey {
            let claim = server.clients.claim(batch: batchKey) { stored in
                eventLoop.execute {
                    let (handler, context) = bound.value
                    handler.replyStored(context: context, stored)
                }
            }
            switch claim {
            case .answered(let stored): return replyStored(context: context, stored)
            case .waiting: return
            case .claimed: break
            }
        }
        let finishBatch: @Sendable (Int, String) -> Void = { [clients = server.clients] status, body in
            if let batchKey { clients.finish(batch: batchKey, reply: .init(status: status, body: body)) }
        }
        let calls = Set(batch.records.lazy.map(\.record.call).filter { $0 != "-" })
        if let already = server.clients.admit(calls: calls, client: client) {
            let message =
                "records for \(calls.count) calls would take this client past \(config.maxCallsPerClient) calls per \(config.callPeriodMs / 1000) s (it has \(already))"
            finishBatch(429, "")
            return fail(
                context: context, status: .tooManyRequests, message,
                extraHeaders: [("Retry-After", String(max(1, config.callPeriodMs / 1000)))])
        }
        if config.recordClientAddress {
            for i in batch.records.indices where batch.records[i].record.kind == .call {
                batch.records[i].record.body["clientAddress"] = .string(remoteAddress)
            }
        }
        let acceptedBytes = batch.records.reduce(0) { $0 + $1.bytes }
        let parsed = batch
        let requestID = r.id
        let batchID = r.head.headers.first(name: "callstats-batch")
        let started = NIODeadline.now()
        do {
            try server.log.submit(batch.records, bytes: acceptedBytes + 256, client: client) { [metrics = server.metrics] result in
                switch result {
                case .success(let outcome):
                    let rejections = (parsed.rejections + outcome.rejections).sorted { $0.line < $1.line }
                    let lateRejectedBytes = outcome.rejections.count
                    metrics.records(
                        written: outcome.written, duplicates: outcome.duplicates, rejected: rejections.count,
                        bytesAccepted: acceptedBytes, bytesRejected: parsed.rejectedBytes + lateRejectedBytes)
                    let accepted = outcome.written + outcome.duplicates
                    let body = RequestHandler.resultJSON(
                        request: requestID, batch: batchID, lines: parsed.lines,
                        accepted: accepted, outcome: outcome, rejections: rejections)
                    // Every line refused: the request as a whole is bad input.
                    let status = accepted == 0 && parsed.lines > 0 ? 422 : 200
                    finishBatch(status, body)
                    eventLoop.execute {
                        let (handler, context) = bound.value
                        metrics.request(status: status, seconds: Double((NIODeadline.now() - started).nanoseconds) / 1e9)
                        handler.reply(
                            context: context, status: HTTPResponseStatus(statusCode: status),
                            contentType: "application/json", body: Array(body.utf8), countRequest: false)
                    }
                case .failure(let failure):
                    finishBatch(503, "")
                    eventLoop.execute {
                        let (handler, context) = bound.value
                        handler.fail(
                            context: context, status: .serviceUnavailable,
                            "records not written: \(failure.message); nothing of this request was kept, send it again",
                            extraHeaders: [("Retry-After", "5")])
                    }
                }
            }
        } catch {
            finishBatch(503, "")
            switch error {
            case .queueFull:
                fail(
                    context: context, status: .serviceUnavailable, "\(error); nothing of this request was kept, send it again",
                    extraHeaders: [("Retry-After", "1")])
            case .closed:
                fail(context: context, status: .serviceUnavailable, "\(error)", close: true, extraHeaders: [("Retry-After", "5")])
            }
        }
    }

    private func replyStored(context: ChannelHandlerContext, _ stored: ClientState.Reply) {
        guard stored.status == 200 || stored.status == 422 else {
            return fail(
                context: context, status: HTTPResponseStatus(statusCode: stored.status),
                "the first request with this Callstats-Batch failed; send it again", extraHeaders: [("Retry-After", "1")])
        }
        reply(
            context: context, status: HTTPResponseStatus(statusCode: stored.status), contentType: "application/json",
            body: Array(stored.body.utf8), extraHeaders: [("Callstats-Batch-Replayed", "true")])
    }

    /// The agent as an ES module: the same script, told its own URL, exporting `attach`.
    static let agentModule: [UInt8] =
        Array("globalThis.__callstatsAgentURL = import.meta.url;\n".utf8)
        + PackageResources.agent_js
        + Array("\nexport const attach = globalThis.callstats.attach;\nexport default globalThis.callstats;\n".utf8)

    static func resultJSON(
        request: String, batch: String?, lines: Int, accepted: Int, outcome: IngestLog.Outcome,
        rejections: [LineRejection]
    ) -> String {
        // Written directly (every POST gets one): the same text as the JSONObject of these members.
        var out = [UInt8]()
        out.reserveCapacity(160 + rejections.count * 80)
        func member(_ name: String, _ value: Int) {
            out.append(contentsOf: name.utf8)
            out.append(contentsOf: String(value).utf8)
        }
        out.append(contentsOf: "{\"request\":".utf8)
        JSONValue.writeString(request, to: &out)
        member(",\"lines\":", lines)
        member(",\"accepted\":", accepted)
        member(",\"written\":", outcome.written)
        member(",\"duplicates\":", outcome.duplicates)
        member(",\"rejected\":", rejections.count)
        if let batch {
            out.append(contentsOf: ",\"batch\":".utf8)
            JSONValue.writeString(batch, to: &out)
        }
        out.append(contentsOf: ",\"rejections\":[".utf8)
        for (i, r) in rejections.prefix(1000).enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            member("{\"line\":", r.line)
            out.append(contentsOf: ",\"code\":".utf8)
            JSONValue.writeString(r.code, to: &out)
            out.append(contentsOf: ",\"reason\":".utf8)
            JSONValue.writeString(r.reason, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        out.append(contentsOf: "]}\n".utf8)
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: - Timeouts and errors

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            if request != nil && !awaitingReply {
                fail(
                    context: context, status: .requestTimeout,
                    "nothing received for \(config.readTimeoutMs / 1000) s in the middle of a request", close: true)
            } else if !awaitingReply {
                context.close(promise: nil)
            }
            return
        }
        if let e = event as? ChannelEvent, e == .inputClosed {
            if awaitingReply { closeAfterReply = true } else { context.close(promise: nil) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func requestDeadlinePassed() -> Bool {
        if awaitingReply {
            // The request arrived; the deadline that passed is the next one's, pipelined behind
            // this reply: the connection closes once the reply is written.
            closeAfterReply = true
            return true
        }
        guard let context else { return false }
        if discarding {
            // Answered already; the rest of it is still arriving.
            context.close(promise: nil)
            return true
        }
        guard request != nil else { return false }
        fail(
            context: context, status: .requestTimeout,
            "the request did not arrive whole within \(config.requestTimeoutMs / 1000) s of its first byte", close: true)
        return true
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is HTTPParserError {
            let message: String
            if let e = error as? HTTPParserError, e == .invalidEOFState {
                message = "the connection ended in the middle of the request (body shorter than Content-Length?)"
            } else {
                message = "malformed HTTP request: \(error)"
            }
            if request == nil {
                request = Request(
                    head: HTTPRequestHead(version: .http1_1, method: .GET, uri: "/"),
                    id: server.takeRequestID(), startedAt: .now())
                server.requestBegan()
            }
            fail(context: context, status: .badRequest, message, close: true)
            return
        }
        context.close(promise: nil)
    }

    // MARK: - Replies

    private func fail(
        context: ChannelHandlerContext, status: HTTPResponseStatus, _ message: String, close: Bool = false,
        extraHeaders: [(String, String)] = []
    ) {
        let id = request?.id ?? "-"
        var o: JSONObject = ["error": .string(message), "status": .number(Double(status.code)), "request": .string(id)]
        if let batch = request?.head.headers.first(name: "callstats-batch") { o["batch"] = .string(batch) }
        if status.code >= 400, status != .notFound {
            // Rate-limited by the handler (`ServeLogHandler`): a client decides how often this runs.
            server.logger.log(
                level: status.code >= 500 ? .error : .warning, "from \(remoteAddress): \(status.code) \(message)",
                metadata: ["request": .string(id)])
        }
        if !awaitingReply {
            // Answered before the request's end: the rest of it is not read.
            discarding = true
        }
        reply(
            context: context, status: status, contentType: "application/json",
            body: Array((JSONValue.object(o).serialized() + "\n").utf8), extraHeaders: extraHeaders, close: close)
    }

    private func reply(
        context: ChannelHandlerContext, status: HTTPResponseStatus, contentType: String?, body: [UInt8],
        extraHeaders: [(String, String)] = [], close: Bool = false, countRequest: Bool = true
    ) {
        guard let r = request else { return }
        var headers = HTTPHeaders()
        if let contentType { headers.add(name: "Content-Type", value: contentType) }
        headers.add(name: "Content-Length", value: String(body.count))
        if let origin = r.head.headers.first(name: "origin"), let allowed = allowedOrigin(origin) {
            headers.add(name: "Access-Control-Allow-Origin", value: allowed)
            headers.add(name: "Access-Control-Expose-Headers", value: "Retry-After, Callstats-Batch-Replayed")
            if allowed != "*" { headers.add(name: "Vary", value: "Origin") }
        }
        for (n, v) in extraHeaders { headers.add(name: n, value: v) }
        let closing = close || closeAfterReply || !r.head.isKeepAlive
        headers.add(name: "Connection", value: closing ? "close" : "keep-alive")
        if countRequest { server.metrics.request(status: Int(status.code), seconds: nil) }
        var head = HTTPResponseHead(version: r.head.version, status: status, headers: headers)
        head.version = .http1_1
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !body.isEmpty && r.head.method != .HEAD {
            var buffer = context.channel.allocator.buffer(capacity: body.count)
            buffer.writeBytes(body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if closing {
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            done.whenComplete { _ in bound.value.close(promise: nil) }
        }
        server.requestEnded()
        awaitingReply = false
        request = nil
    }
}
