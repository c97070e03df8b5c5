import Foundation
import Report
import XCTest

/// The report as a person sees it: opened in headless Chromium, its script runs, the charts
/// draw, and nothing from the data runs as script. Skipped where Chromium is not installed
/// (`make test` installs Debian's `chromium`).
final class HeadlessChromiumTests: XCTestCase {
    static let chromium: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    func browser() throws -> String {
        guard let c = HeadlessChromiumTests.chromium else { throw XCTSkip("chromium is not installed (apt-get install chromium)") }
        return c
    }

    /// Runs Chromium headless on a file; returns what it printed on stdout.
    func run(_ args: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try browser())
        p.arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--virtual-time-budget=10000"] + args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    func page(_ db: String, options: ReportData.Options = .init()) throws -> String {
        let out = ReportFixtures.directory.appendingPathComponent("page-\(UUID().uuidString).html").path
        _ = try ReportWriter.write(database: db, output: out, options: options)
        return out
    }

    func testSampleReportDrawsEveryChart() throws {
        _ = try browser()
        let html = try page(ReportFixtures.sampleDatabase)
        let dom = try run(["--dump-dom", "file://" + html])
        XCTAssertTrue(dom.contains("data-rendered=\"ok\""), "the script finished without an error")
        XCTAssertTrue(dom.contains("<div id=\"errors\"></div>"), "no script error was shown")
        // 2 over time, 6 distributions, and the first worst call's drill-down (5 audio panels, 2 more with video).
        let charts = try XCTUnwrap(dom.firstMatch(of: /data-charts="(\d+)"/).map { Int($0.1)! })
        XCTAssertGreaterThanOrEqual(charts, 13)
        XCTAssertEqual(dom.components(separatedBy: "<canvas").count - 1, charts, "every canvas on the page was drawn")
        XCTAssertTrue(dom.contains("By network") && dom.contains("By candidate type"), "breakdowns")
        XCTAssertEqual(dom.components(separatedBy: "class=\"tile\"").count - 1, 9, "summary tiles")
        XCTAssertTrue(dom.contains(" UTC · graded with defaults · generated "), "the header says how the calls were graded")
        let png = ReportFixtures.directory.appendingPathComponent("shot-\(UUID().uuidString).png").path
        _ = try run(["--window-size=1400,2400", "--screenshot=" + png, "file://" + html])
        let size = (try? FileManager.default.attributesOfItem(atPath: png)[.size] as? Int) ?? 0
        XCTAssertGreaterThan(size, 50_000, "a screenshot with content was saved")
    }

    /// Calls named after `Object.prototype`'s members, with no drill-down, some, or all: each is
    /// listed, a row is clickable exactly when its call has a drill-down, and the script ends
    /// without an error.
    func testCallsNamedAfterPrototypeMembersRender() throws {
        _ = try browser()
        let names = ReportFixtures.prototypeNames
        let db = try ReportFixtures.database(callIds: names)
        for drillDowns in [0, 2, names.count] {
            var options = ReportData.Options()
            options.drillDowns = drillDowns
            let html = try page(db, options: options)
            let data = try ReportFixtures.data(ofPage: try String(contentsOfFile: html, encoding: .utf8))
            XCTAssertEqual((data["worst"] as? [Any])?.count, names.count, "every call is among the worst")
            XCTAssertEqual((data["drill"] as? [String: Any])?.count, drillDowns)
            let dom = try run(["--dump-dom", "file://" + html])
            XCTAssertTrue(dom.contains("data-rendered=\"ok\""), "drill-downs \(drillDowns): the script finished")
            XCTAssertTrue(dom.contains("<div id=\"errors\"></div>"), "drill-downs \(drillDowns): no script error was shown")
            for name in names {
                XCTAssertTrue(dom.contains("<td class=\"id\" title=\"\(name)\">"), "drill-downs \(drillDowns): \(name) is listed")
            }
            XCTAssertEqual(
                dom.components(separatedBy: "<tr class=\"pick").count - 1, drillDowns,
                "drill-downs \(drillDowns): only calls with a drill-down can be picked")
        }
    }

    /// The simulated conference: its row is listed and its drill-down drawn, a row per
    /// participant and a cell per slot, p1's uplink named below it, without a script error.
    func testConferenceDrillDownRenders() throws {
        _ = try browser()
        let html = try page(ReportFixtures.conferenceDatabase)
        let dom = try run(["--dump-dom", "file://" + html])
        XCTAssertTrue(dom.contains("data-rendered=\"ok\""), "the script finished without an error")
        XCTAssertTrue(dom.contains("<div id=\"errors\"></div>"), "no script error was shown")
        XCTAssertTrue(dom.contains("data-conference-rows=\"6\""), "a row per participant")
        XCTAssertTrue(dom.contains("<td class=\"id\" title=\"conf-1\">conf-1</td>"), "the conference is listed")
        XCTAssertTrue(dom.contains("<td class=\"worst-uplink\">p1</td>"))
        XCTAssertTrue(dom.contains("p1's uplink spoiled ") && dom.contains(" receiver-minutes for 5 participants"))
        XCTAssertTrue(dom.contains("p2's own downlink spoiled "))
        let poorCells = dom.matches(of: /<td class="s3" title="([^"]*)"/).map { String($0.1) }
        XCTAssertFalse(poorCells.isEmpty, "poor cells are drawn")
        XCTAssertTrue(poorCells.allSatisfy { $0.contains("poor streams from: ") }, "each poor cell names its senders")
        XCTAssertTrue(poorCells.contains { $0.hasPrefix("p3 · ") && $0.contains("p1 audio+video (a sender's uplink)") })
        XCTAssertTrue(poorCells.contains { $0.hasPrefix("p2 · ") && $0.contains("own downlink") })
    }

    func testHostileConferenceTextDoesNotRun() throws {
        _ = try browser()
        let dom = try run(["--dump-dom", "file://" + (try page(try ReportFixtures.hostileConferenceDatabase()))])
        XCTAssertTrue(dom.contains("data-rendered=\"ok\""))
        XCTAssertTrue(dom.contains("data-conference-rows=\"6\""), "the drill-down was drawn")
        XCTAssertFalse(dom.contains("data-pwned"), "text from a log ran as script")
        XCTAssertTrue(dom.contains("&lt;/script&gt;&lt;script&gt;"), "it is shown as text")
    }

    func testHostileTextDoesNotRun() throws {
        _ = try browser()
        let dom = try run(["--dump-dom", "file://" + (try page(try ReportFixtures.hostileDatabase()))])
        XCTAssertTrue(dom.contains("data-rendered=\"ok\""))
        XCTAssertFalse(dom.contains("data-pwned"), "text from a log ran as script")
        XCTAssertTrue(dom.contains("&lt;/script&gt;&lt;script&gt;"), "it is shown as text")
    }
}
