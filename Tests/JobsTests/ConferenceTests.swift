import CallLog
import Foundation
import Importers
import Jobs
import SQLiteDatabase
import Store
import TestSupport
import XCTest

/// Conferences in the store: legs linked by the meeting their dumps name, whatever runs brought
/// them, and rows that are a function of the calls stored.
///
/// The dumps are rtcstats-server's own test files (jitsi/rtcstats-server, MIT): real Jitsi Meet
/// sessions whose `identity` lines name the meeting (`confID`, `meetingUniqueId`).
final class ConferenceTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("conferences") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("ImportersTests/Fixtures/rtcstats-server")

    /// Two participants of the meeting "closeoutfitsusefast" (each dump one browser, talking to
    /// the other peer to peer), two sessions of "fullmechanismslastimpolitely" through the
    /// bridge, and a newer dump naming its meeting by `meetingUniqueId` and its endpoint.
    static let dumps = [
        "google-legacy-stats-p2p", "google-legacy-stats-multiple-pc", "google-legacy-stats-sfu", "google-standard-stats-sfu",
        "firefox97-standard-stats-sfu",
    ]

    /// Each dump imported to a log of its own.
    func importDumps() throws -> [String] {
        try Self.dumps.map { name in
            let path = dir.appendingPathComponent("\(name).ndjson").path
            let w = try LogWriter(path: path)
            let result = DumpImport(path: Self.fixtures.appendingPathComponent("\(name).zst").path).run { try w.append($0) }
            try w.close()
            XCTAssertNil(result.failure, name)
            return path
        }
    }

    func analyze(_ paths: [String], db: String) throws {
        _ = try AnalyzeRun(options: AnalyzeRun.Options(paths: paths, database: db)).run()
    }

    func rows(_ db: String, _ sql: String) throws -> [[String]] {
        try SQLiteReader(path: db).connection.rows(sql).map { $0.map(\.description) }
    }

    func testJitsiDumpsOfOneMeetingAreOneConference() throws {
        let db = dir.appendingPathComponent("c.sqlite").path
        try analyze(try importDumps(), db: db)
        XCTAssertEqual(
            try rows(db, "SELECT conference_id, participants, legs FROM conferences ORDER BY conference_id"),
            [
                ["192.168.1.234:8080/closeoutfitsusefast", "2", "2"],
                ["192.168.1.234:8080/fullmechanismslastimpolitely", "2", "2"],
                ["eb568c58-b21d-4e7b-b566-665a90d1a009", "1", "1"],
            ])
        // The two browsers of closeoutfitsusefast heard each other: every stream one received,
        // the other sent (SSRCs), and their legs are linked by both clues.
        XCTAssertEqual(
            try rows(
                db,
                """
                SELECT call_id, linked_by, streams_matched FROM conference_participants
                WHERE conference_id LIKE '%closeoutfitsusefast' ORDER BY call_id
                """),
            [["google-legacy-stats-multiple-pc", "conference+ssrc", "4"], ["google-legacy-stats-p2p", "conference+ssrc", "4"]])
        let matched = try rows(
            db,
            """
            SELECT DISTINCT receiver_call_id, sender_call_id FROM conference_matrix
            WHERE conference_id LIKE '%closeoutfitsusefast' AND matched_by = 'ssrc' ORDER BY 1
            """)
        XCTAssertEqual(
            matched, [["google-legacy-stats-multiple-pc", "google-legacy-stats-p2p"], ["google-legacy-stats-p2p", "google-legacy-stats-multiple-pc"]])
        // The newer dump's participant is its endpoint id, not a person's name.
        XCTAssertEqual(try rows(db, "SELECT participant FROM conference_participants WHERE call_id = 'firefox97-standard-stats-sfu'"), [["59d7f6f7"]])
        // A conference of two compares each receiver with nothing: a poor slot there is never
        // blamed on a sender's uplink or a receiver's downlink.
        XCTAssertEqual(
            try rows(db, "SELECT count(*) FROM conference_matrix WHERE poor = 1 AND cause NOT IN ('unknown', 'server_or_path')"), [["0"]])
    }

    /// Legs analysed one run each, in another order, give the rows of one run of all.
    func testLegsArrivingInLaterRunsEndAsOneRun() throws {
        let logs = try importDumps()
        let once = dir.appendingPathComponent("once.sqlite").path
        try analyze(logs, db: once)
        let piecewise = dir.appendingPathComponent("piecewise.sqlite").path
        for log in logs.reversed() { try analyze([log], db: piecewise) }
        // Every column but the filing number, which follows the order calls were written.
        let compared = """
            SELECT conference_id, call_id, participant, joined_ts, left_ts, linked_by, streams_sent, streams_received,
                   streams_matched, poor_received_minutes, own_downlink_minutes, spoiled_for_others_minutes, spoiled_participants
            FROM conference_participants ORDER BY call_id
            """
        XCTAssertEqual(try rows(piecewise, compared), try rows(once, compared))
        let matrix = "SELECT * FROM conference_matrix ORDER BY receiver_call_id, stream_id, slot_start_ts"
        XCTAssertEqual(try rows(piecewise, matrix), try rows(once, matrix))
        XCTAssertGreaterThan(try rows(once, "SELECT count(*) FROM conference_matrix")[0][0], "0")
        // A rerun of everything changes nothing; forgetting a leg takes it out of its conference.
        try analyze(logs, db: piecewise)
        XCTAssertEqual(try rows(piecewise, matrix), try rows(once, matrix))
        // Each participant row was made from its leg as stored now (a leg written again has a
        // new call_key, and its conference is made again).
        XCTAssertEqual(
            try rows(piecewise, "SELECT count(*) FROM conference_participants p JOIN calls c USING (call_id) WHERE p.call_key != c.call_key"),
            [["0"]])
        let store = try SQLiteStore(path: piecewise)
        _ = try store.removeCalls(["google-legacy-stats-p2p"])
        XCTAssertEqual(
            try rows(piecewise, "SELECT legs, participants FROM conferences WHERE conference_id LIKE '%closeoutfitsusefast'"), [["1", "1"]])
        XCTAssertEqual(
            try rows(piecewise, "SELECT count(*) FROM conference_matrix WHERE receiver_call_id = 'google-legacy-stats-p2p'"), [["0"]])
        XCTAssertEqual(
            try rows(piecewise, "SELECT count(*) FROM conference_matrix WHERE sender_call_id = 'google-legacy-stats-p2p'"), [["0"]],
            "the other leg's streams from it are no longer matched")
    }

    /// A database of schema 6 (before conferences), holding real conference legs, is upgraded
    /// in place by the next run, which reads nothing new, and then equals a database made fresh
    /// from the same dumps, table for table.
    func testAVersion6DatabaseIsUpgradedAndEqualsAFreshOne() throws {
        let logs = try importDumps()
        let fresh = dir.appendingPathComponent("fresh.sqlite").path
        try analyze(logs, db: fresh)
        let old = dir.appendingPathComponent("v6.sqlite").path
        try analyze(logs, db: old)
        try OlderSchemas.makeVersion6(try Database(path: old))
        XCTAssertEqual(try rows(old, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'conference%'"), [["0"]])
        let upgrade = try AnalyzeRun(options: AnalyzeRun.Options(paths: logs, database: old)).run()
        XCTAssertEqual(upgrade.upgradedFrom, 6)
        XCTAssertEqual(upgrade.callsInRun, 0, "nothing read again")
        XCTAssertGreaterThan(Int(try rows(old, "SELECT count(*) FROM conference_participants")[0][0]) ?? 0, 0)
        let compared = try DatabaseComparison.compare(old, fresh)
        for t in compared { XCTAssertTrue(t.same, "\(t.name): \(t.onlyInFirst) only upgraded, \(t.onlyInSecond) only fresh") }
        XCTAssertTrue(compared.contains { $0.name == "conference_matrix" })
    }
}
