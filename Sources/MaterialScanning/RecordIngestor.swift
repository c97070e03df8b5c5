import CallLog

/// Reads the lines of one log file into per-call material.
///
/// Statistics records take the fast path (`StatsScanner`: only the needed fields, deltas
/// applied to compact state), and so do plain events (`PlainEvent`); the few other records go
/// through the complete parser.
public struct RecordIngestor {
    private var scanner = StatsScanner()
    /// Calls seen in this file and not yet handed on.
    public private(set) var open: [String: CallMaterial] = [:]
    /// Every call this ingestor has seen a record of (counted as its material is first made,
    /// not looked up again for each record).
    public private(set) var callsSeen = Set<String>()
    private var lastRTT: [String: Double] = [:]
    /// Per call and reported SSRC, the latest RTCP XR VoIP metrics block: the next `rtp` record of
    /// that stream carries it (RTCP records are written as they arrive, a stream's records at its
    /// interval's end, so a report precedes the record of the interval it came in).
    private var lastVoIP: [String: [UInt32: JSONValue]] = [:]
    private var names = StreamNames()

    public init() {}

    public enum Outcome {
        /// The record was used; `ended` when it was the call's `end` record.
        case used(call: String, ended: Bool)
        /// A record about the agent itself (`agent`: drop counts, rotation): read, but part of no call.
        case agentNote
        case skipped(category: LogIssue.Category, message: String)
    }

    /// The raw `call` member of a record, read without parsing the rest (writers put it before
    /// the report), or nil when the line has none or is not an object. Readers sharing a file
    /// deal its lines out by it (`Ingest/SharedLines`).
    public static func callID(_ line: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
        var c = JSONCursor(line)
        var found: UnsafeBufferPointer<UInt8>?
        // Stops at the first error, including the one thrown on purpose once `call` is found.
        try? c.object { cur, key throws(JSONCursor.ScanError) in
            if JSONCursor.equals(key, "call"), try cur.peek() == 0x22 {
                found = try cur.rawString()
                throw cur.fail("found")
            }
            try cur.skipValue()
        }
        return found
    }

