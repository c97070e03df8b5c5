import CallLog
import Foundation
import SQLiteDatabase
import Store
import TestSupport
import XCTest

/// The Grafana dashboard for the PostgreSQL data source (`Dashboards/grafana-postgres`): every
/// panel's and variable's SQL runs on a real server against the analysed `Data/` sample, with
/// Grafana's macros and the variables filled in, and answers with the same columns and rows as the
/// same panel of the SQLite dashboard on the same logs.
final class GrafanaPostgresDashboardTests: XCTestCase {
    struct Query {
        var panel: String
        var sql: String
        var format: String?
        var isVariable: Bool
    }

    nonisolated(unsafe) static var server: PostgresServer?
    nonisolated(unsafe) static var unavailable: Error?
    /// The `Data/` sample analysed into a PostgreSQL database (its URL) and into an SQLite file.
    nonisolated(unsafe) static var sample: (postgres: String, sqlite: String)?

    static let folder = TestPaths.repositoryRoot.appendingPathComponent("Dashboards/grafana-postgres")
    static let sqliteFolder = TestPaths.repositoryRoot.appendingPathComponent("Dashboards/grafana")
    static let filters = [("all", "*"), ("network", "wifi"), ("app_version", "acme-phone 3.2.1"), ("candidate_type", "relay")]

    static var binary: URL { TestPaths.callstatsBinary }

    override class func setUp() {
        do {
            server = try PostgresServer.start()
        } catch {
            unavailable = error
        }
    }

    override class func tearDown() {
        server?.stop()
        server = nil
        if let sample { try? FileManager.default.removeItem(at: URL(fileURLWithPath: sample.sqlite).deletingLastPathComponent()) }
        sample = nil
    }

    /// The analysed sample in both stores (made once for the suite); skips the test without a
    /// PostgreSQL server outside CI.
    func analysedSample() throws -> (postgres: String, sqlite: String) {
        if let skip = Self.unavailable as? PostgresServer.Skip { throw XCTSkip(skip.reason) }
        if let failure = Self.unavailable { throw failure }
        if let sample = Self.sample { return sample }
        let logs = TestPaths.sampleData.appendingPathComponent("sample").path
        let url = try XCTUnwrap(Self.server).createDatabase("grafana")
        let folder = TestPaths.temporaryDirectory("grafana-pg")
        let sqlite = folder.appendingPathComponent("sample.sqlite").path
        // The sample's calls are each one agent's: two legs labelled as one conversation, in the
        // sample's week, give the conversations panel rows.
        let legs = folder.appendingPathComponent("legs.ndjson").path
        let t0: Int64 = 1_795_003_200_000  // 2026-11-18 12:00 UTC
        let w = try LogWriter(path: legs)
        for (n, id) in ["grafana-leg-a", "grafana-leg-b"].enumerated() {
            try w.append(
                .callInfo(
                    call: id, ts: t0 + Int64(n) * 500, direction: n == 0 ? "outgoing" : "incoming", sdk: "kandy-mobile",
                    sdkVersion: "5.14.0", app: "acme-phone", appVersion: "3.2.1", platform: "ios", network: "wifi", media: ["audio"],
                    labels: ["conversation": "conv-grafana"]))
            try w.append(.end(call: id, ts: t0 + 60_000, reason: "terminatedLocally"))
        }
        try w.close()
        // A simulated conference of six (conf-1: p1's uplink and p2's downlink impaired), in the
        // sample's week, gives the conferences row rows.
        let conference = folder.appendingPathComponent("conference").path
        let simulate = try runProcess(Self.binary, ["simulate", "--conference", "6", "--out", conference])
        XCTAssertEqual(simulate.status, 0, "simulate --conference 6: \(simulate.err)")
        for db in [url, sqlite] {
            let run = try runProcess(Self.binary, ["analyze", logs, legs, conference, "--db", db, "--quiet"])
            XCTAssertEqual(run.status, 0, "analyze --db \(db): \(run.err)")
        }
        Self.sample = (url, sqlite)
        return (url, sqlite)
    }

