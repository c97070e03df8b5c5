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

    func testInverseRoundTrip() {
        for r in [6.6, 30, 50, 70, 93.2] {
            XCTAssertEqual(MOS.toR(MOS.fromR(r)), r, accuracy: 1e-9, "R \(r)")
        }
        XCTAssertEqual(MOS.toR(1), 6.515307716504649, accuracy: 1e-9)
        XCTAssertEqual(MOS.toR(2), 38.6836501194303, accuracy: 1e-9)
        XCTAssertEqual(MOS.toR(3), 58.07851801144202, accuracy: 1e-9)
        XCTAssertEqual(MOS.toR(4), 79.3708965340887, accuracy: 1e-9)
        XCTAssertEqual(MOS.toR(4.5), 100, accuracy: 1e-9)
        var mos = 1.0
        while mos <= 4.5 {
            XCTAssertEqual(MOS.fromR(MOS.toR(mos)), mos, accuracy: 1e-9, "MOS \(mos)")
            mos += 0.05
        }
        // Out-of-range MOS is clamped first.
        XCTAssertEqual(MOS.toR(0.5), MOS.toR(1))
        XCTAssertEqual(MOS.toR(5), MOS.toR(4.5))
    }

    func testGoodOrBetterAndPoorOrWorse() {
        let table: [(r: Double, gob: Double, pow: Double)] = [
            (90, 97.0, 0.2), (80, 89.4, 1.4), (70, 73.4, 5.9), (60, 50.0, 17.4), (50, 26.6, 37.7),
        ]
        for row in table {
            XCTAssertEqual(MOS.goodOrBetterPercent(r: row.r), row.gob, accuracy: 0.05, "R \(row.r)")
            XCTAssertEqual(MOS.poorOrWorsePercent(r: row.r), row.pow, accuracy: 0.05, "R \(row.r)")
        }
    }

    func testUserSatisfaction() {
        XCTAssertEqual(UserSatisfaction(r: 93.2), .verySatisfied)
        XCTAssertEqual(UserSatisfaction(r: 90), .verySatisfied)
        XCTAssertEqual(UserSatisfaction(r: 89.99), .satisfied)
        XCTAssertEqual(UserSatisfaction(r: 75), .someUsersDissatisfied)
        XCTAssertEqual(UserSatisfaction(r: 60), .manyUsersDissatisfied)
        XCTAssertEqual(UserSatisfaction(r: 55), .nearlyAllUsersDissatisfied)
        XCTAssertEqual(UserSatisfaction(r: 49.9), .notRecommended)
        XCTAssertEqual(UserSatisfaction(r: -5), .notRecommended)
        XCTAssertEqual(UserSatisfaction(mos: 4.4), .verySatisfied)
        XCTAssertEqual(UserSatisfaction(mos: 4.1), .satisfied)
        XCTAssertEqual(UserSatisfaction(mos: 3.6), .someUsersDissatisfied)
        XCTAssertEqual(UserSatisfaction(mos: 3.59), .manyUsersDissatisfied)
        XCTAssertEqual(UserSatisfaction(mos: 2.6), .nearlyAllUsersDissatisfied)
        XCTAssertEqual(UserSatisfaction(mos: 2.5), .notRecommended)
        XCTAssertEqual(UserSatisfaction(mos: 0.5), .notRecommended)
        XCTAssertLessThan(UserSatisfaction.notRecommended, .verySatisfied)
        // MOS and R give the same category for the same call.
        for r in stride(from: 0.0, through: 100, by: 0.5) {
            XCTAssertEqual(UserSatisfaction(mos: MOS.fromR(r)), UserSatisfaction(r: r), "R \(r)")
            XCTAssertEqual(QualityCategory(mos: MOS.fromR(r)), QualityCategory(r: r), "R \(r)")
        }
    }

    func testQualityCategory() {
        XCTAssertEqual(QualityCategory(r: 80), .good)
        XCTAssertEqual(QualityCategory(r: 79.9), .fair)
        XCTAssertEqual(QualityCategory(r: 70), .fair)
        XCTAssertEqual(QualityCategory(r: 69.9), .poor)
        XCTAssertEqual(QualityCategory(mos: 4.1), .good)
        XCTAssertEqual(QualityCategory(mos: 4.0), .fair)
        XCTAssertEqual(QualityCategory(mos: 3.6), .fair)
        XCTAssertEqual(QualityCategory(mos: 3.5), .poor)
        XCTAssertLessThan(QualityCategory.poor, .fair)
        XCTAssertLessThan(QualityCategory.fair, .good)
    }
}
