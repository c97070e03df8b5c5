import CallLog
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    private var slots = IDIndex()
    /// Objects of a recycled table, whose storage new objects take.
    private var spares: [StatObject] = []
    /// The most objects the table holds (`RecordIngestor.Bounds.maximumObjectsPerChain`): a
    /// chain whose reports keep adding objects costs memory and time in proportion to them for
    /// every later snapshot, so objects beyond it are left out and counted in `leftOut`.
    var limit = StatsChainBounds.maximumObjects
    /// New objects left out because the table held `limit`, since the reader last took the count.
    var leftOut = 0

    var count: Int { values.count }
    var isEmpty: Bool { values.isEmpty }
    var indices: Range<Slot> { values.indices }

    func index(forKey id: String) -> Slot? {
        IDIndex.withBytes(of: id) { slots.find($0, in: keys) }
    }

    /// The slot of `id`, trying `hint` (where it lay in the last report) before hashing the id.
    @inline(__always) func index(forKey id: String, hint: Slot?) -> Slot? {
        if let hint, hint >= 0, hint < keys.count, keys[hint] == id { return hint }
        return index(forKey: id)
    }

    /// The slot of the id spelled by `raw`, trying `hint` before hashing it (deltas name the
    /// same objects in the same order, delta after delta).
    @inline(__always) func index(forKeyBytes raw: UnsafeBufferPointer<UInt8>, hint: Slot?) -> Slot? {
        if let hint, hint >= 0, hint < keys.count {
            var key = keys[hint]
            if JSONCursor.same(&key, raw) { return hint }
        }
        if let found = slots.find(raw, in: keys) { return found }
        // Ids are kept decoded, invalid UTF-8 as U+FFFD: bytes beyond ASCII are looked up as
        // the String they decode to.
        guard raw.contains(where: { $0 >= 0x80 }) else { return nil }
        return index(forKey: String(decoding: raw, as: UTF8.self))
    }

    /// The object at `slot`, read or changed in place.
    subscript(slot: Slot) -> StatObject {
        _read { yield values[slot] }
        _modify { yield &values[slot] }
    }

    /// The object with this id; assigning nil removes it, assigning a new id appends it.
    subscript(id: String) -> StatObject? {
        get { index(forKey: id).map { values[$0] } }
        set {
            if let slot = index(forKey: id) {
                if let newValue { values[slot] = newValue } else { remove(at: slot) }
            } else if let newValue {
                guard values.count < limit else {
                    leftOut += 1
                    return
                }
                keys.append(id)
                values.append(newValue)
                slots.add(slot: keys.count - 1, in: keys)
            }
        }
    }

    /// Appends `object` as the object of `id`, which the table does not have, in storage of
    /// its own (a spare's when there is one); false, and counted in `leftOut`, when the table
    /// holds `limit` objects already.
    @discardableResult
    mutating func append(_ id: String, copying object: StatObject, generation: UInt32) -> Bool {
        guard values.count < limit else {
            leftOut += 1
            return false
        }
        var added = spares.popLast() ?? StatObject()
        added.take(object, generation: generation)
        keys.append(id)
        values.append(added)
        slots.add(slot: keys.count - 1, in: keys)
        return true
    }

    /// Empty, its objects kept as spares; `limit` stays.
    mutating func recycle() {
        leftOut = 0
        spares.append(contentsOf: values)
        values.removeAll(keepingCapacity: true)
        keys.removeAll(keepingCapacity: true)
        slots = IDIndex()
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
        slots.rebuild(keys)
    }
}

/// An open-addressing index from ids to their slots in `ObjectTable.keys`. Ids are looked up
/// for most objects of every report; hashing their UTF-8 bytes directly costs a fraction of
/// a `Dictionary<String, Int>` lookup (SipHash, String comparison), and needs no String for
/// an id read from a line. The hash is seeded per process, so that a log cannot be written to
/// make its ids collide.
struct IDIndex {
    /// Slot + 1 per bucket, 0 when empty; the bucket count is a power of two, at least twice
    /// the number of ids.
    private var buckets: [Int32] = []
    private var count = 0
    private static let seed = UInt64.random(in: .min ... .max) | 1

    func find(_ id: UnsafeBufferPointer<UInt8>, in keys: [String]) -> Int? {
        guard !buckets.isEmpty else { return nil }
        let mask = buckets.count - 1
        var b = Int(truncatingIfNeeded: Self.hash(id)) & mask
        while true {
            let entry = Int(buckets[b])
            if entry == 0 { return nil }
            if Self.withBytes(of: keys[entry - 1], { $0.count == id.count && (id.isEmpty || memcmp($0.baseAddress!, id.baseAddress!, id.count) == 0) }) {
                return entry - 1
            }
            b = (b + 1) & mask
        }
    }

    /// Indexes `keys[slot]`, which no other slot has.
    mutating func add(slot: Int, in keys: [String]) {
        if (count + 1) * 2 > buckets.count {
            rebuild(keys)  // includes `slot`
            return
        }
        insert(slot: slot, keys)
        count += 1
    }

    /// Indexes every id of `keys`; of an id listed twice, `find` gives the first slot (probing
    /// meets the earlier insertion first).
    mutating func rebuild(_ keys: [String]) {
        var size = 8
        while size < keys.count * 2 { size *= 2 }
        buckets = [Int32](repeating: 0, count: size)
        for slot in keys.indices { insert(slot: slot, keys) }
        count = keys.count
    }

    private mutating func insert(slot: Int, _ keys: [String]) {
        let mask = buckets.count - 1
        var b = Int(truncatingIfNeeded: Self.withBytes(of: keys[slot]) { Self.hash($0) }) & mask
        while buckets[b] != 0 { b = (b + 1) & mask }
        buckets[b] = Int32(truncatingIfNeeded: slot + 1)
    }

    /// The string's UTF-8 bytes, in place when it is stored contiguously (always, for ids
    /// decoded from a line).
    @inline(__always) static func withBytes<R>(of s: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let r = s.utf8.withContiguousStorageIfAvailable(body) { return r }
        var copy = s
        return copy.withUTF8(body)
    }

    /// 64-bit multiply-rotate mixing of the bytes, eight at a time, with the length and seed.
    @inline(__always) static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        let k: UInt64 = 0x9E37_79B9_7F4A_7C15
        var h = seed ^ (UInt64(bytes.count) &* k)
        guard let base = bytes.baseAddress else { return h }
        let raw = UnsafeRawPointer(base)
        var i = 0
        while i + 8 <= bytes.count {
            h = ((h ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* k).rotated(left: 29)
            i += 8
        }
        if i < bytes.count {
            var tail: UInt64 = 0
            for j in i..<bytes.count { tail |= UInt64(base[j]) << (8 * UInt64(j - i)) }
            h = ((h ^ tail) &* k).rotated(left: 29)
        }
        h ^= h >> 32
        h &*= 0xD6E8_FEB8_6659_FD93
        h ^= h >> 32
        return h
    }
}

private extension UInt64 {
    @inline(__always) func rotated(left n: UInt64) -> UInt64 { (self << n) | (self >> (64 - n)) }
}
