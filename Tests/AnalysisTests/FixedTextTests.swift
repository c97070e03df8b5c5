@testable import Analysis
import Foundation
import XCTest

final class FixedTextTests: XCTestCase {
    /// Stored texts keep the numbers `String(format:)` wrote: the same digits for values that
    /// sit on a rounding tie in decimal but not in binary (0.05, 2.675), exact ties (0.125,
    /// 2.5: to even), negatives that round to zero, huge values, and values that are not numbers.
    func testDecimalIsWhatStringFormatPrints() {
        var values: [Double] = [
            0, -0.0, 0.05, 0.15, 0.25, 0.125, 2.5, 3.5, 2.675, 1.005, -0.04, -2.5, 99.95, 4.495,
            1e300, -1e300, .greatestFiniteMagnitude, .leastNonzeroMagnitude, .nan, .infinity, -.infinity,
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            // Hundredths and thousandths land on ties often; the rest anywhere.
            let k = Double(Int.random(in: -100_000...100_000, using: &generator))
            values += [k / 100, k / 1000, k / 8, Double.random(in: -1e6...1e6, using: &generator)]
        }
        for v in values {
            for places in 0...3 {
                XCTAssertEqual(FixedText.decimal(v, places: places), String(format: "%.\(places)f", v), "\(v) with \(places) places")
            }
        }
    }

    /// The integer path (up to 3 places, below 2^53) against C's own digits, over any bit
    /// pattern, near the path's edges, and on subnormals; and it takes the values texts hold.
    func testIntegerDigitsAreWhatCPrints() throws {
        var values: [Double] = [
            0x1p53 - 1, -(0x1p53 - 1), 0x1p52, 0x1p52 + 0.5, 0x1p52 - 0.5, 0x1p-1074, 0x1p-1022,
            0x1p-60, 0x1p-64, 0x1p-65, 0.0005, 0.0015, 0.0025, 1e-3 / 2,
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50_000 {
            let bits = Double(bitPattern: generator.next())
            let scaled =
                Double.random(in: 0...1, using: &generator) * Double(sign: .plus, exponent: Int.random(in: -80...53, using: &generator), significand: 1)
            values += [bits, scaled, -scaled]
        }
        var exact = 0
        for v in values {
            for places in 0...3 {
                let c = FixedText.printed(v, places: places)
                if let digits = FixedText.exactDecimal(v, places: places) {
                    exact += 1
                    XCTAssertEqual(digits, c, "\(v) with \(places) places")
                }
                XCTAssertEqual(FixedText.decimal(v, places: places), c, "\(v) with \(places) places")
            }
        }
        XCTAssertGreaterThan(exact, 400_000)
        XCTAssertEqual(FixedText.exactDecimal(4.25, places: 2), "4.25")
        XCTAssertNil(FixedText.exactDecimal(1, places: 4))
        XCTAssertNil(FixedText.exactDecimal(.nan, places: 1))
    }
}
