/// The member spans of one report's objects (`ReportLayout.members`), appended one at a time on
/// the scanner's hottest path: a few hundred per stats line of the real-shaped corpus.
///
/// A class, not an Array: an Array's append checks that its storage is not shared, once per
/// member. A list is written only through the layout the report is being read into, which no
/// other layout shares (layouts are moved between a chain's `layout` and `spareLayout`, never
/// copied and then changed); other layouts only read theirs. Empty layouts share `empty`, which
/// is never written: `FullReportReading` gives a layout its own list before writing to it.
final class MemberSpanList {
    private var base: UnsafeMutablePointer<MemberSpan>
    private(set) var count = 0
    private var capacity: Int

    /// The list of every layout that has not been written to. Shared by all threads' scanners,
    /// which is safe because nothing writes to it (`grow` refuses, `removeAll` on an empty list
    /// stores nothing).
    nonisolated(unsafe) static let empty = MemberSpanList()

    init(capacity: Int = 0) {
        self.capacity = capacity
        base = .allocate(capacity: max(capacity, 1))
    }

    deinit { base.deallocate() }  // MemberSpan is trivial: nothing to deinitialize

    var isEmpty: Bool { count == 0 }

    @inline(__always) subscript(i: Int) -> MemberSpan {
        precondition(i >= 0 && i < count, "member span index out of range")
        return base[i]
    }

    /// The spans in `range`, valid until the list next changes.
    @inline(__always) func spans(_ range: Range<Int>) -> UnsafeBufferPointer<MemberSpan> {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "member span range out of bounds")
        return UnsafeBufferPointer(start: base + range.lowerBound, count: range.count)
    }

    @inline(__always) func append(_ span: MemberSpan) {
        if count == capacity { grow(to: count + 1) }
        base[count] = span
        count += 1
    }

    func append(contentsOf spans: UnsafeBufferPointer<MemberSpan>) {
        guard let source = spans.baseAddress, spans.count > 0 else { return }
        if count + spans.count > capacity { grow(to: count + spans.count) }
        (base + count).update(from: source, count: spans.count)
        count += spans.count
    }

    func reserveCapacity(_ n: Int) {
        if n > capacity { grow(to: n) }
    }

    /// Drops the spans from `index` on (all of them by default), keeping the storage.
    func removeAll(from index: Int = 0) {
        precondition(index >= 0 && index <= count, "member span index out of range")
        if index != count { count = index }  // `empty` is never written, not even with its own count
    }

    /// Whether a span from `index` on has `entry`.
    func contains(entry: FieldTable.Entry?, from index: Int) -> Bool {
        spans(index..<count).contains { $0.entry == entry }
    }

    private func grow(to needed: Int) {
        precondition(self !== MemberSpanList.empty, "the shared empty member list is never written")
        let newCapacity = max(needed, 2 * capacity, 16)
        let grown = UnsafeMutablePointer<MemberSpan>.allocate(capacity: newCapacity)
        grown.update(from: base, count: count)
        base.deallocate()
        base = grown
        capacity = newCapacity
    }
}

/// A layout's spans are its content: tests compare recycled and fresh chain states field by
/// field, where the storage's address and capacity would differ.
extension MemberSpanList: CustomReflectable {
    var customMirror: Mirror {
        Mirror(self, unlabeledChildren: Array(spans(0..<count)), displayStyle: .collection)
    }
}
