import XCTest
@testable import Quality

final class IndustryScoresTests: XCTestCase {
    /// baresip `test/mos.c` (8 rows, published): RTT, jitter, loss → R, MOS (unclamped polynomial).
    func testBaresipTable() {
        let rows: [(rtt: Double, jitter: Double, loss: Double, r: Double, mos: Double)] = [
            (0, 0, 0, 92.95, 4.404),
            (500, 0, 0, 54.20, 2.796),
            (1000, 0, 0, 4.20, 0.990),
            (0, 100, 0, 84.20, 4.172),
            (0, 200, 0, 64.20, 3.315),
            (0, 0, 1, 90.45, 4.350),
            (0, 0, 10, 67.95, 3.499),
            (10, 10, 10, 67.20, 3.463),
        ]
        for row in rows {
            let r = IndustryScores.effectiveLatencyRating(roundTripTimeMs: row.rtt, jitterMs: row.jitter,
                                                          lossPercent: row.loss)
            XCTAssertEqual(r, row.r, accuracy: 1e-3, "rtt \(row.rtt) jitter \(row.jitter) loss \(row.loss)")
            XCTAssertEqual(MOS.polynomial(r), row.mos, accuracy: 1e-3)
        }
        // Our clamped map lifts baresip's 0.990 to 1.
        XCTAssertEqual(MOS.fromR(IndustryScores.effectiveLatencyRating(roundTripTimeMs: 1000, jitterMs: 0,
                                                                       lossPercent: 0)), 1)
        XCTAssertEqual(IndustryScores.effectiveLatencyRating(roundTripTimeMs: 2000, jitterMs: 0, lossPercent: 0), 0)
    }

    /// Twilio `mos.ts` semantics (reference §3.2); maximum 4.433 at zero RTT, jitter and loss.
    func testTwilioVectors() throws {
        let rows: [(rtt: Double, jitter: Double, loss: Double, mos: Double)] = [
            (0, 0, 0, 4.433327950361177),
            (100, 10, 0, 4.374392184773176),
            (200, 30, 1, 3.9166933967301762),
            (300, 50, 3, 3.0098987945061766),
            (50, 5, 10, 3.5027237881671764),
            (900, 30, 0, 1.031963467250176),
            (1000, 0, 0, 1.0000314733439999),  // R 0 floored to 6.52
            (1000, 0, 1, 1.0),                 // loss beyond R/2.5: R = 0
            (20, 2, 37.5, 1.0000314733439999),
            (20, 2, 40, 1.0),
        ]
        for row in rows {
            let mos = try XCTUnwrap(IndustryScores.twilioMOS(roundTripTimeMs: row.rtt, jitterMs: row.jitter,
                                                              lossPercent: row.loss))
            XCTAssertEqual(mos, row.mos, accuracy: 1e-9, "rtt \(row.rtt) jitter \(row.jitter) loss \(row.loss)")
        }
        XCTAssertEqual(try XCTUnwrap(IndustryScores.twilioMOS(roundTripTimeMs: 0, jitterMs: 0, lossPercent: 0)),
                       4.433, accuracy: 5e-4)
        XCTAssertNil(IndustryScores.twilioMOS(roundTripTimeMs: -1, jitterMs: 0, lossPercent: 0))
        XCTAssertNil(IndustryScores.twilioMOS(roundTripTimeMs: 0, jitterMs: .nan, lossPercent: 0))
        XCTAssertNil(IndustryScores.twilioMOS(roundTripTimeMs: 0, jitterMs: 0, lossPercent: -0.1))
    }
}
