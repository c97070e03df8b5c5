import CallLog

/// Reads an rtcstats dump: one JSON array per line, `[method, connectionId, value, time]`, in
/// every layout rtcstats-server and the browsers have stored:
/// - rtcstats-server since 2021: the first line is `["connectionInfo", null, X, time]`, X the
///   client's metadata (`userAgent`, `clientProtocol` such as `"3.1_STANDARD"`, `statsFormat`,
///   `path`, `origin`, `url`) as an object or as that object's JSON text;
/// - older rtcstats-server files: a metadata object alone on the first line (`{"path", "origin",
///   "url", "userAgent", "time", "fileFormat"}`);
/// - older client streams with no header at all: the first line is already a method line
///   (`["navigator.mediaDevices.getUserMedia", null, …, time]`);
/// - Chrome's own "rtcstats dump" (and rtcstats-js 3): a `RTCStatsDump` line, then metadata
///   (`{"fileFormat": 3}`, the browser in `userAgentData` when it is named at all), and each
///   line's time as the difference from the line before, in the last element.
/// Jitsi clients append a sequence number (`[method, id, value, time, seq]`): with absolute
/// times the time is always the fourth element, never the last. A line without a time
/// (`["e2eRtt", null, {…}]`) happened when the line before it did: it takes that line's time.
///
/// `getstats` values are delta-compressed by the client against its previous report of that
/// connection (rtcstats.js `deltaCompression`): each object's `id` is dropped (it is the key); a
/// member equal to the previous report's is left out; the report's newest timestamp moves to
/// the top-level `timestamp` and objects carrying it get `0`; a missing member is unchanged, a
/// missing `timestamp` keeps the previous one. What an object missing from a delta means depends
/// on the client's protocol (`DeltaRule`): from protocol 3 (jitsi's rtcstats since December 2020,
/// `clientProtocol` "3.x") every object of the report is listed, an unchanged one as
/// `{"timestamp": …}` or `{}`, so a missing object is gone from getStats and is removed; before
/// it an object whose only change was its timestamp was left out whole, so a missing object is
/// unchanged. A stream that names no protocol (no header, or metadata without `clientProtocol`)
/// shows it by its deltas: the first to list an object with nothing but its timestamp comes from
/// a protocol 3 client, and from then on a missing object is removed; until then it is kept.
/// `getStats` values are whole reports. Reports of Chrome's legacy API (types `ssrc`,
/// `googCandidatePair`, …, members at the top level, values as text) become `goog` records.
///
/// rtcstats-server also stores what media servers send it (JVB, Jicofo, Jigasi: NDJSON objects
/// `{"statsSessionId", "type": "identity", "data": {"applicationName": …}}`); those are not
/// browser dumps and `DumpImport.detect` refuses them, naming what they are.
struct RTCStatsImporter {
    let path: String
    let callID: String
    let write: (LogRecord) throws(DumpError) -> Void

    struct Outcome {
        var timeline: CallTimeline
        var userAgent: String?
        /// The browser from `userAgentData` (brands), for dumps that name it only there.
        var browser: (name: String, version: String)?
        var os: String?
        var snapshots: [String: Int] = [:]
        var formats: Set<String> = []
        var notes: [String] = []
        var skipped: [DumpError] = []
        var firstStatsTs: Int64?
        var lastStatsTs: Int64?
        var getUserMedia = 0
        var peerConnections = 0
        /// Labels the dump itself gives the call (`conference`, `participant`).
        var labels: [String: String] = [:]
    }

    /// What an object left out of a `getstats` delta means.
    enum DeltaRule: Equatable {
        /// Protocol 3 and later: the client lists every object it still has, so one left out
        /// is no longer in getStats (a stream that ended, a candidate pair pruned).
        case removed
        /// Before protocol 3: an object whose only change was its timestamp was left out.
        case unchanged

        /// The rule a `clientProtocol` ("3.1_STANDARD", "3.1_LEGACY", "2.0") names; nil when
        /// it names no version.
        static func of(clientProtocol: String) -> DeltaRule? {
            let digits = clientProtocol.prefix { $0.isNumber }
            guard let major = Int(digits) else { return nil }
            return major >= 3 ? .removed : .unchanged
        }
    }

