import XCTest

final class CallLogTestsPlaceholder: XCTestCase {}
