import CallLog
import Foundation
import TestSupport

@testable import Importers

/// The real Chromium recording laid out as the dumps users have, exactly as their writers lay
/// them out, so that importing them must give back what the recording holds.
///
/// - `webrtcInternals`: chrome://webrtc-internals (M138+): for every stats object the page
///   keeps one series per member, keyed `<id>-<member>`, appending each poll's value as
///   `getNumberFromValue` leaves it (numbers and numeric text become numbers, other values stay
///   as they are), plus its computed `[…]` series, then `<id>-timestamp`; a series is
///   `{startTime, endTime, statsType, values}` with the Dates as ISO text and the values as
///   JSON text; the page's `updateLog` entries are `{type, value, timestamp}`; the whole object
///   is `JSON.stringify(dump, null, 1)`.
/// - `rtcstats`: rtcstats-server's file for an rtcstats.js client: the metadata line, the
///   public IP line, then `[method, pc, value, time]` lines, each `getstats` value delta-
///   compressed against the previous report as rtcstats.js `deltaCompression` does, and the
///   server's closing line without a newline.
enum DumpLayouts {
    static let userAgent = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.7444.59 Safari/537.36"
    static let url = "https://meet.example.test/room"

    /// The page's side names as webrtc-internals' connection ids (`rid-lid`) and rtcstats' PC ids.
    static let internalsIDs = ["a": "7-1", "b": "7-2"]
    static let rtcstatsIDs = ["a": "PC_0", "b": "PC_1"]

    /// Each side's API trace, from the recording's events: side a makes the offer when the call
    /// is created and gets the answer at `callAnswerReceived`; side b answers in between.
    static func trace(_ rec: ChromiumRecording) -> [String: [(time: Int64, type: String, value: JSONValue)]] {
        let ev = rec.events
        func t(_ side: String, _ type: String) -> Int64 { ev.first { $0.side == side && $0.type == type }!.time }
        let create = t("a", "callCreate"), answer = t("a", "callAnswerReceived")
        let offer: JSONValue = ["type": "offer", "sdp": "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\n"]
        let answerSDP: JSONValue = ["type": "answer", "sdp": "v=0\r\no=- 3 4 IN IP4 127.0.0.1\r\ns=-\r\n"]
        var a: [(Int64, String, JSONValue)] = [
            (create, "createOffer", ""), (create + 2, "createOfferOnSuccess", offer), (create + 3, "setLocalDescription", offer),
            (create + 4, "setLocalDescriptionOnSuccess", ""),
        ]
        for e in ev where e.side == "a" {
            if e.type.hasPrefix("gathering:") { a.append((e.time, "icegatheringstatechange", .string(String(e.type.dropFirst(10))))) }
            if e.type.hasPrefix("ice:") { a.append((e.time, "iceconnectionstatechange", .string(String(e.type.dropFirst(4))))) }
            if e.type == "callEnd" { a.append((e.time, "close", "")) }
        }
        a.append((answer, "setRemoteDescription", answerSDP))
        var b: [(Int64, String, JSONValue)] = [
            (create + 20, "setRemoteDescription", offer), (create + 22, "createAnswer", ""),
            (create + 24, "createAnswerOnSuccess", answerSDP), (create + 25, "setLocalDescription", answerSDP),
        ]
        for e in ev where e.side == "b" {
            if e.type.hasPrefix("ice:") { b.append((e.time, "iceconnectionstatechange", .string(String(e.type.dropFirst(4))))) }
        }
        return [
            "a": a.sorted { $0.0 < $1.0 }.map { (time: $0.0, type: $0.1, value: $0.2) },
            "b": b.sorted { $0.0 < $1.0 }.map { (time: $0.0, type: $0.1, value: $0.2) },
        ]
    }

    // MARK: - webrtc-internals

    /// What `getNumberFromValue` and the series keep of a value: a number for numbers and text
    /// that JavaScript reads as one, the value itself otherwise.
    static func pageValue(_ v: JSONValue) -> JSONValue {
        if case .string(let s) = v {
            let t = s.trimmingCharacters(in: .whitespaces)
            if !t.isEmpty, t.allSatisfy({ "0123456789.eE+-".contains($0) }), let d = Double(t) { return .number(d) }
        }
        return v
    }

