import CallLog

/// Many calls made from one real recording, for benchmarks on real-shaped reports: every
/// object type, member and string a browser writes, in its order and spacing.
///
/// Copies of one call would not do: zstd finds each copy in the previous one and
/// decompresses them far faster than a real fleet's logs. So each call gets its own id, its
/// own start (up to a day later) and its own traffic: every counter and measurement is scaled
/// by a factor between 0.8 and 1.2, chosen per call by the seed (integers stay integers,
/// counters still only grow). Identifiers, payload types, clock rates, ports and frame sizes
/// keep their values.
public struct RecordingFleet {
    public var records: [LogRecord]
    public var seed: UInt64

    public init(records: [LogRecord], seed: UInt64 = 1) {
        self.records = records
        self.seed = seed
    }

    /// Members that name or configure something rather than measure it.
    static let unscaled: Set<String> = [
        "ssrc", "remoteSsrc", "rtxSsrc", "fecSsrc", "payloadType", "clockRate", "channels", "port", "relatedPort",
        "priority", "frameWidth", "frameHeight",
    ]

    /// The records of call `index`, under the id `callID`.
    public func call(_ index: Int, id callID: String) -> [LogRecord] {
        var rng = Xoshiro256(seed: seed, stream: UInt64(index))
        let scale = rng.uniform(0.8, 1.2)
        let offset = Double(rng.int(0...86_400_000))
        return records.map { record in
            var r = record
            r.call = callID
            r.ts += Int64(offset)
            if r.kind == .stats, let report = r.body["report"] {
                r.body["report"] = Self.vary(report, key: "report", scale: scale, offset: offset)
            }
            return r
        }
    }

    /// Timestamps (epoch milliseconds, named `timestamp` or `…Timestamp`) move by `offset`;
    /// other numbers are scaled, except the members in `unscaled`.
    static func vary(_ value: JSONValue, key: String, scale: Double, offset: Double) -> JSONValue {
        switch value {
        case .number(let v):
            if key == "timestamp" || key.hasSuffix("Timestamp") { return .number(v > 1e12 ? v + offset : v) }
            if unscaled.contains(key) { return value }
            return .number(v.rounded() == v ? (v * scale).rounded() : v * scale)
        case .array(let items):
            return .array(items.map { vary($0, key: key, scale: scale, offset: offset) })
        case .object(let object):
            return .object(JSONObject(object.entries.map { (key: $0.key, value: vary($0.value, key: $0.key, scale: scale, offset: offset)) }))
        default:
            return value
        }
    }
}
