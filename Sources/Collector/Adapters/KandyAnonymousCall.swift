import CallLog

/// One `SMCallStatistic` of the Kandy/Ribbon Anonymous Call SDK: `id`, `type`, `timestamp`
/// and `values`, a list of name/value pairs (strings, as the SDK gives them).
public struct LegacyStatistic: Sendable, Equatable {
    public var id: String
    public var type: String
    public var timestamp: Double
    public var values: [(name: String, value: String)]

    public init(id: String, type: String, timestamp: Double, values: [(name: String, value: String)]) {
        self.id = id
        self.type = type
        self.timestamp = timestamp
        self.values = values
    }

    public static func == (a: LegacyStatistic, b: LegacyStatistic) -> Bool {
        a.id == b.id && a.type == b.type && a.timestamp == b.timestamp
            && a.values.count == b.values.count && zip(a.values, b.values).allSatisfy { $0 == $1 }
    }

    /// The log's `goog` object: `{id, type, timestamp, values: {name: value}}`, values in order.
    public var json: JSONValue {
        var values = JSONObject()
        values.entries.reserveCapacity(self.values.count)
        for v in self.values where values[v.name] == nil { values.entries.append((key: v.name, value: .string(v.value))) }
        return ["id": .string(id), "type": .string(type), "timestamp": .number(timestamp), "values": .object(values)]
    }
}

/// The Anonymous Call SDK's call: `getRTPStatistics` gives an array of `SMCallStatistic`.
/// The adapter copies them into `LegacyStatistic` values (the SDK's objects must not be kept).
///
/// ```swift
/// KandyAnonymousCall { done in
///     done(call.getRTPStatistics().map { s in
///         LegacyStatistic(id: s.id, type: s.type, timestamp: s.timestamp,
///                         values: s.values.map { ($0.name, $0.value) }) })
/// }
/// ```
public struct KandyAnonymousCall: MonitoredCall {
    public typealias Fetch = @Sendable (_ completion: @escaping @Sendable ([LegacyStatistic]?) -> Void) -> Void

    private let fetch: Fetch
    private let peerConnection: String?

    public init(peerConnection: String? = nil, getRTPStatistics: @escaping Fetch) {
        fetch = getRTPStatistics
        self.peerConnection = peerConnection
    }

    public func fetchStats(_ completion: @escaping @Sendable (StatsSnapshot?) -> Void) {
        let pc = peerConnection
        fetch { stats in
            guard let stats, !stats.isEmpty else { return completion(nil) }
            completion(.report(stats.map(\.json), format: .goog, peerConnection: pc))
        }
    }
}

/// The Kandy SDKs' end status (`SMCallState.statusCode` / `reason`) as a `CallEnd`.
public enum KandyEndStatus {
    /// 9900 (remote party or not provided), 9901 (local user), 9906 (error), or a SIP status
    /// the SDK forwards (also kept as `sipStatus`). The status code may come as text.
    public static func end(statusCode: Int, reason: String?, durationMs: Int64? = nil) -> CallEnd {
        let sip = (300...699).contains(statusCode) ? statusCode : nil
        return CallEnd(reason: endReason(statusCode), statusCode: statusCode, statusText: reason, sipStatus: sip, durationMs: durationMs)
    }

    public static func end(statusCode: String, reason: String?, durationMs: Int64? = nil) -> CallEnd {
        guard let code = Int(statusCode.trimmingCharacters(in: " ")) else {
            return CallEnd(reason: .undefined, statusText: reason, durationMs: durationMs)
        }
        return end(statusCode: code, reason: reason, durationMs: durationMs)
    }

    static func endReason(_ code: Int) -> CallEnd.Reason {
        switch code {
        case 9900: .terminatedRemotely
        case 9901: .terminatedLocally
        case 9906: .failed
        case 486, 600, 603: .rejected
        case 408, 480: .timedOut
        case 400...699: .failed
        default: .undefined
        }
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        var s = Substring(self)
        while s.first == set { s = s.dropFirst() }
        while s.last == set { s = s.dropLast() }
        return String(s)
    }
}
