import XCTest

final class CollectorTestsPlaceholder: XCTestCase {}
