import CallLog
import Foundation
import Importers
import Jobs
import Report
import SQLiteDatabase
import Store
import TestSupport
import XCTest

final class ReportTests: XCTestCase {
    func write(_ db: String) throws -> (html: String, result: ReportWriter.Result) {
        let out = ReportFixtures.directory.appendingPathComponent("report-\(UUID().uuidString).html").path
        let r = try ReportWriter.write(database: db, output: out)
        return (try String(contentsOfFile: out, encoding: .utf8), r)
    }

    /// Every section is there, and what the page will show adds up to what SQL says.
    func testSampleReportMatchesTheDatabase() throws {
        let db = ReportFixtures.sampleDatabase
        let (html, result) = try write(db)
        for id in ["summary", "grades", "mos", "hists", "breakdowns", "worst", "drill", "from", "to", "dim", "val"] {
            XCTAssertTrue(html.contains("id=\"\(id)\""), "section \(id)")
        }
        XCTAssertFalse(html.contains("http://") || html.contains("https://"), "nothing is fetched from the network")
        let store = try SQLiteStore(path: db, forWriting: false)
        func count(_ sql: String) throws -> Int { Int(try store.db.scalar(sql)?.int64 ?? -1) }
        let calls = try count("SELECT count(*) FROM calls")
        XCTAssertEqual(result.calls, Int64(calls))
        XCTAssertEqual(result.poor, Int64(try count("SELECT count(*) FROM calls WHERE grade = 'poor'")))

        let data = try ReportFixtures.data(ofPage: html)
        let meta = try XCTUnwrap(data["meta"] as? [String: Any])
        XCTAssertEqual(meta["calls"] as? Int, calls)
        XCTAssertEqual(meta["period"] as? String, "hour", "the sample spans a week: hourly buckets")
        XCTAssertEqual(meta["grading"] as? String, "defaults")

        // Over time: the `all` rows add up to every call, by grade.
        let series = try XCTUnwrap(data["series"] as? [String: Any])
        let columns = try XCTUnwrap(series["columns"] as? [String])
        let rows = try XCTUnwrap(series["rows"] as? [[Any]])
        func column(_ name: String) -> Int { columns.firstIndex(of: name)! }
        let all = rows.filter { $0[column("dimension")] as? String == "all" }
        XCTAssertEqual(all.reduce(0) { $0 + ($1[column("calls")] as! Int) }, calls)
        XCTAssertEqual(all.reduce(0) { $0 + ($1[column("poor")] as! Int) }, Int(result.poor))
        let networks = Set(rows.filter { $0[column("dimension")] as? String == "network" }.map { $0[column("value")] as! String })
        XCTAssertEqual(networks, Set(try store.db.rows("SELECT DISTINCT network FROM calls").compactMap { $0[0].string }))

        // Distributions: every call with a MOS is in exactly one MOS bin of the all-calls cells.
        let hist = try XCTUnwrap(data["histograms"] as? [String: Any])
        let metrics = try XCTUnwrap(hist["metrics"] as? [[String: Any]])
        let mos = try XCTUnwrap(metrics.first { $0["name"] as? String == "mos" })
        let cells = try XCTUnwrap(mos["cells"] as? [[Int]])
        XCTAssertEqual(cells.filter { $0[1] == -1 }.reduce(0) { $0 + $1[4] }, try count("SELECT count(*) FROM calls WHERE mos_cq IS NOT NULL"))
        let networkIndex = try XCTUnwrap((data["dimensions"] as? [String])?.firstIndex(of: "network"))
        let wifi = try XCTUnwrap(((hist["values"] as? [String: [String]])?["network"])?.firstIndex(of: "wifi"))
        XCTAssertEqual(
            cells.filter { $0[1] == networkIndex && $0[2] == wifi }.reduce(0) { $0 + $1[4] },
            try count("SELECT count(*) FROM calls WHERE mos_cq IS NOT NULL AND network = 'wifi'"))

        // Worst calls: poor first by sustained MOS, each with its findings and a drill-down.
        let worst = try XCTUnwrap(data["worst"] as? [[String: Any]])
        XCTAssertEqual(worst.count, min(200, try count("SELECT count(*) FROM calls WHERE grade IN ('poor', 'no_media')")))
        let firstID = try XCTUnwrap(worst.first?["id"] as? String)
        XCTAssertEqual(firstID, try store.db.scalar("SELECT call_id FROM calls WHERE grade = 'poor' ORDER BY mos_worst, call_id LIMIT 1")?.string)
        XCTAssertEqual(
            (worst.first?["findings"] as? [Any])?.count,
            try count("SELECT count(*) FROM findings WHERE severity != 'info' AND call_id = '\(firstID)'"))
        let drill = try XCTUnwrap(data["drill"] as? [String: [String: Any]])
        XCTAssertEqual(drill.count, 50)
        let intervals = try count(
            """
            SELECT count(*) FROM intervals i JOIN streams s USING (call_id, stream_id)
            WHERE i.call_id = '\(firstID)' AND s.direction = 'inbound'
            """)
        XCTAssertGreaterThan(intervals, 0)
        XCTAssertEqual((drill[firstID]?["audio"] as? [Any]).map(\.count).map { $0 + ((drill[firstID]?["video"] as? [Any])?.count ?? 0) }, intervals)
    }

