import CallLog

/// Reads the lines of one log file into per-call material.
///
/// Statistics records take the fast path (`StatsScanner`: only the needed fields, deltas
/// applied to compact state), and so do plain events (`PlainEvent`); the few other records go
/// through the complete parser.
public struct RecordIngestor {
    /// What one file can make a reader hold is bounded, so that no log, however made, takes
    /// memory without end (each bound is far above what agents write: a day-long call at one
    /// snapshot a second is 86,400 records; `BoundsTests` reads each attack):
    /// - a call id or peer-connection name of more than `maximumIDBytes` (16 KiB) skips its record;
    /// - past `maximumRecordsPerCall` records of one call in one file, the call's further
    ///   statistics, events and quality callbacks there are skipped (its first end record is
    ///   still taken); about 90 MB of material at the bound (a million took 920 MB);
    /// - past `maximumOpenCalls` calls open at once (or `maximumOpenIDBytes` of their ids), the
    ///   reader hands the open calls on
    ///   (`takeOpen`) and they are merged with their later records, as calls split over files are.
    public struct Bounds: Sendable {
        public var maximumIDBytes = 16 << 10
        public var maximumRecordsPerCall = 100_000
        public var maximumOpenCalls = 100_000
        /// The open calls' ids together: long ids (up to `maximumIDBytes`) hand calls on sooner.
        public var maximumOpenIDBytes = 64 << 20
        /// Statistics objects one chain (a call's peer connection in one format) holds
        /// (`StatsChainBounds`); objects past it are left out and said.
        public var maximumObjectsPerChain = StatsChainBounds.maximumObjects
        public init() {}
    }

    public let bounds: Bounds
    /// When set, messages name calls by their pseudonyms, as the database does.
    public var pseudonymizer: CallPseudonymizer?

    /// Lines longer than this are looked at for an oversized id before they are scanned (a
    /// real-shaped statistics line is about 15 KB; shorter lines cannot hold an id that would
    /// cost much).
    static let idCheckLineBytes = 64 << 10

    private var scanner: StatsScanner
    /// Calls seen in this file and not yet handed on.
    public private(set) var open: [String: CallMaterial] = [:]
    /// Every call this ingestor has seen a record of, by its id's hash (counted as its material
    /// is first made, not looked up again for each record): 8 bytes a call where the ids took
    /// tens, for a file of millions of calls.
    private var callsSeenHashes = Set<Int>()
    /// The bytes of the open calls' ids.
    public private(set) var openIDBytes = 0
    /// Whether more calls are open than `bounds` allows (then `takeOpen`).
    public var holdsTooManyCalls: Bool { open.count > bounds.maximumOpenCalls || openIDBytes > bounds.maximumOpenIDBytes }
    /// How many different calls this ingestor has seen.
    public var callsSeen: Int { callsSeenHashes.count }
    private var lastRTT: [String: Double] = [:]
    /// Per call and reported SSRC, the latest RTCP XR VoIP metrics block: the next `rtp` record of
    /// that stream carries it (RTCP records are written as they arrive, a stream's records at its
    /// interval's end, so a report precedes the record of the interval it came in).
    private var lastVoIP: [String: [UInt32: JSONValue]] = [:]
    /// Per call and reported SSRC, the latest RTCP report block about that stream from its
    /// receiver (RR or SR blocks): the next `rtp` record of the stream carries it as the
    /// stream's far-end figures (`Readings.wire`), as the XR metrics above.
    private var lastReport: [String: [UInt32: Readings.WireReport]] = [:]
    private var names = StreamNames()

    public init(bounds: Bounds = Bounds()) {
        self.bounds = bounds
        scanner = StatsScanner(maximumObjectsPerChain: bounds.maximumObjectsPerChain)
    }

