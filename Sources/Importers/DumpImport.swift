import CallLog

/// The dump formats `callstats import` reads, told apart by content.
public enum DumpFormat: String, Sendable, CaseIterable {
    /// chrome://webrtc-internals' "Create a WebRTC-Internals dump" (standard or legacy stats).
    case webrtcInternals = "webrtc-internals"
    /// rtcstats-server's stored dumps (and Chrome's own "rtcstats dump").
    case rtcstats
    /// The project's Chromium test-page recording (`{"kind":"stats","side":…}` lines).
    case chromiumTestPage = "chromium-test-page"
}

/// What one dump can make `import` hold or write, alike for every layout and compression, so
/// that no dump, however made (a few KB of zstd expand to gigabytes), takes memory or time
/// without end. Each bound is far above what browsers write (a page keeps 1,000 samples a
/// series; a day-long call at one snapshot a second is 86,400 records) and matches `analyze`'s
/// (`RecordIngestor.Bounds`, `StatsChainBounds`); what a bound leaves out is said in the
/// result's notes, naming the peer connection and series or trace:
/// - `maximumRecordsPerCall` statistics and event records a browser dump (its call's `call`
///   and `end` records are always written);
/// - `maximumObjectsPerPeerConnection` statistics objects a peer connection;
/// - `maximumSeriesValues` values a webrtc-internals series, `maximumSamplesPerPeerConnection`
///   sample times a peer connection over all its objects;
/// - `maximumTraceEntries` entries of a peer connection's `updateLog`, and `maximumHeldBytes`
///   of its trace's text and of its series' text each;
/// - nesting of `JSONValue.maximumDepth` levels (an error at its line and byte, not a crash),
///   one value or rtcstats line of `maximumHeldBytes`.
public enum ImportBounds {
    public static let maximumRecordsPerCall = 100_000
    public static let maximumObjectsPerPeerConnection = StatsChainBounds.maximumObjects
    public static let maximumSeriesValues = 100_000
    public static let maximumSamplesPerPeerConnection = 2_000_000
    public static let maximumTraceEntries = 100_000
    public static let maximumHeldBytes = 64 << 20
}

/// One dump file turned into log format v1: one call, its peer connections as `pc`.
public struct DumpImport {
    public var path: String
    /// The call id to write; nil: the dump's own (a test-page recording's), else `defaultCallID`.
    public var callID: String?
    /// Labels for the `call` record; dumps carry none of their own.
    public var labels: [String: String]
    /// Test-page recordings only: keep every `every`-th snapshot per side.
    public var every: Int

    public init(path: String, callID: String? = nil, labels: [String: String] = [:], every: Int = 1) {
        self.path = path
        self.callID = callID
        self.labels = labels
        self.every = every
    }

    public struct Result: Sendable {
        public var format: DumpFormat?
        public var records = 0
        /// Snapshots written, per peer connection.
        public var snapshots: [String: Int] = [:]
        public var peerConnections = 0
        /// What the reader wants the user to know (time zone placing, series left out, a call
        /// that never connected, a dump with no statistics). Nothing is lost by these.
        public var notes: [String] = []
        /// Input left out: lines that could not be used, a cut or damaged end.
        public var skipped: [DumpError] = []
        /// Why nothing could be read, when nothing could.
        public var failure: DumpError?
        public var connected = false
        /// The call id written.
        public var callID = ""
    }

    /// The call id a dump without one of its own gets: its file name without the directory and
    /// the extensions dumps come with (`webrtc_internals_dump.txt.gz` → `webrtc_internals_dump`).
    public static func defaultCallID(_ path: String) -> String {
        var name = Substring(path.split(separator: "/", omittingEmptySubsequences: true).last ?? "dump")
        for ext in [".gz", ".zst", ".txt", ".json", ".jsonl", ".ndjson", ".log"] where name.hasSuffix(ext) && name.count > ext.count {
            name = name.dropLast(ext.count)
        }
        for ext in [".txt", ".json", ".jsonl"] where name.hasSuffix(ext) && name.count > ext.count { name = name.dropLast(ext.count) }
        return String(name)
    }

