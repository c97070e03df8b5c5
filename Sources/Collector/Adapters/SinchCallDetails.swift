import CallLog
import Foundation

/// The Sinch SDK's call details (iOS `SINCallDetails`, Android `CallDetails`), which is all
/// that SDK shows the app about a call's quality and setup: its statistics are uploaded to
/// Sinch's servers (seed excerpts §5), never handed to the app. So a Sinch call in the log has
/// a `call` record, its setup events and its `end` — no `stats` records, and therefore no
/// loss, jitter, round-trip time, MOS or video figures.
///
/// The app copies the SDK's details into this value (times as epoch milliseconds:
/// `Int64(date.timeIntervalSince1970 * 1000)` on iOS; Android gives `long` seconds or
/// milliseconds depending on the SDK version, `SinchCallDetails.epochMs(seconds:)` converts).
///
/// Setup events (spelled as the other SDKs', so the setup columns line up):
/// - outgoing: `callCreate` at `startedTime`, `callRinging` at `progressedTime` (the callee's
///   device is alerted: Sinch's "progressing"), `callAnswerReceived` at `establishedTime`;
/// - incoming: `incomingCall` at `startedTime`, `callCreate` (the accept) at `establishedTime`.
/// Sinch shows neither when its call request left (`callRestSent`) nor when media started
/// (`iceConnected`): those columns stay empty for Sinch calls, never estimated.
public struct SinchCallDetails: Sendable, Equatable {
    public enum Direction: String, Sendable { case incoming, outgoing }

    /// `SINCallEndCause` / `CallEndCause`, with the SDK's numbers.
    public enum EndCause: Int, Sendable, CaseIterable {
        case none = 0, timeout = 1, denied = 2, noAnswer = 3, failure = 4, hungUp = 5, canceled = 6
        case otherDeviceAnswered = 7, inactive = 8, transferred = 9

        /// The SDK's name for it (`statusText` when there is no error message).
        public var name: String {
            switch self {
            case .none: "NONE"
            case .timeout: "TIMEOUT"
            case .denied: "DENIED"
            case .noAnswer: "NO_ANSWER"
            case .failure: "FAILURE"
            case .hungUp: "HUNG_UP"
            case .canceled: "CANCELED"
            case .otherDeviceAnswered: "OTHER_DEVICE_ANSWERED"
            case .inactive: "INACTIVE"
            case .transferred: "TRANSFERRED"
            }
        }
    }

    /// The SDK's error for a failed call (`SinchError` / `NSError`): its code and message.
    public struct CallError: Sendable, Equatable {
        public var code: Int?
        public var message: String
        public init(code: Int? = nil, message: String) {
            self.code = code
            self.message = message
        }
    }

    public var direction: Direction
    public var startedTime: Int64
    public var progressedTime: Int64?
    public var establishedTime: Int64?
    public var endedTime: Int64?
    public var endCause: EndCause
    public var error: CallError?
    public var isVideoOffered: Bool

    public init(
        direction: Direction, startedTime: Int64, progressedTime: Int64? = nil, establishedTime: Int64? = nil,
        endedTime: Int64? = nil, endCause: EndCause = .none, error: CallError? = nil, isVideoOffered: Bool = false
    ) {
        self.direction = direction
        self.startedTime = startedTime
        self.progressedTime = progressedTime
        self.establishedTime = establishedTime
        self.endedTime = endedTime
        self.endCause = endCause
        self.error = error
        self.isVideoOffered = isVideoOffered
    }

    /// Seconds since the epoch (as Android's older `CallDetails` gives them) as milliseconds.
    public static func epochMs(seconds: Double) -> Int64 { Int64((seconds * 1000).rounded()) }

