import CallLog

/// Turns the shared Chromium recording (`{"kind":"stats","side":…,"time":…,"stats":[…]}` lines,
/// see `../shared/data/README.md`) into log format v1: one call, each side its own peer
/// connection (`pc` = `a` / `b`), the page's events mapped to the SDK event names.
///
/// The W3C objects are carried unchanged; resampling keeps every k-th snapshot per side, which
/// turns the 1 s recording into the 5 s or 10 s cadence the SDKs use.
public struct ChromiumImporter {
    /// Keep every `every`-th snapshot of each side (the `every`-th, `2·every`-th, …).
    public var every: Int
    /// The call id to write; nil keeps the recording's.
    public var callID: String?
    /// Labels for the `call` record (the recording has none of its own).
    public var labels: [String: String]

    public init(every: Int = 1, callID: String? = nil, labels: [String: String] = [:]) {
        self.every = max(1, every)
        self.callID = callID
        self.labels = labels
    }

    public struct Result {
        public var records: [LogRecord] = []
        /// Snapshots kept, per side.
        public var snapshots: [String: Int] = [:]
        /// Lines that were not recording lines (reported, skipped).
        public var skipped = 0
        /// Records handed to `stream`'s `write`.
        public var written = 0
        public var issues: [LogIssue] = []
    }

    /// Reads and converts a recording file (`.jsonl` or `.jsonl.zst`).
    public func convert(path: String) -> Result {
        var lines = [JSONValue]()
        var result = Result()
        LogLineReader(path: path).forEachLine(
            { bytes, n in
                do throws(JSONParseError) { lines.append(try JSONValue.parse(bytes)) } catch {
                    result.issues.append(LogIssue(file: path, line: n, category: .invalidRecord, message: error.description))
                }
            }, issue: { result.issues.append($0) })
        let converted = convert(lines: lines)
        result.records = converted.records
        result.snapshots = converted.snapshots
        result.skipped = converted.skipped
        return result
    }

    /// Converts parsed recording lines: the `call` record first, then the rest by time (the
    /// recording's order breaking ties), the `end` record last.
    public func convert(lines: [JSONValue]) -> Result {
        var reader = LineReader(importer: self)
        var records = [LogRecord]()
        for line in lines { records += reader.take(line) }
        var result = Result()
        result.snapshots = reader.snapshots
        result.skipped = reader.skipped
        let (call, end) = reader.finish()
        // Stable by time. The `end` record goes last, as a collector writes it: the page's
        // closing getStats() (a few ms after hang-up) still belongs to the call, and a reader
        // hands a call on at its `end`.
        let sorted = records.enumerated().sorted { ($0.element.ts, $0.offset) < ($1.element.ts, $1.offset) }.map(\.element)
        result.records = (call.map { [$0] } ?? []) + sorted + (end.map { [$0] } ?? [])
        return result
    }

    /// Reads and converts a recording file a line at a time, handing each record to `write` as
    /// it is made (memory for one line, whatever the file's size): stats and events in the
    /// file's order, then the `call` record (it needs the whole recording: direction, media)
    /// and the `end` record.
    public func stream(path: String, write: (LogRecord) throws -> Void) rethrows -> Result {
        var reader = LineReader(importer: self)
        var result = Result()
        var count = 0
        try LogLineReader(path: path).forEachLine(
            { bytes, n in
                let line: JSONValue
                do throws(JSONParseError) { line = try JSONValue.parse(bytes) } catch {
                    result.issues.append(LogIssue(file: path, line: n, category: .invalidRecord, message: error.description))
                    return
                }
                for r in reader.take(line) {
                    try write(r)
                    count += 1
                }
            }, issue: { result.issues.append($0) })
        let (call, end) = reader.finish()
        for r in [call, end].compactMap({ $0 }) {
            try write(r)
            count += 1
        }
        result.snapshots = reader.snapshots
        result.skipped = reader.skipped
        result.written = count
        return result
    }

    /// What the recording's lines say, one line at a time.
    struct LineReader {
        let importer: ChromiumImporter
        var seen: [String: Int] = [:]
        var snapshots: [String: Int] = [:]
        var skipped = 0
        var call: String?
        var firstTime: Int64?
        var connected: Int64?
        var userAgent: String?
        var direction: String?
        var media: Set<String> = []
        var end: LogRecord?

