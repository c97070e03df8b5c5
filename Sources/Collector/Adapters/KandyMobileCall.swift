import CallLog

/// The Kandy/Ribbon Mobile SDK's call: `getRTPStatistics` hands a W3C `getStats()` report as
/// a JSON string to a completion block. The string is queued as it is and parsed on the
/// writer's thread.
///
/// ```swift
/// KandyMobileCall { done in call.getRTPStatistics { done($0) } }
/// ```
public struct KandyMobileCall: MonitoredCall {
    public typealias Fetch = @Sendable (_ completion: @escaping @Sendable (String?) -> Void) -> Void

    private let fetch: Fetch
    private let peerConnection: String?

    /// - Parameter getRTPStatistics: calls the SDK's `getRTPStatistics` and passes the string on.
    public init(peerConnection: String? = nil, getRTPStatistics: @escaping Fetch) {
        fetch = getRTPStatistics
        self.peerConnection = peerConnection
    }

    public func fetchStats(_ completion: @escaping @Sendable (StatsSnapshot?) -> Void) {
        let pc = peerConnection
        fetch { text in
            guard let text, !text.isEmpty else { return completion(nil) }
            completion(.w3c(json: text, peerConnection: pc))
        }
    }
}

/// The "additional info" map of `callAdditionalInfoChanged` (Kandy Mobile SDK):
/// `{"action": "callMetric", "type": "callRestSent", "callId": "…", "time": "1455701052999"}`.
public enum AdditionalInfo {
    /// The event and the call id it names; nil when `action` or `type` is missing. `time` may
    /// be a string (as the SDK sends it) or a number; other keys are kept as `detail`.
    public static func event(from map: [String: Any]) -> (callID: String?, event: SDKEvent)? {
        guard let action = map["action"] as? String, let type = map["type"] as? String, !action.isEmpty, !type.isEmpty else {
            return nil
        }
        var detail = JSONObject()
        for key in map.keys.sorted() where !["action", "type", "callId", "time"].contains(key) {
            if let v = json(map[key]!) { detail[key] = v }
        }
        return (map["callId"] as? String, SDKEvent(action: action, type: type, time: time(map["time"]), detail: detail))
    }

    static func time(_ v: Any?) -> Int64? {
        switch v {
        case let s as String: Int64(s) ?? Double(s).map { Int64($0.rounded()) }
        case let i as Int: Int64(i)
        case let i as Int64: i
        case let d as Double: d.isFinite ? Int64(d.rounded()) : nil
        default: nil
        }
    }

    static func json(_ v: Any) -> JSONValue? {
        switch v {
        case let s as String: .string(s)
        case let b as Bool: .bool(b)
        case let i as Int: .number(Double(i))
        case let d as Double: .number(d)
        default: nil
        }
    }
}
