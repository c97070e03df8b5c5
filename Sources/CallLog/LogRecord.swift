/// One line of a call log (format v1): `{"v":1,"kind":…,"call":…,"ts":…, …}`.
///
/// The four envelope fields are typed; everything else stays in `body` in its original order,
/// so a reader never drops a field it does not know. See `Data/FORMAT.md`.
public struct LogRecord: Equatable, Sendable {
    public static let formatVersion = 1

    public var kind: Kind
    /// The call identifier, chosen by the agent; a call may span many files.
    public var call: String
    /// When the agent recorded this, in epoch milliseconds.
    public var ts: Int64
    /// All other fields, in order.
    public var body: JSONObject

    public init(kind: Kind, call: String, ts: Int64, body: JSONObject = JSONObject()) {
        self.kind = kind
        self.call = call
        self.ts = ts
        self.body = body
    }

    public subscript(field: String) -> JSONValue? {
        get { body[field] }
        set { body[field] = newValue }
    }

    /// Record kinds. Unknown kinds are carried as `.other` and passed through.
    public enum Kind: Hashable, Sendable, CustomStringConvertible {
        case call, stats, event, quality, end
        /// Wire measurements written by `callstats capture` (see FORMAT.md).
        case rtpStream, rtcp, ice
        /// Written by an agent about itself: dropped records, rotation, clock notes.
        case agent
        case other(String)

        public init(_ raw: String) {
            switch raw {
            case "call": self = .call
            case "stats": self = .stats
            case "event": self = .event
            case "quality": self = .quality
            case "end": self = .end
            case "rtp": self = .rtpStream
            case "rtcp": self = .rtcp
            case "ice": self = .ice
            case "agent": self = .agent
            default: self = .other(raw)
            }
        }

        public var rawValue: String {
            switch self {
            case .call: "call"
            case .stats: "stats"
            case .event: "event"
            case .quality: "quality"
            case .end: "end"
            case .rtpStream: "rtp"
            case .rtcp: "rtcp"
            case .ice: "ice"
            case .agent: "agent"
            case .other(let s): s
            }
        }

        public var description: String { rawValue }
    }
}

// MARK: - JSON text

/// Why a line is not a usable v1 record.
public enum RecordError: Error, Equatable, CustomStringConvertible, Sendable {
    case invalidJSON(JSONParseError)
    case notAnObject
    case missingField(String)
    case wrongType(field: String, expected: String)
    case unsupportedVersion(Int64)

    public var description: String {
        switch self {
        case .invalidJSON(let e): "invalid JSON: \(e)"
        case .notAnObject: "not a JSON object"
        case .missingField(let f): "missing field \"\(f)\""
        case .wrongType(let f, let t): "field \"\(f)\" should be \(t)"
        case .unsupportedVersion(let v): "format version \(v) is newer than this reader (1)"
        }
    }

    /// A short stable label for counting skipped lines by cause.
    public var category: String {
        switch self {
        case .invalidJSON: "invalid JSON"
        case .notAnObject: "not an object"
        case .missingField(let f): "missing \(f)"
        case .wrongType(let f, _): "bad \(f)"
        case .unsupportedVersion: "newer format version"
        }
    }
}

extension LogRecord {
    /// Parses one NDJSON line. `ts` may be a number or a numeric string (some SDKs send
    /// `"time": "1455701052999"`); anything else is an error naming the field.
    public init(parsing line: UnsafeBufferPointer<UInt8>) throws(RecordError) {
        let value: JSONValue
        do { value = try JSONValue.parse(line) } catch { throw .invalidJSON(error) }
        try self.init(json: value)
    }

    public init(parsing line: String) throws(RecordError) {
        let bytes = Array(line.utf8)
        self = try bytes.withUnsafeBufferPointer { buf throws(RecordError) in try LogRecord(parsing: buf) }
    }

    public init(json: JSONValue) throws(RecordError) {
        guard case .object(var o) = json else { throw .notAnObject }
        if let v = o["v"] {
            guard let n = v.int64Value else { throw .wrongType(field: "v", expected: "an integer") }
            guard n <= Int64(LogRecord.formatVersion) else { throw .unsupportedVersion(n) }
        }
        guard let kindValue = o["kind"] else { throw .missingField("kind") }
        guard let kind = kindValue.stringValue, !kind.isEmpty else { throw .wrongType(field: "kind", expected: "a string") }
        guard let callValue = o["call"] else { throw .missingField("call") }
        guard let call = callValue.stringValue, !call.isEmpty else { throw .wrongType(field: "call", expected: "a non-empty string") }
        guard let tsValue = o["ts"] else { throw .missingField("ts") }
        let ts: Int64
        if let t = tsValue.doubleValue.flatMap(EpochMilliseconds.from) {
            ts = t
        } else if let s = tsValue.stringValue, let t = Int64(s), Double(t).magnitude < EpochMilliseconds.limit {
            // The same range as numbers: a string beyond it would overflow time arithmetic later.
            ts = t
        } else {
            throw .wrongType(field: "ts", expected: "epoch milliseconds")
        }
        o.entries.removeAll { ["v", "kind", "call", "ts"].contains($0.key) }
        self.init(kind: Kind(kind), call: call, ts: ts, body: o)
    }

    /// The record as one line of JSON, without the trailing newline.
    public func write(to out: inout [UInt8]) {
        out.append(contentsOf: "{\"v\":1,\"kind\":".utf8)
        JSONValue.writeString(kind.rawValue, to: &out)
        out.append(contentsOf: ",\"call\":".utf8)
        JSONValue.writeString(call, to: &out)
        out.append(contentsOf: ",\"ts\":".utf8)
        JSONValue.writeInteger(ts, to: &out)
        for e in body.entries {
            out.append(UInt8(ascii: ","))
            JSONValue.writeString(e.key, to: &out)
            out.append(UInt8(ascii: ":"))
            e.value.write(to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    public var jsonLine: String {
        var out = [UInt8]()
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
