import CallLog
import Foundation

/// The shared Chromium recording (one getStats() per second per side), read with the
/// project's own zstd reader. Its lines are not log format v1: see ../shared/data/README.md.
public struct ChromiumRecording {
    public struct Snapshot {
        public var side: String
        public var time: Int64
        public var stats: [JSONValue]
    }

    public var snapshots: [Snapshot] = []
    public var events: [(side: String, time: Int64, type: String)] = []
    public var callID = ""

    public init(url: URL) throws {
        let reader = LogLineReader(path: url.path)
        var problems: [LogIssue] = []
        try reader.forEachLine(
            { bytes, _ in
                let v = try JSONValue.parse(bytes)
                switch v["kind"]?.stringValue {
                case "stats":
                    snapshots.append(
                        Snapshot(
                            side: v["side"]!.stringValue!, time: v["time"]!.int64Value!,
                            stats: v["stats"]!.arrayValue!))
                    callID = v["call"]?.stringValue ?? callID
                case "event":
                    events.append((v["side"]!.stringValue!, v["time"]!.int64Value!, v["type"]!.stringValue!))
                default: break
                }
            }, issue: { problems.append($0) })
        if let p = problems.first { throw p }
    }
}