    private static let statsPrefix = Array(#"{"v":1,"kind":"stats","#.utf8)

    public mutating func ingest(_ line: UnsafeBufferPointer<UInt8>) -> Outcome {
        if line.count > RecordIngestor.statsPrefix.count,
            line.prefix(RecordIngestor.statsPrefix.count).elementsEqual(RecordIngestor.statsPrefix)
        {
            return ingestStats(line)
        }
        if line.count > PlainEvent.prefix.count, line.prefix(PlainEvent.prefix.count).elementsEqual(PlainEvent.prefix),
            let event = PlainEvent(line)
        {
            addToMaterial(of: event.call) { $0.add(event) }
            return .used(call: event.call, ended: false)
        }
        if line.count > PlainQuality.prefix.count, line.prefix(PlainQuality.prefix.count).elementsEqual(PlainQuality.prefix),
            let quality = PlainQuality(line)
        {
            addToMaterial(of: quality.call) { $0.add(quality) }
            return .used(call: quality.call, ended: false)
        }
        let record: LogRecord
        do throws(RecordError) { record = try LogRecord(parsing: line) } catch {
            return .skipped(category: .invalidRecord, message: error.description)
        }
        switch record.kind {
        case .agent:
            return .agentNote
        case .stats:
            return ingestStats(line)  // a writer with another key order: the scanner copes
        case .rtpStream:
            let ssrc = record["ssrc"]?.doubleValue.flatMap(UInt32.init(ssrc:))
            let voip = ssrc.flatMap { lastVoIP[record.call]?[$0] }
            guard let snapshot = Readings.wire(record, lastRTTMs: lastRTT[record.call], voipMetrics: voip) else {
                return .skipped(category: .invalidRecord, message: "rtp record without ssrc")
            }
            addToMaterial(of: record.call) { $0.add(snapshot) }
        case .rtcp:
            // Round-trip times measured from RTCP at the capture point; negative ones are clock noise.
            if case .array(let reports)? = record["reports"] {
                for r in reports {
                    if let rtt = r["roundTripTimeMs"]?.doubleValue, rtt > 0, rtt < 60_000 { lastRTT[record.call] = rtt }
                }
            }
            // XR round trips (RRTR/DLRR, RFC 3611) are the same measure from the other side's reports.
            if case .array(let replies)? = record["dlrr"] {
                for r in replies {
                    if let rtt = r["roundTripTimeMs"]?.doubleValue, rtt > 0, rtt < 60_000 { lastRTT[record.call] = rtt }
                }
            }
            if let voip = record["voipMetrics"], let ssrc = voip["ssrc"]?.doubleValue.flatMap(UInt32.init(ssrc:)) {
                lastVoIP[record.call, default: [:]][ssrc] = voip
            }
            addToMaterial(of: record.call) { $0.touch(record.ts) }
        case .ice:
            if let snapshot = Readings.wireICE(record) {
                addToMaterial(of: record.call) { $0.add(snapshot) }
            } else {
                addToMaterial(of: record.call) { $0.touch(record.ts) }
            }
        default:
            addToMaterial(of: record.call) { $0.add(record) }
        }
        if record.kind == .end { scanner.forget(call: record.call) }
        return .used(call: record.call, ended: record.kind == .end)
    }

    private mutating func ingestStats(_ line: UnsafeBufferPointer<UInt8>) -> Outcome {
        do throws(StatsScanError) {
            let scanned = try scanner.scan(line)
            let call = scanned.key.call
            guard !call.isEmpty else { return .skipped(category: .invalidRecord, message: "missing field \"call\"") }
            let snapshot = scanner.snapshot(chain: scanned.chain, key: scanned.key, ts: scanned.ts, names: &names)
            add(snapshot, to: call)
            return .used(call: call, ended: false)
        } catch {
            switch error {
            case .malformed(let e): return .skipped(category: .invalidRecord, message: "invalid JSON: \(e)")
            case .missingTimestamp: return .skipped(category: .invalidRecord, message: RecordError.missingField("ts").description)
            case .lineTooLong(let bytes): return .skipped(category: .lineTooLong, message: "\(bytes) bytes (limit 1 GiB); skipped")
            case .missingBase(let expected, let have):
                return .skipped(category: .missingDeltaBase, message: StatsDeltaError.missingBase(expected: expected, have: have).description)
            }
        }
    }

    /// Adds a snapshot to `call`'s material, moved in: through `addToMaterial`'s closure, which
    /// captured it, it was copied and the original destroyed (every stream reading's Strings
    /// retained and released once more per snapshot, 0.1-0.2 % of the instructions).
    private mutating func add(_ snapshot: consuming Snapshot, to call: String) {
        open.values[materialIndex(of: call)].add(snapshot)
    }

    /// Changes `call`'s material.
    @inline(__always)
    private mutating func addToMaterial(of call: String, _ change: (inout CallMaterial) -> Void) {
        change(&open.values[materialIndex(of: call)])
    }

    /// Where `call`'s material is, made (and the call counted) when the call is new here.
    @inline(__always)
    private mutating func materialIndex(of call: String) -> [String: CallMaterial].Index {
        if let i = open.index(forKey: call) { return i }
        callsSeen.insert(call)
        open[call] = CallMaterial(callID: call)
        return open.index(forKey: call)!  // a second lookup once per call
    }

    /// Removes and returns a call's material (when it ended, or at the end of the file).
    public mutating func take(_ call: String) -> CallMaterial? {
        lastRTT[call] = nil
        lastVoIP[call] = nil
        return open.removeValue(forKey: call)
    }

    public mutating func takeAll() -> [CallMaterial] {
        defer { open.removeAll(); lastRTT.removeAll(); lastVoIP.removeAll() }
        return open.keys.sorted().compactMap { open[$0] }
    }
}
