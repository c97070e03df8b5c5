import CallLog

/// Cisco Remote Expert Mobile's quality and connection callbacks, forwarded to a recorder.
///
/// `onConnectionQualityChanged` fires with a 0-100 score (100 perfect) only when the value
/// changes, first about 5 s after remote media starts; it becomes a `quality` record.
/// Reconnection goes `onConnectionRetry(attempt, delayUntilNextRetry)` (0.5 s, 1 s, 2 s, 4 s …)
/// then `onConnectionReestablished` or, when retries are exhausted, `onConnectionLost`.
public struct CiscoConnectionEvents: Sendable {
    public let recorder: CallRecorder
    public static let source = "cisco-rem"

    public init(recorder: CallRecorder) { self.recorder = recorder }

    public func onConnectionQualityChanged(_ connectionQuality: Int) {
        recorder.quality(Double(min(100, max(0, connectionQuality))), direction: "inbound", source: Self.source)
    }

    /// - Parameter delayUntilNextRetry: seconds, as the SDK passes it.
    public func onConnectionRetry(attempt: Int, delayUntilNextRetry: Double) {
        recorder.state(
            .reconnecting,
            detail: [
                "attempt": .number(Double(attempt)),
                "delayMs": .number((delayUntilNextRetry * 1000).rounded()),
            ])
    }

    public func onConnectionReestablished() { recorder.state(.reconnected) }
    public func onConnectionLost() { recorder.state(.connectionLost) }
    public func onNetworkUnavailable() { recorder.state(.networkUnavailable) }
}
