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
        var options = CaptureRun.Options(file: file, interface: interface, output: output)
        options.filter = filter
        options.intervalSeconds = interval
        options.durationSeconds = duration
        options.bufferBytes = Int32(clamping: bufferMb << 20)
        options.signalledOnly = signalledOnly
        signal(SIGINT) { _ in stopRequested = 1 }
        signal(SIGTERM) { _ in stopRequested = 1 }
        // A file or interface that cannot be opened ends the run with its error (status 1).
        let r = try CaptureRun(options: options).run(
            shouldStop: { stopRequested != 0 }, status: { Terminal.status($0) },
            started: { source in
                if source.isLive { Terminal.error("capturing on \(interface ?? "") (\(filter)); Ctrl-C to stop") }
            })
        Terminal.clearStatus()

        let c = r.counters
        // Everything that was not measured as captured is said once, with where it is; the
        // summary follows in every case and the status is then 3, as for `analyze`'s skipped
        // input: the log holds every whole packet, but not all of the file.
        for d in r.damage { Terminal.error("warning: " + Printable.escaped("\(file ?? interface ?? ""): \(d)")) }
        if let (frame, nanos) = r.firstImplausibleTimestamp {
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
                    + "snapshot length of \(r.snapLength) bytes and were not measured")
        }
        if json {
            JSONSummary.print(
                JSONObject([
                    ("command", .string("capture")), ("log", .string(r.logPath)),
                    ("packets", JSONSummary.number(c.frames)), ("udp_datagrams", JSONSummary.number(c.udpDatagrams)),
                    ("rtp_packets", JSONSummary.number(c.rtpPackets)), ("rtcp_packets", JSONSummary.number(c.rtcpPackets)),
                    ("stun_messages", JSONSummary.number(c.stunMessages)), ("streams", JSONSummary.number(c.streamsOpened)),
                    ("kernel_drops", r.kernelDrops.map { JSONSummary.number(Int($0)) } ?? .null),
                    ("records", JSONSummary.number(c.records)), ("seconds", JSONSummary.seconds(r.seconds)),
                    ("unreadable_records", JSONSummary.number(r.damage.count)),
                    ("implausible_timestamps", JSONSummary.number(c.implausibleTimestamps)),
                    ("packets_cut_in_headers", JSONSummary.number(c.framesCutInHeaders)),
                ]))
            if r.skippedInput { throw ExitCode(ExitStatus.skippedInput) }
            return
        }
        let rows: [(String, String)] = [
            ("packets", "\(c.frames) (\(c.udpDatagrams) UDP)"),
            ("RTP / RTCP / STUN", "\(c.rtpPackets) / \(c.rtcpPackets) / \(c.stunMessages)"),
            ("streams", "\(c.streamsOpened)"),
            ("kernel drops", r.kernelDrops.map { "\($0)" } ?? "n/a (file)"),
            ("records", "\(c.records) → \(r.logPath)"),
            ("time", String(format: "%.2f s", r.seconds)),
        ]
        for line in AlignedRows.render(rows) { print(line) }
        if r.skippedInput { throw ExitCode(ExitStatus.skippedInput) }
    }
}
