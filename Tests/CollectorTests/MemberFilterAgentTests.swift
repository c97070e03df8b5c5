import CallLog
@testable import Collector
import Foundation
import TestSupport
import XCTest

final class MemberFilterAgentTests: XCTestCase {
    /// The real Chromium recording through the agent with `statsMembers` set: only the kept
    /// members are written, the log is smaller, and the analysis is the same.
    func testAgentWritesOnlyKeptMembersAndAnalysisIsUnchanged() throws {
        let rec = try Recording.load()
        let wholeDir = Logs.directory("whole")
        _ = AdapterTests.recordThroughAgent(rec, dir: wholeDir)
        let dir = Logs.directory("essential")
        let filter = StatsMemberFilter(keeping: StatsMemberFilter.essential)
        _ = AdapterTests.recordThroughAgent(rec, configuration: { $0.statsMembers = filter }, dir: dir)

        let stats = Logs.records(dir).filter { $0.kind == .stats }
        XCTAssertEqual(stats.count, Logs.records(wholeDir).filter { $0.kind == .stats }.count)
        let allowed = filter.kept.union(["id", "type", "timestamp"])
        for record in stats {
            for object in try XCTUnwrap(record["report"]?.arrayValue) {
                let keys = Set(try XCTUnwrap(object.objectValue).keys)
                XCTAssertTrue(keys.isSubset(of: allowed), "\(keys.subtracting(allowed)) written")
            }
        }
        let size = { (d: String) in Logs.files(d).reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: $1)[.size] as? Int) ?? 0) } }
        XCTAssertLessThan(Double(size(dir)), 0.8 * Double(size(wholeDir)))

        try Logs.assertSameAnalysis(dir, as: wholeDir, calls: ["chromium-a", "chromium-b"])
    }
}
