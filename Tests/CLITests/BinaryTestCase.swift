import Foundation
import TestSupport
import XCTest

/// A test of the built `callstats` binary, run in a temporary folder of its own that is removed
/// afterwards.
class BinaryTestCase: XCTestCase {
    /// The name the temporary folder starts with.
    var folderName: String { "cli" }
    var dir: URL!

    override func setUp() { dir = TestPaths.temporaryDirectory(folderName) }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// Runs `callstats args` in the test's folder; returns exit status, stdout and stderr.
    @discardableResult
    func callstats(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
        let r = try runProcess(CommandLineTests.binary, args, in: dir)
        return (r.status, r.out, r.err)
    }
}
