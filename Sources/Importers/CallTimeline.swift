import CallLog

/// Turns a browser's RTCPeerConnection API trace (webrtc-internals' `updateLog`, rtcstats'
/// method lines) into the log's events, and keeps what the `call` and `end` records need.
///
/// Every trace entry becomes one event. The first of each setup step of the call (over all its
/// peer connections) takes the name `callstats analyze` reads the setup timeline from:
/// - outgoing (an offer made here): `callCreate` when the first offer is made, `callRestSent` when
///   the offer is set locally (the moment it can be sent), `callAnswerReceived` when the
///   remote answer is set;
/// - incoming (the remote offer set first): `incomingCall` when the remote offer is set,
///   `callCreate` (the accept) when the local answer is set;
/// - ICE connection states: `iceState` `iceConnected` (connected, completed) and
///   `iceDisconnected` (disconnected, failed), like the SDKs' additional info.
/// `callRinging` has no counterpart in a browser's trace and is never written.
/// Other entries keep their API name as `type` under the action `webrtc`; the peer connection
/// and the entry's value are in `detail`.
struct CallTimeline {
    let callID: String
    private(set) var direction: String?
    private(set) var firstTs: Int64?
    private(set) var lastTs: Int64?
    private var created = false, restSent = false, answered = false, incoming = false
    private(set) var connectedTs: Int64?
    private(set) var failedTs: Int64?
    private(set) var failure: String?
    private(set) var closedTs: Int64?
    private(set) var entries = 0

    init(callID: String) { self.callID = callID }

    mutating func see(_ ts: Int64) {
        firstTs = min(firstTs ?? ts, ts)
        lastTs = max(lastTs ?? ts, ts)
    }

    /// The event(s) for one trace entry of peer connection `pc`.
    mutating func events(pc: String, ts: Int64, api: String, value: JSONValue?) -> [LogRecord] {
        entries += 1
        see(ts)
        var detail: JSONObject = ["pc": .string(pc), "api": .string(api)]
        if let value, value != .null, value != .string("") { detail["value"] = value }
        func metric(_ type: String) -> LogRecord {
            .event(call: callID, ts: ts, action: EventName.callMetric, type: type, detail: detail)
        }
        // rtcstats writes event handlers' names (`oniceconnectionstatechange`), older Chrome
        // camel case (`iceConnectionStateChange`).
        let bare = api.hasPrefix("on") ? String(api.dropFirst(2)) : api
        let name = bare.lowercased().hasSuffix("statechange") || ["close", "stop"].contains(bare.lowercased()) ? bare.lowercased() : bare
        var out = [LogRecord]()
        if !created && direction == nil
            && (name == "createOffer" || (name == "setLocalDescription" && Self.descriptionType(value) == "offer"))
        {
            // An outgoing call starts when its first offer is made.
            created = true
            out.append(metric("callCreate"))
        }
        switch name {
        case "createOffer" where direction == nil:
            direction = "outgoing"
        case "setLocalDescription":
            let type = Self.descriptionType(value)
            if type == "offer" {
                if direction == nil { direction = "outgoing" }
                if direction == "outgoing" && !restSent {
                    restSent = true
                    return out + [metric("callRestSent")]
                }
            } else if type == "answer" && direction == "incoming" && !created {
                created = true
                return out + [metric("callCreate")]
            }
        case "setRemoteDescription":
            let type = Self.descriptionType(value)
            if type == "offer" && direction == nil {
                direction = "incoming"
                incoming = true
                return out + [metric("incomingCall")]
            }
            if type == "answer" && direction == "outgoing" && !answered {
                answered = true
                return out + [metric("callAnswerReceived")]
            }
        case "iceconnectionstatechange":
            let state = Self.state(value)
            var d = detail
            d["state"] = .string(state)
            switch state {
            case "connected", "completed":
                if connectedTs == nil { connectedTs = ts }
                return out + [.event(call: callID, ts: ts, action: EventName.iceState, type: "iceConnected", detail: d)]
            case "disconnected", "failed":
                if state == "failed" { noteFailure(ts, "ICE failed") }
                return out + [.event(call: callID, ts: ts, action: EventName.iceState, type: "iceDisconnected", detail: d)]
            case "closed":
                closedTs = closedTs ?? ts
                return out + [.event(call: callID, ts: ts, action: "iceConnectionState", type: state, detail: d)]
            default:
                return out + [.event(call: callID, ts: ts, action: "iceConnectionState", type: state, detail: d)]
            }
        case "connectionstatechange":
            let state = Self.state(value)
            if state == "failed" { noteFailure(ts, "connection failed") }
            if state == "closed" { closedTs = closedTs ?? ts }
            return out + [.event(call: callID, ts: ts, action: "connectionState", type: state, detail: detail)]
        case "icegatheringstatechange":
            return out + [.event(call: callID, ts: ts, action: "iceGathering", type: Self.state(value), detail: detail)]
        case "signalingstatechange":
            let state = Self.state(value)
            if state == "closed" { closedTs = closedTs ?? ts }
            return out + [.event(call: callID, ts: ts, action: "signalingState", type: state, detail: detail)]
        case "close", "stop":
            closedTs = closedTs ?? ts
        default:
            break
        }
        return out + [.event(call: callID, ts: ts, action: "webrtc", type: api, detail: detail)]
    }

