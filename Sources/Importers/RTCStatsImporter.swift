import CallLog

/// Reads an rtcstats dump as rtcstats-server stores what the rtcstats.js client sends: the
/// first line is the client's metadata (`{"path", "origin", "url", "userAgent", "time",
/// "fileFormat"}`), then one JSON array per line, `[method, connectionId, value, time]`, time
/// in epoch ms. Chrome's own "rtcstats dump" (and rtcstats v3) starts with a `RTCStatsDump`
/// line and writes each line's time as the difference from the line before.
///
/// `getstats` values are delta-compressed by the client against its previous report of that
/// connection (rtcstats.js `deltaCompression`): each object's `id` is dropped (it is the key);
/// a member equal to the previous report's is left out; an object whose only change is its
/// `timestamp` is left out whole; the report's newest timestamp moves to the top-level
/// `timestamp` and objects carrying it get `0`. So: an object missing from a delta is
/// unchanged (removal is not sent; such an object stays, with its old timestamp, as
/// rtcstats-server keeps it), a missing member is unchanged, `timestamp: 0` means the top-level
/// one, and a missing `timestamp` keeps the previous one. `getStats` values are whole reports.
/// Reports of Chrome's legacy API (types `ssrc`, `googCandidatePair`, …, members at the top
/// level, values as text) become `goog` records.
struct RTCStatsImporter {
    let path: String
    let callID: String
    let write: (LogRecord) throws(DumpError) -> Void

    struct Outcome {
        var timeline: CallTimeline
        var userAgent: String?
        var snapshots: [String: Int] = [:]
        var formats: Set<String> = []
        var notes: [String] = []
        var skipped: [DumpError] = []
        var firstStatsTs: Int64?
        var lastStatsTs: Int64?
        var getUserMedia = 0
        var peerConnections = 0
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
        var lastTime = 0.0
        guard var first = try reader.nextLine() else { throw DumpError(file: path, message: "the file is empty") }
        if String(decoding: first, as: UTF8.self) == "RTCStatsDump" {
            relativeTimes = true
            guard let meta = try reader.nextLine() else { throw DumpError(file: path, line: 2, message: "the metadata line is missing") }
            first = meta
        }
        let metaLine = reader.line - 1
        let meta: JSONValue
        do { meta = try JSONValue.parse(String(decoding: first, as: UTF8.self)) } catch {
            throw DumpError(file: path, line: metaLine, message: "the metadata line is not JSON: \(error)")
        }
        guard case .object(let metadata) = meta else {
            throw DumpError(file: path, line: metaLine, message: "the metadata line is not a JSON object")
        }
        outcome.userAgent = metadata["userAgent"]?.stringValue
        if let format = metadata["fileFormat"]?.doubleValue, format >= 3 { relativeTimes = true }

        var base: [String: StatsState] = [:]
        var order: [String] = []
        while true {
            let lineNumber = reader.line
            guard let bytes = try reader.nextLine() else { break }
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
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
            guard a.count >= 4, let t = a[a.count - 1].doubleValue ?? DumpTime.epochMs(a[a.count - 1]) else {
                outcome.skipped.append(DumpError(file: path, line: lineNumber, message: "no time; line skipped"))
                continue
            }
            let time = relativeTimes ? lastTime + t : t
            lastTime = time
            let ts = Int64(time.rounded())
            switch method {
            case "getstats", "getStats", "g":
                guard let pc = connection else { continue }
                if base[pc] == nil {
                    base[pc] = StatsState()
                    order.append(pc)
                }
                guard case .object(let report) = value else {
                    outcome.skipped.append(DumpError(file: path, line: lineNumber, message: "\(method) value is not an object; line skipped"))
                    continue
                }
                if method == "g" || (method != "getstats" && Self.isTableCompressed(report)) {
                    base[pc]!.applyTableDelta(report)
                } else if method == "getstats" {
                    base[pc]!.applyDelta(report)
                } else {
                    base[pc]!.replace(report)
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

    /// Applies an rtcstats.js delta (see `RTCStatsImporter`).
    mutating func applyDelta(_ delta: JSONObject) {
        let top = delta["timestamp"]
        for e in delta.entries where e.key != "timestamp" {
            guard case .object(var changes) = e.value else { continue }
            if changes["timestamp"] == .number(0), let top { changes["timestamp"] = top }
            if var old = objects[e.key] {
                for c in changes.entries { old[c.key] = c.value }
                objects[e.key] = old
            } else {
                ids.append(e.key)
                objects[e.key] = changes
            }
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
            if objects[e.key] == nil { ids.append(e.key) }
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
            guard case .object(let o) = e.value else { continue }
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
