import XCTest

final class StoreTestsPlaceholder: XCTestCase {}
