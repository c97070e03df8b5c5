import CallLog

/// Why a stats record was not used.
enum StatsScanError: Error {
    case malformed(JSONCursor.ScanError)
    case missingBase(expected: Int64, have: Int64?)
    /// No `ts`: a record must say when it was taken (`LogRecord` rejects it the same way).
    case missingTimestamp
    /// A line of 1 GiB or more (see `StatsScanner.scan`).
    case lineTooLong(bytes: Int)
}

/// A stats record the scanner applied: its chain, its time, and where the chain's state is
/// (`StatsScanner.subscript(chain:)`).
struct ScannedStats {
    var key: StatsChainKey
    var ts: Int64
    var chain: Int
}

/// Reads `stats` records into chain states, fast.
///
/// Here: the record's envelope, each chain's place, and full reports and deltas handed to their
/// readers. Objects read whole are `ObjectReading.swift`; objects read against the last full
/// report, `ReportComparison.swift` (driven by `FullReportReading`); deltas,
/// `DeltaApplication.swift`.
struct StatsScanner {
    /// Each chain's place in `states`. States stay in place: a record looks its chain up once
    /// and changes the state where it lies (taking it out of a dictionary and putting it back
    /// hashed the key twice, and handing it to the caller copied it).
    private var chains: [StatsChainKey: Int] = [:]
    private var states: [ChainState] = []
    private var freePlaces: [Int] = []
    private var keysByCall = ChainKeysByCall()
    /// The field table every reader looks member names up in.
    static let table = FieldTable.shared
    /// The object being read, reused so that reading a report allocates nothing per object.
    private var scratch = StatObject()
    /// Stands in a chain's place in `states` while that chain's state is read or changed
    /// outside the array, as a stored property rather than a local: a new `ChainState()` made
    /// and destroyed for each record, or the state copied for each snapshot, cost about 1 % of
    /// the instructions on the simulated corpus. Its contents mean nothing.
    private var spare = ChainState()

    /// The most objects one chain holds (`RecordIngestor.Bounds.maximumObjectsPerChain`).
    let maximumObjectsPerChain: Int

    init(maximumObjectsPerChain: Int = RecordIngestor.Bounds().maximumObjectsPerChain) {
        self.maximumObjectsPerChain = maximumObjectsPerChain
    }

    /// How many new objects the chain at `place` left out since this was last asked (its
    /// table was full), counted afresh from now.
    mutating func takeLeftOut(chain place: Int) -> Int {
        defer { states[place].objects.leftOut = 0 }
        return states[place].objects.leftOut
    }

    /// The state of the chain a record was applied to, until the next record is scanned.
    subscript(chain place: Int) -> ChainState {
        _read { yield states[place] }
    }

    /// What the chain at `place` says after its last record. The state is moved out of the
    /// array meanwhile: read where it lies in the array, across a call that changes `names`,
    /// it was copied (its storage retained and released) for every record.
    mutating func snapshot(chain place: Int, key: StatsChainKey, ts: Int64, names: inout StreamNames) -> Snapshot {
        swap(&spare, &states[place])
        defer { swap(&spare, &states[place]) }
        return Readings.snapshot(spare, chain: place, key: key, ts: ts, names: &names)
    }

    mutating func forget(call: String) {
        for key in keysByCall.remove(call: call) { drop(key) }
    }

    /// Forgets one chain and frees its place. The state is emptied but keeps its storage: the
    /// next new chain takes it, objects included (a call's chains freed and the next call's
    /// allocated cost about 1 % of the instructions on the simulated corpus).
    private mutating func drop(_ key: StatsChainKey) {
        guard let place = chains.removeValue(forKey: key) else { return }
        states[place].recycle()
        freePlaces.append(place)
    }

