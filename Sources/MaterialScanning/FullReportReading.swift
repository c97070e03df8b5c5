/// Reads one full report into a chain's state, object by object, against the chain's last full
/// report (`StatsScanner.readFull` drives it).
///
/// Browsers list the same objects in the same order at every poll, and most of them change only
/// their timestamp. So each object is first compared with the last report's object at the same
/// position (shifted by objects inserted or removed before it): one that is the same but for its
/// timestamp is kept as the state holds it; one that changed is compared member by member and only
/// its changed members are read; only an object the last report did not have is read whole.
struct FullReportReading {
    /// The last full report's bytes and layout, as it was read.
    private let previous: UnsafeBufferPointer<UInt8>
    private let last: ReportLayout
    /// The last report's objects and layouts describe the state only when each id had one object
    /// in it (otherwise the state holds an id's last copy, not the one at a position).
    private let previousUsable: Bool
    private let generation: UInt32
    /// Where this report's `[` is in the line: spans are kept relative to it.
    private let reportStart: Int

    /// This report's layout, for reading the next one (once `finish()`ed).
    private(set) var layout = ReportLayout()
    /// Objects read so far: the ids in `layout.order` past this are the recycled layout's.
    private var placed = 0
    private(set) var commonTimestamp = CommonTimestamp()

    /// Objects found this many places later than in the last report (by id, once per shift).
    private var drift = 0
    /// Positions of the last report's ids (the first, for an id listed twice), built when an
    /// object is first found out of place.
    private var previousPositions: IDIndex?
    /// Whether this report has added an object to the chain so far.
    private var addedObjects = false
    /// The last timestamp number read in this line: most objects of a report share it.
    private var lastTimestamp: (pos: Int, count: Int, value: Double)?

    /// `previous` and `layout`: the last full report's bytes and layout; `recycled`: a layout
    /// whose storage this report's is written into; `generation`: the chain's, already advanced
    /// for this report.
    init(
        previous: UnsafeBufferPointer<UInt8>, layout last: ReportLayout, into recycled: inout ReportLayout,
        generation: UInt32, reportStart: Int
    ) {
        self.previous = previous
        self.last = last
        previousUsable = !last.duplicateIDs
        self.generation = generation
        self.reportStart = reportStart
        swap(&layout, &recycled)  // moved, not copied: a shared copy would be copied again on write
        layout.clear()
        // Its own lists before anything is written (a new chain's layouts share empty ones).
        if layout.slots.isSharedEmpty { layout.slots = AppendList() }
        if layout.spans.isSharedEmpty { layout.spans = AppendList() }
        if layout.members.isSharedEmpty { layout.members = AppendList() }
        layout.slots.reserveCapacity(last.order.count)
        layout.spans.reserveCapacity(last.spans.count)
        layout.members.reserveCapacity(last.members.count)
    }

    /// Drops the recycled layout's ids past the last object read.
    mutating func finish() {
        if layout.order.count > placed { layout.order.removeSubrange(placed...) }
    }

    /// Notes the id of the object at the next position. The recycled layout (two reports ago)
    /// nearly always has the same id there already, often the same String: then nothing is
    /// written, which saves a retain and a release per object.
    @inline(__always) private mutating func place(_ id: String) {
        if placed < layout.order.count {
            if layout.order[placed] != id { layout.order[placed] = id }
        } else {
            layout.order.append(id)
        }
        placed += 1
    }

    /// `place` for the last report's id at `q`, compared where both lie; copied only when the
    /// recycled layout holds another id there.
    @inline(__always) private mutating func placeLast(_ q: Int) {
        if placed < layout.order.count {
            let same = last.order.withUnsafeBufferPointer { ids in
                layout.order.withUnsafeBufferPointer { here in here[placed] == ids[q] }
            }
            if !same { layout.order[placed] = last.order[q] }
        } else {
            layout.order.append(last.order[q])
        }
        placed += 1
    }

    /// What reading one object leaves for the report: its timestamp and where its value lay, and
    /// whether the chain holds the object.
    private typealias ObjectRead = (timestamp: Double, value: Range<Int>, inState: Bool)

