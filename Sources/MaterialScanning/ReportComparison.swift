#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading an object against the same object in the chain's last full report: an object that is
/// the same but for its timestamp is stepped over, and of one that changed only the changed
/// members are read (`FullReportReading` decides which applies).
extension StatsScanner {
    /// When the object at the cursor is byte for byte the one `span` describes in the previous
    /// report, except perhaps for its timestamp number, moves past it and returns that
    /// timestamp (NaN without one) and where its value lay. The text between equal prefix and
    /// suffix is one maximal number token, so the object parses as before but for the timestamp.
    static func unchanged(
        _ c: inout JSONCursor, as span: ObjectSpan, in previous: UnsafeBufferPointer<UInt8>,
        reportStart: Int, lastTimestamp: inout (pos: Int, count: Int, value: Double)?
    ) -> (timestamp: Double, range: Range<Int>)? {
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
            !JSONCursor.continuesNumber(t.base[t.pos + last.count])
        {
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
            p[7 + n] == 0x22, JSONCursor.equal(p + 7, idStart, n)
        else { return nil }
        for b in id where b == 0x22 || b == 0x5C || b < 0x20 { return nil }
        return n + 8
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
    static func readChangedMembers(
        _ c: inout JSONCursor, into o: inout StatObject, generation: UInt32,
        previous: UnsafeBufferPointer<UInt8>, layout: UnsafeBufferPointer<MemberSpan>,
        objectStart: Int, record: AppendList<MemberSpan>,
        lastTimestamp: inout (pos: Int, count: Int, value: Double)?,
        valuesNeeded: Bool = true
    ) throws(JSONCursor.ScanError) -> Bool {
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
                equalBytes >= k
                    || Int(layout[i].start) + k <= previous.count
                        && JSONCursor.equal(old + Int(layout[i].start), c.base + c.pos, k)
            {
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
            record.append(
                MemberSpan(
                    start: Int32(truncatingIfNeeded: start - objectStart),
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
    static func clear(_ gone: Slice<UnsafeBufferPointer<MemberSpan>>, in o: inout StatObject) -> Bool {
        for m in gone where !clearField(m.entry, in: &o) { return false }
        return true
    }

    /// Sets the field a member writes to absent (rates included); false, changing nothing, for a
    /// member that writes more than a field (type, timestamp, legacy values) or nothing of its own.
    static func clearField(_ entry: FieldTable.Entry?, in o: inout StatObject) -> Bool {
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
}
