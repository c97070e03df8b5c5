/// A timeline entry: SDK events, call-state changes, quality callbacks, the end.
public struct CallEvent: Sendable, Equatable {
    public var callID: String
    public var ts: Int64
    /// The record kind: event, quality, end.
    public var kind: String
    public var action: String
    public var type: String
    /// Remaining fields as compact JSON text.
    public var detailJSON: String

    public init(callID: String, ts: Int64, kind: String, action: String, type: String, detailJSON: String = "{}") {
        self.callID = callID
        self.ts = ts
        self.kind = kind
        self.action = action
        self.type = type
        self.detailJSON = detailJSON
    }
}
