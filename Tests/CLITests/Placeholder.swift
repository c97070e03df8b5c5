import XCTest

final class CLITestsPlaceholder: XCTestCase {}
