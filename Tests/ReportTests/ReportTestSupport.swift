import CallLog
import Foundation
import Jobs
import Report
import SQLiteDatabase
import Simulator
import Store
import TestSupport

/// Databases the report tests read: the committed sample, analysed once per test process.
enum ReportFixtures {
    static let directory = TestPaths.temporaryDirectory("report")

    static let sampleDatabase: String = {
        let db = directory.appendingPathComponent("sample.sqlite").path
        let sample = TestPaths.sampleData.appendingPathComponent("sample").path
        _ = try! AnalyzeRun(options: AnalyzeRun.Options(paths: [sample], database: db)).run()
        return db
    }()

    /// The sample with one conversation and one conference added (the sample's calls are each
    /// one agent's, linked to none): two legs whose `call` records carry the label
    /// `conversation`, and the simulated conference of six (`conferenceLogs`), in the sample's
    /// week, so that every dashboard panel has rows to show.
    static let dashboardSample: String = {
        let db = directory.appendingPathComponent("sample-dashboards.sqlite").path
        let legs = directory.appendingPathComponent("legs.ndjson").path
        let t0: Int64 = 1_795_003_200_000  // 2026-11-18 12:00 UTC
        let w = try! LogWriter(path: legs)
        for (n, id) in ["grafana-leg-a", "grafana-leg-b"].enumerated() {
            try! w.append(
                .callInfo(
                    call: id, ts: t0 + Int64(n) * 500, direction: n == 0 ? "outgoing" : "incoming", sdk: "kandy-mobile",
                    sdkVersion: "5.14.0", app: "acme-phone", appVersion: "3.2.1", platform: "ios", network: "wifi", media: ["audio"],
                    labels: ["conversation": "conv-grafana"]))
            try! w.append(.end(call: id, ts: t0 + 60_000, reason: "terminatedLocally"))
        }
        try! w.close()
        let sample = TestPaths.sampleData.appendingPathComponent("sample").path
        _ = try! AnalyzeRun(options: AnalyzeRun.Options(paths: [sample, legs, conferenceLogs], database: db)).run()
        return db
    }()

    /// The logs of the simulated conference of six (`callstats simulate --conference 6`, id
    /// `conf-1`: p1's uplink and p2's downlink impaired), in the sample's week.
    static let conferenceLogs: String = {
        let logs = directory.appendingPathComponent("conference-logs").path
        let simulation = try! ConferenceSimulation(ConferenceSimulation.Configuration(participants: 6))
        _ = try! simulation.write(to: logs)
        return logs
    }()

    /// The simulated conference analysed alone.
    static let conferenceDatabase: String = {
        let logs = conferenceLogs
        let db = directory.appendingPathComponent("conference.sqlite").path
        _ = try! AnalyzeRun(options: AnalyzeRun.Options(paths: [logs], database: db)).run()
        return db
    }()

    /// The conference's database with every participant's name made hostile text: the page
    /// must show them as text.
    static func hostileConferenceDatabase() throws -> String {
        let db = directory.appendingPathComponent("hostile-conference-\(UUID().uuidString).sqlite").path
        try FileManager.default.copyItem(atPath: conferenceDatabase, toPath: db)
        let store = try SQLiteStore(path: db)
        for (table, column) in [
            ("conference_participants", "participant"), ("conference_matrix", "receiver_participant"),
            ("conference_matrix", "sender_participant"),
        ] {
            try store.db.run("UPDATE \(table) SET \(column) = ? || \(column) WHERE \(column) IS NOT NULL", [.text(hostile)])
        }
        try store.db.run("UPDATE conference_participants SET conference_id = ? || conference_id", [.text(hostile)])
        try store.db.run("UPDATE conference_matrix SET conference_id = ? || conference_id", [.text(hostile)])
        return db
    }

    /// Text that would run script or add markup if the page put it in as HTML.
    static let hostile = "</script><script>document.body.dataset.pwned='1'</script><img src=x onerror=\"document.body.dataset.pwned='2'\">"

    /// One answered call without media whose every free-text field is hostile, so that it is
    /// listed among the worst calls.
    static func hostileDatabase() throws -> String {
        let dir = directory.appendingPathComponent("hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let id = "call-" + hostile
        let t: Int64 = 1_795_000_000_000
        let records: [LogRecord] = [
            .callInfo(
                call: id, ts: t, direction: "outgoing", sdk: hostile, sdkVersion: "1", app: hostile, appVersion: hostile,
                platform: hostile, network: hostile, media: ["audio"], labels: ["note": .string(hostile)]),
            .event(call: id, ts: t + 100, action: "callMetric", type: "callCreate"),
            .event(call: id, ts: t + 900, action: "callMetric", type: "callAnswerReceived"),
            .end(call: id, ts: t + 40_000, reason: "failed", statusText: hostile),
        ]
        let log = dir.appendingPathComponent("hostile.ndjson")
        try (records.map(\.jsonLine).joined(separator: "\n") + "\n").write(to: log, atomically: true, encoding: .utf8)
        let db = dir.appendingPathComponent("hostile.sqlite").path
        _ = try AnalyzeRun(options: AnalyzeRun.Options(paths: [dir.path], database: db)).run()
        return db
    }

    /// Names of `Object.prototype`'s members: as call ids they must be looked up as data, never
    /// found on the prototype of the page's maps.
    static let prototypeNames = ["constructor", "toString", "valueOf", "hasOwnProperty", "__proto__"]

    /// One answered call without media (so it is listed among the worst calls) for each id.
    static func database(callIds ids: [String]) throws -> String {
        let dir = directory.appendingPathComponent("ids-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var records: [LogRecord] = []
        for (n, id) in ids.enumerated() {
            let t: Int64 = 1_795_000_000_000 + Int64(n) * 120_000
            records += [
                .callInfo(
                    call: id, ts: t, direction: "outgoing", sdk: "kandy-mobile", sdkVersion: "1", app: "acme-phone",
                    appVersion: "3.2.1", platform: "web", network: "wifi", media: ["audio"], labels: [:]),
                .event(call: id, ts: t + 100, action: "callMetric", type: "callCreate"),
                .event(call: id, ts: t + 900, action: "callMetric", type: "callAnswerReceived"),
                .end(call: id, ts: t + 40_000, reason: "failed"),
            ]
        }
        let log = dir.appendingPathComponent("ids.ndjson")
        try (records.map(\.jsonLine).joined(separator: "\n") + "\n").write(to: log, atomically: true, encoding: .utf8)
        let db = dir.appendingPathComponent("ids.sqlite").path
        _ = try AnalyzeRun(options: AnalyzeRun.Options(paths: [dir.path], database: db)).run()
        return db
    }

    /// The JSON data block of a written page.
    static func data(ofPage html: String) throws -> [String: Any] {
        let open = "<script type=\"application/json\" id=\"data\">"
        guard let start = html.range(of: open), let end = html.range(of: "</script>", range: start.upperBound..<html.endIndex) else {
            throw NSError(domain: "report", code: 1, userInfo: [NSLocalizedDescriptionKey: "no data block"])
        }
        let text = String(html[start.upperBound..<end.lowerBound])
        return try JSONSerialization.jsonObject(with: Data(text.utf8)) as! [String: Any]
    }
}
