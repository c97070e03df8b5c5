import CallLog
import Dispatch
import XCTest

final class LockedTests: XCTestCase {
    /// Increments from several threads at once all land: each read-modify-write is exclusive.
    func testConcurrentUpdatesAreNotLost() {
        let counter = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 { counter.withLock { $0 += 1 } }
        }
        XCTAssertEqual(counter.withLock { $0 }, 80_000)
    }

    func testReturnsWhatTheBodyReturns() {
        let box = Locked([1, 2, 3])
        let removed = box.withLock { $0.removeFirst() }
        XCTAssertEqual(removed, 1)
        XCTAssertEqual(box.withLock { $0 }, [2, 3])
    }

    /// An error thrown by the body reaches the caller, the change made before it stays, and the
    /// lock is free again afterwards.
    func testThrowingBodyReleasesTheLock() {
        struct Stop: Error {}
        let box = Locked(0)
        XCTAssertThrowsError(
            try box.withLock { value in
                value = 5
                throw Stop()
            }
        ) { XCTAssertTrue($0 is Stop) }
        XCTAssertEqual(box.withLock { $0 }, 5)
    }
}
