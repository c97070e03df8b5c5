import XCTest

final class IngestPlaceholder: XCTestCase {}