    private mutating func noteFailure(_ ts: Int64, _ what: String) {
        if failedTs == nil {
            failedTs = ts
            failure = what
        }
    }

    /// The `end` record when the trace shows how the call ended (closed or failed); nil when
    /// the dump was taken before it ended. Who hung up is not in a browser's trace: a closed
    /// call ends `undefined` (never guessed), a failed one `failed`.
    func end(lastStatsTs: Int64?) -> LogRecord? {
        let at: Int64
        let reason: String
        let text: String
        if let f = failedTs, connectedTs == nil || closedTs == nil || f <= closedTs! {
            at = max(closedTs ?? f, f)
            reason = "failed"
            text = failure ?? "failed"
        } else if let c = closedTs {
            at = c
            reason = "undefined"
            text = "peer connection closed"
        } else {
            return nil
        }
        let last = max(at, lastStatsTs ?? at)
        return .end(
            call: callID, ts: last, reason: reason, statusText: text,
            durationMs: connectedTs.map { max(0, at - $0) })
    }

    /// `offer`, `answer`, `pranswer` or `rollback` of a description as the traces write it:
    /// an object `{type, sdp}`, its JSON text, or Chrome's older `type: offer, sdp: …` text.
    static func descriptionType(_ value: JSONValue?) -> String? {
        switch value {
        case .object(let o)?:
            return o["type"]?.stringValue
        case .string(let s)?:
            if s.hasPrefix("{"), let v = try? JSONValue.parse(s) { return v["type"]?.stringValue }
            if s.hasPrefix("type: ") {
                let rest = s.dropFirst(6)
                return String(rest.prefix { $0 != "," && $0 != " " })
            }
            return nil
        default:
            return nil
        }
    }

    /// A state as Chrome writes it: bare (`connected`) or JSON-encoded (`"connected"`, M142+);
    /// older versions wrote the enumerator's name (`ICEConnectionStateCompleted`,
    /// `kICEConnectionStateCompleted`, `SignalingStateHaveLocalOffer`), read as the W3C name
    /// (`completed`, `have-local-offer`) so a connection that reached `completed` is connected.
    static func state(_ value: JSONValue?) -> String {
        guard var s = value?.stringValue else { return "unknown" }
        if s.count >= 2 && s.hasPrefix("\"") && s.hasSuffix("\"") { s = String(s.dropFirst().dropLast()) }
        if s.isEmpty { return "unknown" }
        let bare = s.hasPrefix("k") && s.dropFirst().first?.isUppercase == true ? String(s.dropFirst()) : s
        for prefix in legacyStatePrefixes where bare.count > prefix.count && bare.lowercased().hasPrefix(prefix.lowercased()) {
            // `HaveLocalOffer` → `have-local-offer`.
            var out = ""
            for ch in bare.dropFirst(prefix.count) {
                if ch.isUppercase && !out.isEmpty { out.append("-") }
                out += ch.lowercased()
            }
            return out
        }
        return s
    }

    /// Prefixes of the state enumerators older Chrome traces wrote.
    static let legacyStatePrefixes = [
        "ICEConnectionState", "IceConnection", "ICEGatheringState", "IceGathering", "SignalingState",
        "PeerConnectionState",
    ]
}

/// The browser and its version from a user agent string, as the `call` record's `sdk` and
/// `sdkVersion` (`chrome` / `156.0.7444.59`), and the operating system as a label.
enum UserAgent {
    static func browser(_ ua: String) -> (name: String, version: String)? {
        for (token, name) in [
            ("Edg/", "edge"), ("OPR/", "opera"), ("Firefox/", "firefox"), ("Chrome/", "chrome"),
            ("Chromium/", "chromium"),
        ] {
            if let r = ua.firstRange(of: token) {
                let version = ua[r.upperBound...].prefix { $0.isNumber || $0 == "." }
                if !version.isEmpty { return (name, String(version)) }
            }
        }
        if ua.contains("Safari/"), let r = ua.firstRange(of: "Version/") {
            let version = ua[r.upperBound...].prefix { $0.isNumber || $0 == "." }
            if !version.isEmpty { return ("safari", String(version)) }
        }
        return nil
    }

