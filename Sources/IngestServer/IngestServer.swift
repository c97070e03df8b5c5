import CallLog
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// `callstats serve`: an HTTP endpoint on SwiftNIO that takes log records (format v1 NDJSON)
/// from agents that cannot link the Swift collector (browsers, Android, Electron) and writes
/// them with `IngestLog`, so `callstats analyze` reads the folder like any other log.
public final class IngestServer: @unchecked Sendable {
    public let configuration: ServeConfiguration
    public let metrics = ServerMetrics()
    /// Diagnostics: `ServeLogHandler` unless the caller gives another handler.
    public let logger: Logger
    private let group: MultiThreadedEventLoopGroup
    private let log: ShardedIngestLog
    private let tokens: TokenList?
    private let serverContext: ServerContext
    private let connections: ConnectionLimit
    private let certificate: TLSCertificate?
    private var channel: Channel?

    public struct StartError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    public init(configuration: ServeConfiguration, logger: Logger = ServeLogHandler.logger()) throws {
        if configuration.tokensPath == nil && !ServeConfiguration.isLoopback(configuration.host) {
            throw StartError(
                message: """
                    refusing to listen on \(configuration.host) without --tokens: anyone who can reach it could write \
                    logs. Give --tokens FILE (bearer tokens, one per line) or listen on 127.0.0.1.
                    """)
        }
        // Allowed origins are echoed in reply headers, which are not validated again per reply.
        for origin in configuration.allowOrigins where origin.isEmpty || origin.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw StartError(message: "--allow-origin \(origin.debugDescription) is not an origin (e.g. https://app.example)")
        }
        if configuration.metricsTokenRequired && configuration.tokensPath == nil {
            throw StartError(message: "--metrics-token-required needs --tokens FILE (the tokens /metrics accepts)")
        }
        // `Origin: null` is what sandboxed frames and local files of any site send: allowing it
        // would allow every page.
        if configuration.allowOrigins.contains("null") {
            throw StartError(
                message: "--allow-origin null would let any page post (sandboxed frames and local files send it): name the page's origin, or * for any")
        }
        self.configuration = configuration
        self.logger = logger
        tokens = try configuration.tokensPath.map(TokenList.init(path:))
        var settings = IngestLog.Settings(directory: configuration.directory)
        settings.fileBytes = configuration.fileBytes
        settings.fileAgeMs = configuration.fileAgeMs
        settings.maxQueueBytes = configuration.maxQueueBytes
        settings.privacy = configuration.privacy
        settings.writerOptions.compressionLevel = configuration.compressionLevel
        settings.writerOptions.segmentBytes = configuration.segmentBytes
        settings.maxHeldObjectsPerClient = configuration.maxHeldObjectsPerClient
        log = try ShardedIngestLog(settings: settings, shards: configuration.writerThreads, metrics: metrics, logger: logger)
        serverContext = ServerContext(configuration: configuration, log: log, metrics: metrics, tokens: tokens, logger: logger)
        group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.eventLoopThreads))
        connections = ConnectionLimit(
            limit: configuration.maxConnections, perAddressLimit: configuration.maxConnectionsPerAddress, metrics: metrics)
        switch (configuration.tlsCertificatePath, configuration.tlsKeyPath) {
        case (let cert?, let key?):
            do { certificate = try TLSCertificate(certificatePath: cert, keyPath: key) } catch {
                throw StartError(message: "\(error)")
            }
        case (nil, nil):
            certificate = nil
        default:
            throw StartError(message: "--tls-cert and --tls-key go together: give both or neither")
        }
    }

    /// Binds and starts serving; returns the address bound (the port chosen for port 0).
    @discardableResult
    public func start() throws -> SocketAddress {
        let context = serverContext
        let readTimeout = TimeAmount.milliseconds(configuration.readTimeoutMs)
        let requestTimeout = TimeAmount.milliseconds(configuration.requestTimeoutMs)
        let metrics = self.metrics
        let logger = self.logger
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 1024)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { [connections, certificate] channel in
                channel.eventLoop.makeCompletedFuture {
                    let admission = connections.admit(channel)
                    guard admission == .admitted else {
                        // Over TLS a refusal is a close: answering would first cost a handshake,
                        // and a refused connection is counted nowhere, so it must not linger.
                        if certificate != nil {
                            channel.close(promise: nil)
                        } else {
                            try channel.pipeline.syncOperations.addHandler(RefuseConnectionHandler(admission))
                        }
                        return
                    }
                    if let certificate {
                        // A TLS peer's end of input (FIN) ends the connection: TLS clients do not
                        // half-close, and with half-closure allowed a connection closed after its
                        // reply would wait for the peer's close_notify (which s_client and others
                        // never send) for NIOSSL's shutdown timeout, still counted against the
                        // bounds on connections all that time.
                        try channel.syncOptions?.setOption(ChannelOptions.allowRemoteHalfClosure, value: false)
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: certificate.context))
                    }
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: readTimeout))
                    let deadline = RequestDeadlineHandler(timeout: requestTimeout, metrics: metrics, logger: logger)
                    try channel.pipeline.syncOperations.addHandler(deadline)
                    // Reply headers are this server's own (names and values fixed here, an origin
                    // only when it equals one of --allow-origin, which is checked at start): NIO's
                    // check of every reply's headers cost about a twentieth of a request.
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withErrorHandling: false, withOutboundHeaderValidation: false)
                    let handler = RequestHandler(server: context, deadline: deadline)
                    deadline.owner = handler
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        let ch: Channel
        do {
            ch = try bootstrap.bind(host: configuration.host, port: configuration.port).wait()
        } catch {
            throw StartError(message: "cannot listen on \(configuration.host):\(configuration.port): \(error)")
        }
        channel = ch
        return ch.localAddress!
    }

    /// Re-reads the tokens file (SIGHUP); returns messages for the operator, each marked when it
    /// is a problem (standard error): every token revoked, the file unreadable (the previous
    /// tokens stay), or readable by others.
    public func reloadTokens() -> [(message: String, problem: Bool)] {
        guard let tokens else { return [("no --tokens file to reload", false)] }
        var lines: [(message: String, problem: Bool)]
        switch tokens.reload() {
        case .loaded(let n):
            lines = [("reloaded \(n) tokens from \(tokens.path)", false)]
        case .revokedAll:
            lines = [("\(tokens.path) holds no token: every token is revoked, every POST gets 401 until tokens are added and SIGHUP is sent again", true)]
        case .failed(let problem):
            lines = [("tokens not reloaded, the previous \(tokens.count) stay: \(problem)", true)]
        }
        if let warning = tokens.permissionWarning() { lines.append((warning, true)) }
        return lines
    }

    /// Problems with the configuration that do not stop the server (standard error at start).
    public func startWarnings() -> [String] {
        [tokens?.permissionWarning()].compactMap { $0 }
    }

    /// Re-reads the TLS certificate and key (SIGHUP); returns a message for the operator, or nil
    /// without TLS.
    public func reloadCertificate() -> String? {
        guard let certificate else { return nil }
        if let problem = certificate.reload() { return "certificate not reloaded, the previous one stays: \(problem)" }
        return "reloaded the certificate \(certificate.certificatePath) for new connections"
    }

    /// Stops accepting connections, lets requests under way finish (up to `grace`), writes and
    /// fsyncs everything acknowledged or queued, and closes the log.
    public func shutdown(grace: TimeAmount = .seconds(10)) {
        try? channel?.close().wait()
        channel = nil
        let deadline = NIODeadline.now() + grace
        while inFlightRequests() > 0 && NIODeadline.now() < deadline { usleep(20_000) }
        log.close()
        try? group.syncShutdownGracefully()
    }

    private func inFlightRequests() -> Int { serverContext.inFlight.withLock { $0 } }

    /// Runs until SIGTERM or SIGINT; SIGHUP reloads the tokens and the certificate. Logs the
    /// address bound (`.info`: with `ServeLogHandler`, the first line on standard output).
    public func runUntilSignalled() throws {
        let address = try start()
        for line in startWarnings() { logger.warning("\(line)") }
        // The signals are taken over before the address is announced: a supervisor that sends
        // SIGHUP as soon as it reads that line must reach the reload, not the default action
        // (which ends the process). The handlers only write the signal's number into a pipe
        // (`SignalPipe`); a dispatch source reads it. A signal source of its own registers
        // asynchronously and, with the signal ignored meanwhile, lost signals sent at once.
        let queue = DispatchQueue(label: "callstats-serve-signals")
        let stop = DispatchSemaphore(value: 0)
        let signals = try SignalPipe.install([SIGTERM, SIGINT, SIGHUP])
        let source = DispatchSource.makeReadSource(fileDescriptor: signals, queue: queue)
        source.setEventHandler { [self] in
            for s in SignalPipe.drain(signals) {
                guard s == SIGHUP else {
                    stop.signal()
                    continue
                }
                if tokens != nil || certificate == nil {
                    for line in reloadTokens() { logger.log(level: line.problem ? .warning : .info, "\(line.message)") }
                }
                // Both outcomes on standard output, as Data/INGEST.md says (the previous
                // certificate stays in service either way).
                if let line = reloadCertificate() { logger.info("\(line)") }
            }
        }
        source.resume()
        let sources = [source]
        let hostText = address.ipAddress.map { $0.contains(":") ? "[\($0)]" : $0 } ?? configuration.host
        let scheme = certificate == nil ? "http" : "https"
        logger.info("listening on \(scheme)://\(hostText):\(address.port ?? configuration.port)/ writing to \(configuration.directory)")
        stop.wait()
        logger.info("stopping: no new connections, writing what is queued")
        shutdown()
        logger.info("stopped; \(metrics.written) records written")
        for s in sources { s.cancel() }
    }
}

/// Signals turned into bytes on a pipe, so that none is lost however soon it comes: the handler
/// (async-signal-safe: one `write`) is installed before `install` returns, and the bytes wait
/// in the pipe until read.
enum SignalPipe {
    nonisolated(unsafe) private static var writeEnd: Int32 = -1

    /// Installs the handlers; returns the pipe's read end (non-blocking).
    static func install(_ signals: [Int32]) throws -> Int32 {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw IngestServer.StartError(message: "cannot make a pipe for signals: \(String(cString: strerror(errno)))") }
        for fd in ends { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        writeEnd = ends[1]
        for s in signals {
            var action = sigaction()
            #if canImport(Glibc)
            action.__sigaction_handler.sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(SignalPipe.writeEnd, &byte, 1)
            }
            #else
            action.__sigaction_u.__sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(SignalPipe.writeEnd, &byte, 1)
            }
            #endif
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(s, &action, nil)
        }
        return ends[0]
    }

    /// The signals waiting in the pipe, in order.
    static func drain(_ fd: Int32) -> [Int32] {
        var out: [Int32] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { break }
            out += buffer[0..<n].map { Int32($0) }
        }
        return out
    }
}