    /// Methods rtcstats v3 sends as numbers (rtcstats-shared's method table).
    static let methodCodes: [Int: String] = [
        1: "getStats", 2: "createOffer", 3: "createOfferOnSuccess", 4: "createAnswer", 5: "createAnswerOnSuccess",
        6: "setLocalDescription", 7: "setLocalDescriptionOnSuccess", 8: "setRemoteDescription",
        9: "setRemoteDescriptionOnSuccess", 10: "addIceCandidate", 11: "addIceCandidateOnSuccess",
        12: "createOfferOnFailure", 13: "createAnswerOnFailure", 14: "setLocalDescriptionOnFailure",
        15: "setRemoteDescriptionOnFailure", 16: "addIceCandidateOnFailure", 20: "onicecandidate",
        21: "onicecandidateerror", 22: "ontrack", 23: "onsignalingstatechange", 24: "oniceconnectionstatechange",
        25: "onconnectionstatechange", 26: "onicegatheringstatechange", 27: "onnegotiationneeded", 28: "ondatachannel",
        30: "addTrack", 31: "addTrackOnSuccess", 32: "addTransceiver", 33: "addTransceiverOnSuccess", 34: "removeTrack",
        35: "createDataChannel", 36: "close", 37: "restartIce", 38: "setConfiguration", 39: "create", 40: "constraints",
        60: "navigator.mediaDevices.getUserMedia", 61: "navigator.mediaDevices.getUserMediaOnSuccess",
        65: "navigator.mediaDevices.getUserMediaOnFailure",
    ]

    func run(reader: DumpReader, outcome: inout Outcome) throws(DumpError) {
        var relativeTimes = false
        var lastTime: Double?
        // The client's delta rule: from its `clientProtocol` when the metadata names one, else
        // learnt from the deltas themselves (`StatsState.listsUnchangedObjects`).
        var rule: DeltaRule?

        func apply(_ metadata: JSONObject) {
            if let ua = metadata["userAgent"]?.stringValue, !ua.isEmpty { outcome.userAgent = ua }
            if let p = metadata["clientProtocol"]?.stringValue, let r = DeltaRule.of(clientProtocol: p) { rule = r }
            if let format = metadata["fileFormat"]?.doubleValue, format >= 3 { relativeTimes = true }
            if let data = (metadata["userAgentData"] ?? metadata["UserAgentData"])?.objectValue {
                applyUserAgentData(data)
            }
        }
        func applyUserAgentData(_ data: JSONObject) {
            if let b = UserAgentData.browser(data) { outcome.browser = b }
            if let os = UserAgentData.os(data) { outcome.os = os }
        }

        // The first line: a `RTCStatsDump` marker, a metadata object, a `connectionInfo` line,
        // or (a headerless client stream) already an entry.
        var firstLine = reader.line
        guard var first = try reader.nextLine(maximumBytes: ImportBounds.maximumHeldBytes) else { throw DumpError(file: path, message: "the file is empty") }
        while first.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) {
            firstLine = reader.line
            guard let next = try reader.nextLine(maximumBytes: ImportBounds.maximumHeldBytes) else { throw DumpError(file: path, message: "the file is empty") }
            first = next
        }
        if String(decoding: first, as: UTF8.self).trimmingSpaces == "RTCStatsDump" {
            relativeTimes = true
            firstLine = reader.line
            guard let meta = try reader.nextLine(maximumBytes: ImportBounds.maximumHeldBytes) else {
                throw DumpError(file: path, line: firstLine, message: "the metadata line is missing")
            }
            first = meta
        }
        let head: JSONValue
        do { head = try JSONValue.parse(String(decoding: first, as: UTF8.self)) } catch {
            throw DumpError(file: path, line: firstLine, message: "the first line is not JSON: \(error)")
        }
        var pending: (bytes: [UInt8], line: Int)?
        switch head {
        case .object(let metadata):
            apply(metadata)
        case .array(let a) where a.first?.stringValue == "connectionInfo":
            if a.count >= 3, let metadata = Self.connectionInfo(a[2]) {
                apply(metadata)
            } else {
                outcome.skipped.append(
                    DumpError(
                        file: path, line: firstLine,
                        message: "the connectionInfo line holds no metadata object (an object or its JSON text); line skipped"))
            }
        case .array:
            pending = (first, firstLine)
        default:
            throw DumpError(file: path, line: firstLine, message: "the first line is neither rtcstats metadata nor an rtcstats line")
        }

