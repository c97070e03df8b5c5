/// A report layout's lists (`ReportLayout`): its objects' spans and slots, and their members'
/// spans, appended one at a time on the scanner's hottest path (a few hundred member spans
/// per stats line of the real-shaped corpus, and one span and slot per object).
///
/// A class, not an Array: an Array's append checks that its storage is not shared, once per
/// element. A list is written only through the layout the report is being read into, which no
/// other layout shares (layouts are moved between a chain's `layout` and `spareLayout`, never
/// copied and then changed); other layouts only read theirs. Empty layouts share the lists in
/// `SharedEmptyLists`, which are never written: `FullReportReading` gives a layout its own
/// lists before writing to them.
final class AppendList<Element> {
    private var base: UnsafeMutablePointer<Element>
    private(set) var count = 0
    private var capacity: Int
    /// One of `SharedEmptyLists`: `grow` refuses to write to it.
    let isSharedEmpty: Bool

    init(capacity: Int = 0) {
        self.capacity = capacity
        base = .allocate(capacity: max(capacity, 1))
        isSharedEmpty = false
    }

    fileprivate init(sharedEmpty: Void) {
        capacity = 0
        base = .allocate(capacity: 1)
        isSharedEmpty = true
    }

    deinit {
        base.deinitialize(count: count)  // nothing to do for the plain values the layouts keep
        base.deallocate()
    }

    var isEmpty: Bool { count == 0 }

    @inline(__always) subscript(i: Int) -> Element {
        precondition(i >= 0 && i < count, "list index out of range")
        return base[i]
    }

    /// The elements in `range`, valid until the list next changes.
    @inline(__always) func elements(_ range: Range<Int>) -> UnsafeBufferPointer<Element> {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "list range out of bounds")
        return UnsafeBufferPointer(start: base + range.lowerBound, count: range.count)
    }

    @inline(__always) func append(_ element: Element) {
        if count == capacity { grow(to: count + 1) }
        (base + count).initialize(to: element)
        count &+= 1  // below capacity, which is an allocation's size
    }

    func append(contentsOf elements: UnsafeBufferPointer<Element>) {
        guard let source = elements.baseAddress, elements.count > 0 else { return }
        if count + elements.count > capacity { grow(to: count + elements.count) }
        (base + count).initialize(from: source, count: elements.count)
        count += elements.count
    }

    func reserveCapacity(_ n: Int) {
        if n > capacity { grow(to: n) }
    }

    /// Drops the elements from `index` on (all of them by default), keeping the storage.
    func removeAll(from index: Int = 0) {
        precondition(index >= 0 && index <= count, "list index out of range")
        guard index != count else { return }  // a shared empty list is never written, not even its count
        (base + index).deinitialize(count: count - index)
        count = index
    }

    @inline(never) private func grow(to needed: Int) {
        precondition(!isSharedEmpty, "a shared empty list is never written")
        let newCapacity = max(needed, 2 * capacity, 16)
        let grown = UnsafeMutablePointer<Element>.allocate(capacity: newCapacity)
        grown.moveInitialize(from: base, count: count)
        base.deallocate()
        base = grown
        capacity = newCapacity
    }
}

extension AppendList where Element == MemberSpan {
    /// Appends `spans`, each moved by `shift` (a run of unchanged members, where they lie now).
    @inline(__always) func append(_ spans: UnsafeBufferPointer<MemberSpan>, shiftedBy shift: Int32) {
        if count + spans.count > capacity { grow(to: count + spans.count) }
        let end = base + count
        for k in 0..<spans.count {
            let span = spans[k]
            // Wrapping sums: see `MemberSpan`.
            (end + k).initialize(
                to: MemberSpan(
                    start: span.start &+ shift, end: span.end &+ shift,
                    entry: span.entry, valueOffset: span.valueOffset))
        }
        count &+= spans.count  // within capacity
    }

    /// Whether a span from `index` on has `entry`.
    func contains(entry: FieldTable.Entry?, from index: Int) -> Bool {
        elements(index..<count).contains { $0.entry == entry }
    }
}

/// The lists of every layout that has not been written to (a generic class has no static
/// stored properties). Shared by all threads' scanners, which is safe because nothing writes
/// to them (`grow` refuses; `removeAll` on an empty list stores nothing).
enum SharedEmptyLists {
    nonisolated(unsafe) static let members = AppendList<MemberSpan>(sharedEmpty: ())
    nonisolated(unsafe) static let objects = AppendList<ObjectSpan>(sharedEmpty: ())
    nonisolated(unsafe) static let slots = AppendList<Int>(sharedEmpty: ())
}
