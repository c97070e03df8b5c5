import CallLog
import Foundation
import Jobs
import Simulator
import Store
import TestSupport
import XCTest

/// The ledger recognises content by every byte of it, and a file read again (its key changed)
/// replaces its calls rather than adding to them.
final class LedgerKeyTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("ledger-key") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// A plain log: 100 KiB of one call's records, then one call named `middle`, then 100 KiB
    /// more of the first call's records. Two such files differ only in the middle.
    func logWithMiddleCall(_ middle: String, name: String) throws -> String {
        let path = dir.appendingPathComponent(name).path
        var text = ""
        func append(_ r: LogRecord) { text += r.jsonLine + "\n" }
        func padding(from start: Int64) {
            let before = text.utf8.count
            var ts = start
            while text.utf8.count - before < 100 << 10 {
                append(.event(call: "padding", ts: ts, action: EventName.callState, type: "mute"))
                ts += 1
            }
        }
        append(
            .callInfo(
                call: "padding", ts: 1_000, direction: "outgoing", sdk: "s", sdkVersion: "1", app: "a",
                appVersion: "1", platform: "ios", network: "wifi", media: ["audio"]))
        padding(from: 2_000)
        append(
            .callInfo(
                call: middle, ts: 5_000, direction: "incoming", sdk: "s", sdkVersion: "1", app: "a",
                appVersion: "1", platform: "ios", network: "wifi", media: ["audio"]))
        append(.end(call: middle, ts: 6_000, reason: "terminatedLocally"))
        padding(from: 500_000)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func storedCallIDs(_ db: String) throws -> [String] {
        try SQLiteStore(path: db, forWriting: false).db.rows("SELECT call_id FROM calls ORDER BY call_id").compactMap { $0[0].string }
    }

    func testFilesDifferingOnlyInTheMiddleAreBothIngested() throws {
        let a = try logWithMiddleCall("middle-a", name: "a.ndjson")
        let b = try logWithMiddleCall("middle-b", name: "b.ndjson")
        let bytesA = try Data(contentsOf: URL(fileURLWithPath: a)), bytesB = try Data(contentsOf: URL(fileURLWithPath: b))
        XCTAssertEqual(bytesA.count, bytesB.count)
        XCTAssertEqual(bytesA.prefix(64 << 10), bytesB.prefix(64 << 10))
        XCTAssertEqual(bytesA.suffix(64 << 10), bytesB.suffix(64 << 10))
        XCTAssertNotEqual(bytesA, bytesB)

        let db = dir.appendingPathComponent("calls.sqlite").path
        let first = try AnalyzeRun(options: .init(paths: [a], database: db)).run()
        XCTAssertEqual(first.progress.filesDone, 1)
        let second = try AnalyzeRun(options: .init(paths: [b], database: db)).run()
        XCTAssertEqual(second.progress.filesDone, 1)
        XCTAssertTrue(second.alreadyIngested.isEmpty, "\(second.alreadyIngested)")
        XCTAssertEqual(try storedCallIDs(db), ["middle-a", "middle-b", "padding"])
    }

    /// A ledger written with keys of another form (an older callstats) matches nothing, so
    /// every file is read again: the database ends as it was, nothing counted twice.
    func testFilesUnderAnOlderLedgerKeyAreReadAgainWithoutCountingTwice() throws {
        let logs = dir.appendingPathComponent("logs")
        var config = SimulatorConfiguration(calls: 30, seed: 11)
        config.files = 3
        _ = try Simulator(config).write(to: logs.path) { _ in }
        let db = dir.appendingPathComponent("calls.sqlite").path
        let first = try AnalyzeRun(options: .init(paths: [logs.path], database: db)).run()
        XCTAssertEqual(first.callsInRun, 30)
        let before = try DatabaseComparison.text(of: db, .init(intervals: .everyRow, material: .bytes))
        let ledgerFigures = "SELECT path, size, records, skipped, calls FROM ingested_files ORDER BY path"
        let ledgerBefore = try SQLiteStore(path: db, forWriting: false).db.rows(ledgerFigures).map { $0.map(\.description) }

        // Keys as the ledger had them before it hashed whole files: size and a 16-digit hash.
        do {
            let store = try SQLiteStore(path: db, forWriting: true)
            try store.db.execute("UPDATE ingested_files SET fingerprint = size || '-' || printf('%016x', rowid + 0x1234)")
        }
        let second = try AnalyzeRun(options: .init(paths: [logs.path], database: db)).run()
        XCTAssertEqual(second.progress.filesDone, 3)
        XCTAssertTrue(second.alreadyIngested.isEmpty)
        XCTAssertEqual(try DatabaseComparison.text(of: db, .init(intervals: .everyRow, material: .bytes)), before)
        // The ledger keeps the older entries beside the new ones (a key is never rewritten);
        // the new ones have the same figures.
        let newKeyFigures = ledgerFigures.replacingOccurrences(of: "ORDER BY", with: "WHERE fingerprint LIKE '%-xxh64-%' ORDER BY")
        XCTAssertEqual(try SQLiteStore(path: db, forWriting: false).db.rows(newKeyFigures).map { $0.map(\.description) }, ledgerBefore)
    }
}