    /// Applies one stats record (already known to be `kind: stats`): its chain and envelope,
    /// and where the chain's state now is.
    mutating func scan(_ line: UnsafeBufferPointer<UInt8>) throws(StatsScanError) -> ScannedStats {
        // Member spans are Int32 offsets into a line, shifted with wrapping sums: below 1 GiB no
        // sum can wrap. Log readers stop lines at 64 MiB; this holds for any other caller too.
        guard line.count < Int(Int32.max) / 2 else { throw .lineTooLong(bytes: line.count) }
        var c = JSONCursor(line)
        var call = "", pc = "", format = "", ts: Int64?
        var seq: Int64?, base: Int64?
        var deferred: (pos: Int, isDelta: Bool)?
        var result: Int?
        var missing: (expected: Int64, have: Int64?)?
        do throws(JSONCursor.ScanError) {
            try c.object { cur, key throws(JSONCursor.ScanError) in
                switch key.count {
                case 2 where JSONCursor.equals(key, "ts"):
                    guard let v = try cur.numberOrNumericString(), let t = EpochMilliseconds.from(v) else {
                        throw cur.fail("ts is not epoch milliseconds")
                    }
                    ts = t
                case 2 where JSONCursor.equals(key, "pc"): pc = try cur.string()
                case 3 where JSONCursor.equals(key, "seq"): seq = try Self.sequenceNumber(&cur)
                case 4 where JSONCursor.equals(key, "call"): call = try cur.string()
                case 4 where JSONCursor.equals(key, "base"): base = try Self.sequenceNumber(&cur)
                case 6 where JSONCursor.equals(key, "format"): format = try cur.string()
                case 6 where JSONCursor.equals(key, "report"), 5 where JSONCursor.equals(key, "delta"):
                    let isDelta = key.count == 5
                    if !format.isEmpty && !call.isEmpty {
                        // Writers put call, format and pc first: parse in place.
                        let k = StatsChainKey(call: call, peerConnection: pc, format: format)
                        result =
                            isDelta
                            ? try applyDelta(&cur, key: k, seq: seq, base: base, missing: &missing)
                            : try readFull(&cur, key: k, seq: seq)
                    } else {
                        deferred = (cur.pos, isDelta)
                        try cur.skipValue()
                    }
                default: try cur.skipValue()
                }
            }
            let key = StatsChainKey(call: call, peerConnection: pc, format: format)
            if result == nil, missing == nil, let deferred {
                var again = JSONCursor(line)
                again.pos = deferred.pos
                result =
                    deferred.isDelta
                    ? try applyDelta(&again, key: key, seq: seq, base: base, missing: &missing)
                    : try readFull(&again, key: key, seq: seq)
            }
        } catch {
            throw .malformed(error)
        }
        if let missing { throw .missingBase(expected: missing.expected, have: missing.have) }
        guard let result else { throw .malformed(c.fail("stats record without report or delta")) }
        // A record without a time is reported and left out of the call (the complete reader
        // rejects it too). `ts` may follow the report, so this is known only at the end.
        guard let ts else { throw .missingTimestamp }
        return ScannedStats(key: StatsChainKey(call: call, peerConnection: pc, format: format), ts: ts, chain: result)
    }

    /// `seq` and `base`: absent is nil; present, they must be integers (1e300 is damage).
    private static func sequenceNumber(_ cur: inout JSONCursor) throws(JSONCursor.ScanError) -> Int64? {
        guard let v = try cur.numberOrNumericString() else { return nil }
        guard let n = Int64(logValue: v) else { throw cur.fail("seq or base is not an integer") }
        return n
    }

    // MARK: - Full reports