    /// The format of the file at `path`, from its first bytes (decompressed).
    public static func detect(path: String) throws(DumpError) -> DumpFormat {
        let reader = DumpReader(source: try DumpSource(path: path))
        var head: [UInt8] = []
        var lines: [[UInt8]] = []
        var current: [UInt8] = []
        while head.count < 1 << 20, lines.count < 2, let b = try reader.next() {
            head.append(b)
            if b == 0x0A {
                if !current.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) { lines.append(current) }
                current = []
            } else {
                current.append(b)
            }
        }
        if lines.count < 2 && !current.isEmpty { lines.append(current) }
        guard let first = lines.first else { throw DumpError(file: path, message: "the file is empty") }
        let firstText = String(decoding: first, as: UTF8.self).trimmingSpaces
        if firstText == "RTCStatsDump" { return .rtcstats }
        // rtcstats-server's stored files: a `["connectionInfo", null, {…}, time]` line first, or
        // (older client streams, no header) the first method line itself.
        if firstText.hasPrefix("[") {
            if let v = try? JSONValue.parse(firstText), case .array(let a) = v,
                a.count < 3 || (a[0].stringValue == nil && a[0].int64Value == nil)
            {
                throw DumpError(
                    file: path, line: 1,
                    message: "a JSON array that is not an rtcstats line ([method, connection, value, time]): it starts with \"\(firstText.prefix(40))\"")
            }
            return .rtcstats
        }
        guard firstText.hasPrefix("{") else {
            throw DumpError(
                file: path, line: 1,
                message: "not a webrtc-internals dump, an rtcstats dump or a Chromium test-page recording: it starts with \"\(firstText.prefix(40))\"")
        }
        if let v = try? JSONValue.parse(firstText), case .object(let o) = v {
            if let what = serverSideSample(o) { throw DumpError(file: path, message: what) }
            if o["PeerConnections"] != nil || o["getUserMedia"] != nil { return .webrtcInternals }
            if o["kind"] != nil { return .chromiumTestPage }
            if lines.count > 1, String(decoding: lines[1], as: UTF8.self).trimmingSpaces.hasPrefix("[") { return .rtcstats }
            if o["userAgent"] != nil || o["fileFormat"] != nil || o["origin"] != nil { return .rtcstats }
            throw DumpError(file: path, line: 1, message: "a JSON object that is none of the dump formats (no PeerConnections, kind or rtcstats metadata)")
        }
        // Chrome writes its dump indented, one member a line: the first line is "{" alone.
        return .webrtcInternals
    }

    /// What a server-side rtcstats sample is, from its first line; nil for anything else.
    /// rtcstats-server stores what Jitsi's servers send it (JVB, Jicofo, Jigasi: NDJSON objects
    /// `{"statsSessionId", "type": "identity", "data": {"applicationName": …}}`) beside the
    /// browsers' dumps; they hold a server's view of many endpoints, not one browser's call.
    static func serverSideSample(_ o: JSONObject) -> String? {
        guard o["statsSessionId"] != nil, o["type"] != nil || o["data"] != nil else { return nil }
        let names = ["jvb": "JVB", "jicofo": "Jicofo", "jigasi": "Jigasi", "jibri": "Jibri"]
        let app = o["data"]?["applicationName"]?.stringValue
        let what = app.map { "a \(names[$0.lowercased()] ?? $0) server-side rtcstats sample" } ?? "a server-side rtcstats sample"
        return "\(what), not a browser dump: callstats imports browser dumps"
    }

    /// Reads the dump and hands each record to `write` as it is made.
    public func run(write: @escaping (LogRecord) throws -> Void) -> Result {
        var result = Result()
        let format: DumpFormat
        do throws(DumpError) { format = try Self.detect(path: path) } catch {
            result.failure = error
            return result
        }
        result.format = format
        var count = 0
        var leftOut = 0
        let counted: (LogRecord) throws(DumpError) -> Void = { r throws(DumpError) in
            // Past the bound only the call's own `call` and `end` records are written. (A
            // test-page recording may hold many calls; `analyze` bounds each of them.)
            if format != .chromiumTestPage, count >= ImportBounds.maximumRecordsPerCall, r.kind != .call, r.kind != .end {
                leftOut += 1
                return
            }
            do { try write(r) } catch let e as DumpError { throw e } catch {
                throw DumpError(file: path, message: "cannot write: \(error)")
            }
            count += 1
        }
        switch format {
        case .chromiumTestPage:
            var firstCall: String?
            var connected = false
            let streamed: ChromiumImporter.Result
            do {
                streamed = try ChromiumImporter(every: every, callID: callID, labels: labels).stream(path: path) { r in
                    if firstCall == nil { firstCall = r.call }
                    if r["type"]?.stringValue == "iceConnected" { connected = true }
                    try counted(r)
                }
            } catch {
                result.failure = error as? DumpError ?? DumpError(file: path, message: "\(error)")
                streamed = ChromiumImporter.Result()
            }
            result.callID = firstCall ?? callID ?? Self.defaultCallID(path)
            for issue in streamed.issues {
                result.skipped.append(DumpError(file: issue.file, line: issue.line, message: "\(issue.category.rawValue): \(issue.message)"))
            }
            if streamed.skipped > 0 { result.notes.append("\(streamed.skipped) lines that are not recording lines left out") }
            result.snapshots = streamed.snapshots
            result.peerConnections = streamed.snapshots.count
            result.connected = connected
            if count == 0 && result.failure == nil { result.failure = DumpError(file: path, message: "no recording lines found") }
        case .webrtcInternals, .rtcstats:
            runBrowserDump(format, write: counted, result: &result)
        }
        result.records = count
        if leftOut > 0 {
            result.notes.append(
                "the call has more than \(ImportBounds.maximumRecordsPerCall) records (the most one dump gives): \(leftOut) later ones left out")
        }
        return result
    }

    private func runBrowserDump(_ format: DumpFormat, write: @escaping (LogRecord) throws(DumpError) -> Void, result: inout Result) {
        let callID = self.callID ?? Self.defaultCallID(path)
        result.callID = callID
        var timeline = CallTimeline(callID: callID)
        var userAgent: String?
        var namedBrowser: (name: String, version: String)?
        var namedOS: String?
        var firstStats: Int64?, lastStats: Int64?
        var formats: Set<String> = []
        var stopped: DumpError?
        var getUserMedia = 0
        var labels = self.labels
        do throws(DumpError) {
            let reader = DumpReader(source: try DumpSource(path: path))
            switch format {
            case .webrtcInternals:
                let importer = WebRTCInternalsImporter(path: path, callID: callID, write: write)
                var outcome = WebRTCInternalsImporter.Outcome(timeline: timeline)
                do throws(DumpError) { try importer.run(reader: reader, outcome: &outcome) } catch { stopped = error }
                timeline = outcome.timeline
                userAgent = outcome.userAgent
                result.snapshots = outcome.snapshots
                result.notes += outcome.notes
                result.peerConnections = outcome.peerConnections
                (firstStats, lastStats, formats, getUserMedia) = (outcome.firstStatsTs, outcome.lastStatsTs, outcome.formats, outcome.getUserMedia)
            default:
                let importer = RTCStatsImporter(path: path, callID: callID, write: write)
                var outcome = RTCStatsImporter.Outcome(timeline: timeline)
                do throws(DumpError) { try importer.run(reader: reader, outcome: &outcome) } catch { stopped = error }
                timeline = outcome.timeline
                userAgent = outcome.userAgent
                (namedBrowser, namedOS) = (outcome.browser, outcome.os)
                // The labels asked for on the command line win over the dump's own.
                labels.merge(outcome.labels) { asked, _ in asked }
                result.snapshots = outcome.snapshots
                result.notes += outcome.notes
                result.skipped += outcome.skipped
                result.peerConnections = outcome.peerConnections
                (firstStats, lastStats, formats, getUserMedia) = (outcome.firstStatsTs, outcome.lastStatsTs, outcome.formats, outcome.getUserMedia)
            }
        } catch {
            stopped = error
        }
        let nothing = result.snapshots.isEmpty && timeline.entries == 0 && getUserMedia == 0
        if let stopped {
            if nothing { result.failure = stopped; return }
            result.skipped.append(
                DumpError(
                    file: stopped.file, line: stopped.line, column: stopped.column,
                    message: "\(stopped.message); everything before it was imported"))
        } else if nothing {
            result.failure = DumpError(file: path, message: "the dump has no peer connection, statistics or getUserMedia call")
            return
        }
        if result.snapshots.isEmpty { result.notes.append("the dump has no statistics: the call has its events only") }
        result.connected = timeline.connectedTs != nil
        if timeline.entries > 0 && timeline.connectedTs == nil {
            result.notes.append("the call never connected (no ICE connected state in its trace)")
        }
        // The call record: only what the dump says.
        var body = JSONObject()
        if let d = timeline.direction { body["direction"] = .string(d) }
        // The user agent string names the browser; a dump without one may name it in
        // `userAgentData` (Chrome's own rtcstats dump).
        if let browser = userAgent.flatMap(UserAgent.browser) ?? namedBrowser {
            body["sdk"] = .string(browser.name)
            body["sdkVersion"] = .string(browser.version)
        }
        body["platform"] = "web"
        if !labels.isEmpty {
            body["labels"] = .object(JSONObject(labels.keys.sorted().map { (key: $0, value: .string(labels[$0]!)) }))
        }
        if let ua = userAgent { body["userAgent"] = .string(ua) }
        if let os = userAgent.flatMap(UserAgent.os) ?? namedOS { body["os"] = .string(os) }
        body["importedFrom"] = .string(format.rawValue)
        if formats.count > 1 { result.notes.append("statistics in both formats: \(formats.sorted().joined(separator: ", "))") }
        let start = [timeline.firstTs, firstStats].compactMap { $0 }.min() ?? 0
        do {
            try write(LogRecord(kind: .call, call: callID, ts: start, body: body))
            if let end = timeline.end(lastStatsTs: lastStats) { try write(end) }
        } catch {
            result.skipped.append(error)
        }
    }
}

extension String {
    /// Without leading spaces, tabs, carriage returns and byte order marks, and trailing
    /// spaces, tabs and carriage returns. Works on the bytes: stepping back over characters
    /// costs time growing with the text's length at each step, so a first line of a million
    /// spaces took hours.
    var trimmingSpaces: String {
        let bytes = Array(utf8)
        var start = 0
        var end = bytes.count
        while start < end {
            let c = bytes[start]
            if c == 0x20 || c == 0x09 || c == 0x0D {
                start += 1
            } else if c == 0xEF, end - start >= 3, bytes[start + 1] == 0xBB, bytes[start + 2] == 0xBF {
                start += 3
            } else {
                break
            }
        }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 || bytes[end - 1] == 0x0D { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
