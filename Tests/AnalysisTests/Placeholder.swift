import XCTest

final class AnalysisTestsPlaceholder: XCTestCase {}
