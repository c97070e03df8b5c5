import CallLog

/// What the agent needs from one call of a calling SDK: a way to fetch a statistics snapshot.
///
/// An adapter wraps the SDK's call object (see `KandyMobileCall`, `KandyAnonymousCall`). The
/// SDK's pushed information (additional-info events, hold/mute/video/reconnection changes, the
/// end of the call) goes through the `CallRecorder` that `CallStatsAgent.attach` returns, or
/// the one handed to `connect(_:)` when the adapter itself listens to the SDK's callbacks.
public protocol MonitoredCall: Sendable {
    /// Fetches one snapshot. Called on the agent's sampling queue; call `completion` exactly
    /// once, from any thread, now or later, with nil when the SDK has nothing (yet). A fetch
    /// still running at the next tick makes the agent skip that tick rather than pile up.
    func fetchStats(_ completion: @escaping @Sendable (StatsSnapshot?) -> Void)

    /// Called once, right after `attach`: an adapter that receives the SDK's delegate
    /// callbacks keeps `recorder` and forwards them. The default does nothing.
    func connect(_ recorder: CallRecorder)
}

extension MonitoredCall {
    public func connect(_ recorder: CallRecorder) {}
}

/// One statistics snapshot as the SDK gave it. Parsing a JSON string (the Kandy Mobile SDK's
/// `getRTPStatistics`) happens on the writer's thread, not the caller's: the app's thread
/// pays for a queue insertion only.
public struct StatsSnapshot: Sendable {
    enum Content: Sendable {
        case json(String)
        case report([JSONValue])
    }

    public let format: StatsFormat
    /// Which peer connection of the call, when it has several.
    public let peerConnection: String?
    let content: Content

    /// A W3C `getStats()` result as JSON text: an array of RTCStats objects, or an object
    /// keyed by id (both shapes occur; the log always holds the array).
    public static func w3c(json: String, peerConnection: String? = nil) -> StatsSnapshot {
        StatsSnapshot(format: .w3c, peerConnection: peerConnection, content: .json(json))
    }

    /// A report already in the log's shape: W3C RTCStats objects, or legacy
    /// `{id, type, timestamp, values}` objects for `.goog`.
    public static func report(_ report: [JSONValue], format: StatsFormat, peerConnection: String? = nil) -> StatsSnapshot {
        StatsSnapshot(format: format, peerConnection: peerConnection, content: .report(report))
    }

    /// What the snapshot costs in the queue, in bytes: exact for text, a close estimate of
    /// the JSON size for values (walking the tree is far cheaper than serialising it).
    var approximateBytes: Int {
        switch content {
        case .json(let s): s.utf8.count
        case .report(let r): r.reduce(2) { $0 + StatsSnapshot.estimate($1) + 1 }
        }
    }

    static func estimate(_ v: JSONValue) -> Int {
        switch v {
        case .null, .bool: 5
        case .number: 12
        case .string(let s): s.utf8.count + 2
        case .array(let a): a.reduce(2) { $0 + estimate($1) + 1 }
        case .object(let o): o.entries.reduce(2) { $0 + $1.key.utf8.count + 4 + estimate($1.value) }
        }
    }

    /// The report as the log stores it; nil when the text is not a report.
    func report() -> [JSONValue]? {
        switch content {
        case .report(let r):
            return r
        case .json(let text):
            guard let v = try? JSONValue.parse(text) else { return nil }
            switch v {
            case .array(let a):
                return a
            case .object(let o) where o["type"] != nil && o["id"] != nil:
                return [v]
            case .object(let o):
                // {id: {type, timestamp, …}}: the map form of an RTCStatsReport.
                var out = [JSONValue]()
                for e in o.entries {
                    guard case .object(var stat) = e.value else { return nil }
                    if stat["id"] == nil { stat.entries.insert((key: "id", value: .string(e.key)), at: 0) }
                    out.append(.object(stat))
                }
                return out
            default:
                return nil
            }
        }
    }
}

/// Who and what: written once per call as the `call` record.
public struct CallInfo: Sendable {
    public enum Direction: String, Sendable { case outgoing, incoming }