    static func isoDate(_ ms: Double) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: Date(timeIntervalSince1970: (ms.rounded(.towardZero)) / 1000))
    }

    /// The dump's text. `legacyTimes`: the updateLog as pages before M138 kept it (`time` as
    /// `toLocaleString()` in `timeZone`, no `timestamp`).
    static func webrtcInternals(_ rec: ChromiumRecording, legacyTimes: TimeZone? = nil) -> String {
        var pcs = JSONObject()
        let traces = trace(rec)
        for side in ["a", "b"] {
            // Series in creation order: per poll, per object, per member; then the timestamp.
            var keys: [String] = []
            var series: [String: (type: String, times: [Double], values: [JSONValue])] = [:]
            func add(_ key: String, _ type: String, _ t: Double, _ v: JSONValue) {
                if series[key] == nil { keys.append(key); series[key] = (type, [], []) }
                series[key]!.times.append(t)
                series[key]!.values.append(v)
            }
            var previous: [String: JSONObject] = [:]
            for snap in rec.snapshots where snap.side == side {
                for stat in snap.stats {
                    guard case .object(let o) = stat, let id = o["id"]?.stringValue, let type = o["type"]?.stringValue,
                        let t = o["timestamp"]?.doubleValue
                    else { continue }
                    for e in o.entries where !["id", "type", "timestamp"].contains(e.key) {
                        add("\(id)-\(e.key)", type, t, pageValue(e.value))
                        // The page's rates after their counters, as stats_rates_calculator adds them.
                        if e.key == "bytesReceived" || e.key == "bytesSent", let p = previous[id], let old = p[e.key]?.doubleValue,
                            let now = e.value.doubleValue, let t0 = p["timestamp"]?.doubleValue, t > t0
                        {
                            add("\(id)-[\(e.key)_in_bits/s]", type, t, .number((now - old) * 8 * 1000 / (t - t0)))
                        }
                        if e.key == "codecId" { add("\(id)-[codec]", type, t, "opus (111)") }
                    }
                    add("\(id)-timestamp", type, t, .number(t))
                    previous[id] = o
                }
            }
            var stats = JSONObject()
            for k in keys {
                let s = series[k]!
                stats[k] = [
                    "startTime": .string(isoDate(s.times.first!)), "endTime": .string(isoDate(s.times.last!)),
                    "statsType": .string(s.type), "values": .string(JSONValue.array(s.values).serialized()),
                ]
            }
            var log: [JSONValue] = []
            for e in traces[side]! {
                let value: JSONValue = e.value.objectValue != nil ? .string(e.value.serialized()) : e.value
                if let zone = legacyTimes {
                    let f = DateFormatter()
                    f.locale = Locale(identifier: "en_US")
                    f.timeZone = zone
                    f.dateFormat = "M/d/yyyy, h:mm:ss a"
                    log.append([
                        "time": .string(f.string(from: Date(timeIntervalSince1970: Double(e.time) / 1000))),
                        "type": .string(e.type), "value": value,
                    ])
                } else {
                    log.append(["type": .string(e.type), "value": value, "timestamp": .number(Double(e.time))])
                }
            }
            pcs[internalsIDs[side]!] = .object([
                "pid": 4242, "constraints": "",
                "rtcConfiguration": "{ iceServers: [], iceTransportPolicy: all, bundlePolicy: balanced, rtcpMuxPolicy: require, iceCandidatePoolSize: 0 }",
                "stats": .object(stats), "updateLog": .array(log), "url": .string(url),
            ])
        }
        let firstEvent = rec.events.map(\.time).min()!
        let dump: JSONValue = [
            "getUserMedia": [
                [
                    "rid": 7, "pid": 4242, "request_id": 0, "request_type": "getUserMedia", "origin": "https://meet.example.test",
                    "audio": "", "video": "", "timestamp": .number(Double(firstEvent - 300)),
                ]
            ],
            "PeerConnections": .object(pcs),
            "UserAgent": .string(userAgent),
            "UserAgentData": [["brand": "Chromium", "version": "156"]],
        ]
        return pretty(dump, indent: 0)
    }

    /// `JSON.stringify(value, null, 1)`.
    static func pretty(_ v: JSONValue, indent: Int) -> String {
        let pad = String(repeating: " ", count: indent + 1), close = String(repeating: " ", count: indent)
        switch v {
        case .object(let o):
            if o.isEmpty { return "{}" }
            return "{\n"
                + o.entries.map { pad + JSONValue.string($0.key).serialized() + ": " + pretty($0.value, indent: indent + 1) }
                .joined(separator: ",\n") + "\n" + close + "}"
        case .array(let a):
            if a.isEmpty { return "[]" }
            return "[\n" + a.map { pad + pretty($0, indent: indent + 1) }.joined(separator: ",\n") + "\n" + close + "]"
        default:
            return v.serialized()
        }
    }

    // MARK: - rtcstats

    /// rtcstats.js `deltaCompression(oldStats, newStats)`.
    static func deltaCompression(_ old: [String: JSONObject], _ new: [(id: String, stats: JSONObject)]) -> JSONObject {
        var out = JSONObject()
        for (id, s) in new {
            var report = s
            report["id"] = nil
            guard let o = old[id] else { out[id] = .object(report); continue }
            var removed = false
            for name in report.keys {
                if let v = report[name], v.objectValue == nil, v.arrayValue == nil, v == o[name] { report[name] = nil }
                if report.isEmpty || (report.count == 1 && report["timestamp"] != nil) { removed = true }
            }
            if !removed { out[id] = .object(report) }
        }
        var newest = -Double.infinity
        for e in out.entries { if let t = e.value["timestamp"]?.doubleValue, t > newest { newest = t } }
        for i in out.entries.indices {
            if case .object(var r) = out.entries[i].value, r["timestamp"]?.doubleValue == newest {
                r["timestamp"] = 0
                out.entries[i].value = .object(r)
            }
        }
        out["timestamp"] = newest.isFinite ? .number(newest) : .null
        return out
    }

    /// chrome://webrtc-internals' "rtcstats dump" (M138+): a `RTCStatsDump` line, `{"fileFormat":3}`,
    /// then `[event, connection, value, …extra, delta]` lines whose last element is the time since
    /// the line before; `getStats` values are whole reports keyed by id.
    static func chromeRTCStats(_ rec: ChromiumRecording) -> String {
        var lines: [(time: Int64, order: Int, method: String, pc: String, value: JSONValue)] = []
        for (side, trace) in trace(rec) {
            for e in trace { lines.append((e.time, lines.count, e.type, internalsIDs[side]!, e.value == "" ? .null : e.value)) }
        }
        for snap in rec.snapshots {
            var report = JSONObject()
            for o in snap.stats { report[o["id"]!.stringValue!] = o }
            lines.append((snap.time, lines.count, "getStats", internalsIDs[snap.side]!, .object(report)))
        }
        var text = "RTCStatsDump\n" + JSONValue.object(["fileFormat": 3]).serialized()
        var last: Int64 = 0
        for l in lines.sorted(by: { ($0.time, $0.order) < ($1.time, $1.order) }) {
            text += "\n" + JSONValue.array([.string(l.method), .string(l.pc), l.value, .number(Double(l.time - last))]).serialized()
            last = l.time
        }
        return text
    }

    static func rtcstats(_ rec: ChromiumRecording) -> String {
        let traces = trace(rec)
        let start = rec.events.map(\.time).min()! - 500
        var lines: [(time: Int64, order: Int, text: String)] = []
        func line(_ method: String, _ pc: JSONValue, _ value: JSONValue, _ time: Int64) {
            lines.append((time, lines.count, JSONValue.array([.string(method), pc, value, .number(Double(time))]).serialized()))
        }
        for side in ["a", "b"] {
            let pc = JSONValue.string(rtcstatsIDs[side]!)
            line("create", pc, ["iceServers": [], "browserType": "webkit"], start + (side == "a" ? 10 : 11))
            for e in traces[side]! {
                let method = ["iceconnectionstatechange", "icegatheringstatechange"].contains(e.type) ? "on" + e.type : e.type
                line(method, pc, e.value == "" ? .null : e.value, e.time)
            }
            var previous: [String: JSONObject] = [:]
            for snap in rec.snapshots where snap.side == side {
                let report = snap.stats.compactMap { s -> (id: String, stats: JSONObject)? in
                    guard let o = s.objectValue, let id = o["id"]?.stringValue else { return nil }
                    return (id, o)
                }
                line("getstats", pc, .object(deltaCompression(previous, report)), snap.time)
                previous = Dictionary(report.map { ($0.id, $0.stats) }, uniquingKeysWith: { $1 })
            }
        }
        let meta: JSONValue = [
            "path": "/room", "origin": "https://meet.example.test", "url": .string(url),
            "userAgent": .string(userAgent), "time": .number(Double(start)), "fileFormat": 2,
        ]
        var text = meta.serialized() + "\n" + JSONValue.array(["publicIP", .null, ["203.0.113.7"], .number(Double(start))]).serialized() + "\n"
        for l in lines.sorted(by: { ($0.time, $0.order) < ($1.time, $1.order) }) { text += l.text + "\n" }
        let end = rec.snapshots.map(\.time).max()! + 50
        text += JSONValue.array(["close", .null, .null, .number(Double(end))]).serialized()  // the server writes no newline
        return text
    }

    // MARK: - rtcstats-js 3

    /// rtcstats-js 3 (rtcstats-shared `statsCompression`): a delta against the previous report,
    /// timestamps collapsed to the top-level `t`, certificates and obsolete members left out,
    /// ids numbered in order of first appearance (references too), members and types replaced
    /// by the numbers of the tables, objects gone sent as `null`.
    static func tableCompression(
        _ base: [String: JSONObject], _ new: [(id: String, stats: JSONObject)], ids: inout [String: String]
    ) -> JSONObject {
        let memberNumbers = Dictionary(RTCStatsTables.members.map { ($0.value, String($0.key)) }, uniquingKeysWith: { a, _ in a })
        let typeNumbers = Dictionary(RTCStatsTables.types.map { ($0.value, JSONValue.number(Double($0.key))) }, uniquingKeysWith: { a, _ in a })
        let present = Set(new.map(\.id))
        let removed = base.keys.filter { ids[$0] != nil && !present.contains($0) }.sorted()
        var delta: [(id: String, report: JSONObject)] = []
        for (id, stats) in new {
            var report = stats
            report["id"] = nil
            if let old = base[id] {
                for name in report.keys {
                    guard let v = report[name] else { continue }
                    if case .object(var inner) = v, case .object(let oldInner)? = old[name] {
                        for k in inner.keys where inner[k] == oldInner[k] { inner[k] = nil }
                        report[name] = inner.isEmpty ? nil : .object(inner)
                    } else if v == old[name] {
                        report[name] = nil
                    }
                }
                if report.isEmpty { continue }
            }
            delta.append((id, report))
        }
        let newest = delta.compactMap { $0.report["timestamp"]?.doubleValue }.max()
        delta = delta.compactMap { entry in
            var r = entry.report
            if let newest, r["timestamp"]?.doubleValue == newest { r["timestamp"] = nil }
            if r["type"]?.stringValue == "certificate" || r.isEmpty { return nil }
            for obsolete in ["isRemote", "ip", "mediaType", "writable", "localCertificateId", "remoteCertificateId"] { r[obsolete] = nil }
            return (entry.id, r)
        }
        for (id, _) in delta where ids[id] == nil { ids[id] = String(ids.count) }
        var out = JSONObject()
        for (id, report) in delta {
            var compressed = JSONObject()
            for (name, value) in report.entries {
                var v = value
                if name.hasSuffix("Id"), let ref = value.stringValue { v = ids[ref].map { .string($0) } ?? .null }
                if name == "type", let t = value.stringValue, let n = typeNumbers[t] { v = n }
                compressed[name == "timestamp" ? "t" : (memberNumbers[name] ?? name)] = v
            }
            out[ids[id]!] = .object(compressed)
        }
        if let newest { out["t"] = .number(newest) }
        for id in removed { out[ids[id]!] = .null }
        return out
    }

    /// An rtcstats dump of an rtcstats-js 3 client: methods by number (`getStats` as "g"),
    /// table-compressed statistics, times as differences from the line before (file format 3).
    static func rtcstatsV3(_ rec: ChromiumRecording) -> String {
        let methodNumbers = Dictionary(RTCStatsImporter.methodCodes.map { ($0.value, $0.key) }, uniquingKeysWith: { a, _ in a })
        let traces = trace(rec)
        let start = rec.events.map(\.time).min()! - 500
        var lines: [(time: Int64, order: Int, method: JSONValue, pc: String, value: JSONValue)] = []
        for side in ["a", "b"] {
            let pc = rtcstatsIDs[side]!
            lines.append((start + (side == "a" ? 10 : 11), lines.count, .number(39), pc, ["iceServers": []]))
            for e in traces[side]! {
                let method = ["iceconnectionstatechange", "icegatheringstatechange"].contains(e.type) ? "on" + e.type : e.type
                lines.append((e.time, lines.count, methodNumbers[method].map { .number(Double($0)) } ?? .string(method), pc, e.value == "" ? .null : e.value))
            }
            var previous: [String: JSONObject] = [:]
            var ids: [String: String] = [:]
            for snap in rec.snapshots where snap.side == side {
                let report = snap.stats.compactMap { s -> (id: String, stats: JSONObject)? in
                    guard let o = s.objectValue, let id = o["id"]?.stringValue else { return nil }
                    return (id, o)
                }
                lines.append((snap.time, lines.count, "g", pc, .object(tableCompression(previous, report, ids: &ids))))
                previous = Dictionary(report.map { ($0.id, $0.stats) }, uniquingKeysWith: { $1 })
            }
        }
        let meta: JSONValue = [
            "path": "/room", "origin": "https://meet.example.test", "userAgent": .string(userAgent), "time": .number(Double(start)), "fileFormat": 3,
        ]
        var text = meta.serialized()
        var last = start
        for l in lines.sorted(by: { ($0.time, $0.order) < ($1.time, $1.order) }) {
            text += "\n" + JSONValue.array([l.method, .string(l.pc), l.value, .number(Double(l.time - last))]).serialized()
            last = l.time
        }
        return text
    }
}
