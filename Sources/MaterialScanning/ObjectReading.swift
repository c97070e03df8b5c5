import CallLog

/// Reading a statistics object whole, member by member, keeping only the fields the metrics use.
extension StatsScanner {
    /// Reads one stats object, keeping the fields the analyser uses.
    static func readObject(_ c: inout JSONCursor, id: inout String?) throws(JSONCursor.ScanError) -> StatObject {
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
    /// remote-outbound-rtp…) only need their timestamp (it counts toward the report's common
    /// timestamp): once type and timestamp are known, the rest is skipped unread.
    @inline(__always)
    static func readMember(
        _ cur: inout JSONCursor, key: UnsafeBufferPointer<UInt8>, into o: inout StatObject,
        id: inout String?, typeKnown: inout Bool
    ) throws(JSONCursor.ScanError) {
        if typeKnown && o.type == .other && !o.timestamp.isNaN { try cur.skipValue(); return }
        try readMember(&cur, key: key, into: &o, id: &id)
        if !typeKnown && (o.type != .other || JSONCursor.equals(key, "type")) { typeKnown = true }
    }

    /// The members after a leading id, into `o`, which then holds exactly this report's values:
    /// every number, the type and the timestamp start over, and strings not written are cleared.
    ///
    /// Each member is recorded in `record` (from `first` on) for `readChangedMembers` next time;
    /// the record is dropped when the object cannot be compared member by member: a field
    /// written twice (the later member wins, so skipping one could keep the wrong value), or
    /// legacy `values` (one member holding every field).
    static func readMembers(
        _ c: inout JSONCursor, into o: inout StatObject, generation: UInt32,
        objectStart: Int, record: AppendList<MemberSpan>, from first: Int,
        lastTimestamp: inout (pos: Int, count: Int, value: Double)?
    ) throws(JSONCursor.ScanError) {
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
                try readValues(
                    &c, memberStart: start, into: &o, objectStart: objectStart,
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
                record.append(
                    MemberSpan(
                        start: Int32(truncatingIfNeeded: start - objectStart),
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
    static func readValues(
        _ c: inout JSONCursor, memberStart: Int, into o: inout StatObject,
        objectStart: Int, record: AppendList<MemberSpan>, written: inout WrittenFields,
        comparable: inout Bool
    ) throws(JSONCursor.ScanError) {
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
                record.append(
                    MemberSpan(
                        start: Int32(truncatingIfNeeded: start - objectStart),
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

    /// A timestamp member. Most objects of a report carry the same number as the last one
    /// converted in this line (`last`): recognised by its bytes, as in `unchanged`, it is not
    /// converted again (half of the numbers read in real-shaped reports are timestamps).
    @inline(__always)
    static func readTimestamp(
        _ c: inout JSONCursor, into o: inout StatObject,
        last: inout (pos: Int, count: Int, value: Double)?
    ) throws(JSONCursor.ScanError) {
        c.skipSpace()
        let start = c.pos
        if let t = last, c.end - start > t.count, JSONCursor.equal(c.base + t.pos, c.base + start, t.count),
            !JSONCursor.continuesNumber(c.base[start + t.count])
        {
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
    static func readMember(_ cur: inout JSONCursor, key: UnsafeBufferPointer<UInt8>, into o: inout StatObject, id: inout String?) throws(JSONCursor.ScanError) {
        try readMember(&cur, entry: StatsScanner.table.lookup(key), into: &o, id: &id)
    }

    static func readMember(_ cur: inout JSONCursor, entry: FieldTable.Entry?, into o: inout StatObject, id: inout String?) throws(JSONCursor.ScanError) {
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
            } else {
                try cur.skipValue()
            }
        case .qualityLimitationDurations?:
            if try cur.peek() == 0x7B {
                try cur.object { inner, k throws(JSONCursor.ScanError) in
                    if let f = FieldTable.qualityLimitationField(k) {
                        o.num[f.rawValue] = try inner.numberOrNumericString() ?? .nan
                    } else {
                        try inner.skipValue()
                    }
                }
            } else {
                try cur.skipValue()
            }
        case nil, .valuesOpen?, .valuesClose?: try cur.skipValue()
        }
    }
}