        var base: [String: StatsState] = [:]
        var order: [String] = []
        while true {
            let lineNumber: Int
            let bytes: [UInt8]
            if let p = pending {
                (bytes, lineNumber) = p
                pending = nil
            } else {
                lineNumber = reader.line
                guard let b = try reader.nextLine(maximumBytes: ImportBounds.maximumHeldBytes) else { break }
                bytes = b
            }
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            let entry: JSONValue
            do {
                entry = try bytes.withUnsafeBufferPointer { b throws(JSONParseError) in try JSONValue.parse(b) }
            } catch {
                outcome.skipped.append(DumpError(file: path, line: lineNumber, message: "not JSON (\(error)); line skipped"))
                continue
            }
            guard case .array(let a) = entry, a.count >= 3 else {
                outcome.skipped.append(DumpError(file: path, line: lineNumber, message: "not a [method, connection, value, time] array; line skipped"))
                continue
            }
            let method: String
            if let m = a[0].stringValue {
                method = m
            } else if let n = a[0].int64Value, let m = Self.methodCodes[Int(n)] {
                method = m
            } else {
                outcome.skipped.append(DumpError(file: path, line: lineNumber, message: "unknown method \(a[0].serialized()); line skipped"))
                continue
            }
            let connection = a[1].stringValue ?? (a[1] == .null ? nil : a[1].serialized())
            let value = a[2]
            // Metadata again (a client that reconnected sends it anew): what the client is, not
            // an event; its time is the server's, not the page's, and places nothing.
            if method == "connectionInfo" {
                if let metadata = Self.connectionInfo(value) { apply(metadata) }
                continue
            }
            if method == "userAgentData", let data = value.objectValue {
                applyUserAgentData(data)
            }
            // Jitsi's `identity` line names the meeting and the endpoint: the conference this dump
            // is one participant's leg of (`meetingUniqueId` is one meeting; `confID` is its room,
            // which later meetings reuse, so only the fallback).
            if method == "identity", let identity = value.objectValue {
                if let meeting = (identity["meetingUniqueId"] ?? identity["confID"])?.stringValue, !meeting.isEmpty {
                    outcome.labels["conference"] = meeting
                }
                if let endpoint = identity["endpointId"]?.stringValue, !endpoint.isEmpty { outcome.labels["participant"] = endpoint }
            }
            // Absolute times are the fourth element (a fifth is a sequence number); relative
            // ones the last. A line without one happened with the line before it.
            let own: Double?
            if a.count >= 4 {
                let t = relativeTimes ? a[a.count - 1] : a[3]
                own = t.doubleValue ?? (relativeTimes ? nil : DumpTime.epochMs(t))
            } else {
                own = nil
            }
            let time: Double
            if let own {
                time = relativeTimes ? (lastTime ?? 0) + own : own
            } else if let previous = lastTime {
                time = previous
            } else {
                outcome.skipped.append(DumpError(file: path, line: lineNumber, message: "no time, and no line before it has one; line skipped"))
                continue
            }
            lastTime = time
            let ts = Int64(time.rounded())
            switch method {
            case "getstats", "getStats", "g":
                guard let pc = connection else { continue }
                if base[pc] == nil {
                    base[pc] = StatsState()
                    if !order.contains(pc) { order.append(pc) }
                }
                guard case .object(let report) = value else {
                    outcome.skipped.append(DumpError(file: path, line: lineNumber, message: "\(method) value is not an object; line skipped"))
                    continue
                }
                if method == "g" || (method != "getstats" && Self.isTableCompressed(report)) {
                    base[pc]!.applyTableDelta(report)
                } else if method == "getstats" {
                    if rule == nil && StatsState.listsUnchangedObjects(report) { rule = .removed }
                    base[pc]!.applyDelta(report, missing: rule ?? .unchanged)
                } else {
                    base[pc]!.replace(report)
                }
                let leftOut = base[pc]!.takeLeftOut()
                if leftOut > 0 {
                    outcome.skipped.append(
                        DumpError(
                            file: path, line: lineNumber,
                            message:
                                "\(leftOut) new statistics objects of connection \(pc) left out: a peer connection holds at most "
                                + "\(StatsChainBounds.maximumObjects) (the line's other objects are used)"))
                }
                let (format, objects) = base[pc]!.report()
                guard !objects.isEmpty else { continue }
                try write(.stats(call: callID, ts: ts, format: format, report: objects, peerConnection: pc))
                outcome.formats.insert(format.rawValue)
                outcome.snapshots[pc, default: 0] += 1
                outcome.firstStatsTs = min(outcome.firstStatsTs ?? ts, ts)
                outcome.lastStatsTs = max(outcome.lastStatsTs ?? ts, ts)
                outcome.timeline.see(ts)
            default:
                if method.hasPrefix("navigator.") || method.hasPrefix("getUserMedia") || connection == nil {
                    if method.contains("getUserMedia") || method.contains("getDisplayMedia") { outcome.getUserMedia += 1 }
                    var detail: JSONObject = ["api": .string(method)]
                    if value != .null { detail["value"] = value }
                    let action = method.contains("UserMedia") || method.contains("DisplayMedia") ? "getUserMedia" : "rtcstats"
                    let type = method.hasPrefix("navigator.mediaDevices.") ? String(method.dropFirst(23)) : method
                    try write(.event(call: callID, ts: ts, action: action, type: type, detail: detail))
                    outcome.timeline.see(ts)
                } else if let pc = connection {
                    if method == "create" && !order.contains(pc) { order.append(pc) }
                    for r in outcome.timeline.events(pc: pc, ts: ts, api: method, value: value) { try write(r) }
                }
            }
        }
        outcome.peerConnections = order.count
    }

    /// The metadata of a `connectionInfo` line: an object, or that object as JSON text.
    static func connectionInfo(_ value: JSONValue) -> JSONObject? {
        if let o = value.objectValue { return o }
        if let s = value.stringValue, let v = try? JSONValue.parse(s) { return v.objectValue }
        return nil
    }
}

