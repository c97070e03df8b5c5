/// Constructors for the record kinds of format v1, so that every producer (collector,
/// simulator, importer, capture) spells fields the same way. `Data/FORMAT.md` is the reference.
extension LogRecord {
    /// `call`: who and what, once per call (again if something changes, e.g. the network).
    public static func callInfo(
        call: String, ts: Int64, direction: String, sdk: String, sdkVersion: String,
        app: String, appVersion: String, platform: String, network: String,
        media: [String], labels: JSONObject = JSONObject(), extra: JSONObject = JSONObject()
    ) -> LogRecord {
        var b: JSONObject = [
            "direction": .string(direction), "sdk": .string(sdk), "sdkVersion": .string(sdkVersion),
            "app": .string(app), "appVersion": .string(appVersion), "platform": .string(platform),
            "network": .string(network), "media": .array(media.map { .string($0) }),
        ]
        if !labels.isEmpty { b["labels"] = .object(labels) }
        b.entries.append(contentsOf: extra.entries)
        return LogRecord(kind: .call, call: call, ts: ts, body: b)
    }

    /// `stats` with a full report, carried unchanged.
    /// - Parameters:
    ///   - format: `w3c` (array of RTCStats) or `goog` (legacy `{id,type,timestamp,values}`).
    ///   - peerConnection: distinguishes several peer connections of one call.
    public static func stats(
        call: String, ts: Int64, format: StatsFormat, report: [JSONValue], peerConnection: String? = nil
    ) -> LogRecord {
        var b: JSONObject = ["format": .string(format.rawValue)]
        if let peerConnection { b["pc"] = .string(peerConnection) }
        b["report"] = .array(report)
        return LogRecord(kind: .stats, call: call, ts: ts, body: b)
    }

    /// `event`: an SDK "additional info" event (`callMetric`, `iceTimeout`, `iceState`,
    /// `ipChange`) or a call-state change (`callState`: hold, mute, video, reconnection).
    public static func event(
        call: String, ts: Int64, action: String, type: String, detail: JSONObject = JSONObject()
    ) -> LogRecord {
        var b: JSONObject = ["action": .string(action), "type": .string(type)]
        if !detail.isEmpty { b["detail"] = .object(detail) }
        return LogRecord(kind: .event, call: call, ts: ts, body: b)
    }

    /// `quality`: an SDK's own 0-100 score (100 is perfect).
    public static func quality(
        call: String, ts: Int64, score: Double, direction: String = "inbound", source: String
    ) -> LogRecord {
        LogRecord(
            kind: .quality, call: call, ts: ts,
            body: [
                "score": .number(score), "direction": .string(direction), "source": .string(source),
            ])
    }

    /// `end`: how the call ended. Unknown parts are left out rather than guessed.
    public static func end(
        call: String, ts: Int64, reason: String, statusCode: Int? = nil, statusText: String? = nil,
        sipStatus: Int? = nil, sipReason: String? = nil, durationMs: Int64? = nil
    ) -> LogRecord {
        var b: JSONObject = ["reason": .string(reason)]
        if let statusCode { b["statusCode"] = .number(Double(statusCode)) }
        if let statusText { b["statusText"] = .string(statusText) }
        if let sipStatus { b["sipStatus"] = .number(Double(sipStatus)) }
        if let sipReason { b["sipReason"] = .string(sipReason) }
        if let durationMs { b["durationMs"] = .number(Double(durationMs)) }
        return LogRecord(kind: .end, call: call, ts: ts, body: b)
    }
}

/// Which statistics dialect a `stats` record carries.
public enum StatsFormat: String, Sendable, CaseIterable {
    /// W3C `getStats()`: an array of RTCStats dictionaries.
    case w3c
    /// Legacy libwebrtc statistics: `{id, type, timestamp, values: {name: value}}`.
    case goog
}

/// The event actions and types that the SDKs name, plus call-state changes (`Data/FORMAT.md`, `event`).
public enum EventName {
    public static let callMetric = "callMetric"
    public static let iceTimeout = "iceTimeout"
    public static let iceState = "iceState"
    public static let ipChange = "ipChange"
    public static let callState = "callState"

    public static let callMetricTypes = ["callCreate", "incomingCall", "callRestSent", "callRinging", "callAnswerReceived"]
    public static let iceTimeoutTypes = ["iceNormal", "iceOneRelay", "iceNoRelay"]
    public static let iceStateTypes = ["iceConnected", "iceDisconnected"]
    public static let ipChangeTypes = ["ipChangeStarted", "ipChangeEnded"]
    public static let callStateTypes = [
        "hold", "unhold", "remoteHold", "remoteUnhold", "mute", "unmute", "videoOn", "videoOff",
        "reconnecting", "reconnected", "connectionLost",
    ]
}
