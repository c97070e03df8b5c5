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

    /// The simulated conference's known answer (`conference-answer.json`, written beside the
    /// logs) against what `analyze` attributed: every poor received stream-slot has the cause the
    /// impairments give (a slot is the bad path's when the window covers most of it), no clean
    /// participant's uplink or downlink is blamed, and no slot inside a window is missed.
    func testAttributionFindsTheBadUplinkAndTheBadDownlink() throws {
        let logs = dir.appendingPathComponent("conf").path
        XCTAssertEqual(try callstats(["simulate", "--conference", "6", "--seed", "3", "--out", logs]).status, 0)
        let db = dir.appendingPathComponent("conf.sqlite").path
        let analyze = try callstats(["analyze", logs, "--db", db, "--quiet"])
        XCTAssertEqual(analyze.status, 0, analyze.err)

        let answer = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: logs + "/conference-answer.json"))) as? [String: Any])
        var windows: [String: (up: [Int64]?, down: [Int64]?)] = [:]
        for p in try XCTUnwrap(answer["participants"] as? [[String: Any]]) {
            let name = try XCTUnwrap(p["participant"] as? String)
            windows[name] = ((p["uplinkWindow"] as? [NSNumber])?.map(\.int64Value), (p["downlinkWindow"] as? [NSNumber])?.map(\.int64Value))
        }
        func covers(_ w: [Int64]?, _ from: Int64, _ to: Int64) -> Bool {
            guard let w else { return false }
            return 2 * (min(w[1], to) - max(w[0], from)) >= to - from
        }
        let cells = try rows(
            db, "SELECT receiver_participant, sender_participant, slot_start_ts, slot_end_ts, poor, coalesce(cause, '') FROM conference_matrix")
        // 60 received streams over 12 slots, less a partial first slot where a participant
        // joined late (a slot is judged when intervals cover half of it).
        XCTAssertTrue((60 * 11...60 * 12).contains(cells.count), "\(cells.count) stream-slots")
        var poor = 0, right = 0, missed = 0
        for c in cells {
            let up = covers(windows[c[1]]?.up, Int64(c[2])!, Int64(c[3])!)
            let down = covers(windows[c[0]]?.down, Int64(c[2])!, Int64(c[3])!)
            let truth = up && down ? "both" : up ? "sender_uplink" : down ? "receiver_downlink" : ""
            if c[4] == "1" {
                poor += 1
                if c[5] == truth { right += 1 }
                if c[5] == "sender_uplink" || c[5] == "both" { XCTAssertEqual(c[1], "p1", "a clean uplink blamed: \(c)") }
                if c[5] == "receiver_downlink" || c[5] == "both" { XCTAssertEqual(c[0], "p2", "a clean downlink blamed: \(c)") }
            } else if !truth.isEmpty {
                missed += 1
            }
        }
        XCTAssertGreaterThan(poor, 100)
        XCTAssertGreaterThanOrEqual(Double(right), 0.95 * Double(poor), "\(right) of \(poor) poor stream-slots attributed right")
        XCTAssertLessThanOrEqual(missed, poor / 20, "slots inside a bad window not judged poor")
        // Who spoiled whose call: p1's uplink, for the five others; p2's own downlink.
        XCTAssertEqual(try rows(db, "SELECT participants, worst_uplink FROM conferences"), [["6", "p1"]])
        XCTAssertEqual(
            try rows(db, "SELECT participant, participants_affected, spoiled_minutes > 5, own_downlink_minutes > 1 FROM conference_offenders"),
            [["p1", "5", "1", "0"], ["p2", "0", "0", "1"]])
        XCTAssertEqual(
            try rows(db, "SELECT call_id, code, value FROM findings WHERE code LIKE 'caused_poor_%' ORDER BY code"),
            [["conf-3-p1", "caused_poor_audio_for", "5"], ["conf-3-p1", "caused_poor_video_for", "5"]])
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