extension RTCStatsImporter {
    /// Statistics in rtcstats-js 3's compressed form (`RTCStatsTables`): numbered ids and members
    /// (`{"0": {"4": 111}}`), the timestamp as `t`, removed objects as null.
    static func isTableCompressed(_ report: JSONObject) -> Bool {
        if report["t"] != nil { return true }
        for e in report.entries {
            guard case .object(let o) = e.value else { if e.value == .null { return true }; continue }
            if o.entries.contains(where: { !$0.key.isEmpty && $0.key.allSatisfy(\.isNumber) }) { return true }
            if o["type"]?.doubleValue != nil { return true }
        }
        return false
    }
}

/// One connection's statistics as rebuilt from its deltas: objects by id, in first-seen order.
struct StatsState {
    private var ids: [String] = []
    private var objects: [String: JSONObject] = [:]
    /// New objects left out because the connection held the most a chain may
    /// (`StatsChainBounds`): every snapshot is written whole, so a connection whose deltas keep
    /// adding objects would cost time and output growing with the square of its lines.
    private(set) var leftOut = 0
    let limit = StatsChainBounds.maximumObjects

    /// Whether a new object may be added, counting it in `leftOut` when not.
    private mutating func admits() -> Bool {
        guard ids.count < limit else {
            leftOut += 1
            return false
        }
        return true
    }

    /// `leftOut`, counted afresh from now.
    mutating func takeLeftOut() -> Int {
        defer { leftOut = 0 }
        return leftOut
    }

    /// Applies an rtcstats.js delta (see `RTCStatsImporter`); `missing` says what an object
    /// the delta leaves out means.
    mutating func applyDelta(_ delta: JSONObject, missing: RTCStatsImporter.DeltaRule = .unchanged) {
        let top = delta["timestamp"]
        if missing == .removed {
            var listed = Set<String>()
            for e in delta.entries where e.key != "timestamp" { listed.insert(e.key) }
            ids.removeAll { id in
                guard !listed.contains(id) else { return false }
                objects[id] = nil
                return true
            }
        }
        for e in delta.entries where e.key != "timestamp" {
            guard case .object(var changes) = e.value else { continue }
            if changes["timestamp"] == .number(0), let top { changes["timestamp"] = top }
            if var old = objects[e.key] {
                for c in changes.entries { old[c.key] = c.value }
                objects[e.key] = old
            } else if admits() {
                ids.append(e.key)
                objects[e.key] = changes
            }
        }
    }

    /// True when the delta lists an object with nothing but its timestamp (`{"timestamp": 0}`,
    /// `{}`): only a client that lists every object it still has sends one (protocol 3; before
    /// it such an object was left out whole), so for that client a missing object is gone.
    static func listsUnchangedObjects(_ delta: JSONObject) -> Bool {
        delta.entries.contains { e in
            guard e.key != "timestamp", case .object(let o) = e.value else { return false }
            return o.entries.allSatisfy { $0.key == "timestamp" }
        }
    }