    /// Reads the object at the cursor (one element of the report's array) into `state`.
    /// `object` is scratch space, reused between objects and reports.
    mutating func readObject(_ cur: inout JSONCursor, into state: inout ChainState, scratch object: inout StatObject) throws(JSONCursor.ScanError) {
        cur.skipSpace()
        let objectStart = cur.pos
        let membersBefore = layout.members.count
        let read: ObjectRead
        switch try recognize(&cur, at: objectStart, in: &state) {
        case .unchanged(let r): read = r
        case .withID(let id, let q, let atItsPlace):
            read = try readWithID(&cur, id: id, q: q, atItsPlace: atItsPlace, objectStart: objectStart, into: &state, scratch: &object)
        case .withoutID:
            read = try readWithoutID(&cur, into: &state, scratch: &object)
        }
        if !read.timestamp.isNaN { commonTimestamp.add(read.timestamp) }
        let ts =
            read.value.isEmpty || read.timestamp.isNaN
            ? 0..<0 : (read.value.lowerBound - reportStart)..<(read.value.upperBound - reportStart)
        layout.spans.append(
            ObjectSpan(
                start: objectStart - reportStart, timestamp: ts, end: cur.pos - reportStart,
                members: membersBefore..<layout.members.count, inState: read.inState))
    }

    /// An object's id: the last report's at a position (most objects: not copied), or one read
    /// from this report.
    private enum ObjectID {
        case last(Int)
        case read(String)
    }

    private enum Recognition {
        /// The same as the last report's object but for its timestamp, and kept (the cursor is
        /// past it).
        case unchanged(ObjectRead)
        /// An object that starts with its id (the cursor is after it); `q` is its position in the
        /// last report when `atItsPlace`.
        case withID(ObjectID, q: Int, atItsPlace: Bool)
        /// No leading id (the cursor is at the object): it is read whole.
        case withoutID
    }

    /// The object at the cursor against the last report's: at the same position (less the
    /// drift), then, when its id says it moved, at its old position.
    @inline(__always)
    private mutating func recognize(_ cur: inout JSONCursor, at objectStart: Int, in state: inout ChainState) throws(JSONCursor.ScanError) -> Recognition {
        let position = placed
        var q = position - drift
        var found: ObjectID?
        var atItsPlace = false
        var afterID = 0
        while true {
            if previousUsable, q >= 0, q < last.spans.count, q < last.order.count,
                let unchanged = StatsScanner.unchanged(
                    &cur, as: last.spans[q], in: previous, reportStart: reportStart,
                    lastTimestamp: &lastTimestamp)
            {
                // Same bytes as last time but for the timestamp (certificates, codecs,
                // candidates): the chain's copy is already right, unless this report already
                // wrote, added or removed that id (a duplicate: then it is read, so that the
                // last one wins as in a fresh read).
                let index = heldSlot(lastAt: q, in: state)
                let asBefore = if let index { last.spans[q].inState && state.objects[index].generation != generation } else { !last.spans[q].inState }
                if asBefore {
                    keep(at: index, as: q, objectStart: objectStart, timestamp: unchanged, in: &state)
                    return .unchanged((unchanged.timestamp, unchanged.range, index != nil))
                }
                cur.pos = objectStart
                layout.duplicateIDs = true
            }
            if let found {
                cur.pos = afterID  // moved, but changed: read from after the id
                return .withID(found, q: q, atItsPlace: atItsPlace)
            }
            // Nearly always the last report's id at this place, compared where it lies.
            if q >= 0, q < last.order.count, let length = expectedIDLength(cur, lastAt: q) {
                cur.pos += length
                return .withID(.last(q), q: q, atItsPlace: true)
            }
            guard let f = try StatsScanner.leadingID(&cur, expected: q >= 0 && q < last.order.count ? last.order[q] : nil) else {
                return .withoutID
            }
            if f.isExpected { return .withID(.last(q), q: q, atItsPlace: true) }
            guard previousUsable else { return .withID(.read(f.id), q: q, atItsPlace: false) }
            // Not where the drift says: look the id up among the last report's objects.
            if previousPositions == nil {
                var index = IDIndex()
                index.rebuild(last.order)
                previousPositions = index
            }
            guard let moved = IDIndex.withBytes(of: f.id, { previousPositions?.find($0, in: last.order) }) else {
                return .withID(.read(f.id), q: q, atItsPlace: false)
            }
            found = .last(moved)
            drift = position - moved
            q = moved
            atItsPlace = true
            afterID = cur.pos
            cur.pos = objectStart
        }
    }

