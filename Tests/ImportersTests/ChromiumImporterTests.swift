import CallLog
import Foundation
import Importers
import TestSupport
import XCTest

/// The real Chromium recording as log format v1.
final class ChromiumImporterTests: XCTestCase {
    func recording() throws -> String {
        guard let url = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is not present") }
        return url.path
    }

    func testEverySnapshotBecomesAStatsRecordAndEventsAreMapped() throws {
        let result = ChromiumImporter().convert(path: try recording())
        XCTAssertEqual(result.issues, [])
        XCTAssertEqual(result.skipped, 0)
        XCTAssertEqual(result.snapshots, ["a": 60, "b": 60])
        let records = result.records
        XCTAssertEqual(records.filter { $0.kind == .stats }.count, 120)
        XCTAssertEqual(records.first?.kind, .call)
        XCTAssertEqual(Set(records.map(\.call)), ["chromium-moderate"])
        let beforeEnd = records.dropLast()
        XCTAssertEqual(beforeEnd.map(\.ts), beforeEnd.map(\.ts).sorted())
        let stats = records.filter { $0.kind == .stats }
        XCTAssertEqual(Set(stats.compactMap { $0["pc"]?.stringValue }), ["a", "b"])
        XCTAssertTrue(stats.allSatisfy { $0["format"]?.stringValue == "w3c" })
        XCTAssertEqual(stats[0]["report"]?.arrayValue?.count, 33, "objects carried unchanged")

        let events = records.filter { $0.kind == .event }.map { "\($0["action"]!.stringValue!)/\($0["type"]!.stringValue!)" }
        XCTAssertEqual(events.filter { $0.hasPrefix("callMetric/") }, ["callMetric/callCreate", "callMetric/callAnswerReceived"])
        XCTAssertEqual(events.filter { $0 == "iceState/iceConnected" }.count, 2)
        XCTAssertEqual(events.filter { $0.hasPrefix("iceGathering/") }, ["iceGathering/gathering", "iceGathering/complete"])
        let connected = records.first { $0["type"]?.stringValue == "iceConnected" }!
        XCTAssertEqual(connected["detail"]?["pc"]?.stringValue, "b")

        // Side a hangs up; the closing snapshots of both sides (4 and 6 ms later) stay in the call,
        // and `end` comes last, as a collector writes it.
        let end = try XCTUnwrap(records.last)
        XCTAssertEqual(end.kind, .end)
        XCTAssertEqual(stats.last?["pc"]?.stringValue, "b")
        XCTAssertGreaterThan(stats.last!.ts, end.ts)
        XCTAssertEqual(end["reason"]?.stringValue, "terminatedLocally")
        XCTAssertEqual(end["durationMs"]?.int64Value, 1_795_349_990_335 - 1_795_349_930_390)
    }

    func testResamplingKeepsEveryFifthSnapshotPerSide() throws {
        let result = ChromiumImporter(every: 5).convert(path: try recording())
        XCTAssertEqual(result.snapshots, ["a": 12, "b": 12])
        let a = result.records.filter { $0.kind == .stats && $0["pc"]?.stringValue == "a" }.map(\.ts)
        XCTAssertEqual(a.count, 12)
        for (x, y) in zip(a, a.dropFirst()) { XCTAssertEqual(Double(y - x), 5_000, accuracy: 20) }
        XCTAssertEqual(ChromiumImporter(every: 10).convert(path: try recording()).snapshots, ["a": 6, "b": 6])
    }

    func testImportedLogReadsBackUnchanged() throws {
        let result = ChromiumImporter(every: 5).convert(path: try recording())
        let dir = TestPaths.temporaryDirectory("import")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("chromium.ndjson.zst").path
        let writer = try LogWriter(path: path)
        for r in result.records { try writer.append(r) }
        try writer.close()
        let (read, issues) = LogReader(path: path).readAll()
        XCTAssertEqual(issues, [])
        XCTAssertEqual(read.map(canonical), result.records.map(canonical))
    }
}
