import Foundation
import XCTest

/// `callstats simulate --conference`: what it writes is read by `analyze` as one call per
/// participant, and the bad uplink shows in what the server reported about its streams.
final class ConferenceSimulateTests: BinaryTestCase {
    override var folderName: String { "conference-cli" }

    /// The rows of a CSV query, header left out.
    func rows(_ db: String, _ sql: String) throws -> [[String]] {
        let r = try callstats(["query", "--db", db, "--format", "csv", sql])
        XCTAssertEqual(r.status, 0, r.err)
        return r.out.split(separator: "\n").dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
    }

    func testConferenceIsAnalysedAsOneCallPerParticipant() throws {
        let logs = dir.appendingPathComponent("conf").path
        let sim = try callstats(["simulate", "--conference", "6", "--out", logs])
        XCTAssertEqual(sim.status, 0, sim.err)
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: logs).sorted(),
            (1...6).map { "conf-1-p\($0).ndjson.zst" } + ["conference-answer.json"])
        // A second run into the same folder is refused unless forced.
        let again = try callstats(["simulate", "--conference", "6", "--out", logs])
        XCTAssertEqual(again.status, 1)
        XCTAssertTrue(again.err.contains("--force"), again.err)

        let db = dir.appendingPathComponent("conf.sqlite").path
        let analyze = try callstats(["analyze", logs, "--db", db, "--quiet"])
        XCTAssertEqual(analyze.status, 0, analyze.err)
        XCTAssertEqual(try rows(db, "SELECT count(*) FROM calls"), [["6"]])
        XCTAssertEqual(
            try rows(db, "SELECT call_id FROM calls ORDER BY call_id"), (1...6).map { ["conf-1-p\($0)"] })
        // Outbound streams as the server reported them: lossy for p1 (bad uplink for 60 % of
        // the call at 8-12 %), clean for p3.
        let p1 = try rows(db, "SELECT kind, loss_pct FROM streams WHERE call_id = 'conf-1-p1' AND direction = 'outbound' ORDER BY kind")
        XCTAssertEqual(p1.map { $0[0] }, ["audio", "video"])
        for row in p1 { XCTAssertEqual(try XCTUnwrap(Double(row[1]), "\(row)"), 6, accuracy: 2, "p1 \(row[0])") }
        let p3 = try rows(db, "SELECT kind, loss_pct FROM streams WHERE call_id = 'conf-1-p3' AND direction = 'outbound' ORDER BY kind")
        XCTAssertEqual(p3.count, 2)
        for row in p3 { XCTAssertLessThan(try XCTUnwrap(Double(row[1]), "\(row)"), 0.5, "p3 \(row[0])") }
        // Every participant received the five others' audio and video.
        XCTAssertEqual(
            try rows(db, "SELECT call_id, count(*) FROM streams WHERE direction = 'inbound' GROUP BY call_id ORDER BY call_id"),
            (1...6).map { ["conf-1-p\($0)", "10"] })
    }

    func testConferenceOptionsAreChecked() throws {
        let out = dir.appendingPathComponent("x").path
        let two = try callstats(["simulate", "--conference", "2", "--out", out])
        XCTAssertEqual(two.status, 64)
        XCTAssertTrue(two.err.contains("at least 3 participants"), two.err)
        XCTAssertEqual(try callstats(["simulate", "--conference", "2", "--bad-downlink", "0", "--seconds", "10", "--out", out]).status, 0)
        let stdout = try callstats(["simulate", "--conference", "3", "--out", "-"])
        XCTAssertEqual(stdout.status, 64)
        XCTAssertTrue(stdout.err.contains("--out needs a folder"), stdout.err)
        XCTAssertEqual(try callstats(["simulate", "--conference", "33", "--out", out]).status, 64)
        XCTAssertEqual(try callstats(["simulate", "--conference", "3", "--calls", "3", "--out", out]).status, 64)
        XCTAssertEqual(try callstats(["simulate", "--out", out]).status, 64)
    }
}
