@testable import MaterialScanning
import XCTest

/// A layout list keeps what an Array would: appended one at a time or in runs, past its
/// capacity, cut back, and read by range.
final class AppendListTests: XCTestCase {
    func span(_ n: Int) -> MemberSpan {
        MemberSpan(start: Int32(n), end: Int32(n + 1), entry: n % 3 == 0 ? .timestamp : nil, valueOffset: UInt16(n % 7))
    }

    func starts(_ list: AppendList<MemberSpan>, _ range: Range<Int>) -> [Int32] { list.elements(range).map(\.start) }

    func testListKeepsSpansAsAnArrayWould() {
        let list = AppendList<MemberSpan>(capacity: 2)
        var expected: [MemberSpan] = []
        for n in 0..<40 {
            list.append(span(n))
            expected.append(span(n))
        }
        let run = (100..<150).map(span)
        run.withUnsafeBufferPointer { list.append(contentsOf: $0) }
        expected += run
        XCTAssertEqual(list.count, expected.count)
        XCTAssertEqual(starts(list, 0..<list.count), expected.map(\.start))
        XCTAssertEqual(list[45].valueOffset, expected[45].valueOffset)
        XCTAssertEqual(starts(list, 38..<42), [38, 39, 100, 101])

        XCTAssertTrue(list.contains(entry: .timestamp, from: 39))  // 102 is a multiple of 3
        XCTAssertFalse(list.contains(entry: .timestamp, from: list.count - 1))  // 149 is not

        list.removeAll(from: 10)
        XCTAssertEqual(list.count, 10)
        list.append(span(7))
        XCTAssertEqual(starts(list, 8..<11), [8, 9, 7])
        list.removeAll()
        XCTAssertTrue(list.isEmpty)
    }

    /// A run of unchanged members lands where it lies now: each span moved by the same amount,
    /// forward or back, the list growing as needed.
    func testRunsAreAppendedShifted() {
        let list = AppendList<MemberSpan>(capacity: 1)
        list.append(span(0))
        let run = (10..<30).map(span)
        run.withUnsafeBufferPointer { list.append($0, shiftedBy: 5) }
        run.withUnsafeBufferPointer { list.append(UnsafeBufferPointer(rebasing: $0[2..<4]), shiftedBy: -3) }
        XCTAssertEqual(list.count, 23)
        XCTAssertEqual(starts(list, 0..<3), [0, 15, 16])
        XCTAssertEqual(list.elements(20..<23).map(\.end), [35, 10, 11])
        XCTAssertEqual(list[21].entry, span(12).entry)
        XCTAssertEqual(list[22].valueOffset, span(13).valueOffset)
    }

    /// A new chain's layouts share empty lists; reading a report gives the layout its own, so
    /// the shared ones stay empty.
    func testReadingAReportLeavesTheSharedEmptyListsEmpty() throws {
        var scanner = StatsScanner()
        for seq in 0..<3 {
            let line =
                #"{"v":1,"kind":"stats","call":"x","ts":\#(1_700_000_000_000 + seq * 1000),"format":"w3c","pc":"a","report":[{"id":"IN1","timestamp":\#(seq),"type":"inbound-rtp","kind":"audio","ssrc":5,"packetsReceived":\#(100 * seq)}]}"#
            var bytes = Array(line.utf8)
            _ = try bytes.withUnsafeMutableBufferPointer { try scanner.scan(UnsafeBufferPointer($0)) }
        }
        XCTAssertTrue(SharedEmptyLists.members.isEmpty)
        XCTAssertTrue(SharedEmptyLists.objects.isEmpty)
        XCTAssertTrue(SharedEmptyLists.slots.isEmpty)
    }
}