    /// A full report: the chain's state becomes exactly its objects, read against the last full
    /// report by `FullReportReading`.
    private mutating func readFull(_ c: inout JSONCursor, key: StatsChainKey, seq: Int64?) throws(JSONCursor.ScanError) -> Int {
        // The previous snapshot's objects are refilled in place: a chain's objects rarely change,
        // so a full report allocates nothing once its first snapshot has been read. The state is
        // moved out of its place while it is read (a copy would be copied again on write).
        let existing = chains[key]
        let place =
            existing ?? freePlaces.popLast()
            ?? {
                states.append(ChainState())
                return states.count - 1
            }()
        states[place].objects.limit = maximumObjectsPerChain
        swap(&spare, &states[place])
        do throws(JSONCursor.ScanError) {
            try Self.readFull(&c, into: &spare, scratch: &scratch, seq: seq)
        } catch {
            swap(&spare, &states[place])
            if existing != nil {
                drop(key)  // as a chain whose report cannot be read
            } else {
                states[place].recycle()
                freePlaces.append(place)
            }
            throw error
        }
        swap(&spare, &states[place])
        if existing == nil {
            chains[key] = place
            keysByCall.note(key)
        }
        return place
    }

    /// `object`: scratch space for the objects read, kept by the caller between reports.
    private static func readFull(
        _ c: inout JSONCursor, into state: inout ChainState, scratch object: inout StatObject,
        seq: Int64?
    ) throws(JSONCursor.ScanError) {
        state.generation &+= 1
        state.seq = seq ?? 0
        // The last report's bytes and layout are moved out of the state while this one is read
        // against them; the bytes' buffer is reused for this one's.
        var previousBytes: [UInt8] = []
        swap(&previousBytes, &state.reportBytes)
        var previousLayout = ReportLayout()
        swap(&previousLayout, &state.layout)
        var recycled = ReportLayout()
        swap(&recycled, &state.spareLayout)
        c.skipSpace()
        let reportStart = c.pos
        let generation = state.generation
        // Only locals in the closure: one that touched `self` would copy the scanner.
        let (layout, commonTimestamp) = try previousBytes.withUnsafeBufferPointer { previous throws(JSONCursor.ScanError) in
            var reading = FullReportReading(
                previous: previous, layout: previousLayout, into: &recycled, generation: generation,
                reportStart: reportStart)
            try c.array { cur throws(JSONCursor.ScanError) in
                try reading.readObject(&cur, into: &state, scratch: &object)
            }
            reading.finish()
            return (reading.layout, reading.commonTimestamp.value)
        }
        state.layout = layout
        state.spareLayout = previousLayout
        previousBytes.removeAll(keepingCapacity: true)
        previousBytes.append(contentsOf: UnsafeBufferPointer(start: c.base + reportStart, count: c.pos - reportStart))
        state.reportBytes = previousBytes
        // Objects this report no longer has (rare: renegotiation, candidates gone).
        let current = state.generation
        state.objects.removeAll { $0.generation != current }
        state.t = commonTimestamp
    }

    // MARK: - Deltas

    /// Nil (with `missing` set) when the snapshot it applies to was not seen.
    ///
    /// The chain's state is updated in place (no copy of its objects per delta); a delta that
    /// fails half-way drops the chain, as its successors could not apply anyway.
    private mutating func applyDelta(
        _ c: inout JSONCursor, key: StatsChainKey, seq: Int64?, base: Int64?, missing: inout (expected: Int64, have: Int64?)?
    ) throws(JSONCursor.ScanError) -> Int? {
        let place = chains[key]
        let have = place.map { states[$0].seq }
        // The latest delta written twice (a retried write, a copied line): the state it made is
        // still the chain's, so it is a repeated snapshot, not a break in the chain.
        if let seq, let place, have == seq, base != seq {
            try c.skipValue()
            return place
        }
        guard let base, let place, have == base else {
            missing = (base ?? -1, have)
            drop(key)
            try c.skipValue()
            return nil
        }
        swap(&spare, &states[place])
        do throws(JSONCursor.ScanError) {
            try StatsScanner.applyDelta(&c, to: &spare, seq: seq)
        } catch {
            swap(&spare, &states[place])
            drop(key)  // its successors could not apply either
            throw error
        }
        swap(&spare, &states[place])
        return place
    }
}
