import XCTest

final class QualityTestsPlaceholder: XCTestCase {}
