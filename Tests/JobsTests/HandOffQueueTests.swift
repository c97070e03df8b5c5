import Analysis
import CallLog
import Foundation
@testable import Jobs
import MaterialCodec
import MaterialScanning
import Store
import XCTest

/// The writer sleeps until a batch of calls waits, but never past an issue, a finished file or
/// the readers' end, and readers waiting for room are woken: nothing is lost and nothing hangs.
final class HandOffQueueTests: XCTestCase {
    private static func call(_ id: String) -> HandOffQueue.Item {
        .call(
            PendingCall(
                material: CallMaterial(callID: id), config: AnalysisConfig(), pseudonymizer: nil,
                compressor: ZstdCompressor(level: CallMaterial.compressionLevel)))
    }

    private func callIDs(_ items: [HandOffQueue.Item]) -> [String] {
        items.compactMap { if case .call(let p) = $0 { p.callID } else { nil } }
    }

    /// `takeAll` on another thread, failing the test instead of hanging when it does not return.
    private func take(_ queue: HandOffQueue, readers: Int, file: StaticString = #filePath, line: UInt = #line) -> [HandOffQueue.Item]? {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: [HandOffQueue.Item]??
        Thread.detachNewThread {
            result = queue.takeAll(readers: readers)
            done.signal()
        }
        guard done.wait(timeout: .now() + 10) == .success else {
            XCTFail("takeAll did not return", file: file, line: line)
            queue.cancel()
            _ = done.wait(timeout: .now() + 10)
            return nil
        }
        return result ?? nil
    }

    func testAnIssueOrAFinishedFileIsTakenWithoutWaitingForABatch() {
        let queue = HandOffQueue(capacity: 16, wakeWriterAt: 8)
        queue.put(Self.call("a"))
        queue.put(.issue(LogIssue(file: "f", line: 3, category: .invalidRecord, message: "bad")))
        let first = take(queue, readers: 1)
        XCTAssertEqual(first?.count, 2)
        XCTAssertEqual(first.map(callIDs), ["a"])

        queue.put(
            .fileDone(
                FileDone(
                    entry: .init(path: "f", fingerprint: "x", size: 1, mtime: 0, records: 1, skipped: 0, calls: 1),
                    textBytes: 1)))
        XCTAssertEqual(take(queue, readers: 1)?.count, 1)
    }

    func testABatchOfCallsIsTakenBeforeTheReadersFinish() {
        let queue = HandOffQueue(capacity: 16, wakeWriterAt: 3)
        for id in ["a", "b", "c"] { queue.put(Self.call(id)) }
        XCTAssertEqual(take(queue, readers: 1).map(callIDs), ["a", "b", "c"])
    }

    /// The run lowers the batch for its last stretch while the writer sleeps: the calls
    /// already waiting are a batch now, and the writer is woken for them.
    func testLoweringTheBatchWakesASleepingWriter() {
        let queue = HandOffQueue(capacity: 16, wakeWriterAt: 8)
        for id in ["a", "b", "c"] { queue.put(Self.call(id)) }
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.05)
            queue.wakeWriter(at: 2)
        }
        XCTAssertEqual(take(queue, readers: 1).map(callIDs), ["a", "b", "c"])
        queue.put(Self.call("d"))
        queue.put(Self.call("e"))
        XCTAssertEqual(take(queue, readers: 1).map(callIDs), ["d", "e"])
    }

    func testTheLastFewCallsAreTakenWhenTheReadersFinish() {
        let queue = HandOffQueue(capacity: 16, wakeWriterAt: 8)
        queue.put(Self.call("a"))
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.05)
            queue.readerFinished()
        }
        XCTAssertEqual(take(queue, readers: 1).map(callIDs), ["a"])
        XCTAssertNil(take(queue, readers: 1))
    }

    /// Two readers put more calls than the queue holds: they wait for room, and every call arrives once, in each
    /// reader's order.
    func testReadersWaitingForRoomAreWokenAndEveryCallArrives() {
        let queue = HandOffQueue(capacity: 4, wakeWriterAt: 3)
        for r in 0..<2 {
            Thread.detachNewThread {
                for n in 0..<200 { queue.put(Self.call("\(r)-\(n)")) }
                queue.readerFinished()
            }
        }
        var got: [String] = []
        while let batch = take(queue, readers: 2) { got += callIDs(batch) }
        XCTAssertEqual(got.count, 400)
        for r in 0..<2 {
            XCTAssertEqual(got.filter { $0.hasPrefix("\(r)-") }, (0..<200).map { "\(r)-\($0)" })
        }
    }
}
