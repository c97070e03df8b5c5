import CallLog
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The latest state of one statistics chain (one call's peer connection in one format),
/// holding only the objects and fields the analyser reads.
///
/// Full reports replace it; deltas update it by the rules of `CallLog/StatsDelta.swift`
/// (timestamp advance, prediction from the last change, `set`/`inc`/`unset`/`put`/`del`),
/// applied to the kept fields only. Prediction applies to top-level numbers, as in the writer.
struct ChainState {
    var objects = ObjectTable()
    /// Counts full reports; objects carry the count of the last report that had them.
    var generation: UInt32 = 0
    var t: Double?
    var seq: Int64 = -1
    /// The last full report's bytes: an object whose bytes are the same but for the timestamp
    /// is not parsed again. Its layout says where each object and member lay in them; the layout
    /// is cleared when a delta applies (the bytes no longer describe the state).
    var reportBytes: [UInt8] = []
    var layout = ReportLayout()
    /// The layout before `layout`, kept for its storage: the next report's layout is written
    /// into it (four arrays were allocated and freed for every report).
    var spareLayout = ReportLayout()
    /// The slots of the objects the last delta named (`unset`, `set`, `inc`), in its order: the
    /// next delta's ids are compared with them before a String is made and hashed.
    var deltaSlots: [ObjectTable.Slot] = []

    /// As a new state, keeping its storage for the next chain (its objects as spares). Every
    /// field is listed: `testRecycledStatesAndObjectsEqualFreshOnes` compares all of them with
    /// `ChainState()`'s.
    mutating func recycle() {
        objects.recycle()
        generation = 0
        t = nil
        seq = -1
        reportBytes.removeAll(keepingCapacity: true)
        layout.clear()
        layout.order.removeAll(keepingCapacity: true)
        spareLayout.clear()
        spareLayout.order.removeAll(keepingCapacity: true)
        deltaSlots.removeAll(keepingCapacity: true)
    }
}

/// Where a full report's objects lay and what the chain made of them, for reading the next one.
struct ReportLayout {
    /// Object ids by position: the next report nearly always lists the same objects in the same
    /// order, so an id is recognised by comparing bytes, not by making a String and hashing it.
    var order: [String] = []
    /// Where each of those objects lies in `ChainState.objects` (-1: not kept), checked before
    /// hashing an id.
    var slots = SharedEmptyLists.slots
    /// Where each object (and its timestamp value) lay in the report's bytes.
    var spans = SharedEmptyLists.objects
    /// The members of those objects that were read, in report order (see `ObjectSpan.members`):
    /// an object that changed is compared member by member, and only changed members are read.
    var members = SharedEmptyLists.members
    /// The report listed an id twice: its objects and member layouts may not describe the state.
    var duplicateIDs = false

    /// Empty, with its storage kept; `order` keeps its ids too, for a report read into this
    /// layout to overwrite (`FullReportReading`).
    mutating func clear() {
        slots.removeAll()
        spans.removeAll()
        members.removeAll()
        duplicateIDs = false
    }
}

/// Where one object of a report lies, relative to the report's `[`; `timestamp` is empty when
/// the object has no plain-number timestamp.
struct ObjectSpan {
    var start: Int
    var timestamp: Range<Int>
    var end: Int
    /// The object's members after its leading id, in `ReportLayout.members`; empty when the
    /// object was not read member by member or cannot be compared that way (see `MemberSpan`).
    var members: Range<Int> = 0..<0
    /// Whether the chain held the object after that report (objects the metrics never read are
    /// not held).
    var inState = false
}

/// One member of an object in the last full report, relative to the object's `{`: from the
/// delimiter before it (`,` and any space) to the end of its value, and what its key is to the
/// analyser. A member whose bytes and following delimiter are the same in the next report has
/// the same value, which the chain's object already holds. Kept relative to its object, a
/// member does not move when objects before it change length, so an unchanged object's spans
/// are copied as they are. Offsets are within one line, and `scan` refuses lines of 1 GiB or
/// more: converting to Int32 truncates nothing, and shifting a span cannot wrap, so neither is
/// checked on the member loops' hot paths.
struct MemberSpan {
    var start: Int32
    var end: Int32
    var entry: FieldTable.Entry?
    /// Where the value starts, from `start` (past the delimiter, key and colon); 0 when unknown.
    /// A changed member whose bytes up to there are unchanged has the same key.
    var valueOffset: UInt16 = 0

    /// `valueOffset` for a value `distance` bytes after the member's start (0 beyond its range).
    static func valueOffset(_ distance: Int) -> UInt16 { distance < Int(UInt16.max) ? UInt16(distance) : 0 }
}

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
struct StatsScanner {
    /// Each chain's place in `states`. States stay in place: a record looks its chain up once
    /// and changes the state where it lies (taking it out of a dictionary and putting it back
    /// hashed the key twice, and handing it to the caller copied it).
    private var chains: [StatsChainKey: Int] = [:]
    private var states: [ChainState] = []
    private var freePlaces: [Int] = []
    private var keysByCall = ChainKeysByCall()
    private static let table = FieldTable.shared
    /// The object being read, reused so that reading a report allocates nothing per object.
    private var scratch = StatObject()
    /// Stands in a chain's place in `states` while that chain's state is read or changed
    /// outside the array, as a stored property rather than a local: a new `ChainState()` made
    /// and destroyed for each record, or the state copied for each snapshot, cost about 1 % of
    /// the instructions on the simulated corpus. Its contents mean nothing.
    private var spare = ChainState()

    init() {}

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
                        result = isDelta ? try applyDelta(&cur, key: k, seq: seq, base: base, missing: &missing)
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
                result = deferred.isDelta ? try applyDelta(&again, key: key, seq: seq, base: base, missing: &missing)
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
        let place = existing ?? freePlaces.popLast() ?? {
            states.append(ChainState())
            return states.count - 1
        }()
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
    private static func readFull(_ c: inout JSONCursor, into state: inout ChainState, scratch object: inout StatObject,
                                 seq: Int64?) throws(JSONCursor.ScanError) {
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
            var reading = FullReportReading(previous: previous, layout: previousLayout, into: &recycled, generation: generation,
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

    /// Reads one stats object, keeping the fields the analyser uses.
    private static func readObject(_ c: inout JSONCursor, id: inout String?) throws(JSONCursor.ScanError) -> StatObject {
        var o = StatObject()
        try readObject(&c, into: &o, id: &id)
        return o
    }

    /// Reads one stats object into `o` (which the caller has reset).
    static func readObject(_ c: inout JSONCursor, into o: inout StatObject, id: inout String?) throws(JSONCursor.ScanError) {
        var typeKnown = false
        try c.object { cur, key throws(JSONCursor.ScanError) in
            try readMember(&cur, key: key, into: &o, id: &id, typeKnown: &typeKnown)
        }
        o.clearUnwrittenStrings()
        if o.type == .googSSRC { GoogStats.classify(&o, id: id) }
    }

    /// One member of an object being read. Objects the metrics never read (certificates,
    /// media sources…) only need their timestamp (it counts toward the report's common
    /// timestamp): once type and timestamp are known, the rest is skipped unread.
    @inline(__always)
    private static func readMember(_ cur: inout JSONCursor, key: UnsafeBufferPointer<UInt8>, into o: inout StatObject,
                                   id: inout String?, typeKnown: inout Bool) throws(JSONCursor.ScanError) {
        if typeKnown && o.type == .other && !o.timestamp.isNaN { try cur.skipValue(); return }
        try readMember(&cur, key: key, into: &o, id: &id)
        if !typeKnown && (o.type != .other || JSONCursor.equals(key, "type")) { typeKnown = true }
    }

    /// When the object at the cursor is byte for byte the one `span` describes in the previous
    /// report, except perhaps for its timestamp number, moves past it and returns that
    /// timestamp (NaN without one) and where its value lay. The text between equal prefix and
    /// suffix is one maximal number token, so the object parses as before but for the timestamp.
    static func unchanged(_ c: inout JSONCursor, as span: ObjectSpan, in previous: UnsafeBufferPointer<UInt8>,
                          reportStart: Int, lastTimestamp: inout (pos: Int, count: Int, value: Double)?) -> (timestamp: Double, range: Range<Int>)? {
        guard span.end <= previous.count, span.start < span.end else { return nil }
        let old = previous.baseAddress!
        let here = c.base + c.pos
        if span.timestamp.isEmpty {
            let n = span.end - span.start
            guard c.end - c.pos >= n, memcmp(old + span.start, here, n) == 0 else { return nil }
            c.pos += n
            return (.nan, 0..<0)
        }
        let prefix = span.timestamp.lowerBound - span.start
        let suffix = span.end - span.timestamp.upperBound
        guard c.end - c.pos > prefix + suffix, memcmp(old + span.start, here, prefix) == 0 else { return nil }
        var t = c
        t.pos += prefix
        let timestamp: Double
        if let last = lastTimestamp, t.end - t.pos > last.count, JSONCursor.equal(t.base + last.pos, t.base + t.pos, last.count),
           !JSONCursor.continuesNumber(t.base[t.pos + last.count]) {
            // The same number token as the last timestamp (it ends where that one ended).
            timestamp = last.value
            t.pos += last.count
        } else {
            let start = t.pos
            guard let v = try? t.number() else { return nil }
            timestamp = v
            lastTimestamp = (start, t.pos - start, v)
        }
        let range = (c.pos + prefix)..<t.pos
        guard t.end - t.pos >= suffix, memcmp(old + span.timestamp.upperBound, t.base + t.pos, suffix) == 0 else { return nil }
        c.pos = t.pos + suffix
        return (timestamp, range)
    }

    /// When the object at the cursor starts with `"id": "…"`, consumes `{` and that member and
    /// returns the id: `expected` itself (no new String, `isExpected` true) when the bytes match
    /// it. Otherwise leaves the cursor where it was and returns nil.
    static func leadingID(_ c: inout JSONCursor, expected: String?) throws(JSONCursor.ScanError) -> (id: String, isExpected: Bool)? {
        // As browsers write it, `{"id":"` and the expected id's bytes, compared in one pass: the
        // member read as JSON took a few hundred instructions for each changed object.
        if let expected, let length = expected.utf8.withContiguousStorageIfAvailable({ StatsScanner.startsWithID(c, $0) }) ?? nil {
            c.pos += length
            return (expected, true)
        }
        let start = c.pos
        guard try c.peek() == 0x7B else { return nil }
        c.pos += 1
        guard try c.peek() == 0x22, JSONCursor.equals(try c.rawString(), "id"), try c.peek() == 0x3A else { c.pos = start; return nil }
        c.pos += 1
        guard try c.peek() == 0x22 else { c.pos = start; return nil }
        let raw = try c.rawString()
        if raw.contains(0x5C) { c.pos = start; return nil }  // escaped: the complete path decodes it
        if var known = expected, JSONCursor.same(&known, raw) {
            return (known, true)
        }
        return (String(decoding: raw, as: UTF8.self), false)
    }

    /// The length of `{"id":"<id>"` when the cursor is at exactly those bytes, else nil (spaces,
    /// another id, or an id that JSON would need to escape: those take the complete path).
    static func startsWithID(_ c: JSONCursor, _ id: UnsafeBufferPointer<UInt8>) -> Int? {
        let n = id.count
        guard c.end - c.pos >= n + 8, let idStart = id.baseAddress else { return nil }
        let p = c.base + c.pos
        guard p[0] == 0x7B, p[1] == 0x22, p[2] == 0x69, p[3] == 0x64, p[4] == 0x22, p[5] == 0x3A, p[6] == 0x22,
              p[7 + n] == 0x22, JSONCursor.equal(p + 7, idStart, n) else { return nil }
        for b in id where b == 0x22 || b == 0x5C || b < 0x20 { return nil }
        return n + 8
    }

    /// The members after a leading id, into `o`, which then holds exactly this report's values:
    /// every number, the type and the timestamp start over, and strings not written are cleared.
    ///
    /// Each member is recorded in `record` (from `first` on) for `readChangedMembers` next time;
    /// the record is dropped when the object cannot be compared member by member: a field
    /// written twice (the later member wins, so skipping one could keep the wrong value), or
    /// legacy `values` (one member holding every field).
    static func readMembers(_ c: inout JSONCursor, into o: inout StatObject, generation: UInt32,
                            objectStart: Int, record: AppendList<MemberSpan>, from first: Int,
                            lastTimestamp: inout (pos: Int, count: Int, value: Double)?) throws(JSONCursor.ScanError) {
        o.startOver(generation: generation)
        var typeKnown = false
        var ignored: String?
        var comparable = true
        var written = WrittenFields()
        let table = Self.table  // once, not a lazy global's check at every member
        while true {
            let start = c.pos
            guard try c.next(closer: 0x7D) else { break }
            let key = try c.rawString()
            try c.expect(0x3A)
            let valueOffset = MemberSpan.valueOffset(c.pos - start)
            let entry = table.lookup(key)
            if entry == .values, !(typeKnown && o.type == .other && !o.timestamp.isNaN), try c.peek() == 0x7B {
                // Legacy stats: the values object's members are recorded one by one, so that the
                // next report compares them like an object's own.
                try readValues(&c, memberStart: start, into: &o, objectStart: objectStart,
                               record: record, written: &written, comparable: &comparable)
                if !typeKnown && o.type != .other { typeKnown = true }
                continue
            }
            if comparable, !written.add(entry) { comparable = false }
            if typeKnown && o.type == .other && !o.timestamp.isNaN {
                try c.skipValue()
            } else if entry == .timestamp {
                try readTimestamp(&c, into: &o, last: &lastTimestamp)
            } else {
                try readMember(&c, entry: entry, into: &o, id: &ignored)
                if !typeKnown && (o.type != .other || entry == .type) { typeKnown = true }
            }
            if comparable {
                record.append(MemberSpan(start: Int32(truncatingIfNeeded: start - objectStart),
                                         end: Int32(truncatingIfNeeded: c.pos - objectStart), entry: entry,
                                         valueOffset: valueOffset))
            }
        }
        if !comparable { record.removeAll(from: first) }
        o.clearUnwrittenStrings()
        if o.type == .googSSRC { GoogStats.classify(&o, id: nil) }
    }

    /// A legacy `values` object (the cursor at its `{`), read member by member into `o`, each
    /// member recorded between a `valuesOpen` and a `valuesClose` span. A member that is not a
    /// plain field (an id, type or timestamp, nested objects) makes the object not comparable.
    private static func readValues(_ c: inout JSONCursor, memberStart: Int, into o: inout StatObject,
                                   objectStart: Int, record: AppendList<MemberSpan>, written: inout WrittenFields,
                                   comparable: inout Bool) throws(JSONCursor.ScanError) {
        var ignored: String?
        try c.expect(0x7B)
        if comparable {
            // No value offset: compared, this member is always read by key (`readChangedMembers`).
            record.append(MemberSpan(start: Int32(memberStart - objectStart), end: Int32(c.pos - objectStart), entry: .valuesOpen))
        }
        var first = true
        while true {
            let start = c.pos
            if first {
                first = false
                if try c.peek() == 0x7D { c.pos += 1; break }
            } else if try !c.next(closer: 0x7D) {
                break
            }
            let key = try c.rawString()
            try c.expect(0x3A)
            let innerOffset = MemberSpan.valueOffset(c.pos - start)
            let entry = table.lookup(key)
            switch entry {
            case .num?, .str?, nil: if comparable, !written.add(entry) { comparable = false }
            default: comparable = false
            }
            try readMember(&c, entry: entry, into: &o, id: &ignored)
            if comparable {
                record.append(MemberSpan(start: Int32(truncatingIfNeeded: start - objectStart),
                                         end: Int32(truncatingIfNeeded: c.pos - objectStart), entry: entry,
                                         valueOffset: innerOffset))
            }
        }
        if comparable {
            // The closing brace (and any space before it), so that the spans stay contiguous.
            let close = Int(record[record.count - 1].end) + objectStart
            record.append(MemberSpan(start: Int32(close - objectStart), end: Int32(c.pos - objectStart), entry: .valuesClose))
        }
    }

    /// The members after a leading id, compared with the same object in the last full report
    /// (`layout`, in `previous`, which holds that object's bytes from its `{`): a run of members
    /// whose bytes are unchanged is stepped over, since `o` already holds their values; a changed
    /// member is read. A member the layout has and the object no longer has reads as absent; one
    /// it did not have is read. False, with `o` partly updated, when that cannot be expressed
    /// field by field (the type, timestamp or legacy values gone, a field written twice): the
    /// caller reads the object again whole.
    ///
    /// The timestamp is always read (`lastTimestamp`: the last one converted in this line):
    /// where its number lies is noted for the next report. With `valuesNeeded` false only the
    /// type and timestamp are read; other changed values are skipped.
    /// `layout` is the object's spans in the last report, read through a buffer: every index
    /// below is checked against its end before use.
    static func readChangedMembers(_ c: inout JSONCursor, into o: inout StatObject, generation: UInt32,
                                   previous: UnsafeBufferPointer<UInt8>, layout: UnsafeBufferPointer<MemberSpan>,
                                   objectStart: Int, record: AppendList<MemberSpan>,
                                   lastTimestamp: inout (pos: Int, count: Int, value: Double)?,
                                   valuesNeeded: Bool = true) throws(JSONCursor.ScanError) -> Bool {
        // As after any full report: the prediction rates start over.
        o.keep(timestamp: o.timestamp, generation: generation)
        // Numbers another type does not read were never read: a new type is read whole.
        let typeBefore = o.type
        var ignored: String?
        let old = previous.baseAddress!
        let firstRecorded = record.count
        var i = layout.startIndex
        while true {
            let start = c.pos
            /// Bytes equal to the last report's from `layout[i]`'s start, when compared (-1: not).
            var equalBytes = -1
            if i < layout.endIndex, layout[i].entry != .timestamp {
                // Members are contiguous: the bytes equal from here on cover a run of unchanged
                // members, each with the delimiter after its value (12 is not the start of 123).
                let first = Int(layout[i].start)
                let same = JSONCursor.commonPrefix(old + first, c.base + c.pos, min(previous.count - first, c.end - c.pos))
                let shift = Int32(truncatingIfNeeded: c.pos - objectStart - first)
                var j = i
                // Wrapping sums and truncating conversions: see `MemberSpan`.
                let sameEnd = first + same
                while j < layout.endIndex, Int(layout[j].end) < sameEnd, layout[j].entry != .timestamp { j += 1 }
                if j > i {
                    record.append(UnsafeBufferPointer(rebasing: layout[i..<j]), shiftedBy: shift)
                    c.pos = objectStart + Int(layout[j - 1].end &+ shift)
                    i = j
                    continue
                }
                equalBytes = same
            }
            let entry: FieldTable.Entry?
            var valueOffset: UInt16 = 0
            /// A member the last report did not have at this place: `i` stays where it is.
            var inserted = false
            if i < layout.endIndex, case let k = Int(layout[i].valueOffset), k > 0, c.end - c.pos > k,
               equalBytes >= k || Int(layout[i].start) + k <= previous.count
                   && JSONCursor.equal(old + Int(layout[i].start), c.base + c.pos, k) {
                // Delimiter and key as before (often known from the run's comparison): only the value changed.
                c.pos += k
                entry = layout[i].entry
                valueOffset = layout[i].valueOffset
            } else {
                // Inside a legacy values object when the layout closes one before it opens another
                // (known here, not tracked: W3C objects have none, and this is the rarer path).
                let boundary = i < layout.endIndex ? layout[i...].firstIndex { $0.entry == .valuesClose || $0.entry == .valuesOpen } : nil
                let valuesClose = boundary.flatMap { layout[$0].entry == .valuesClose ? $0 : nil }
                let inValues = valuesClose != nil
                // The first member of a values object has no comma before it.
                let afterOpen = inValues && record.count > firstRecorded && record[record.count - 1].entry == .valuesOpen
                let another: Bool
                if afterOpen {
                    another = try c.peek() != 0x7D
                    if !another { c.pos += 1 }
                } else {
                    another = try c.next(closer: 0x7D)
                }
                if !another {
                    guard let close = valuesClose else { break }  // the object's end
                    // The values object's end: the members the last report had before it are gone.
                    guard clear(layout[i..<close], in: &o) else { return false }
                    record.append(MemberSpan(start: Int32(start - objectStart), end: Int32(c.pos - objectStart), entry: .valuesClose))
                    i = close + 1
                    continue
                }
                let key = try c.rawString()
                try c.expect(0x3A)
                valueOffset = MemberSpan.valueOffset(c.pos - start)
                entry = table.lookup(key)
                if entry == .values, i < layout.endIndex, layout[i].entry == .valuesOpen {
                    // A legacy values object where the last report had one: its members are
                    // compared one by one, as the object's. (Its span has no value offset, so it
                    // comes this way, and the common path does not test for it.) Not an object
                    // now: read whole.
                    guard try c.peek() == 0x7B else { return false }
                    c.pos += 1
                    record.append(MemberSpan(start: Int32(start - objectStart), end: Int32(c.pos - objectStart), entry: .valuesOpen))
                    i += 1
                    continue
                }
                // A values object's members are plain fields, and a values object is where the
                // layout has one: anything else is left to the whole read.
                switch (inValues, entry) {
                case (true, .num?), (true, .str?), (true, nil): break
                case (true, _), (_, .values?): return false
                default: break
                }
                // Inside a values object, its members only (up to where it closed last time).
                let end = valuesClose ?? layout.endIndex
                if i == end || entry != layout[i].entry {
                    // Browsers leave out a value they have no measurement for this time (Chromium's
                    // remote-outbound-rtp roundTripTime, in a third of its reports): members the last
                    // report had up to this member's next place are gone; without one, it is new.
                    if let next = layout[i..<end].firstIndex(where: { $0.entry == entry }) {
                        guard clear(layout[i..<next], in: &o) else { return false }
                        i = next
                    } else {
                        // A field this object already wrote is left to the fresh read (the last
                        // copy wins there), so that a layout never lists a field twice.
                        if entry != nil, record.contains(entry: entry, from: firstRecorded) { return false }
                        inserted = true
                    }
                }
            }
            if entry == .qualityLimitationDurations {
                // Durations the new value lacks must read as absent, as in a fresh read.
                o.num[NumField.qlBandwidth.rawValue] = .nan
                o.num[NumField.qlCPU.rawValue] = .nan
                o.num[NumField.qlOther.rawValue] = .nan
            }
            if entry == .timestamp {
                try readTimestamp(&c, into: &o, last: &lastTimestamp)
            } else if valuesNeeded || entry == .type {
                try readMember(&c, entry: entry, into: &o, id: &ignored)
            } else {
                try c.skipValue()
            }
            record.append(MemberSpan(start: Int32(truncatingIfNeeded: start - objectStart),
                                     end: Int32(truncatingIfNeeded: c.pos - objectStart), entry: entry,
                                     valueOffset: valueOffset))
            if !inserted { i += 1 }
        }
        if i < layout.endIndex { guard clear(layout[i...], in: &o) else { return false } }
        guard o.type == typeBefore else { return false }
        if o.type == .googSSRC { GoogStats.classify(&o, id: nil) }
        return true
    }

    /// The fields of members that a report no longer has, as a fresh read leaves them: absent.
    /// False for a member whose absence is more than its field's (type, timestamp, legacy
    /// values): the object is read again whole. A member that is only elsewhere in the object
    /// now is read when the cursor reaches it, after this.
    @inline(never)  // rare: kept out of the member loop
    private static func clear(_ gone: Slice<UnsafeBufferPointer<MemberSpan>>, in o: inout StatObject) -> Bool {
        for m in gone where !clearField(m.entry, in: &o) { return false }
        return true
    }

    /// Sets the field a member writes to absent (rates included); false, changing nothing, for a
    /// member that writes more than a field (type, timestamp, legacy values) or nothing of its own.
    private static func clearField(_ entry: FieldTable.Entry?, in o: inout StatObject) -> Bool {
        switch entry {
        case nil: return true
        case .num(let f)?: o.num[f.rawValue] = .nan; o.setRate(f.rawValue, to: 0)
        case .str(let f)?: o.str[f.rawValue] = nil
        case .qualityLimitationDurations?:
            for f in [NumField.qlBandwidth, .qlCPU, .qlOther] { o.num[f.rawValue] = .nan }
        case .id?, .type?, .timestamp?, .values?, .valuesOpen?, .valuesClose?: return false
        }
        return true
    }

    /// A timestamp member. Most objects of a report carry the same number as the last one
    /// converted in this line (`last`): recognised by its bytes, as in `unchanged`, it is not
    /// converted again (half of the numbers read in real-shaped reports are timestamps).
    @inline(__always)
    private static func readTimestamp(_ c: inout JSONCursor, into o: inout StatObject,
                                      last: inout (pos: Int, count: Int, value: Double)?) throws(JSONCursor.ScanError) {
        c.skipSpace()
        let start = c.pos
        if let t = last, c.end - start > t.count, JSONCursor.equal(c.base + t.pos, c.base + start, t.count),
           !JSONCursor.continuesNumber(c.base[start + t.count]) {
            c.pos = start + t.count
            o.timestamp = t.value
            o.timestampValue = start..<c.pos
            return
        }
        var ignored: String?
        try readMember(&c, entry: .timestamp, into: &o, id: &ignored)
        // Only a plain number is kept (not "123" or null), as `readMember` notes its place.
        if !o.timestampValue.isEmpty { last = (start, c.pos - start, o.timestamp) }
    }

    @inline(__always)
    private static func readMember(_ cur: inout JSONCursor, key: UnsafeBufferPointer<UInt8>, into o: inout StatObject, id: inout String?) throws(JSONCursor.ScanError) {
        try readMember(&cur, entry: StatsScanner.table.lookup(key), into: &o, id: &id)
    }

    private static func readMember(_ cur: inout JSONCursor, entry: FieldTable.Entry?, into o: inout StatObject, id: inout String?) throws(JSONCursor.ScanError) {
        switch entry {
        case .num(let f)?:
            if o.type.reads(f) { o.num[f.rawValue] = try cur.numberOrNumericString() ?? .nan } else { try cur.skipValue() }
        case .str(let f)?:
            o.stringsWritten |= 1 << f.rawValue
            if try cur.peek() == 0x22 {
                // The same text as before (ids, codec, candidate type: nearly always): keep it.
                let before = cur.pos
                let raw = try cur.rawString()
                if var old = o.str[f.rawValue], !raw.contains(0x5C), JSONCursor.same(&old, raw) { return }
                cur.pos = before
                o.str[f.rawValue] = try cur.string()
            } else {
                // true/false (nominated, googActiveConnection) kept as text.
                let start = cur.pos
                try cur.skipValue()
                o.str[f.rawValue] = String(decoding: UnsafeBufferPointer(start: cur.base + start, count: cur.pos - start), as: UTF8.self)
            }
        case .id?: id = try cur.string()
        case .type?: o.type = StatType(raw: try cur.rawString())
        case .timestamp?:
            cur.skipSpace()
            let start = cur.pos
            o.timestamp = try cur.numberOrNumericString() ?? .nan
            // Only a plain number can be recognised again by `unchanged` (not "123", not null).
            let first = cur.base[start]
            o.timestampValue = first == 0x2D || first &- 0x30 < 10 ? start..<cur.pos : 0..<0
        case .values?:
            // Legacy stats: the values object holds the fields.
            if try cur.peek() == 0x7B {
                try cur.object { inner, k throws(JSONCursor.ScanError) in
                    try readMember(&inner, key: k, into: &o, id: &id)
                }
            } else { try cur.skipValue() }
        case .qualityLimitationDurations?:
            if try cur.peek() == 0x7B {
                try cur.object { inner, k throws(JSONCursor.ScanError) in
                    if let f = FieldTable.qualityLimitationField(k) { o.num[f.rawValue] = try inner.numberOrNumericString() ?? .nan } else { try inner.skipValue() }
                }
            } else { try cur.skipValue() }
        case nil, .valuesOpen?, .valuesClose?: try cur.skipValue()
        }
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

    private static func applyDelta(_ c: inout JSONCursor, to state: inout ChainState, seq: Int64?) throws(JSONCursor.ScanError) {
        state.seq = seq ?? state.seq + 1
        // Read the delta's parts first: advance and prediction need `t` before anything applies.
        var newT: Double?
        var sections: [(section: DeltaSection, pos: Int)] = []
        try c.object { cur, k throws(JSONCursor.ScanError) in
            if JSONCursor.equals(k, "t") { newT = try cur.numberOrNumericString() } else {
                // A repeated part counts once (the first), as in the log format's reader.
                if let section = DeltaSection(k), !sections.contains(where: { $0.section == section }) { sections.append((section, cur.pos)) }
                try cur.skipValue()
            }
        }
        let endPos = c.pos
        // Advance and predict every kept object, remembering its values before prediction:
        // the next prediction is each number's change from them.
        let previousT = state.t
        for i in state.objects.indices { StatsScanner.advance(&state.objects[i], from: previousT, to: newT) }
        var named = DeltaNames()
        swap(&named.slots, &state.deltaSlots)
        for (section, pos) in sections.sorted(by: { $0.section.rawValue < $1.section.rawValue }) {
            var cur = c
            cur.pos = pos
            try StatsScanner.apply(section, at: &cur, to: &state, names: &named)
        }
        named.finish()
        swap(&named.slots, &state.deltaSlots)
        // The next prediction: each top-level number's change from its value before this delta.
        for i in state.objects.indices { StatsScanner.updateRates(&state.objects[i]) }
        state.t = newT
        state.layout.spans.removeAll()  // the last full report's bytes no longer describe the state
        state.layout.members.removeAll()
        c.pos = endPos
    }

    /// The parts of a delta, in the order they apply.
    private enum DeltaSection: Int {
        case del, unset, set, inc, put

        init?(_ name: UnsafeBufferPointer<UInt8>) {
            switch name.count {
            case 3 where JSONCursor.equals(name, "del"): self = .del
            case 3 where JSONCursor.equals(name, "set"): self = .set
            case 3 where JSONCursor.equals(name, "inc"): self = .inc
            case 3 where JSONCursor.equals(name, "put"): self = .put
            case 5 where JSONCursor.equals(name, "unset"): self = .unset
            default: return nil
            }
        }
    }

    private static func advance(_ o: inout StatObject, from previousT: Double?, to newT: Double?) {
        if let previousT, let newT, o.timestamp == previousT { o.timestamp = newT }
        o.beforeDelta(keepNumbers: !o.type.isLegacy)
        // Legacy objects keep their fields inside `values`: nested, so never predicted.
        if !o.type.isLegacy && o.ratesSet {
            o.num.withUnsafeMutableBufferPointer { num in
                o.rate.withUnsafeBufferPointer { rate in
                    for f in 0..<num.count where rate[f] != 0 && !num[f].isNaN { num[f] += rate[f] }
                }
            }
        }
        if o.timestampRate != 0 { o.timestamp += o.timestampRate }
    }

    private static func updateRates(_ o: inout StatObject) {
        guard o.hasPrevious else { return }  // new or replaced in this delta
        // A delta may change an object's type: legacy before it, its numbers were not kept.
        if !o.type.isLegacy, o.previous.count == o.num.count {
            for f in NumField.predictable {
                let r = o.num[f.rawValue] - o.previous[f.rawValue]
                o.setRate(f.rawValue, to: (r.isFinite && r != 0) ? r : 0)
            }
        }
        let tr = o.timestamp - o.previousTimestamp
        o.timestampRate = (tr.isFinite && tr != 0) ? tr : 0
        o.hasPrevious = false
    }

    /// Finds the objects a delta names, guessing each from the last delta's (see `deltaSlots`).
    private struct DeltaNames {
        /// The last delta's slots, overwritten in place by this one's as they are found.
        var slots: [ObjectTable.Slot] = []
        private var count = 0

        mutating func index(_ id: UnsafeBufferPointer<UInt8>, in objects: inout ObjectTable) -> ObjectTable.Slot? {
            let found = objects.index(forKeyBytes: id, hint: count < slots.count ? slots[count] : nil)
            if count < slots.count { slots[count] = found ?? -1 } else { slots.append(found ?? -1) }
            count += 1
            return found
        }

        mutating func finish() {
            if count < slots.count { slots.removeSubrange(count...) }
        }
    }

    private static func apply(_ section: DeltaSection, at cur: inout JSONCursor, to state: inout ChainState,
                              names: inout DeltaNames) throws(JSONCursor.ScanError) {
        switch section {
        case .del:
            try cur.array { a throws(JSONCursor.ScanError) in state.objects[try a.string()] = nil }
        case .unset:
            try cur.object { o, id throws(JSONCursor.ScanError) in
                let index = names.index(id, in: &state.objects)
                try o.array { a throws(JSONCursor.ScanError) in
                    let name = try a.rawString()
                    if let index { clear(name, in: &state.objects[index]) }
                }
            }
        case .set:
            try cur.object { o, id throws(JSONCursor.ScanError) in
                guard let index = names.index(id, in: &state.objects) else { try o.skipValue(); return }
                var ignored: String?
                try o.object { m, k throws(JSONCursor.ScanError) in
                    try readMember(&m, key: k, into: &state.objects[index], id: &ignored)
                }
            }
        case .inc:
            try cur.object { o, id throws(JSONCursor.ScanError) in
                guard let index = names.index(id, in: &state.objects) else { try o.skipValue(); return }
                try o.object { m, k throws(JSONCursor.ScanError) in
                    let d = try m.numberOrNumericString() ?? 0
                    if JSONCursor.equals(k, "timestamp") { state.objects[index].timestamp += d } else if case .num(let f)? = table.lookup(k) {
                        state.objects[index].num[f.rawValue] += d
                    }
                }
            }
        case .put:
            try cur.array { a throws(JSONCursor.ScanError) in
                var id: String?
                let o = try readObject(&a, id: &id)
                guard let id else { return }
                if o.type != .other { state.objects[id] = o } else { state.objects[id] = nil }
            }
        }
    }

    private static func clear(_ name: UnsafeBufferPointer<UInt8>, in o: inout StatObject) {
        let entry = StatsScanner.table.lookup(name)
        switch entry {
        case .timestamp?: o.timestamp = .nan; o.timestampRate = 0
        case .values?:
            for f in NumField.allCases where !NumField.predictable.contains(f) { o.num[f.rawValue] = .nan }
            for f in StrField.allCases { o.str[f.rawValue] = nil }
        default: _ = clearField(entry, in: &o)
        }
    }
}

extension NumField {
    /// Top-level W3C numbers: the ones the log format predicts (nested members are not).
    static let predictable: [NumField] = allCases.filter {
        ![.qlBandwidth, .qlCPU, .qlOther].contains($0) && !"\($0)".hasPrefix("goog")
    }
}

extension StatType {
    var isLegacy: Bool { self == .googSSRC || self == .googCandidatePair || self == .googLocalCandidate || self == .googRemoteCandidate }
}

/// Legacy (goog) statistics: which `ssrc` objects are audio or video, sending or receiving.
enum GoogStats {
    static func classify(_ o: inout StatObject, id: String?) {
        let video = o[.googFrameRateReceived] != nil || o[.googFrameWidthReceived] != nil
            || o[.googFrameRateSent] != nil || o[.googFrameWidthSent] != nil
            || o[.mediaType] == "video"
        o.str[StrField.kind.rawValue] = video ? "video" : "audio"
    }
}