    static func dashboard(in folder: URL) throws -> [String: Any] {
        let data = try Data(contentsOf: folder.appendingPathComponent("callstats.json"))
        return try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// Every panel title (rows included), in the dashboard's order.
    static func titles(_ dashboard: [String: Any]) -> [String] {
        func walk(_ panels: [[String: Any]]) -> [String] {
            panels.flatMap { [$0["title"] as? String ?? "?"] + walk($0["panels"] as? [[String: Any]] ?? []) }
        }
        return walk(dashboard["panels"] as? [[String: Any]] ?? [])
    }

    /// The SQL of every panel target and query variable: `rawSql` in the PostgreSQL dashboard,
    /// `rawQueryText` in the SQLite one.
    static func queries(_ dashboard: [String: Any]) -> [Query] {
        var out: [Query] = []
        func walk(_ panels: [[String: Any]]) {
            for p in panels {
                let title = p["title"] as? String ?? "?"
                for t in p["targets"] as? [[String: Any]] ?? [] {
                    let sql = t["rawSql"] as? String ?? t["rawQueryText"] as? String ?? ""
                    out.append(Query(panel: title, sql: sql, format: t["format"] as? String, isVariable: false))
                }
                walk(p["panels"] as? [[String: Any]] ?? [])
            }
        }
        walk(dashboard["panels"] as? [[String: Any]] ?? [])
        for v in (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? [] where v["type"] as? String == "query" {
            let q = v["query"]
            let sql = q as? String ?? (q as? [String: Any])?["rawSql"] as? String ?? (q as? [String: Any])?["rawQueryText"] as? String ?? ""
            out.append(Query(panel: "variable " + (v["name"] as? String ?? "?"), sql: sql, format: nil, isVariable: true))
        }
        return out
    }

    /// The SQL Grafana would send: its time range in epoch ms, and the variables.
    static func fill(_ sql: String, from: Int64, to: Int64, variables: [String: String]) -> String {
        var s = sql.replacingOccurrences(of: "$__from", with: String(from)).replacingOccurrences(of: "$__to", with: String(to))
        for (name, value) in variables.sorted(by: { $0.key.count > $1.key.count }) {
            s = s.replacingOccurrences(of: "${\(name)}", with: value).replacingOccurrences(of: "$\(name)", with: value)
        }
        return s
    }

    /// A result's rows as text (numbers as doubles: an SQLite integer and a PostgreSQL bigint or
    /// numeric of the same value alike), sorted.
    static func sortedRows(_ result: QueryResult, skipping leading: Int) -> [[String]] {
        result.rows.map { row in
            row.dropFirst(leading).map { v -> String in
                switch v {
                case .null: "NULL"
                case .integer(let i): String(Double(i))
                case .real(let d): String(d)
                case .text(let t): t
                case .blob(let b): "\(b)"
                }
            }
        }.sorted { $0.lexicographicallyPrecedes($1) }
    }

    func testEveryQueryRunsOnPostgresWithEveryFilterLikeTheSQLitePanel() throws {
        let sample = try analysedSample()
        let postgres = try StoreLocation.openForReading(sample.postgres).queries
        let sqlite = try StoreLocation.openForReading(sample.sqlite).queries
        func scalar(_ sql: String) throws -> SQLValue? { try postgres.query(sql, limit: 1).rows.first?.first }
        let from = try XCTUnwrap(try scalar("SELECT min(start_ts) FROM calls")?.int64)
        let to = try XCTUnwrap(try scalar("SELECT max(start_ts) + 1 FROM calls")?.int64)
        let call = try XCTUnwrap(
            try scalar(
                """
                SELECT call_id FROM calls c WHERE grade = 'poor' AND EXISTS (SELECT 1 FROM findings f WHERE f.call_id = c.call_id)
                  AND EXISTS (SELECT 1 FROM streams s WHERE s.call_id = c.call_id AND s.kind = 'video')
                ORDER BY mos_worst, call_id LIMIT 1
                """)?.string)
        let all = Self.queries(try Self.dashboard(in: Self.folder))
        let sqliteQueries = Dictionary(Self.queries(try Self.dashboard(in: Self.sqliteFolder)).map { ($0.panel, $0) }) { a, _ in a }
        XCTAssertGreaterThan(all.filter { !$0.isVariable }.count, 20, "panels with queries")
        var ran = 0
        for (dimension, value) in Self.filters {
            let variables = ["dimension": dimension, "value": value, "call_id": call, "conference_id": "conf-1"]
            for q in all {
                let context = "'\(q.panel)' (\(dimension) = \(value))"
                XCTAssertFalse(q.sql.isEmpty, "'\(q.panel)': no query")
                let sql = Self.fill(q.sql, from: from, to: to, variables: variables)
                XCTAssertFalse(sql.contains("$"), "'\(q.panel)': a macro or variable is left: \(sql)")
                let result: QueryResult
                do {
                    result = try postgres.query(sql, limit: .max)
                } catch {
                    XCTFail("\(context): \(error)\n\(sql)")
                    continue
                }
                ran += 1
                XCTAssertFalse(result.rows.isEmpty, "\(context): no rows on the sample")
                if q.format == "time_series" {
                    XCTAssertEqual(result.columns.first, "time", "\(context): a time series starts with its time column")
                }
                // The same columns as the SQLite dashboard's panel on the same logs.
                guard let twin = sqliteQueries[q.panel] else {
                    XCTFail("'\(q.panel)': not in the SQLite dashboard")
                    continue
                }
                let reference = try sqlite.query(Self.fill(twin.sql, from: from, to: to, variables: variables), limit: .max)
                XCTAssertEqual(result.columns, reference.columns, "\(context): columns")
                // The same rows but for a leading time column (a timestamptz here, epoch seconds or
                // text in SQLite); rows that tie in a panel's order may come in either order.
                let skip = result.columns.first == "time" ? 1 : 0
                XCTAssertEqual(Self.sortedRows(result, skipping: skip), Self.sortedRows(reference, skipping: skip), "\(context): rows")
            }
        }
        XCTAssertEqual(ran, all.count * Self.filters.count)
        XCTAssertGreaterThan(ran, 100)
    }

    /// The conferences row answers alike in PostgreSQL: p1, whose uplink the simulation
    /// impaired, is the conference's worst uplink and the only worst offender.
    func testConferencePanelsNameTheImpairedUplink() throws {
        let sample = try analysedSample()
        let postgres = try StoreLocation.openForReading(sample.postgres).queries
        let all = Self.queries(try Self.dashboard(in: Self.folder))
        func run(_ panel: String) throws -> QueryResult {
            let q = try XCTUnwrap(all.first { $0.panel == panel }, panel)
            return try postgres.query(Self.fill(q.sql, from: 0, to: Int64.max / 2, variables: ["conference_id": "conf-1"]), limit: .max)
        }
        let conferences = try run("Conferences by poor participant-minutes")
        XCTAssertEqual(conferences.rows.count, 1)
        let row = Dictionary(uniqueKeysWithValues: zip(conferences.columns, try XCTUnwrap(conferences.rows.first)))
        XCTAssertEqual(row["conference_id"]?.string, "conf-1")
        XCTAssertEqual(row["worst_uplink"]?.string, "p1")
        XCTAssertEqual(try run("Worst offenders").rows.map { $0[0].description }, ["p1"])
        let drill = try run("Conference drill-down ($conference_id)")
        XCTAssertTrue(drill.rows.contains { $0[0].string == "p2" && ($0[4].string ?? "").contains("receiver_downlink") })
        XCTAssertEqual(try run("variable conference_id").rows.map { $0[0].description }, ["conf-1"])
    }

    /// The HTML report's conferences section reads PostgreSQL as it reads SQLite: the same
    /// conferences, drill-downs and offenders in the page's data.
    func testReportConferencesReadPostgresLikeSQLite() throws {
        let sample = try analysedSample()
        func conferences(_ db: String) throws -> NSDictionary {
            let out = TestPaths.temporaryDirectory("grafana-pg").appendingPathComponent("report-\(UUID().uuidString).html").path
            let run = try runProcess(Self.binary, ["report", "--db", db, "--out", out])
            XCTAssertEqual(run.status, 0, "report --db \(db): \(run.err)")
            let html = try String(contentsOfFile: out, encoding: .utf8)
            let open = try XCTUnwrap(html.range(of: "<script type=\"application/json\" id=\"data\">"))
            let close = try XCTUnwrap(html.range(of: "</script>", range: open.upperBound..<html.endIndex))
            let data = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(html[open.upperBound..<close.lowerBound].utf8)) as? [String: Any])
            return try XCTUnwrap(data["conferences"] as? NSDictionary, "the page has conferences")
        }
        let postgres = try conferences(sample.postgres)
        XCTAssertEqual(postgres, try conferences(sample.sqlite))
        let first = try XCTUnwrap((postgres["rows"] as? [[String: Any]])?.first)
        XCTAssertEqual(first["worst_uplink"] as? String, "p1")
    }

