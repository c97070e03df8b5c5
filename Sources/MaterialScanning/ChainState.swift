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
