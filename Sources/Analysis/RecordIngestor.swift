import CallLog

/// Reads the lines of one log file into per-call material.
///
/// Statistics records take the fast path (`StatsScanner`: only the needed fields, deltas
/// applied to compact state); the few other records go through the complete parser.
public struct RecordIngestor {
    private var scanner = StatsScanner()
    /// Calls seen in this file and not yet handed on.
    public private(set) var open: [String: CallMaterial] = [:]
    private var lastRTT: [String: Double] = [:]

    public init() {}

    public enum Outcome {
        /// The record was used; `ended` when it was the call's `end` record.
        case used(call: String, ended: Bool)
        /// A record about the agent itself (`agent`: drop counts, rotation): read, but part of no call.
        case agentNote
        case skipped(category: LogIssue.Category, message: String)
    }

    private static let statsPrefix = Array(#"{"v":1,"kind":"stats","#.utf8)

    public mutating func ingest(_ line: UnsafeBufferPointer<UInt8>) -> Outcome {
        if line.count > RecordIngestor.statsPrefix.count,
           line.prefix(RecordIngestor.statsPrefix.count).elementsEqual(RecordIngestor.statsPrefix) {
            return ingestStats(line)
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
            guard let snapshot = Readings.wire(record, lastRTTMs: lastRTT[record.call]) else {
                return .skipped(category: .invalidRecord, message: "rtp record without ssrc")
            }
            open[record.call, default: CallMaterial(callID: record.call)].add(snapshot)
        case .rtcp:
            // Round-trip times measured from RTCP at the capture point; negative ones are clock noise.
            if case .array(let reports)? = record["reports"] {
                for r in reports {
                    if let rtt = r["roundTripTimeMs"]?.doubleValue, rtt > 0, rtt < 60_000 { lastRTT[record.call] = rtt }
                }
            }
            open[record.call, default: CallMaterial(callID: record.call)].touch(record.ts)
        default:
            open[record.call, default: CallMaterial(callID: record.call)].add(record)
        }
        if record.kind == .end { scanner.forget(call: record.call) }
        return .used(call: record.call, ended: record.kind == .end)
    }

    private mutating func ingestStats(_ line: UnsafeBufferPointer<UInt8>) -> Outcome {
        do throws(StatsScanError) {
            let (key, ts, state) = try scanner.scan(line)
            guard !key.call.isEmpty else { return .skipped(category: .invalidRecord, message: "missing field \"call\"") }
            open[key.call, default: CallMaterial(callID: key.call)].add(Readings.snapshot(state, key: key, ts: ts))
            return .used(call: key.call, ended: false)
        } catch {
            switch error {
            case .malformed(let e): return .skipped(category: .invalidRecord, message: "invalid JSON: \(e)")
            case .missingTimestamp: return .skipped(category: .invalidRecord, message: RecordError.missingField("ts").description)
            case .missingBase(let expected, let have):
                return .skipped(category: .missingDeltaBase, message: StatsDeltaError.missingBase(expected: expected, have: have).description)
            }
        }
    }

    /// Removes and returns a call's material (when it ended, or at the end of the file).
    public mutating func take(_ call: String) -> CallMaterial? {
        lastRTT[call] = nil
        return open.removeValue(forKey: call)
    }

    public mutating func takeAll() -> [CallMaterial] {
        defer { open.removeAll(); lastRTT.removeAll() }
        return open.keys.sorted().compactMap { open[$0] }
    }
}