    /// The length of `{"id":"<id>"` when the cursor is at exactly those bytes for the last
    /// report's id at `q` (in range), else nil; the id is read where it lies, not copied.
    @inline(__always)
    private func expectedIDLength(_ cur: JSONCursor, lastAt q: Int) -> Int? {
        last.order.withUnsafeBufferPointer { ids in
            ids[q].utf8.withContiguousStorageIfAvailable { StatsScanner.startsWithID(cur, $0) } ?? nil
        }
    }

    /// The chain's slot for the last report's object at `q` (in range), its id compared where
    /// it lies (a copy of it cost a retain and a release for every object). An object the chain
    /// did not hold after the last report (media sources and playout, which change at every
    /// poll) can be held now only if this report added it: otherwise it is not looked up.
    @inline(__always)
    private func heldSlot(lastAt q: Int, in state: ChainState) -> ChainState.Slot? {
        if !last.spans[q].inState && !addedObjects { return nil }
        let hint = q < last.slots.count ? last.slots[q] : nil
        return last.order.withUnsafeBufferPointer { ids in state.objects.index(forKey: ids[q], hint: hint) }
    }

    /// Keeps the last report's object at `q`, unchanged but for its timestamp.
    @inline(__always)
    private mutating func keep(
        at index: Int?, as q: Int, objectStart: Int,
        timestamp unchanged: (timestamp: Double, range: Range<Int>), in state: inout ChainState
    ) {
        placeLast(q)
        layout.slots.append(index ?? -1)
        if let index { state.objects[index].keep(timestamp: unchanged.timestamp, generation: generation) }
        // Its members lie where they lay in the object, those after the timestamp moved by the
        // timestamp's change in length: kept for the report in which the object changes.
        let old = last.spans[q]
        let longer = Int32(old.timestamp.isEmpty ? 0 : unchanged.range.count - old.timestamp.count)
        guard longer != 0 else {
            layout.members.append(contentsOf: last.members.elements(old.members))
            return
        }
        let after = Int32(old.timestamp.upperBound - old.start)
        for m in last.members.elements(old.members) {
            layout.members.append(
                MemberSpan(
                    start: m.start &+ (m.start >= after ? longer : 0),
                    end: m.end &+ (m.end >= after ? longer : 0), entry: m.entry,
                    valueOffset: m.valueOffset))
        }
    }

    /// An object that starts with its id (all that browsers and SDKs write), the cursor after
    /// the id. An object the chain already has is read straight into it, keeping unchanged
    /// strings; at its place in the last report, only its changed members are read.
    private mutating func readWithID(
        _ cur: inout JSONCursor, id: ObjectID, q: Int, atItsPlace: Bool, objectStart: Int,
        into state: inout ChainState, scratch object: inout StatObject
    ) throws(JSONCursor.ScanError) -> ObjectRead {
        switch id {
        case .last(let k): placeLast(k)
        case .read(let s): place(s)
        }
        let firstMember = layout.members.count
        let comparable =
            atItsPlace && previousUsable && q >= 0 && q < last.spans.count && !last.spans[q].members.isEmpty
            && last.spans[q].end <= previous.count
        // The last report's object, from its `{`.
        let previousObject = comparable ? UnsafeBufferPointer(rebasing: previous[last.spans[q].start..<last.spans[q].end]) : previous
        // At its place, the id is the last report's at `q`.
        let hint = q >= 0 && q < last.slots.count ? last.slots[q] : nil
        let held: ChainState.Slot?
        if atItsPlace && previousUsable && q >= 0 && q < last.spans.count {
            held = heldSlot(lastAt: q, in: state)
        } else {
            switch id {
            case .last(let k): held = last.order.withUnsafeBufferPointer { ids in state.objects.index(forKey: ids[k], hint: hint) }
            case .read(let s): held = state.objects.index(forKey: s, hint: hint)
            }
        }
        if let index = held {
            if state.objects[index].generation == generation { layout.duplicateIDs = true }
            let afterID = cur.pos
            var compared = false
            if comparable, state.objects[index].generation != generation {
                compared = try StatsScanner.readChangedMembers(
                    &cur, into: &state.objects[index], generation: generation, previous: previousObject,
                    layout: last.members.elements(last.spans[q].members), objectStart: objectStart, record: layout.members,
                    lastTimestamp: &lastTimestamp)
                if !compared {
                    cur.pos = afterID
                    layout.members.removeAll(from: firstMember)
                }
            }
            if !compared {
                try StatsScanner.readMembers(
                    &cur, into: &state.objects[index], generation: generation,
                    objectStart: objectStart, record: layout.members, from: firstMember,
                    lastTimestamp: &lastTimestamp)
            }
            let read: ObjectRead = (state.objects[index].timestamp, state.objects[index].timestampValue, false)
            if state.objects[index].type == .other {
                state.objects.remove(at: index)
                layout.slots.append(-1)
                return read
            }
            layout.slots.append(index)
            return (read.timestamp, read.value, true)
        }
        // Not held: new, or of a type the metrics never read (media sources, playout, the peer
        // connection). Of the latter only the type and timestamp matter, so when it was not
        // held last time either, only they are read.
        var compared = false
        if comparable, !last.spans[q].inState {
            let afterID = cur.pos
            object.reset()
            compared = try StatsScanner.readChangedMembers(
                &cur, into: &object, generation: generation, previous: previousObject,
                layout: last.members.elements(last.spans[q].members), objectStart: objectStart, record: layout.members,
                lastTimestamp: &lastTimestamp, valuesNeeded: false)
            if !compared || object.type != .other {
                compared = false
                cur.pos = afterID
                layout.members.removeAll(from: firstMember)
            }
        }
        if !compared {
            try StatsScanner.readMembers(
                &cur, into: &object, generation: generation,
                objectStart: objectStart, record: layout.members, from: firstMember,
                lastTimestamp: &lastTimestamp)
        }
        guard object.type != .other else {
            layout.slots.append(-1)
            return (object.timestamp, object.timestampValue, false)
        }
        let key =
            switch id {
            case .last(let k): last.order[k]
            case .read(let s): s
            }
        guard state.objects.append(key, copying: object, generation: object.generation) else {
            layout.slots.append(-1)
            return (object.timestamp, object.timestampValue, false)
        }
        addedObjects = true
        layout.slots.append(state.objects.count - 1)
        return (object.timestamp, object.timestampValue, true)
    }