    func testSamePanelsAsTheSQLiteDashboardOnTheProvisionedDataSource() throws {
        let dashboard = try Self.dashboard(in: Self.folder)
        let sqliteDashboard = try Self.dashboard(in: Self.sqliteFolder)
        XCTAssertEqual(Self.titles(dashboard), Self.titles(sqliteDashboard), "the same panels in the same order")
        XCTAssertEqual(Self.queries(dashboard).map(\.panel), Self.queries(sqliteDashboard).map(\.panel), "the same queries and variables")
        XCTAssertNotEqual(dashboard["uid"] as? String, sqliteDashboard["uid"] as? String, "both dashboards can live in one Grafana")
        func variables(_ d: [String: Any]) -> [String] {
            ((d["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []).map { "\($0["name"] ?? "?") \($0["type"] ?? "?")" }
        }
        XCTAssertEqual(variables(dashboard), variables(sqliteDashboard))

        // Every target is raw SQL in the code editor, as a time series or a table.
        func targets(_ panels: [[String: Any]]) -> [[String: Any]] {
            panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []) + targets($0["panels"] as? [[String: Any]] ?? []) }
        }
        let all = targets(dashboard["panels"] as? [[String: Any]] ?? [])
        XCTAssertGreaterThan(all.count, 20)
        for t in all {
            XCTAssertEqual(t["rawQuery"] as? Bool, true)
            XCTAssertEqual(t["editorMode"] as? String, "code")
            XCTAssertTrue(["time_series", "table"].contains(t["format"] as? String ?? ""), "\(t)")
            XCTAssertFalse((t["rawSql"] as? String ?? "").isEmpty)
        }

        // Every panel and variable queries the provisioned data source by its uid.
        let provisioning = Self.folder.appendingPathComponent("provisioning")
        let datasource = try String(contentsOf: provisioning.appendingPathComponent("datasources/callstats.yaml"), encoding: .utf8)
        XCTAssertTrue(datasource.contains("uid: callstats-postgres"), datasource)
        XCTAssertTrue(datasource.contains("type: grafana-postgresql-datasource"), datasource)
        XCTAssertTrue(datasource.contains("password: ${CALLSTATS_PG_PASSWORD}"), "the password comes from the environment")
        let provider = try String(contentsOf: provisioning.appendingPathComponent("dashboards/callstats.yaml"), encoding: .utf8)
        XCTAssertTrue(provider.contains("path: ${CALLSTATS_PG_DASHBOARDS}"), provider)
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
        XCTAssertEqual(uids, ["grafana-postgresql-datasource callstats-postgres"], "every panel and variable uses the provisioned data source")
        // Only the PostgreSQL dashboard in its folder: the SQLite dashboard's test reads every
        // JSON file of Dashboards/grafana.
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path).filter { $0.hasSuffix(".json") }
        XCTAssertEqual(files, ["callstats.json"])
    }
}
