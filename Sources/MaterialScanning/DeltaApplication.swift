import CallLog

/// Applying a delta record to a chain's state by the rules of `CallLog/StatsDelta.swift`, kept
/// fields only.
extension StatsScanner {
    static func applyDelta(_ c: inout JSONCursor, to state: inout ChainState, seq: Int64?) throws(JSONCursor.ScanError) {
        state.seq = seq ?? state.seq + 1
        // Read the delta's parts first: advance and prediction need `t` before anything applies.
        var newT: Double?
        var sections: [(section: DeltaSection, pos: Int)] = []
        try c.object { cur, k throws(JSONCursor.ScanError) in
            if JSONCursor.equals(k, "t") {
                newT = try cur.numberOrNumericString()
            } else {
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
    enum DeltaSection: Int {
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

    static func advance(_ o: inout StatObject, from previousT: Double?, to newT: Double?) {
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

    static func updateRates(_ o: inout StatObject) {
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
    struct DeltaNames {
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

    static func apply(
        _ section: DeltaSection, at cur: inout JSONCursor, to state: inout ChainState,
        names: inout DeltaNames
    ) throws(JSONCursor.ScanError) {
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
                    if JSONCursor.equals(k, "timestamp") {
                        state.objects[index].timestamp += d
                    } else if case .num(let f)? = table.lookup(k) {
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

    static func clear(_ name: UnsafeBufferPointer<UInt8>, in o: inout StatObject) {
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
