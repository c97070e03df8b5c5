import ConsoleOutput
import ArgumentParser
import CallLog
import Capture
import Foundation

/// Set by SIGINT/SIGTERM; the capture loop checks it between reads.
nonisolated(unsafe) private var stopRequested: Int32 = 0

/// `callstats capture`: RTP/RTCP/STUN measured on the wire, written as call logs.
struct CaptureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "capture",
        abstract: "Measure RTP, RTCP and ICE from a pcap file or a live interface and write call logs.",
        discussion: """
            Finds media streams without needing signalling (SIP/SDP, when captured, names calls and \
            codecs), and writes per-stream interval records (packets, loss, jitter, RTCP round-trip \
            time, ICE checks) as log format v1, which `callstats analyze` scores like SDK logs.

            Live capture needs the right to capture packets: run as root, or give the binary the \
            capabilities once with `sudo setcap cap_net_raw,cap_net_admin=eip $(which callstats)`. \
            Ctrl-C (or SIGTERM) stops it and flushes every open stream.

            Examples:
              callstats capture -r call.pcap -o logs/
              sudo callstats capture -i eth0 -f "udp portrange 10000-20000" -o /var/log/callstats/
            """)

    @Option(name: .customShort("r"), help: "Read packets from this pcap or pcapng file.")
    var file: String?

    @Option(name: .customShort("i"), help: "Capture live on this interface.")
    var interface: String?

    @Option(name: .customShort("f"), help: "BPF filter for live capture.")
    var filter = "udp"

    @Option(name: .customShort("o"), help: "Folder for the log files (created if needed).")
    var output: String

    @Option(help: "Seconds per reporting interval.")
    var interval = 10

    @Option(help: "Stop a live capture after this many seconds.")
    var duration: Double?

    @Option(help: "Kernel capture buffer in MiB: it absorbs the pauses when thousands of streams report at an interval boundary.")
    var bufferMb = 256

    @Flag(help: "Only ports announced in SDP are RTP (no heuristic detection).")
    var signalledOnly = false

    @Flag(help: "Print the summary as one JSON object.")
    var json = false

    func validate() throws {
        if (file == nil) == (interface == nil) { throw ValidationError("give exactly one of -r FILE or -i INTERFACE") }
        try OptionRange.check("--interval", interval, 1...3_600)
        if let duration { try OptionRange.check("--duration", seconds: duration, 0.001...31_536_000) }
    }

    func run() throws {
        // A file or interface that cannot be opened (unreadable, not a capture, its file header
        // cut short) is a run-time failure, not a usage error: its error (naming it) ends the run
        // with status 1, before an output file is created. Damage after the file header does not
        // end the run: every whole packet before it is measured (see below).
        let source: PcapSource
        if let file {
            source = try PcapSource.open(file: file)
        } else {
            var options = LiveCaptureOptions()
            options.filter = filter
            options.bufferSize = Int32(clamping: bufferMb << 20)
            source = try PcapSource.open(interface: interface!, options: options)
        }

        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
        let path = (output as NSString).appendingPathComponent("capture-\(stamp)-\(getpid()).ndjson.zst")
        // Level 3: the capture thread must not stall on compression when every stream reports at once.
        var writerOptions = LogWriter.Options()
        writerOptions.compressionLevel = 3
        let writer = try LogWriter(path: path, options: writerOptions)
        var writeError: Error?
        var config = CaptureConfiguration()
        config.intervalNanos = Int64(interval) * 1_000_000_000
        if signalledOnly { config.rtpDetection = .signalledOnly }
        var session = CaptureSession(configuration: config) { record in
            guard writeError == nil else { return }
            do { try writer.append(record) } catch { writeError = error }
        }

        signal(SIGINT) { _ in stopRequested = 1 }
        signal(SIGTERM) { _ in stopRequested = 1 }
        let started = Date()
        if source.isLive {
            Terminal.error("capturing on \(interface!) (\(filter)); Ctrl-C to stop")
            var lastFlush = Date()
            while stopRequested == 0 {
                // Bounded batches, so Ctrl-C and --duration are noticed under continuous traffic.
                let stop = try source.feed(&session, maxFrames: 65_536, returnOnTimeout: true)
                if stop == .timeout {
                    session.tick(nowNanos: Int64(Date().timeIntervalSince1970 * 1e9))
                }
                if Date().timeIntervalSince(lastFlush) >= 5 {
                    try writer.flush()
                    lastFlush = Date()
                    Terminal.status(
                        "packets \(session.counters.frames)  RTP \(session.counters.rtpPackets)  streams \(session.activeStreamCount)  kernel drops \(session.kernelDrops)"
                    )
                }
                if let duration, Date().timeIntervalSince(started) >= duration { break }
                if stop == .stopped || stop == .endOfFile { break }
            }
            Terminal.clearStatus()
        } else {
            // A large file takes minutes: the status line moves every batch of frames.
            let size = (try? FileManager.default.attributesOfItem(atPath: file!)[.size] as? Int) ?? 0
            // Reading stops at a record it cannot read past (a cut last record, an impossible
            // length); `source.damage` says which. The streams are closed all the same below.
            while try source.feed(&session, maxFrames: 262_144) == .frameLimit {
                Terminal.status(
                    "packets \(session.counters.frames)  RTP \(session.counters.rtpPackets)  streams \(session.activeStreamCount)"
                        + (size > 0 ? "  of a \(size / 1_000_000) MB file" : ""))
                if stopRequested != 0 { break }
            }
            Terminal.clearStatus()
        }
        session.finish()
        try writer.close()
        if let writeError { throw writeError }

        let c = session.counters
        // Everything that was not measured as captured is said once, with where it is; the
        // summary follows in every case and the status is then 3, as for `analyze`'s skipped
        // input: the log holds every whole packet, but not all of the file.
        for d in source.damage { Terminal.error("warning: " + Printable.escaped("\(file ?? interface!): \(d)")) }
        if let (frame, nanos) = session.firstImplausibleTimestamp {
            Terminal.error(
                "warning: \(c.implausibleTimestamps) packet(s) stamped decades away from the capture's other times "
                    + "(the first: packet \(frame), \(nanos / 1_000_000_000) s since 1970) were measured at the latest good time")
        }
        // A snapshot length that cuts headers loses every stream on the wire while the capture
        // looks empty, so it is skipped input (status 3); a snapshot length that keeps the
        // headers and cuts payloads is ordinary and says nothing.
        if c.framesCutInHeaders > 0 {
            Terminal.error(
                "warning: \(c.framesCutInHeaders) of \(c.frames) packets were cut inside their headers by the capture's "
                    + "snapshot length of \(source.snapLength) bytes and were not measured")
        }
        let skipped = !source.damage.isEmpty || c.implausibleTimestamps > 0 || c.framesCutInHeaders > 0
        if json {
            JSONSummary.print(
                JSONObject([
                    ("command", .string("capture")), ("log", .string(path)),
                    ("packets", JSONSummary.number(c.frames)), ("udp_datagrams", JSONSummary.number(c.udpDatagrams)),
                    ("rtp_packets", JSONSummary.number(c.rtpPackets)), ("rtcp_packets", JSONSummary.number(c.rtcpPackets)),
                    ("stun_messages", JSONSummary.number(c.stunMessages)), ("streams", JSONSummary.number(c.streamsOpened)),
                    ("kernel_drops", source.isLive ? JSONSummary.number(Int(session.kernelDrops)) : .null),
                    ("records", JSONSummary.number(c.records)), ("seconds", JSONSummary.seconds(Date().timeIntervalSince(started))),
                    ("unreadable_records", JSONSummary.number(source.damage.count)),
                    ("implausible_timestamps", JSONSummary.number(c.implausibleTimestamps)),
                    ("packets_cut_in_headers", JSONSummary.number(c.framesCutInHeaders)),
                ]))
            if skipped { throw ExitCode(ExitStatus.skippedInput) }
            return
        }
        let rows: [(String, String)] = [
            ("packets", "\(c.frames) (\(c.udpDatagrams) UDP)"),
            ("RTP / RTCP / STUN", "\(c.rtpPackets) / \(c.rtcpPackets) / \(c.stunMessages)"),
            ("streams", "\(c.streamsOpened)"),
            ("kernel drops", source.isLive ? "\(session.kernelDrops)" : "n/a (file)"),
            ("records", "\(c.records) → \(path)"),
            ("time", String(format: "%.2f s", Date().timeIntervalSince(started))),
        ]
        for line in AlignedRows.render(rows) { print(line) }
        if skipped { throw ExitCode(ExitStatus.skippedInput) }
    }
}
