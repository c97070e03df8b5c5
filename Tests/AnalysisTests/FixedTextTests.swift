@testable import Analysis
import Foundation
import XCTest

final class FixedTextTests: XCTestCase {
    /// Stored texts keep the numbers `String(format:)` wrote: the same digits for values that
    /// sit on a rounding tie in decimal but not in binary (0.05, 2.675), exact ties (0.125,
    /// 2.5: to even), negatives that round to zero, huge values, and values that are not numbers.
    func testDecimalIsWhatStringFormatPrints() {
        var values: [Double] = [0, -0.0, 0.05, 0.15, 0.25, 0.125, 2.5, 3.5, 2.675, 1.005, -0.04, -2.5, 99.95, 4.495,
                                1e300, -1e300, .greatestFiniteMagnitude, .leastNonzeroMagnitude, .nan, .infinity, -.infinity]
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
}