    /// Text from logs reaches the page only as data: no markup, no script, intact when read back.
    func testHostileTextIsInert() throws {
        let (html, _) = try write(try ReportFixtures.hostileDatabase())
        XCTAssertEqual(html.components(separatedBy: "</script>").count - 1, 2, "only the page's own two script blocks end")
        XCTAssertFalse(html.contains("<img"))
        let data = try ReportFixtures.data(ofPage: html)
        let worst = try XCTUnwrap(data["worst"] as? [[String: Any]])
        XCTAssertEqual(worst.first?["platform"] as? String, ReportFixtures.hostile, "the text reads back unchanged")
        XCTAssertEqual(worst.first?["id"] as? String, "call-" + ReportFixtures.hostile)
    }

    /// The header says which thresholds the grades come from when they are not the defaults.
    func testTheReportSaysHowCallsWereGraded() throws {
        let db = ReportFixtures.directory.appendingPathComponent("graded-\(UUID().uuidString).sqlite").path
        try FileManager.default.copyItem(atPath: ReportFixtures.sampleDatabase, toPath: db)
        try SQLiteStore(path: db).db.run("UPDATE meta SET value = '{\"jitter_warn_ms\": 40, \"loss_warn_pct\": 2}' WHERE key = 'analysis_config'")
        let meta = try XCTUnwrap(try ReportFixtures.data(ofPage: write(db).html)["meta"] as? [String: Any])
        XCTAssertEqual(meta["grading"] as? String, "loss_warn_pct 2 (default 1), jitter_warn_ms 40 (default 30)")
    }

