import Foundation
import SQLiteDatabase
import Simulator
import Store
import TestSupport
import XCTest

/// Every SQL query of the Grafana dashboards runs against the analysed `Data/` sample, with
/// Grafana's macros and the dashboard's variables filled in, so a schema change cannot break
/// a panel unnoticed.
final class GrafanaDashboardTests: XCTestCase {
    struct Query {
        var panel: String
        var sql: String
        var isVariable: Bool
    }

    static let folder = TestPaths.repositoryRoot.appendingPathComponent("Dashboards/grafana")

    /// Every dashboard JSON file of the folder, parsed.
    func dashboards() throws -> [(file: String, json: [String: Any])] {
        let files = try FileManager.default.contentsOfDirectory(atPath: GrafanaDashboardTests.folder.path).filter { $0.hasSuffix(".json") }.sorted()
        XCTAssertFalse(files.isEmpty, "no dashboards in Dashboards/grafana")
        return try files.map { f in
            let data = try Data(contentsOf: GrafanaDashboardTests.folder.appendingPathComponent(f))
            return (f, try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any]))
        }
    }

    func queries(_ dashboard: [String: Any]) -> [Query] {
        var out: [Query] = []
        func walk(_ panels: [[String: Any]]) {
            for p in panels {
                let title = p["title"] as? String ?? "?"
                for t in p["targets"] as? [[String: Any]] ?? [] {
                    out.append(Query(panel: title, sql: t["rawQueryText"] as? String ?? "", isVariable: false))
                }
                walk(p["panels"] as? [[String: Any]] ?? [])
            }
        }
        walk(dashboard["panels"] as? [[String: Any]] ?? [])
        for v in (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? [] where v["type"] as? String == "query" {
            let q = v["query"] as? [String: Any]
            out.append(Query(panel: "variable " + (v["name"] as? String ?? "?"), sql: q?["rawQueryText"] as? String ?? "", isVariable: true))
        }
        return out
    }

    /// The SQL Grafana would send: its time range in epoch ms, and the variables.
    func fill(_ sql: String, from: Int64, to: Int64, variables: [String: String]) -> String {
        var s = sql.replacingOccurrences(of: "$__from", with: String(from)).replacingOccurrences(of: "$__to", with: String(to))
        for (name, value) in variables.sorted(by: { $0.key.count > $1.key.count }) {
            s = s.replacingOccurrences(of: "${\(name)}", with: value).replacingOccurrences(of: "$\(name)", with: value)
        }
        return s
    }

    /// On the sample with a conversation and a conference added (`dashboardSample`), so that
    /// the conversations and conferences panels have one to show.
    func testEveryQueryRunsOnTheSampleWithEveryFilter() throws {
        let store = try SQLiteStore(path: ReportFixtures.dashboardSample, forWriting: false)
        let from = try XCTUnwrap(store.db.scalar("SELECT min(start_ts) FROM calls")?.int64)
        let to = try XCTUnwrap(store.db.scalar("SELECT max(start_ts) + 1 FROM calls")?.int64)
        let call = try XCTUnwrap(
            store.db.scalar(
                """
                SELECT call_id FROM calls c WHERE grade = 'poor' AND EXISTS (SELECT 1 FROM findings f WHERE f.call_id = c.call_id)
                  AND EXISTS (SELECT 1 FROM streams s WHERE s.call_id = c.call_id AND s.kind = 'video')
                ORDER BY mos_worst LIMIT 1
                """)?.string)
        var ran = 0
        for (file, dashboard) in try dashboards() {
            let all = queries(dashboard)
            XCTAssertGreaterThan(all.filter { !$0.isVariable }.count, 20, "\(file): panels with queries")
            for (dimension, value) in [("all", "*"), ("network", "wifi"), ("app_version", "acme-phone 3.2.1"), ("candidate_type", "relay")] {
                let variables = ["dimension": dimension, "value": value, "call_id": call, "conference_id": "conf-1"]
                for q in all {
                    XCTAssertFalse(q.sql.isEmpty, "\(file) '\(q.panel)': no query")
                    let sql = fill(q.sql, from: from, to: to, variables: variables)
                    XCTAssertFalse(sql.contains("$"), "\(file) '\(q.panel)': a macro or variable is left: \(sql)")
                    do {
                        let r = try store.db.query(sql)
                        XCTAssertFalse(r.columns.isEmpty, "\(file) '\(q.panel)': no columns")
                        XCTAssertFalse(r.rows.isEmpty, "\(file) '\(q.panel)' (\(dimension) = \(value)): no rows on the sample")
                        ran += 1
                    } catch {
                        XCTFail("\(file) '\(q.panel)' (\(dimension) = \(value)): \(error)")
                    }
                }
            }
        }
        XCTAssertGreaterThan(ran, 100)
    }

    /// The grade shares count `unmeasured` calls (never in `good`), and the SDK score panel counts
    /// each call with a score once by its mean and once by its lowest.
    func testUnmeasuredCallsAndTheSDKScoreAreShown() throws {
        let store = try SQLiteStore(path: ReportFixtures.sampleDatabase, forWriting: false)
        let (_, dashboard) = try XCTUnwrap(try dashboards().first { $0.file == "callstats.json" })
        let variables = ["dimension": "all", "value": "*"]
        func run(_ panel: String) throws -> (columns: [String], rows: [[SQLValue]]) {
            let q = try XCTUnwrap(queries(dashboard).first { $0.panel == panel }, panel)
            let r = try store.db.query(fill(q.sql, from: 0, to: Int64.max / 2, variables: variables))
            return (r.columns, r.rows)
        }
        let shares = try run("Share of answered calls by grade")
        XCTAssertEqual(shares.columns, ["time", "good", "fair", "poor", "no_media", "unmeasured"])
        for row in shares.rows {
            XCTAssertEqual(row[1...].compactMap(\.double).reduce(0, +), 100, accuracy: 0.3, "an hour's shares add up to its answered calls")
        }
        let scored = try XCTUnwrap(store.db.scalar("SELECT count(*) FROM calls WHERE sdk_quality_mean IS NOT NULL")?.int64)
        XCTAssertGreaterThan(scored, 0, "the sample has calls with the SDK's score")
        let sdk = try run("SDK score per call")
        XCTAssertEqual(sdk.columns, ["bin", "mean_over_time", "lowest"])
        XCTAssertEqual(sdk.rows.count, 11)
        XCTAssertEqual(sdk.rows.compactMap { $0[1].int64 }.reduce(0, +), scored)
        XCTAssertEqual(sdk.rows.compactMap { $0[2].int64 }.reduce(0, +), scored)
    }

    /// The sent direction per hour beside the received one (from the rollups' `mos_sent_*` and
    /// `loss_sent_*`, equal to what `calls` says), and the conversations with their legs.
    func testTheSentDirectionAndTheConversationsAreShown() throws {
        let store = try SQLiteStore(path: ReportFixtures.dashboardSample, forWriting: false)
        let (_, dashboard) = try XCTUnwrap(try dashboards().first { $0.file == "callstats.json" })
        func run(_ panel: String) throws -> (columns: [String], rows: [[SQLValue]]) {
            let q = try XCTUnwrap(queries(dashboard).first { $0.panel == panel }, panel)
            let r = try store.db.query(fill(q.sql, from: 0, to: Int64.max / 2, variables: ["dimension": "all", "value": "*"]))
            return (r.columns, r.rows)
        }
        let mos = try run("MOS-CQ per hour: received and sent")
        XCTAssertEqual(mos.columns, ["time", "received_p50", "received_p5", "sent_p50", "sent_p5"])
        let sentHours = mos.rows.filter { $0[3].double != nil }
        XCTAssertGreaterThan(sentHours.count, 10, "the sample's calls have a sent direction")
        for row in sentHours {
            let p50 = try XCTUnwrap(row[3].double), p5 = try XCTUnwrap(row[4].double)
            XCTAssertTrue((1...4.5).contains(p50) && p5 <= p50, "\(row)")
        }
        // An hour's sent median is one of its calls' mos_cq_sent, as nearest-rank percentiles are.
        let hour = try XCTUnwrap(sentHours.first?[0].int64) * 1000
        let values = try store.db.rows(
            "SELECT mos_cq_sent FROM calls WHERE start_ts >= ? AND start_ts < ? AND mos_cq_sent IS NOT NULL ORDER BY 1",
            [.integer(hour), .integer(hour + 3_600_000)]
        ).compactMap { $0[0].double }
        XCTAssertEqual(sentHours.first?[3].double, RollupBuilder.nearestRank(values, 0.5))
        let loss = try run("Loss (%) per hour: received and sent")
        XCTAssertEqual(loss.columns, ["time", "received_mean", "received_p95", "sent_mean", "sent_p95"])
        XCTAssertGreaterThan(loss.rows.filter { $0[3].double != nil }.count, 10)

        let conversations = try run("Conversations")
        XCTAssertEqual(conversations.rows.compactMap { $0[0].string }.sorted(), ["conf-1", "conv-grafana"], "the conference is one too")
        let c = try XCTUnwrap(conversations.rows.first { $0[0].string == "conv-grafana" }).map(\.description)
        XCTAssertEqual(Array(c[0..<5]), ["conv-grafana", "2026-11-18 12:00:00", "2", "label", "grafana-leg-a grafana-leg-b"])
    }

    /// The conferences row on the simulated conference of six: listed with p1 as its worst
    /// uplink, p1 the worst offender (and p2, whose downlink alone failed, not one), and the
    /// drill-down of `conf-1` a row per participant and slot with p2's own downlink among the
    /// causes; a time range without it lists nothing.
    func testConferencePanelsShowTheSimulatedConference() throws {
        let store = try SQLiteStore(path: ReportFixtures.dashboardSample, forWriting: false)
        let (_, dashboard) = try XCTUnwrap(try dashboards().first { $0.file == "callstats.json" })
        func run(_ panel: String, from: Int64 = 0, to: Int64 = Int64.max / 2) throws -> (columns: [String], rows: [[SQLValue]]) {
            let q = try XCTUnwrap(queries(dashboard).first { $0.panel == panel }, panel)
            let r = try store.db.query(fill(q.sql, from: from, to: to, variables: ["conference_id": "conf-1"]))
            return (r.columns, r.rows)
        }
        let conferences = try run("Conferences by poor participant-minutes")
        XCTAssertEqual(conferences.rows.count, 1)
        let conference = Dictionary(uniqueKeysWithValues: zip(conferences.columns, try XCTUnwrap(conferences.rows.first)))
        XCTAssertEqual(conference["conference_id"]?.string, "conf-1")
        XCTAssertEqual(conference["worst_uplink"]?.string, "p1")
        XCTAssertEqual(conference["participants"]?.int64, 6)
        XCTAssertEqual(conference["started"]?.string, "2026-11-21 09:00:00")

        let offenders = try run("Worst offenders")
        XCTAssertEqual(offenders.columns.first, "participant")
        XCTAssertEqual(offenders.rows.map { $0[0].description }, ["p1"], "only p1's uplink spoiled others' streams")
        let spoiled = try XCTUnwrap(store.db.scalar("SELECT spoiled_minutes FROM conference_offenders WHERE participant = 'p1'")?.double)
        XCTAssertEqual(try XCTUnwrap(offenders.rows.first?[3].double), spoiled, accuracy: 0.001)
        XCTAssertEqual(offenders.rows.first?[4].int64, 5, "participants affected")

        let drill = try run("Conference drill-down ($conference_id)")
        XCTAssertEqual(drill.columns, ["participant", "slot", "streams", "poor_streams", "causes", "poor_from"])
        let cells = try XCTUnwrap(
            store.db.scalar("SELECT count(*) FROM (SELECT DISTINCT receiver_participant, slot_start_ts FROM conference_matrix)")?.int64)
        XCTAssertEqual(Int64(drill.rows.count), cells, "a row per participant and slot")
        XCTAssertEqual(Set(drill.rows.compactMap { $0[0].string }), Set((1...6).map { "p\($0)" }))
        let p2Downlink = drill.rows.filter { $0[0].string == "p2" && ($0[4].string ?? "").contains("receiver_downlink") }
        XCTAssertFalse(p2Downlink.isEmpty, "p2's own downlink is a cause of its poor slots")
        XCTAssertTrue(drill.rows.filter { $0[0].string == "p3" && ($0[3].int64 ?? 0) > 0 }.allSatisfy { $0[5].string == "p1" })
        XCTAssertTrue(drill.rows.filter { $0[3].int64 == 0 }.allSatisfy { $0[4].string == "" && $0[5] == .null }, "fine slots name nothing")

        let variable = try run("variable conference_id")
        XCTAssertEqual(variable.rows.map { $0[0].description }, ["conf-1"])
        let before = ConferenceSimulation.defaultStartMs - 1
        XCTAssertTrue(try run("Conferences by poor participant-minutes", from: 0, to: before).rows.isEmpty, "the time range applies")
        XCTAssertTrue(try run("Worst offenders", from: 0, to: before).rows.isEmpty, "the time range applies")
    }

    func testPanelsCoverTheQuestionsAndTheDataSourceIsProvisioned() throws {
        let (_, dashboard) = try XCTUnwrap(try dashboards().first { $0.file == "callstats.json" })
        let titles = Set(queries(dashboard).map(\.panel))
        for t in [
            "Share of answered calls by grade", "MOS-CQ per hour: median and tail", "MOS-CQ per call", "Loss (%) per call",
            "Jitter (ms) per call", "RTT (ms) per call", "Time to media (ms) per call", "By network type", "By platform",
            "By sdk and version", "By app and version", "By audio codec", "By local candidate type", "Worst calls",
            "MOS-CQ", "Events and findings", "variable call_id", "SDK score per call", "MOS-CQ per hour: received and sent",
            "Loss (%) per hour: received and sent", "Conversations", "Conferences by poor participant-minutes", "Worst offenders",
            "Conference drill-down ($conference_id)", "variable conference_id",
        ] {
            XCTAssertTrue(titles.contains(t), "panel '\(t)'")
        }
        // Every panel queries the provisioned data source by its uid.
        let datasource = try String(contentsOf: GrafanaDashboardTests.folder.appendingPathComponent("provisioning/datasources/callstats.yaml"), encoding: .utf8)
        XCTAssertTrue(datasource.contains("uid: callstats") && datasource.contains("type: frser-sqlite-datasource"))
        var uids = Set<String>()
        func walk(_ value: Any) {
            if let o = value as? [String: Any] {
                if let ds = o["datasource"] as? [String: Any] { uids.insert("\(ds["type"] ?? "?") \(ds["uid"] ?? "?")") }
                o.values.forEach(walk)
            } else if let a = value as? [Any] {
                a.forEach(walk)
            }
        }
        walk(dashboard)
        XCTAssertEqual(uids, ["frser-sqlite-datasource callstats"], "every panel and variable uses the provisioned data source")
    }
}
