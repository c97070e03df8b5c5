/// A chain's statistics objects by id, in the order they were first seen.
///
/// An array with an index by id rather than a dictionary: reading an object where it lies
/// (`table[slot].num[…]`) costs an array access, where a dictionary's `values[index]` returns
/// a copy (four arrays retained and released) for every field read. Removals are rare (an
/// object gone after a renegotiation) and rebuild the index.
struct ObjectTable {
    /// Position in the table; stable until something is removed.
    typealias Slot = Int

    private(set) var keys: [String] = []
    private(set) var values: [StatObject] = []
    private var slots: [String: Slot] = [:]

    var count: Int { values.count }
    var isEmpty: Bool { values.isEmpty }
    var indices: Range<Slot> { values.indices }

    func index(forKey id: String) -> Slot? { slots[id] }

    /// The slot of `id`, trying `hint` (where it lay in the last report) before hashing the id.
    @inline(__always) func index(forKey id: String, hint: Slot?) -> Slot? {
        if let hint, hint >= 0, hint < keys.count, keys[hint] == id { return hint }
        return slots[id]
    }

    /// The slot of the id spelled by `raw`, trying `hint` before making a String of it and
    /// hashing that (deltas name the same objects in the same order, delta after delta).
    @inline(__always) func index(forKeyBytes raw: UnsafeBufferPointer<UInt8>, hint: Slot?) -> Slot? {
        if let hint, hint >= 0, hint < keys.count {
            var key = keys[hint]
            if JSONCursor.same(&key, raw) { return hint }
        }
        return slots[String(decoding: raw, as: UTF8.self)]
    }

    /// The object at `slot`, read or changed in place.
    subscript(slot: Slot) -> StatObject {
        _read { yield values[slot] }
        _modify { yield &values[slot] }
    }

    /// The object with this id; assigning nil removes it, assigning a new id appends it.
    subscript(id: String) -> StatObject? {
        get { slots[id].map { values[$0] } }
        set {
            if let slot = slots[id] {
                if let newValue { values[slot] = newValue } else { remove(at: slot) }
            } else if let newValue {
                slots[id] = values.count
                keys.append(id)
                values.append(newValue)
            }
        }
    }

    mutating func remove(at slot: Slot) {
        keys.remove(at: slot)
        values.remove(at: slot)
        reindex()
    }

    /// Keeps the objects for which `keep` is true, in order.
    mutating func removeAll(where drop: (StatObject) -> Bool) {
        var kept = 0
        for i in values.indices where !drop(values[i]) {
            if kept != i { values.swapAt(kept, i); keys.swapAt(kept, i) }
            kept += 1
        }
        guard kept < values.count else { return }
        values.removeSubrange(kept...)
        keys.removeSubrange(kept...)
        reindex()
    }

    private mutating func reindex() {
        slots.removeAll(keepingCapacity: true)
        for (i, id) in keys.enumerated() { slots[id] = i }
    }
}