    public var direction: Direction
    /// The calling SDK and its version, e.g. `kandy-mobile` / `5.14.0`.
    public var sdk: String
    public var sdkVersion: String
    /// `wifi`, `cellular`, `ethernet` or `unknown`.
    public var network: String
    /// `["audio"]` or `["audio", "video"]`.
    public var media: [String]
    /// Free-form dimensions kept as-is (region, tenant, experiment, …).
    public var labels: [String: String]

    public init(
        direction: Direction, sdk: String, sdkVersion: String, network: String = "unknown",
        media: [String] = ["audio"], labels: [String: String] = [:]
    ) {
        self.direction = direction
        self.sdk = sdk
        self.sdkVersion = sdkVersion
        self.network = network
        self.media = media
        self.labels = labels
    }
}

/// An SDK event: "additional info" (`callMetric`, `iceTimeout`, `iceState`, `ipChange`) or a
/// call-state change. Names are spelled as the SDKs spell them (see `Data/FORMAT.md`).
public struct SDKEvent: Sendable, Equatable {
    public var action: String
    public var type: String
    /// The SDK's own time (epoch ms) when it gives one; otherwise the agent's clock is used.
    public var time: Int64?
    public var detail: JSONObject

    public init(action: String, type: String, time: Int64? = nil, detail: JSONObject = JSONObject()) {
        self.action = action
        self.type = type
        self.time = time
        self.detail = detail
    }

    public static func state(_ change: CallStateChange, time: Int64? = nil, detail: JSONObject = JSONObject()) -> SDKEvent {
        SDKEvent(action: EventName.callState, type: change.rawValue, time: time, detail: detail)
    }
}

/// Call-state changes the SDKs report or expose as properties.
public enum CallStateChange: String, Sendable, CaseIterable {
    case hold, unhold, remoteHold, remoteUnhold, mute, unmute, videoOn, videoOff
    case reconnecting, reconnected, connectionLost, networkUnavailable
}

/// How the call ended. Unknown parts stay nil and are left out of the log, never guessed.
public struct CallEnd: Sendable, Equatable {
    public enum Reason: String, Sendable, CaseIterable {
        case terminatedLocally, terminatedRemotely, rejected, timedOut, failed, undefined
    }

    public var reason: Reason
    /// The SDK's status (Kandy 9900/9901/9906, or a SIP code it forwards).
    public var statusCode: Int?
    public var statusText: String?
    /// SIP final status and `Reason` header value.
    public var sipStatus: Int?
    public var sipReason: String?
    /// The SDK's call duration.
    public var durationMs: Int64?

    public init(
        reason: Reason, statusCode: Int? = nil, statusText: String? = nil, sipStatus: Int? = nil,
        sipReason: String? = nil, durationMs: Int64? = nil
    ) {
        self.reason = reason
        self.statusCode = statusCode
        self.statusText = statusText
        self.sipStatus = sipStatus
        self.sipReason = sipReason
        self.durationMs = durationMs
    }
}

/// The app's (or adapter's) handle on one attached call: everything pushed about the call
/// goes through it. Cheap to copy, safe from any thread; after `end` it does nothing.
public struct CallRecorder: Sendable {
    public let callID: String
    let agent: CallStatsAgent

    public func event(_ event: SDKEvent) {
        agent.record(callID: callID, event: event)
    }

    public func state(_ change: CallStateChange, detail: JSONObject = JSONObject()) {
        agent.record(callID: callID, event: .state(change, detail: detail))
    }

    /// The SDK's own 0-100 score (100 perfect), e.g. Cisco's `onConnectionQualityChanged`.
    public func quality(_ score: Double, direction: String = "inbound", source: String) {
        agent.recordQuality(callID: callID, score: score, direction: direction, source: source)
    }

    /// Ends the call: one last statistics sample (waiting at most the configured time for
    /// the SDK), then the `end` record, then flush and fsync. Later calls are ignored.
    public func end(_ info: CallEnd) {
        agent.end(callID: callID, info: info)
    }
}