    static func os(_ ua: String) -> String? {
        for (token, name) in [
            ("Android", "android"), ("iPhone", "ios"), ("iPad", "ios"), ("CrOS", "chromeos"),
            ("Windows", "windows"), ("Mac OS X", "macos"), ("Macintosh", "macos"), ("Linux", "linux"),
        ] where ua.contains(token) {
            return name
        }
        return nil
    }
}

/// Dates as dumps write them: epoch milliseconds, ISO 8601 (`2026-11-28T20:02:19.123Z`, what
/// `JSON.stringify` makes of a `Date`), or a browser's `toLocaleString()` in the page's time
/// zone (webrtc-internals' `updateLog` before it kept numbers): those are read as if UTC and
/// `localClock` says so.
enum DumpTime {
    /// Epoch ms for a numeric or ISO 8601 value.
    static func epochMs(_ v: JSONValue?) -> Double? {
        switch v {
        case .number(let d)?: return d
        case .string(let s)?:
            if let d = Double(s) { return d }
            return iso8601(s)
        default: return nil
        }
    }

    static func iso8601(_ s: String) -> Double? {
        // YYYY-MM-DDTHH:MM:SS[.fff][Z|±HH:MM]
        let u = Array(s.utf8)
        func num(_ a: Int, _ n: Int) -> Int? {
            guard a + n <= u.count else { return nil }
            var v = 0
            for i in a..<(a + n) {
                guard u[i] >= 0x30 && u[i] <= 0x39 else { return nil }
                v = v * 10 + Int(u[i] - 0x30)
            }
            return v
        }
        guard u.count >= 19, u[4] == 0x2D, u[7] == 0x2D, u[10] == 0x54 || u[10] == 0x20, u[13] == 0x3A, u[16] == 0x3A,
            let y = num(0, 4), let mo = num(5, 2), let d = num(8, 2), let h = num(11, 2), let mi = num(14, 2), let sec = num(17, 2)
        else { return nil }
        var ms = 0.0
        var i = 19
        if i < u.count && u[i] == 0x2E {
            i += 1
            var scale = 100.0
            while i < u.count && u[i] >= 0x30 && u[i] <= 0x39 {
                ms += Double(u[i] - 0x30) * scale
                scale /= 10
                i += 1
            }
        }
        var offsetMinutes = 0
        if i < u.count {
            if u[i] == 0x5A {
                i += 1
            } else if u[i] == 0x2B || u[i] == 0x2D, let oh = num(i + 1, 2) {
                let om = (i + 3 < u.count && u[i + 3] == 0x3A ? num(i + 4, 2) : num(i + 3, 2)) ?? 0
                offsetMinutes = (u[i] == 0x2D ? -1 : 1) * (oh * 60 + om)
            } else {
                return nil
            }
        }
        let days = daysFromCivil(y, mo, d)
        return (Double(days) * 86_400 + Double(h * 3600 + mi * 60 + sec - offsetMinutes * 60)) * 1000 + ms
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(_ y0: Int, _ m: Int, _ d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// A `toLocaleString()` text read as UTC (`11/28/2026, 8:02:19 PM`, `28.11.2026, 20:02:19`,
    /// `28/11/2026, 20:02:19`, `2026-11-28 20:02:19`). `dayFirst` settles `a/b/yyyy`.
    static func localeString(_ s: String, dayFirst: Bool) -> Double? {
        if let iso = iso8601(s) { return iso }
        var numbers: [Int] = []
        var current: Int?
        for ch in s.unicodeScalars {
            if let d = Int(String(ch)), ch.isASCII {
                current = (current ?? 0) * 10 + d
            } else if let c = current {
                numbers.append(c)
                current = nil
            }
        }
        if let c = current { numbers.append(c) }
        guard numbers.count >= 6 else { return nil }
        let upper = s.uppercased()
        let pm = upper.contains("PM"), am = upper.contains("AM")
        let (a, b, c) = (numbers[0], numbers[1], numbers[2])
        var (y, mo, d): (Int, Int, Int)
        if a > 31 {
            (y, mo, d) = (a, b, c)
        }  // year first
        else if s.contains(".") || dayFirst || a > 12 {
            (d, mo, y) = (a, b, c)
        } else {
            (mo, d, y) = (a, b, c)
        }
        if y < 100 { y += 2000 }
        var h = numbers[3]
        if pm && h < 12 { h += 12 }
        if am && h == 12 { h = 0 }
        guard (1...12).contains(mo), (1...31).contains(d), h < 24, numbers[4] < 60, numbers[5] < 61 else { return nil }
        return Double(daysFromCivil(y, mo, d) * 86_400 + h * 3600 + numbers[4] * 60 + numbers[5]) * 1000
    }
}
