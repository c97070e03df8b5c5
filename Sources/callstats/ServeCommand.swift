import ConsoleOutput
import ArgumentParser
import CallLog
import Foundation
import IngestServer

/// `callstats serve`: the ingest endpoint for agents that post records over HTTP.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Receive log records over HTTP (POST /v1/records) and write them as rotating zstd logs.",
        discussion: """
            Browsers and apps that cannot link the Swift collector post NDJSON batches (format v1, \
            optionally gzip or zstd) to /v1/records; each reply comes after the accepted records \
            are fsynced. The folder is read by `callstats analyze` like any other log. \
            GET /agent.js serves the JavaScript agent (window.callstats.attach(pc, options)); \
            GET /healthz and GET /metrics (Prometheus) report on the server. Data/INGEST.md \
            describes requests, replies and limits.

            Without --tokens the server listens only on a loopback address. With --tls-cert and \
            --tls-key it speaks HTTPS (a browser page on https cannot post to http). SIGHUP reloads \
            the tokens and the certificate (new connections get the new one); SIGTERM or SIGINT \
            stops it after writing everything acknowledged or queued.

            A request must arrive whole within --request-timeout of its first byte, its head \
            included, and one client address holds at most --max-connections-per-address \
            connections: slow or greedy clients are cut off or refused (408, 503) while others \
            are served.

            Examples:
              callstats serve --listen 127.0.0.1:8471 --out logs/ --allow-origin https://app.example
              callstats serve --listen 0.0.0.0:8471 --out logs/ --tokens tokens.txt \\
                --tls-cert fullchain.pem --tls-key privkey.pem \\
                --allow-origin https://app.example
            """
    )

    @Option(
        help: ArgumentHelp(
            "Address and port to listen on (port 0: any free port, printed at start).",
            valueName: "host:port"))
    var listen = "127.0.0.1:8471"

    @Option(help: ArgumentHelp("Folder the logs are written to (created if missing).", valueName: "dir"))
    var out: String

    @Option(
        help: ArgumentHelp(
            "Bearer tokens, one per line, # for comments (reloaded on SIGHUP). Required to listen beyond loopback.",
            valueName: "file"))
    var tokens: String?

    @Option(
        help: ArgumentHelp(
            "Origin allowed to post from a browser (repeatable; * for any). A POST carrying any other Origin gets 403.",
            valueName: "origin"))
    var allowOrigin: [String] = []

    @Flag(help: "GET /metrics needs a bearer token from --tokens too (/healthz and /agent.js never do).")
    var metricsTokenRequired = false

    @Option(help: ArgumentHelp("Largest request body as sent, in bytes.", valueName: "bytes"))
    var maxBody = 1 << 20

    @Option(help: ArgumentHelp("Largest request body once decompressed, in bytes.", valueName: "bytes"))
    var maxDecodedBody = 16 << 20

    @Option(help: ArgumentHelp("Longest record line, in bytes (longer lines are rejected by number).", valueName: "bytes"))
    var maxLine = 256 << 10

    @Option(
        help: ArgumentHelp(
            "Distinct calls one client (token, or address without tokens) may post per minute.",
            valueName: "n"))
    var maxCallsPerClient = 1000

    @Option(help: ArgumentHelp("Posted bytes that may wait for the writer before requests get 503.", valueName: "bytes"))
    var maxQueue = 64 << 20

    @Option(
        help: ArgumentHelp(
            "Statistics objects one client's open calls may hold in the server's memory (each peer connection holds at most 2,000); past it a snapshot gets too-many-objects-held.",
            valueName: "n"))
    var maxHeldObjectsPerClient = ServeConfiguration(host: "", port: 0, directory: "").maxHeldObjectsPerClient

    @Option(
        help: ArgumentHelp(
            "Uncompressed bytes per compressed segment of the logs: the most one damaged byte can cost. Larger segments compress better with many live calls (DECISIONS.md).",
            valueName: "bytes"))
    var segmentBytes = ServeConfiguration(host: "", port: 0, directory: "").segmentBytes

    @Option(
        help: ArgumentHelp(
            "Connections open at once; past it new ones get 503 and are closed (default: the open-file limit less 64, at most 10000).",
            valueName: "n"))
    var maxConnections: Int?

    @Option(
        help: ArgumentHelp(
            "Connections open at once from one client address (IPv6: one /64); past it that address's new ones get 503 and are closed (default: a quarter of --max-connections, between 8 and 256).",
            valueName: "n"))
    var maxConnectionsPerAddress: Int?

    @Option(help: ArgumentHelp("Seconds a connection may send nothing in the middle of a request.", valueName: "s"))
    var readTimeout = 10

    @Option(
        help: ArgumentHelp(
            "Seconds a request may take to arrive whole, from its first byte (head included); then 408 and the connection is closed.",
            valueName: "s"))
    var requestTimeout = 30

    @Option(
        help: ArgumentHelp(
            "Certificate (chain) to serve HTTPS with, PEM; reloaded on SIGHUP. Needs --tls-key.", valueName: "file"))
    var tlsCert: String?

    @Option(help: ArgumentHelp("Private key of --tls-cert, PEM; reloaded on SIGHUP.", valueName: "file"))
    var tlsKey: String?

    @OptionGroup var pseudonymization: PseudonymizationOptions

    @Flag(help: "Add the posting client's IP address to its call records (clientAddress).")
    var recordClientAddress = false

    @Option(help: ArgumentHelp("Start a new log file past this many bytes.", valueName: "bytes"))
    var fileBytes = 64 << 20

    @Option(help: ArgumentHelp("Start a new log file after this many seconds.", valueName: "s"))
    var fileAge = 3600

    @Option(help: ArgumentHelp("Threads serving connections.", valueName: "n"))
    var threads = 2

    @Option(help: ArgumentHelp("Writer threads, each writing its own files (a call stays in one).", valueName: "n"))
    var writers = 2

    @Option(help: ArgumentHelp("zstd level of the logs written.", valueName: "1-19"))
    var compressionLevel: Int32 = 9

    func validate() throws {
        guard ServeConfiguration.parseListen(listen) != nil else {
            throw ValidationError("--listen must be HOST:PORT (e.g. 127.0.0.1:8471 or [::1]:8471), got \(listen)")
        }
        for (name, value) in [
            ("--max-body", maxBody), ("--max-decoded-body", maxDecodedBody), ("--max-line", maxLine),
            ("--max-queue", maxQueue),
        ] {
            try OptionRange.check(name, value, OptionRange.bytes)
        }
        try OptionRange.check("--max-calls-per-client", maxCallsPerClient, 1...10_000_000)
        try OptionRange.check("--max-held-objects-per-client", maxHeldObjectsPerClient, 2_000...100_000_000)
        try OptionRange.check("--segment-bytes", segmentBytes, (64 << 10)...(64 << 20))
        if let maxConnections { try OptionRange.check("--max-connections", maxConnections, 1...1_000_000) }
        if let maxConnectionsPerAddress {
            try OptionRange.check("--max-connections-per-address", maxConnectionsPerAddress, 1...1_000_000)
        }
        try OptionRange.check("--read-timeout", readTimeout, 1...86_400)
        try OptionRange.check("--request-timeout", requestTimeout, 1...86_400)
        if metricsTokenRequired && tokens == nil { throw ValidationError("--metrics-token-required needs --tokens FILE") }
        if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("--tls-cert and --tls-key go together: give both or neither") }
        try OptionRange.check("--file-bytes", fileBytes, 1...(1 << 40))
        try OptionRange.check("--file-age", fileAge, 1...(30 * 86_400))
        try OptionRange.check("--threads", threads, OptionRange.threads)
        try OptionRange.check("--writers", writers, OptionRange.threads)
        try OptionRange.check("--compression-level", compressionLevel, 1...19)
    }

    func run() throws {
        let (host, port) = ServeConfiguration.parseListen(listen)!
        var c = ServeConfiguration(host: host, port: port, directory: out)
        c.tokensPath = tokens
        c.allowOrigins = allowOrigin
        c.metricsTokenRequired = metricsTokenRequired
        c.maxBodyBytes = maxBody
        c.maxDecodedBytes = maxDecodedBody
        c.maxLineBytes = maxLine
        c.maxCallsPerClient = maxCallsPerClient
        c.maxQueueBytes = maxQueue
        c.maxHeldObjectsPerClient = maxHeldObjectsPerClient
        c.segmentBytes = segmentBytes
        if let maxConnections { c.maxConnections = maxConnections }
        c.maxConnectionsPerAddress = maxConnectionsPerAddress
        c.readTimeoutMs = Int64(readTimeout) * 1000
        c.requestTimeoutMs = Int64(requestTimeout) * 1000
        c.tlsCertificatePath = tlsCert
        c.tlsKeyPath = tlsKey
        c.recordClientAddress = recordClientAddress
        c.fileBytes = fileBytes
        c.fileAgeMs = Int64(fileAge) * 1000
        c.eventLoopThreads = threads
        c.writerThreads = writers
        c.compressionLevel = compressionLevel
        if let k = pseudonymization.key {
            c.privacy = RecordPrivacy(key: k, keepAddresses: pseudonymization.keptAddresses)
        }
        let server: IngestServer
        do { server = try IngestServer(configuration: c) } catch {
            Terminal.error("error: \(error)")
            throw ExitCode(2)
        }
        do {
            try server.runUntilSignalled()
        } catch {
            Terminal.error("error: \(error)")
            throw ExitCode(1)
        }
    }
}