    /// An object without a leading id: read whole, by the complete member reader.
    private mutating func readWithoutID(
        _ cur: inout JSONCursor, into state: inout ChainState,
        scratch object: inout StatObject
    ) throws(JSONCursor.ScanError) -> ObjectRead {
        var id: String?
        object.reset()
        try StatsScanner.readObject(&cur, into: &object, id: &id)
        place(id ?? "")
        layout.slots.append(-1)  // found by id next time
        if object.type != .other, let id {
            if let index = state.objects.index(forKey: id) {
                if state.objects[index].generation == generation { layout.duplicateIDs = true }
                state.objects[index].assign(object, generation: generation)
            } else {
                if state.objects.append(id, copying: object, generation: generation) { addedObjects = true }
            }
        }
        let inState = id.flatMap { state.objects.index(forKey: $0) }.map { state.objects[$0].generation == generation } ?? false
        return (object.timestamp, object.timestampValue, inState)
    }
}

/// A report's common timestamp: the one most of its objects carry (a handful of distinct values).
/// The first two distinct values are counted in place: with an array, its allocation and search
/// cost more than the rest of an unchanged object's reading.
struct CommonTimestamp {
    private var first = (t: 0.0, n: 0), second = (t: 0.0, n: 0)
    private var others: [(t: Double, n: Int)] = []
    private var best = (t: 0.0, n: 0)
    var value: Double? { best.n > 0 ? best.t : nil }

    /// Inlined for the common case (the value the first object had), the rest out of line: as
    /// one call it cost about 50 instructions an object.
    @inline(__always) mutating func add(_ t: Double) {
        if first.n > 0 && first.t == t {
            first.n += 1
            if first.n > best.n { best = (t, first.n) }
        } else {
            addOther(t)
        }
    }

    @inline(never) private mutating func addOther(_ t: Double) {
        let n: Int
        if first.n == 0 {
            first = (t, 1)
            n = 1
        } else if second.n > 0 && second.t == t {
            second.n += 1
            n = second.n
        } else if second.n == 0 {
            second = (t, 1)
            n = 1
        } else if let k = others.firstIndex(where: { $0.t == t }) {
            others[k].n += 1
            n = others[k].n
        } else {
            others.append((t, 1))
            n = 1
        }
        // On a tie the value that reached the count first keeps the lead.
        if n > best.n { best = (t, n) }
    }
}