    /// The `call` record's content: direction, `sinch` and its version, the media offered.
    public func callInfo(sdkVersion: String, network: String = "unknown", labels: [String: String] = [:]) -> CallInfo {
        CallInfo(
            direction: direction == .outgoing ? .outgoing : .incoming, sdk: "sinch", sdkVersion: sdkVersion,
            network: network, media: isVideoOffered ? ["audio", "video"] : ["audio"], labels: labels)
    }

    /// The setup events these details show so far, in time order (see the type's comment).
    public var setupEvents: [SDKEvent] {
        func metric(_ type: String, _ t: Int64) -> SDKEvent { SDKEvent(action: EventName.callMetric, type: type, time: t) }
        var out: [SDKEvent] = []
        switch direction {
        case .outgoing:
            out.append(metric("callCreate", startedTime))
            if let p = progressedTime { out.append(metric("callRinging", p)) }
            if let e = establishedTime { out.append(metric("callAnswerReceived", e)) }
        case .incoming:
            out.append(metric("incomingCall", startedTime))
            if let e = establishedTime { out.append(metric("callCreate", e)) }
        }
        return out
    }

    /// The `end` record. Sinch's `HUNG_UP` does not say which side hung up: the app does
    /// (`hungUpLocally`: it called `hangup()` itself); unknown, the reason is `undefined`.
    /// The duration is the SDK's: from establishment to the end, for established calls.
    public func callEnd(hungUpLocally: Bool? = nil) -> CallEnd {
        let reason: CallEnd.Reason
        switch endCause {
        case .none: reason = .undefined
        case .timeout, .noAnswer: reason = .timedOut
        case .denied: reason = .rejected
        case .failure, .inactive: reason = .failed
        case .hungUp: reason = hungUpLocally.map { $0 ? .terminatedLocally : .terminatedRemotely } ?? .undefined
        // The caller cancels before an answer: here for an outgoing call, the other side for an incoming one.
        case .canceled: reason = direction == .outgoing ? .terminatedLocally : .terminatedRemotely
        case .otherDeviceAnswered, .transferred: reason = .terminatedRemotely
        }
        var duration: Int64?
        if let e = establishedTime, let end = endedTime, end >= e { duration = end - e }
        return CallEnd(
            reason: reason, statusCode: error?.code ?? endCause.rawValue,
            statusText: error.map { "\(endCause.name): \($0.message)" } ?? endCause.name, durationMs: duration)
    }
}

/// Forwards a Sinch call's delegate callbacks (`callDidProgress`, `callDidEstablish`,
/// `callDidEnd` on iOS; `onCallProgressing`, `onCallEstablished`, `onCallEnded` on Android)
/// to a recorder, each setup event once, whichever callback first shows it.
///
/// ```swift
/// let sinch = SinchCallEvents(recorder: agent.attach(callID: call.callId, info: details.callInfo(sdkVersion: "5.12.0")))
/// func callDidProgress(_ call: SINCall) { sinch.update(SinchCallDetails(call.details)) }
/// func callDidEnd(_ call: SINCall) { sinch.end(SinchCallDetails(call.details), hungUpLocally: iHungUp) }
/// ```
public final class SinchCallEvents: Sendable {
    public let recorder: CallRecorder
    /// The setup events recorded, and whether the end was.
    private let state = Locked((recorded: Set<String>(), ended: false))

    public init(recorder: CallRecorder) { self.recorder = recorder }

    /// Records the setup events the details show that were not recorded yet.
    public func update(_ details: SinchCallDetails) {
        for event in details.setupEvents {
            let isNew = state.withLock { !$0.ended && $0.recorded.insert(event.type).inserted }
            if isNew { recorder.event(event) }
        }
    }

    /// Records what is left of the setup, then the end. Later calls do nothing.
    public func end(_ details: SinchCallDetails, hungUpLocally: Bool? = nil) {
        update(details)
        let first = state.withLock { s -> Bool in
            defer { s.ended = true }
            return !s.ended
        }
        if first { recorder.end(details.callEnd(hungUpLocally: hungUpLocally)) }
    }
}
