import XCTest

final class SimulatorTestsPlaceholder: XCTestCase {}