    /// Applies an rtcstats-js 3 delta (`RTCStatsTables`): members and types named back from
    /// their numbers; a missing object or member is unchanged; a member holding an object
    /// (`qualityLimitationDurations`) changes key by key; `null` removes the object; an object
    /// without a timestamp of its own in the delta takes the top-level one (`t`). The numbered
    /// ids stay as they are: references between objects use the same numbers.
    mutating func applyTableDelta(_ delta: JSONObject) {
        let top = delta["t"]
        for e in delta.entries where e.key != "t" {
            if e.value == .null {
                if objects.removeValue(forKey: e.key) != nil { ids.removeAll { $0 == e.key } }
                continue
            }
            guard case .object(let raw) = e.value else { continue }
            var object = objects[e.key] ?? JSONObject()
            if objects[e.key] == nil {
                guard admits() else { continue }
                ids.append(e.key)
            }
            var ownTimestamp = false
            for m in raw.entries {
                let name = RTCStatsTables.memberName(m.key)
                if name == "timestamp" { ownTimestamp = true }
                var value = name == "type" ? RTCStatsTables.typeName(m.value) : m.value
                if case .object(let changes) = value, case .object(var old)? = object[name] {
                    for c in changes.entries { old[c.key] = c.value }
                    value = .object(old)
                }
                object[name] = value
            }
            if !ownTimestamp, let top { object["timestamp"] = top }
            objects[e.key] = object
        }
        // Objects left out of the delta are unchanged but for their time: the report's.
        if let top {
            for id in ids where delta[id] == nil { objects[id]?["timestamp"] = top }
        }
    }

    /// A whole report (`getStats`): objects no longer in it are gone.
    mutating func replace(_ report: JSONObject) {
        ids = []
        objects = [:]
        for e in report.entries where e.key != "timestamp" {
            guard case .object(let o) = e.value, admits() else { continue }
            ids.append(e.key)
            objects[e.key] = o
        }
    }

    /// The report as the log holds it: W3C objects with their `id` first, or legacy objects
    /// `{id, type, timestamp, values}` when most types are the legacy API's.
    func report() -> (StatsFormat, [JSONValue]) {
        let types = ids.compactMap { objects[$0]?["type"]?.stringValue }
        let legacy = !types.isEmpty && types.filter { SeriesCollector.legacyTypes.contains($0) }.count * 2 > types.count
        var out: [JSONValue] = []
        out.reserveCapacity(ids.count)
        for id in ids {
            guard let o = objects[id] else { continue }
            if legacy {
                var values = JSONObject()
                for e in o.entries where !["id", "type", "timestamp"].contains(e.key) {
                    values.entries.append((key: e.key, value: .string(SeriesCollector.text(e.value))))
                }
                out.append([
                    "id": .string(id), "type": o["type"] ?? "unknown", "timestamp": o["timestamp"] ?? .null,
                    "values": .object(values),
                ])
            } else {
                var w = JSONObject()
                w.entries.append((key: "id", value: .string(id)))
                for e in o.entries where e.key != "id" { w.entries.append(e) }
                out.append(.object(w))
            }
        }
        return (legacy ? .goog : .w3c, out)
    }
}

/// The browser as `navigator.userAgentData` names it (Chrome's own rtcstats dump carries no user
/// agent string): `{"brands": [{"brand", "version"}], "fullVersionList": […], "platform"}`.
enum UserAgentData {
    /// The browser and its version as the `call` record's `sdk` and `sdkVersion`: the full
    /// version (`fullVersionList`, from `getHighEntropyValues`) where the data has it, else the
    /// major one (`brands`). Brands that name no browser (GREASE values such as "Not A;Brand")
    /// are passed over, and "Chromium" beside a branded browser names its engine, not the
    /// browser; alone it reads as `chrome`, as a Chromium user agent string does.
    static func browser(_ data: JSONObject) -> (name: String, version: String)? {
        for key in ["fullVersionList", "brands"] {
            guard let list = data[key]?.arrayValue else { continue }
            var versions: [String: String] = [:]
            for entry in list {
                if let brand = entry["brand"]?.stringValue, let version = entry["version"]?.stringValue, !version.isEmpty {
                    versions[brand] = version
                }
            }
            for (brand, name) in [
                ("Microsoft Edge", "edge"), ("Opera", "opera"), ("Google Chrome", "chrome"), ("Chromium", "chrome"),
            ] {
                if let v = versions[brand] { return (name, v) }
            }
        }
        return nil
    }

    /// The operating system from `platform`, named as `UserAgent.os` names it.
    static func os(_ data: JSONObject) -> String? {
        switch data["platform"]?.stringValue?.lowercased() {
        case "windows": "windows"
        case "macos": "macos"
        case "linux": "linux"
        case "android": "android"
        case "chrome os", "chromeos": "chromeos"
        case "ios": "ios"
        default: nil
        }
    }
}
