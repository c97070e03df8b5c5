import CallLog
import Foundation

/// `callstats capture`'s job: packets from a file or a live interface through a
/// `CaptureSession` into one log file, until the file ends, the time is up or a stop is asked
/// for; then every open stream is closed and the log with it.
///
/// A file or interface that cannot be opened is thrown before the log is created. Damage after
/// a file's header does not end the run: every whole packet before it is measured, and the
/// report says what was not (`damage`, implausible stamps, packets cut in their headers).
public struct CaptureRun {
    public struct Options {
        public var file: String?
        public var interface: String?
        public var filter = "udp"
        /// The folder the log is written in (created if needed).
        public var output: String
        public var intervalSeconds = 10
        public var durationSeconds: Double?
        public var bufferBytes: Int32 = 256 << 20
        public var signalledOnly = false

        public init(file: String?, interface: String?, output: String) {
            (self.file, self.interface, self.output) = (file, interface, output)
        }
    }

    public struct Report {
        public var logPath: String
        public var counters: CaptureCounters
        /// The kernel's drops on a live interface; nil for a file.
        public var kernelDrops: UInt32?
        public var damage: [PcapDamage]
        public var firstImplausibleTimestamp: (frame: Int, nanos: Int64)?
        public var snapLength: Int
        public var seconds: Double

        /// Something of the input was not measured: the command's status is then 3.
        public var skippedInput: Bool {
            !damage.isEmpty || counters.implausibleTimestamps > 0 || counters.framesCutInHeaders > 0
        }
    }

    public let options: Options
    public init(options: Options) { self.options = options }

    /// Runs to the end. `shouldStop` is asked between batches of packets (a signal handler's
    /// flag); `status` is told a progress line every batch of a file, every 5 s of a live
    /// capture; `started` is told once the source is open.
    public func run(shouldStop: () -> Bool, status: (String) -> Void, started: (PcapSource) -> Void = { _ in }) throws -> Report {
        let o = options
        let source: PcapSource
        if let file = o.file {
            source = try PcapSource.open(file: file)
        } else {
            var live = LiveCaptureOptions()
            live.filter = o.filter
            live.bufferSize = o.bufferBytes
            source = try PcapSource.open(interface: o.interface ?? "", options: live)
        }
        try FileManager.default.createDirectory(atPath: o.output, withIntermediateDirectories: true)
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
        let path = (o.output as NSString).appendingPathComponent("capture-\(stamp)-\(getpid()).ndjson.zst")
        // Level 3: the capture thread must not stall on compression when every stream reports at once.
        var writerOptions = LogWriter.Options()
        writerOptions.compressionLevel = 3
        let writer = try LogWriter(path: path, options: writerOptions)
        var writeError: Error?
        var config = CaptureConfiguration()
        config.intervalNanos = Int64(o.intervalSeconds) * 1_000_000_000
        if o.signalledOnly { config.rtpDetection = .signalledOnly }
        var session = CaptureSession(configuration: config) { record in
            guard writeError == nil else { return }
            do { try writer.append(record) } catch { writeError = error }
        }
        started(source)
        let began = Date()
        if source.isLive {
            var lastFlush = Date()
            while !shouldStop() {
                // Bounded batches, so a stop and the duration are noticed under continuous traffic.
                let stop = try source.feed(&session, maxFrames: 65_536, returnOnTimeout: true)
                if stop == .timeout { session.tick(nowNanos: Int64(Date().timeIntervalSince1970 * 1e9)) }
                if Date().timeIntervalSince(lastFlush) >= 5 {
                    try writer.flush()
                    lastFlush = Date()
                    status(
                        "packets \(session.counters.frames)  RTP \(session.counters.rtpPackets)  streams \(session.activeStreamCount)  kernel drops \(session.kernelDrops)"
                    )
                }
                if let duration = o.durationSeconds, Date().timeIntervalSince(began) >= duration { break }
                if stop == .stopped || stop == .endOfFile { break }
            }
        } else {
            let size = (try? FileManager.default.attributesOfItem(atPath: o.file ?? "")[.size] as? Int) ?? 0
            // Reading stops at a record it cannot read past (a cut last record, an impossible
            // length); `source.damage` says which. The streams are closed all the same below.
            while try source.feed(&session, maxFrames: 262_144) == .frameLimit {
                status(
                    "packets \(session.counters.frames)  RTP \(session.counters.rtpPackets)  streams \(session.activeStreamCount)"
                        + (size > 0 ? "  of a \(size / 1_000_000) MB file" : ""))
                if shouldStop() { break }
            }
        }
        session.finish()
        try writer.close()
        if let writeError { throw writeError }
        return Report(
            logPath: path, counters: session.counters, kernelDrops: source.isLive ? session.kernelDrops : nil, damage: source.damage,
            firstImplausibleTimestamp: session.firstImplausibleTimestamp, snapLength: Int(source.snapLength),
            seconds: Date().timeIntervalSince(began))
    }
}
