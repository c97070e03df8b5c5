/// The AudioCodes WebRTC SDK's `TerminationInfo` and the call-session flags it exposes as
/// properties, turned into the log's `end` record and `callState` events.
public struct AudioCodesTermination: Sendable, Equatable {
    public enum Reason: String, Sendable {
        case undefined, terminatedLocally, terminatedRemotely, rejected, timedOut, failed
    }

    public var reason: Reason
    public var sipStatusCode: Int?
    public var sipStatusText: String?
    public var sipReasonHeaderValue: String?
    /// The SIP message itself. Never written: it carries user names and addresses.
    public var sipMessage: String?

    public init(
        reason: Reason, sipStatusCode: Int? = nil, sipStatusText: String? = nil,
        sipReasonHeaderValue: String? = nil, sipMessage: String? = nil
    ) {
        self.reason = reason
        self.sipStatusCode = sipStatusCode
        self.sipStatusText = sipStatusText
        self.sipReasonHeaderValue = sipReasonHeaderValue
        self.sipMessage = sipMessage
    }

    /// The `end` record: the SDK's reason as is, SIP status and Reason header; the SIP status
    /// text goes to `statusText`. `duration` is the session's `duration` in seconds.
    public func callEnd(duration: Double? = nil) -> CallEnd {
        CallEnd(
            reason: CallEnd.Reason(rawValue: reason.rawValue) ?? .undefined, statusText: sipStatusText,
            sipStatus: sipStatusCode, sipReason: sipReasonHeaderValue,
            durationMs: duration.map { Int64(($0 * 1000).rounded()) })
    }
}

/// The hold, mute and video flags of an AudioCodes call session (`isLocallyHeld`,
/// `isRemotelyHeld`, `isAudioMuted`, `isVideoMuted`). The SDK exposes them as properties
/// rather than events: compare the flags on each session callback and record the changes.
public struct AudioCodesSessionFlags: Sendable, Equatable {
    public var isLocallyHeld = false
    public var isRemotelyHeld = false
    public var isAudioMuted = false
    public var isVideoMuted = false

    public init(isLocallyHeld: Bool = false, isRemotelyHeld: Bool = false, isAudioMuted: Bool = false, isVideoMuted: Bool = false) {
        self.isLocallyHeld = isLocallyHeld
        self.isRemotelyHeld = isRemotelyHeld
        self.isAudioMuted = isAudioMuted
        self.isVideoMuted = isVideoMuted
    }

    /// The state changes from `old` to these flags, in a fixed order.
    public func changes(from old: AudioCodesSessionFlags) -> [CallStateChange] {
        var out = [CallStateChange]()
        if isLocallyHeld != old.isLocallyHeld { out.append(isLocallyHeld ? .hold : .unhold) }
        if isRemotelyHeld != old.isRemotelyHeld { out.append(isRemotelyHeld ? .remoteHold : .remoteUnhold) }
        if isAudioMuted != old.isAudioMuted { out.append(isAudioMuted ? .mute : .unmute) }
        if isVideoMuted != old.isVideoMuted { out.append(isVideoMuted ? .videoOff : .videoOn) }
        return out
    }
}
