import XCTest

final class CaptureTestsPlaceholder: XCTestCase {}
