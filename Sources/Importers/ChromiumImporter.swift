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
        public var issues: [LogIssue] = []
    }

    /// Reads and converts a recording file (`.jsonl` or `.jsonl.zst`).
    public func convert(path: String) -> Result {
        var lines = [JSONValue]()
        var result = Result()
        LogLineReader(path: path).forEachLine({ bytes, n in
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

    /// Converts parsed recording lines.
    public func convert(lines: [JSONValue]) -> Result {
        var result = Result()
        var records = [LogRecord]()
        var seen: [String: Int] = [:]
        var call = callID
        var firstTime: Int64?
        var connected: Int64?
        var userAgent: String?
        var direction: String?
        var media: Set<String> = []
        for line in lines {
            if let ua = line["userAgent"]?.stringValue { userAgent = ua }
            guard let kind = line["kind"]?.stringValue else { result.skipped += 1; continue }
            if kind == "done" { continue }
            guard let side = line["side"]?.stringValue, let time = line["time"]?.int64Value else {
                result.skipped += 1
                continue
            }
            if call == nil { call = line["call"]?.stringValue }
            let id = call ?? "chromium"
            firstTime = min(firstTime ?? time, time)
            switch kind {
            case "stats":
                guard let report = line["stats"]?.arrayValue else { result.skipped += 1; continue }
                let n = seen[side, default: 0] + 1
                seen[side] = n
                guard n % every == 0 else { continue }
                result.snapshots[side, default: 0] += 1
                for o in report where ["inbound-rtp", "outbound-rtp"].contains(o["type"]?.stringValue ?? "") {
                    if let k = o["kind"]?.stringValue { media.insert(k) }
                }
                records.append(.stats(call: id, ts: time, format: .w3c, report: report, peerConnection: side))
            case "event":
                guard let type = line["type"]?.stringValue else { result.skipped += 1; continue }
                if direction == nil && type == "callCreate" { direction = "outgoing" }
                if direction == nil && type == "incomingCall" { direction = "incoming" }
                if type == "ice:connected" { connected = min(connected ?? time, time) }
                if type == "callEnd" {
                    let duration = time - (connected ?? firstTime ?? time)
                    records.append(.end(call: id, ts: time, reason: "terminatedLocally", durationMs: duration))
                } else if let (action, mapped, detail) = ChromiumImporter.mapEvent(type) {
                    var d = detail
                    d["pc"] = .string(side)
                    records.append(.event(call: id, ts: time, action: action, type: mapped, detail: d))
                } else {
                    result.skipped += 1
                }
            default:
                result.skipped += 1
            }
        }
        if let t = firstTime {
            let id = call ?? "chromium"
            // Only what the recording says: its page runs in Chromium (the version when a line
            // carries the user agent), the media its streams carry, who made the call.
            var body: JSONObject = [:]
            if let direction { body["direction"] = .string(direction) }
            body["sdk"] = "chromium"
            if let ua = userAgent, let browser = UserAgent.browser(ua) { body["sdkVersion"] = .string(browser.version) }
            body["platform"] = "web"
            if !media.isEmpty { body["media"] = .array(["audio", "video"].filter(media.contains).map { .string($0) }) }
            if !labels.isEmpty {
                body["labels"] = .object(JSONObject(labels.keys.sorted().map { (key: $0, value: .string(labels[$0]!)) }))
            }
            body["importedFrom"] = "chromium-test-page"
            records.insert(LogRecord(kind: .call, call: id, ts: t, body: body), at: 0)
        }
        // Stable by time: the recording's own order breaks ties. The `end` record goes last, as a
        // collector writes it: the page's closing getStats() (a few ms after hang-up) still
        // belongs to the call, and a reader hands a call on at its `end`.
        let sorted = records.enumerated().sorted { ($0.element.ts, $0.offset) < ($1.element.ts, $1.offset) }.map(\.element)
        result.records = sorted.filter { $0.kind != .end } + sorted.filter { $0.kind == .end }
        return result
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
