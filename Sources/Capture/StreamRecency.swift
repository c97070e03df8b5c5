/// The open stream slots in order of their last packet: a doubly linked list threaded through
/// arrays indexed by slot, so that a packet moves its stream to the newest end, and the stream
/// to evict is found at the oldest end, in constant time whatever the number of streams.
///
/// Invariant: the listed slots are exactly the open ones, each once; following `next` from
/// `oldest` visits them from least to most recently active and ends at `newest`.
struct StreamRecency {
    private var previous: [Int32] = []
    private var next: [Int32] = []
    /// -1 when no stream is open.
    private(set) var oldest: Int32 = -1
    private(set) var newest: Int32 = -1

    /// Lists `slot` (not listed) as the most recently active.
    mutating func append(_ slot: Int) {
        if slot >= next.count {
            previous.append(contentsOf: repeatElement(-1, count: slot + 1 - previous.count))
            next.append(contentsOf: repeatElement(-1, count: slot + 1 - next.count))
        }
        let s = Int32(slot)
        previous[slot] = newest
        next[slot] = -1
        if newest >= 0 { next[Int(newest)] = s } else { oldest = s }
        newest = s
    }

    /// Takes `slot` (listed) off the list.
    mutating func remove(_ slot: Int) {
        let p = previous[slot], n = next[slot]
        if p >= 0 { next[Int(p)] = n } else { oldest = n }
        if n >= 0 { previous[Int(n)] = p } else { newest = p }
        previous[slot] = -1
        next[slot] = -1
    }

    /// Makes `slot` (listed) the most recently active.
    @inline(__always)
    mutating func touch(_ slot: Int) {
        guard Int32(slot) != newest else { return }
        remove(slot)
        append(slot)
    }

    /// The listed slots from least to most recently active (tests).
    var slotsOldestFirst: [Int] {
        var out = [Int](), s = oldest
        while s >= 0 {
            out.append(Int(s))
            s = next[Int(s)]
        }
        return out
    }
}