    /// A poor call that is one leg of a conversation shows its sent direction and its
    /// conversation in the worst calls: the recording's two sides as two legs over a 900 ms
    /// round trip.
    func testWorstCallsShowTheSentDirectionAndTheConversation() throws {
        guard let url = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is absent") }
        var records = ChromiumImporter().convert(path: url.path).records
        RecordingLegs.editReports(&records) { o in
            if o["type"]?.stringValue == "remote-inbound-rtp" {
                o["roundTripTime"] = 0.9
                if let n = o["roundTripTimeMeasurements"]?.doubleValue { o["totalRoundTripTime"] = .number(0.9 * n) }
            }
        }
        let legs = RecordingLegs.split(records, a: "slow-a", b: "slow-b")
        let dir = ReportFixtures.directory.appendingPathComponent("legs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let log = dir.appendingPathComponent("legs.ndjson").path
        let w = try LogWriter(path: log)
        for r in legs.a + legs.b { try w.append(r) }
        try w.close()
        let db = dir.appendingPathComponent("legs.sqlite").path
        _ = try AnalyzeRun(options: .init(paths: [log], database: db)).run()
        let worst = try XCTUnwrap(try ReportFixtures.data(ofPage: write(db).html)["worst"] as? [[String: Any]])
        XCTAssertEqual(worst.count, 2)
        let store = try SQLiteStore(path: db, forWriting: false)
        for row in worst {
            let id = try XCTUnwrap(row["id"] as? String)
            XCTAssertEqual(row["conversation"] as? String, "slow-a", id)
            XCTAssertEqual(row["legs"] as? Int, 2, id)
            let sent = try XCTUnwrap(try store.db.scalar("SELECT mos_worst_sent FROM calls WHERE call_id = ?", [.text(id)])?.double)
            XCTAssertEqual(try XCTUnwrap(row["mos_worst_sent"] as? Double), sent, accuracy: 0.0005, id)
        }
    }

    /// The simulated conference of six: listed with p1 as the worst uplink, and its drill-down
    /// shows p2's slots poor through its own downlink and names p1 as the sender of the
    /// streams whose uplink spoiled them, as `conference_matrix` and `conference_offenders` say.
    func testConferenceIsListedWithItsDrillDown() throws {
        let db = ReportFixtures.conferenceDatabase
        let (html, _) = try write(db)
        XCTAssertTrue(html.contains("<section id=\"conferences\"") && html.contains("id=\"conf-matrix\""), "the section")
        let conferences = try XCTUnwrap(try ReportFixtures.data(ofPage: html)["conferences"] as? [String: Any])
        let rows = try XCTUnwrap(conferences["rows"] as? [[String: Any]])
        XCTAssertEqual(rows.count, 1)
        let row = try XCTUnwrap(rows.first)
        XCTAssertEqual(row["id"] as? String, "conf-1")
        XCTAssertEqual(row["participants"] as? Int, 6)
        XCTAssertEqual(row["worst_uplink"] as? String, "p1")
        let store = try SQLiteStore(path: db, forWriting: false)
        XCTAssertEqual(
            try XCTUnwrap(row["poor_minutes"] as? Double), try XCTUnwrap(store.db.scalar("SELECT poor_participant_minutes FROM conferences")?.double),
            accuracy: 0.001)
        XCTAssertEqual(row["sender_uplink"] as? Int, Int(try XCTUnwrap(store.db.scalar("SELECT sender_uplink_slots FROM conferences")?.int64)))

        let drill = try XCTUnwrap((conferences["drill"] as? [String: [String: Any]])?["conf-1"])
        let participants = try XCTUnwrap(drill["rows"] as? [[String: Any]])
        XCTAssertEqual(Set(participants.compactMap { $0["name"] as? String }), Set((1...6).map { "p\($0)" }))
        let columns = try XCTUnwrap(drill["columns"] as? Int)
        XCTAssertEqual(drill["slot_ms"] as? Int, 10_000)
        for p in participants { XCTAssertEqual((p["states"] as? String)?.count, columns, "a state per column: \(p["name"] ?? "?")") }
        func poorCells(_ name: String) throws -> [[Any]] {
            try XCTUnwrap(participants.first { $0["name"] as? String == name }?["poor"] as? [[Any]])
        }
        // p2's poor slots, column by column, as the matrix says: those with a receiver_downlink
        // or both cause carry D or B.
        let p2 = try poorCells("p2")
        let downlinkSlots = try store.db.rows(
            """
            SELECT DISTINCT (slot_start_ts - (SELECT min(slot_start_ts) FROM conference_matrix)) / 10000 FROM conference_matrix
            WHERE receiver_participant = 'p2' AND cause IN ('receiver_downlink', 'both') ORDER BY 1
            """
        ).compactMap { $0[0].int64 }.map(Int.init)
        XCTAssertFalse(downlinkSlots.isEmpty, "the simulation impairs p2's downlink")
        let downlinkCells = p2.filter { ($0[1] as? String)?.contains(where: { "DB".contains($0) }) == true }.compactMap { $0[0] as? Int }
        XCTAssertEqual(downlinkCells, downlinkSlots)
        let p2States = try XCTUnwrap(participants.first { $0["name"] as? String == "p2" }?["states"] as? String)
        for column in downlinkSlots { XCTAssertEqual(Array(p2States)[column], "3", "p2's column \(column) is poor") }
        // A poor cell of p3 names p1 as the sender and its uplink as the cause.
        let p3 = try XCTUnwrap(try poorCells("p3").first)
        let senders = try XCTUnwrap(p3[2] as? [[String]])
        XCTAssertEqual(senders.first?[0], "p1")
        XCTAssertEqual(senders.first?[2], "U")
        XCTAssertFalse(try poorCells("p1").contains { ($0[1] as? String)?.contains("D") == true }, "p1's downlink is fine")
        // The offenders: p1's uplink spoiled five participants' streams, p2's downlink its own.
        let offenders = try XCTUnwrap(drill["offenders"] as? [[Any]])
        XCTAssertEqual(offenders.first?[0] as? String, "p1")
        XCTAssertEqual(offenders.first?[2] as? Int, 5)
        XCTAssertEqual(
            try XCTUnwrap(offenders.first?[1] as? Double),
            try XCTUnwrap(store.db.scalar("SELECT spoiled_minutes FROM conference_offenders WHERE participant = 'p1'")?.double), accuracy: 0.001)
        XCTAssertTrue(offenders.contains { $0[0] as? String == "p2" && ($0[3] as? Double ?? 0) > 0 }, "p2's own downlink")
    }

    /// The page stays small on long and large conferences: a drill-down merges slots into at
    /// most `conferenceColumns` columns (each the worst of its slots), draws at most
    /// `conferenceParticipants` participants (those with the most poor minutes), and names at
    /// most `conferenceSendersPerCell` senders in a cell, counting the rest.
    func testConferenceDrillDownIsCapped() throws {
        let store = try SQLiteStore(path: ReportFixtures.conferenceDatabase, forWriting: false)
        func drill(_ options: ReportData.Options) throws -> [String: Any] {
            let data = try ReportData(database: store.db, name: "conference", generatedAt: 0, options: options)
            let page = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(data.json.serialized().utf8)) as? [String: Any])
            return try XCTUnwrap(((page["conferences"] as? [String: Any])?["drill"] as? [String: [String: Any]])?["conf-1"])
        }
        let full = try drill(ReportData.Options())
        var options = ReportData.Options()
        options.conferenceColumns = 5
        options.conferenceParticipants = 3
        options.conferenceSendersPerCell = 1
        let capped = try drill(options)
        let columns = try XCTUnwrap(full["columns"] as? Int)
        let merge = (columns + 4) / 5
        XCTAssertEqual(capped["columns"] as? Int, (columns + merge - 1) / merge)
        XCTAssertEqual(capped["column_ms"] as? Int, 10_000 * merge)
        let rows = try XCTUnwrap(capped["rows"] as? [[String: Any]])
        XCTAssertEqual(rows.compactMap { $0["name"] as? String }.first, "p1", "the participant with the most minutes spoiled comes first")
        XCTAssertEqual(rows.count, 3)
        let fullRows = try XCTUnwrap(full["rows"] as? [[String: Any]])
        for row in rows {
            let name = try XCTUnwrap(row["name"] as? String)
            let fine = Array(try XCTUnwrap(fullRows.first { $0["name"] as? String == name }?["states"] as? String))
            let merged = Array(try XCTUnwrap(row["states"] as? String))
            for (c, state) in merged.enumerated() {
                XCTAssertEqual(state, fine[(c * merge)..<min(fine.count, (c + 1) * merge)].max(), "\(name) column \(c): the worst of its slots")
            }
        }
        // p2's downlink cells: every sender poor at once, one named and the rest counted.
        let p2 = try XCTUnwrap(rows.first { $0["name"] as? String == "p2" }?["poor"] as? [[Any]])
        XCTAssertTrue(p2.allSatisfy { ($0[2] as? [Any])?.count == 1 })
        XCTAssertTrue(p2.contains { ($0[3] as? Int ?? 0) >= 4 }, "the senders not named are counted")
    }

    /// A database without conferences, or one older than the conference tables, has no section.
    func testNoConferencesNoSection() throws {
        let (html, _) = try write(ReportFixtures.sampleDatabase)
        XCTAssertFalse(html.contains("id=\"conferences\""))
        XCTAssertTrue(try ReportFixtures.data(ofPage: html)["conferences"] is NSNull)
        let db = ReportFixtures.directory.appendingPathComponent("no-conference-tables-\(UUID().uuidString).sqlite").path
        try FileManager.default.copyItem(atPath: ReportFixtures.conferenceDatabase, toPath: db)
        let store = try SQLiteStore(path: db)
        try store.db.run("DROP VIEW conferences")
        try store.db.run("DROP VIEW conference_offenders")
        try store.db.run("DROP TABLE conference_matrix")
        try store.db.run("DROP TABLE conference_participants")
        let older = try write(db)
        XCTAssertEqual(older.result.calls, 6)
        XCTAssertFalse(older.html.contains("id=\"conferences\""), "a database without the tables is reported without the section")
    }

    /// Participant names and conference ids are data: no markup, intact when read back.
    func testHostileConferenceTextIsInert() throws {
        let (html, _) = try write(try ReportFixtures.hostileConferenceDatabase())
        XCTAssertEqual(html.components(separatedBy: "</script>").count - 1, 2, "only the page's own two script blocks end")
        XCTAssertFalse(html.contains("<img"))
        let conferences = try XCTUnwrap(try ReportFixtures.data(ofPage: html)["conferences"] as? [String: Any])
        let row = try XCTUnwrap((conferences["rows"] as? [[String: Any]])?.first)
        XCTAssertEqual(row["worst_uplink"] as? String, ReportFixtures.hostile + "p1", "the text reads back unchanged")
    }

    func testEmptyDatabaseSaysSo() throws {
        let dir = ReportFixtures.directory.appendingPathComponent("empty-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let db = dir.appendingPathComponent("empty.sqlite").path
        _ = try SQLiteStore(path: db)  // creates the schema
        let (html, result) = try write(db)
        XCTAssertEqual(result.calls, 0)
        XCTAssertTrue(html.contains("holds no calls yet"))
        XCTAssertEqual((try ReportFixtures.data(ofPage: html)["worst"] as? [Any])?.count, 0)
    }

    func testMissingDatabaseIsAnErrorNamingIt() {
        let path = ReportFixtures.directory.appendingPathComponent("no-such.sqlite").path
        XCTAssertThrowsError(try ReportWriter.write(database: path, output: path + ".html")) { error in
            XCTAssertTrue(String(describing: error).contains("no-such.sqlite"), "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "nothing is created")
    }
}
