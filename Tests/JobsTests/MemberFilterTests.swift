import CallLog
import Foundation
import Jobs
import Importers
@testable import MaterialScanning
import Simulator
import SQLiteDatabase
import Store
import TestSupport
import XCTest

/// The collector's opt-in member filters must not change what `callstats analyze` finds.
final class MemberFilterTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("member-filter") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// Every name the analyser's field table reads is in `StatsMemberFilter.analysed`: a field
    /// added to the analyser without being added there would be dropped by the filter.
    func testAnalysedListCoversEveryFieldTheAnalyserReads() {
        let read = Set(NumField.allCases.map(\.jsonName)).union(StrField.allCases.map(\.jsonName))
            .subtracting(["bandwidth", "cpu", "other"])  // inside qualityLimitationDurations, kept whole
        XCTAssertEqual(read.subtracting(StatsMemberFilter.analysed), [])
        XCTAssertTrue(StatsMemberFilter.analysed.isSubset(of: StatsMemberFilter.essential))
    }

    func testFilteredLogsAnalyseTheSameAsWholeOnes() throws {
        // Simulated W3C and goog calls (every profile), and the real Chromium recording.
        let simulated = dir.appendingPathComponent("simulated")
        _ = try Simulator(SimulatorConfiguration(calls: 40, seed: 17)).write(to: simulated.path) { _ in }
        var records: [LogRecord] = []
        for file in try FileManager.default.contentsOfDirectory(atPath: simulated.path).sorted() {
            let (read, issues) = LogReader(path: simulated.appendingPathComponent(file).path).readAll()
            XCTAssertEqual(issues, [])
            records += read
        }
        if let url = TestPaths.chromiumRecording {
            records += ChromiumImporter().convert(path: url.path).records
        }
        XCTAssertTrue(records.contains { $0["format"]?.stringValue == "goog" })

        func analyse(_ name: String, _ filter: StatsMemberFilter?) throws -> (dump: String, bytes: Int) {
            let folder = dir.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let w = try LogWriter(path: folder.appendingPathComponent("calls.ndjson.zst").path)
            for r in records { try w.append(filter?.apply(to: r) ?? r) }
            try w.close()
            let db = dir.appendingPathComponent("\(name).sqlite").path
            _ = try AnalyzeRun(options: AnalyzeRun.Options(paths: [folder.path], database: db)).run()
            let out = try DatabaseComparison.text(of: db)
            return (out, w.bytesWritten)
        }
        let whole = try analyse("whole", nil)
        XCTAssertGreaterThan(whole.dump.count, 10_000)
        for (name, kept) in [("essential", StatsMemberFilter.essential), ("analysed", StatsMemberFilter.analysed)] {
            let filtered = try analyse(name, StatsMemberFilter(keeping: kept))
            XCTAssertEqual(filtered.dump, whole.dump, "\(name) members give a different analysis")
            XCTAssertLessThan(filtered.bytes, whole.bytes, name)
        }
    }
}