        init(importer: ChromiumImporter) {
            self.importer = importer
            call = importer.callID
        }

        var id: String { call ?? "chromium" }

        /// The records one line makes (the `end` record is kept for `finish`).
        mutating func take(_ line: JSONValue) -> [LogRecord] {
            if let ua = line["userAgent"]?.stringValue { userAgent = ua }
            guard let kind = line["kind"]?.stringValue else { skipped += 1; return [] }
            if kind == "done" { return [] }
            guard let side = line["side"]?.stringValue, let time = line["time"]?.int64Value else {
                skipped += 1
                return []
            }
            if call == nil { call = line["call"]?.stringValue }
            firstTime = min(firstTime ?? time, time)
            switch kind {
            case "stats":
                guard let report = line["stats"]?.arrayValue else { skipped += 1; return [] }
                let n = seen[side, default: 0] + 1
                seen[side] = n
                guard n % importer.every == 0 else { return [] }
                snapshots[side, default: 0] += 1
                for o in report where ["inbound-rtp", "outbound-rtp"].contains(o["type"]?.stringValue ?? "") {
                    if let k = o["kind"]?.stringValue { media.insert(k) }
                }
                return [.stats(call: id, ts: time, format: .w3c, report: report, peerConnection: side)]
            case "event":
                guard let type = line["type"]?.stringValue else { skipped += 1; return [] }
                if direction == nil && type == "callCreate" { direction = "outgoing" }
                if direction == nil && type == "incomingCall" { direction = "incoming" }
                if type == "ice:connected" { connected = min(connected ?? time, time) }
                if type == "callEnd" {
                    let duration = time - (connected ?? firstTime ?? time)
                    end = .end(call: id, ts: time, reason: "terminatedLocally", durationMs: duration)
                    return []
                }
                guard let (action, mapped, detail) = ChromiumImporter.mapEvent(type) else { skipped += 1; return [] }
                var d = detail
                d["pc"] = .string(side)
                return [.event(call: id, ts: time, action: action, type: mapped, detail: d)]
            default:
                skipped += 1
                return []
            }
        }

        /// The `call` record (only what the recording says: its page runs in Chromium, the
        /// version when a line carries the user agent, the media its streams carry, who made the
        /// call) and the `end` record, once every line was read.
        func finish() -> (call: LogRecord?, end: LogRecord?) {
            guard let t = firstTime else { return (nil, end) }
            var body: JSONObject = [:]
            if let direction { body["direction"] = .string(direction) }
            body["sdk"] = "chromium"
            if let ua = userAgent, let browser = UserAgent.browser(ua) { body["sdkVersion"] = .string(browser.version) }
            body["platform"] = "web"
            if !media.isEmpty { body["media"] = .array(["audio", "video"].filter(media.contains).map { .string($0) }) }
            if !importer.labels.isEmpty {
                body["labels"] = .object(JSONObject(importer.labels.keys.sorted().map { (key: $0, value: .string(importer.labels[$0]!)) }))
            }
            body["importedFrom"] = "chromium-test-page"
            return (LogRecord(kind: .call, call: id, ts: t, body: body), end)
        }
    }

    /// The page's event names as SDK events (action, type, detail); nil for unknown ones.
    static func mapEvent(_ type: String) -> (String, String, JSONObject)? {
        switch type {
        case "callCreate", "callAnswerReceived", "callRinging", "callRestSent", "incomingCall":
            return (EventName.callMetric, type, JSONObject())
        case "ice:connected", "ice:completed":
            return (EventName.iceState, "iceConnected", ["state": .string(String(type.dropFirst(4)))])
        case "ice:disconnected", "ice:failed":
            return (EventName.iceState, "iceDisconnected", ["state": .string(String(type.dropFirst(4)))])
        default:
            if type.hasPrefix("gathering:") { return ("iceGathering", String(type.dropFirst(10)), JSONObject()) }
            if type.hasPrefix("ice:") { return ("iceConnectionState", String(type.dropFirst(4)), JSONObject()) }
            return nil
        }
    }
}
