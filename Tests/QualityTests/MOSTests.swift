import XCTest
@testable import Quality

final class MOSTests: XCTestCase {
    /// G.109 category bounds vs MOS (reference §1.8; Mitel prints 4.34 / 4.0 / 3.6 / 3.1 / 2.6).
    func testCategoryTable() {
        let table: [(r: Double, mos: Double)] = [(90, 4.339), (80, 4.024), (70, 3.597), (60, 3.100), (50, 2.575)]
        for row in table {
            XCTAssertEqual(MOS.fromR(row.r), row.mos, accuracy: 5e-4, "R \(row.r)")
        }
        // Mitel's upper bounds.
        XCTAssertEqual(MOS.fromR(89), 4.31, accuracy: 5e-3)
        XCTAssertEqual(MOS.fromR(69), 3.55, accuracy: 5e-3)
        XCTAssertEqual(MOS.fromR(59), 3.05, accuracy: 5e-3)
    }

    func testEndpointsAndClamping() {
        XCTAssertEqual(MOS.fromR(-10), 1)
        XCTAssertEqual(MOS.fromR(0), 1)
        XCTAssertEqual(MOS.fromR(100), 4.5)
        XCTAssertEqual(MOS.fromR(120), 4.5)
        XCTAssertEqual(MOS.fromR(93.2), 4.4092, accuracy: 1e-4)
        XCTAssertTrue(MOS.fromR(.nan).isNaN)
    }

    /// The polynomial dips below 1 on (0, 6.5153); the clamped map does not.
    func testLowRatingDip() {
        XCTAssertEqual(MOS.polynomial(4.2), 0.990, accuracy: 5e-4)
        XCTAssertEqual(MOS.polynomial(3.22), 0.9888, accuracy: 1e-4)
        XCTAssertEqual(MOS.polynomial(6.515308), 1.0, accuracy: 1e-6)
        XCTAssertEqual(MOS.fromR(4.2), 1)
        XCTAssertEqual(MOS.fromR(3.22), 1)
        XCTAssertGreaterThan(MOS.fromR(6.6), 1)
        var r = 0.0
        var previous = MOS.fromR(r)
        while r < 110 {
            r += 0.01
            let current = MOS.fromR(r)
            XCTAssertGreaterThanOrEqual(current, previous, "R \(r)")
            XCTAssertTrue(MOS.range.contains(current))
            previous = current
        }
    }
}