    public enum Outcome {
        /// The record was used; `ended` when it was the call's `end` record.
        case used(call: String, ended: Bool)
        /// A record about the agent itself (`agent`: drop counts, rotation): read, but part of no call.
        case agentNote
        /// The record was used without some of its objects, which passed a bound: `message`
        /// says which (reported as `beyondLimit`).
        case usedPartly(call: String, message: String)
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
        if line.count > RecordIngestor.idCheckLineBytes, let tooLong = oversizedID(line) { return tooLong }
        if line.count > RecordIngestor.statsPrefix.count,
            line.prefix(RecordIngestor.statsPrefix.count).elementsEqual(RecordIngestor.statsPrefix)
        {
            return ingestStats(line)
        }
        if line.count > PlainEvent.prefix.count, line.prefix(PlainEvent.prefix.count).elementsEqual(PlainEvent.prefix),
            let event = PlainEvent(line)
        {
            if event.call.utf8.count > bounds.maximumIDBytes { return idTooLong("call id", event.call.utf8.count) }
            guard addToMaterial(of: event.call, { $0.add(event) }) else { return refusal(of: event.call) }
            return .used(call: event.call, ended: false)
        }
        if line.count > PlainQuality.prefix.count, line.prefix(PlainQuality.prefix.count).elementsEqual(PlainQuality.prefix),
            let quality = PlainQuality(line)
        {
            if quality.call.utf8.count > bounds.maximumIDBytes { return idTooLong("call id", quality.call.utf8.count) }
            guard addToMaterial(of: quality.call, { $0.add(quality) }) else { return refusal(of: quality.call) }
            return .used(call: quality.call, ended: false)
        }
        let record: LogRecord
        do throws(RecordError) { record = try LogRecord(parsing: line) } catch {
            return .skipped(category: .invalidRecord, message: error.description)
        }
        if record.call.utf8.count > bounds.maximumIDBytes { return idTooLong("call id", record.call.utf8.count) }
        switch record.kind {
        case .agent:
            return .agentNote
        case .stats:
            return ingestStats(line)  // a writer with another key order: the scanner copes
        case .rtpStream:
            let ssrc = record["ssrc"]?.doubleValue.flatMap(UInt32.init(ssrc:))
            let voip = ssrc.flatMap { lastVoIP[record.call]?[$0] }
            let report = ssrc.flatMap { lastReport[record.call]?[$0] }
            guard let snapshot = Readings.wire(record, lastRTTMs: lastRTT[record.call], voipMetrics: voip, report: report) else {
                return .skipped(category: .invalidRecord, message: "rtp record without ssrc")
            }
            guard addToMaterial(of: record.call, { $0.add(snapshot) }) else { return refusal(of: record.call) }
        case .rtcp:
            // Round-trip times measured from RTCP at the capture point; negative ones are clock noise.
            if case .array(let reports)? = record["reports"] {
                // A block about the sender's own SSRC (some clients write one) is no receiver's view.
                let sender = record["ssrc"]?.doubleValue.flatMap(UInt32.init(ssrc:))
                for r in reports {
                    if let rtt = r["roundTripTimeMs"]?.doubleValue, rtt > 0, rtt < 60_000 { lastRTT[record.call] = rtt }
                    if let ssrc = r["ssrc"]?.doubleValue.flatMap(UInt32.init(ssrc:)), ssrc != sender,
                        let lost = r["packetsLost"]?.doubleValue, lost.isFinite
                    {
                        lastReport[record.call, default: [:]][ssrc] = Readings.WireReport(
                            packetsLost: lost, jitterMs: r["jitterMs"]?.doubleValue ?? .nan,
                            roundTripTimeMs: r["roundTripTimeMs"]?.doubleValue ?? .nan)
                    }
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
            addToMaterial(of: record.call, limited: false) { $0.touch(record.ts) }
        case .ice:
            if let snapshot = Readings.wireICE(record) {
                guard addToMaterial(of: record.call, { $0.add(snapshot) }) else { return refusal(of: record.call) }
            } else {
                addToMaterial(of: record.call, limited: false) { $0.touch(record.ts) }
            }
        default:
            // A call record replaces what it says; a call's first end is always taken.
            let limited = record.kind != .call && !(record.kind == .end && open[record.call]?.end == nil)
            guard addToMaterial(of: record.call, limited: limited, { $0.add(record) }) else { return refusal(of: record.call) }
        }
        if record.kind == .end { scanner.forget(call: record.call) }
        return .used(call: record.call, ended: record.kind == .end)
    }

    private mutating func ingestStats(_ line: UnsafeBufferPointer<UInt8>) -> Outcome {
        do throws(StatsScanError) {
            let scanned = try scanner.scan(line)
            let call = scanned.key.call
            guard !call.isEmpty else { return .skipped(category: .invalidRecord, message: "missing field \"call\"") }
            if call.utf8.count > bounds.maximumIDBytes { return idTooLong("call id", call.utf8.count) }
            if scanned.key.peerConnection.utf8.count > bounds.maximumIDBytes {
                return idTooLong("peer-connection name", scanned.key.peerConnection.utf8.count)
            }
            let snapshot = scanner.snapshot(chain: scanned.chain, key: scanned.key, ts: scanned.ts, names: &names)
            guard add(snapshot, to: call) else { return refusal(of: call) }
            let leftOut = scanner.takeLeftOut(chain: scanned.chain)
            guard leftOut == 0 else {
                return .usedPartly(
                    call: call,
                    message:
                        "\(leftOut) new statistics objects left out: a peer connection holds at most "
                        + "\(bounds.maximumObjectsPerChain) (the record's other objects are used)")
            }
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

    /// Whether the call's material at `i` has room for another record (`maximumRecordsPerCall`).
    @inline(__always)
    private func hasRoom(_ i: [String: CallMaterial].Index) -> Bool {
        open.values[i].snapshots.count + open.values[i].events.count < bounds.maximumRecordsPerCall
    }

    /// The outcome for a record of a call that holds `maximumRecordsPerCall` records in this file.
    func refusal(of call: String) -> Outcome {
        .skipped(
            category: .beyondLimit,
            message:
                "call \(pseudonymizer?.identifier(call) ?? call) already has \(bounds.maximumRecordsPerCall) records in this file (the most a reader holds "
                + "for one call); its further records here are skipped")
    }

    func idTooLong(_ what: String, _ bytes: Int) -> Outcome {
        .skipped(category: .beyondLimit, message: "\(what) of \(bytes) bytes (limit \(bounds.maximumIDBytes)); record skipped")
    }

    /// For a long line: the outcome when its `call` or `pc` member is longer than
    /// `maximumIDBytes`, read without parsing the rest (the scanner would keep the id).
    func oversizedID(_ line: UnsafeBufferPointer<UInt8>) -> Outcome? {
        var c = JSONCursor(line)
        var found: Outcome?
        try? c.object { cur, key throws(JSONCursor.ScanError) in
            let name = JSONCursor.equals(key, "call") ? "call id" : JSONCursor.equals(key, "pc") ? "peer-connection name" : nil
            if let name, try cur.peek() == 0x22 {
                let raw = try cur.rawString()
                if raw.count > bounds.maximumIDBytes {
                    found = idTooLong(name, raw.count)
                    throw cur.fail("found")
                }
            } else {
                try cur.skipValue()
            }
        }
        return found
    }

    /// Adds a snapshot to `call`'s material, moved in: through `addToMaterial`'s closure, which
    /// captured it, it was copied and the original destroyed (every stream reading's Strings
    /// retained and released once more per snapshot, 0.1-0.2 % of the instructions).
    private mutating func add(_ snapshot: consuming Snapshot, to call: String) -> Bool {
        let i = materialIndex(of: call)
        guard hasRoom(i) else { return false }
        open.values[i].add(snapshot)
        return true
    }

    /// Changes `call`'s material; false, changing nothing, when the change is `limited` and the
    /// call has no room for another record.
    @inline(__always)
    @discardableResult
    private mutating func addToMaterial(of call: String, limited: Bool = true, _ change: (inout CallMaterial) -> Void) -> Bool {
        let i = materialIndex(of: call)
        guard !limited || hasRoom(i) else { return false }
        change(&open.values[i])
        return true
    }

    /// Where `call`'s material is, made (and the call counted) when the call is new here.
    @inline(__always)
    private mutating func materialIndex(of call: String) -> [String: CallMaterial].Index {
        if let i = open.index(forKey: call) { return i }
        callsSeenHashes.insert(call.hashValue)
        openIDBytes += call.utf8.count
        open[call] = CallMaterial(callID: call)
        return open.index(forKey: call)!  // a second lookup once per call
    }

    /// Removes and returns a call's material (when it ended, or at the end of the file).
    public mutating func take(_ call: String) -> CallMaterial? {
        lastRTT[call] = nil
        lastVoIP[call] = nil
        lastReport[call] = nil
        guard let m = open.removeValue(forKey: call) else { return nil }
        openIDBytes -= call.utf8.count
        return m
    }

    /// Removes and returns every open call's material, keeping what the calls' later records
    /// need (statistics chains, RTCP round trips, report blocks and XR metrics): for handing calls on early
    /// (`maximumOpenCalls`).
    public mutating func takeOpen() -> [CallMaterial] {
        defer {
            open.removeAll()
            openIDBytes = 0
            if lastRTT.count > bounds.maximumOpenCalls { lastRTT.removeAll() }
            if lastVoIP.count > bounds.maximumOpenCalls { lastVoIP.removeAll() }
            if lastReport.count > bounds.maximumOpenCalls { lastReport.removeAll() }
        }
        return open.keys.sorted().compactMap { open[$0] }
    }

    public mutating func takeAll() -> [CallMaterial] {
        defer { open.removeAll(); lastRTT.removeAll(); lastVoIP.removeAll(); lastReport.removeAll(); openIDBytes = 0 }
        return open.keys.sorted().compactMap { open[$0] }
    }
}
