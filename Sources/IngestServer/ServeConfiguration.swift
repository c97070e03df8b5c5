import CallLog

/// Everything `callstats serve` is told on its command line.
public struct ServeConfiguration: Sendable {
    public var host: String
    /// 0 picks a free port (printed at start).
    public var port: Int
    public var directory: String
    /// Bearer tokens file; without it the server listens on loopback addresses only.
    public var tokensPath: String?
    /// Origins allowed to post from a browser (`*` for any).
    public var allowOrigins: [String] = []
    /// `GET /metrics` needs a bearer token from `tokensPath` too (it tells request and record
    /// counts); `/healthz` and the agent never do.
    public var metricsTokenRequired = false
    /// Request body as sent (compressed or not).
    public var maxBodyBytes = 1 << 20
    /// Request body once decompressed: a small body that inflates past this is refused.
    public var maxDecodedBytes = 16 << 20
    public var maxLineBytes = 256 << 10
    /// Distinct calls one client may post records for per `callPeriodMs`.
    public var maxCallsPerClient = 1000
    public var callPeriodMs: Int64 = 60_000
    /// Recent batch ids remembered (across all clients) to answer retries without writing again.
    public var rememberedBatches = 100_000
    public var maxQueueBytes = 64 << 20
    /// A connection that sends nothing for this long is closed (408 if a request was under way).
    public var readTimeoutMs: Int64 = 10_000
    /// A request must arrive whole within this time from its first byte (head included; for a
    /// connection's first request, from the connection's opening).
    public var requestTimeoutMs: Int64 = 30_000
    public var recordClientAddress = false
    public var privacy: RecordPrivacy?
    public var fileBytes = 64 << 20
    public var fileAgeMs: Int64 = 3_600_000
    public var compressionLevel: Int32 = 9
    /// Uncompressed bytes per zstd frame of the logs (`LogWriter.Options.segmentBytes`).
    public var segmentBytes = LogWriter.Options().segmentBytes
    /// Statistics objects one client's open chains may hold (`IngestLog.Settings`).
    public var maxHeldObjectsPerClient = IngestLog.Settings(directory: "").maxHeldObjectsPerClient
    /// Connections open at once; past it a new one is answered 503 and closed.
    public var maxConnections = ConnectionLimit.defaultLimit
    /// Connections open at once from one client address (IPv6: one /64); past it a new one from
    /// that address is answered 503 and closed. nil: a quarter of `maxConnections`, between 8 and 256.
    public var maxConnectionsPerAddress: Int?
    /// PEM files of the certificate (chain) and its private key: the server speaks HTTPS.
    public var tlsCertificatePath: String?
    public var tlsKeyPath: String?
    public var eventLoopThreads = 2
    /// Writer threads, each with its own files; a call's records always go to the same one.
    public var writerThreads = 2

    public init(host: String, port: Int, directory: String) {
        self.host = host
        self.port = port
        self.directory = directory
    }

    /// Parses `HOST:PORT` (`[::1]:8080` for IPv6).
    public static func parseListen(_ text: String) -> (host: String, port: Int)? {
        let host: Substring, portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let port = Int(portText), (0...65535).contains(port) else { return nil }
        return (String(host), port)
    }

    /// Whether `host` can only be reached from this machine.
    public static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" { return true }
        return IPAddress(host)?.isLoopback ?? false
    }
}
