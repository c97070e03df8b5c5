import Foundation
import TestSupport
import XCTest

/// `report`, `prune` and `forget` show a status line while they work, as `analyze` does: on a
/// terminal (standard error a tty; `script` gives the command one here), never in a pipe, a
/// log or a script's output, and not with --quiet or --json.
final class ProgressLineTests: BinaryTestCase {
    override var folderName: String { "cli-progress" }

    /// What a terminal shows before a status line's text.
    static let statusStart = "\r\u{1B}[2K"

    /// Runs `callstats args` on a pseudo-terminal: everything it wrote there (stdout and stderr).
    func onTerminal(_ args: [String]) throws -> (status: Int32, screen: String) {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else { throw XCTSkip("script(1) is not installed") }
        let command = ([CommandLineTests.binary.path] + args).map { "'\($0)'" }.joined(separator: " ")
        let r = try runProcess(URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"], in: dir)
        return (r.status, r.out)
    }

    func testReportAndPruneShowProgressOnATerminalOnly() throws {
        let db = dir.appendingPathComponent("calls.sqlite").path
        let analyze = try callstats(["analyze", TestPaths.sampleData.appendingPathComponent("sample").path, "--db", db, "--quiet"])
        XCTAssertEqual(analyze.status, 0, analyze.err)
        let calls = try callstats(["query", "--db", db, "--format", "csv", "SELECT count(*) FROM calls"])
        let count = calls.out.split(separator: "\n").last.map(String.init) ?? ""
        XCTAssertEqual(count, "300")

        let report = dir.appendingPathComponent("r.html").path
        let shown = try onTerminal(["report", "--db", db, "--out", report])
        XCTAssertEqual(shown.status, 0, shown.screen)
        for stage in [
            "report: counting calls…", "report: 300 calls: quality over time and breakdowns (rollups)…",
            "report: 300 calls: distributions…", "report: 300 calls: the 200 worst…", "report: 300 calls: drill-downs of 50 calls…",
            "report: writing \(report)…",
        ] {
            XCTAssertTrue(shown.screen.contains(Self.statusStart + stage), "no status line \(stage) in \(shown.screen.debugDescription)")
        }
        // The line is cleared before the summary, which stays readable.
        XCTAssertTrue(shown.screen.contains(Self.statusStart + "report    \(report)"), shown.screen.debugDescription)
        for quiet in [["--quiet"], ["--json"]] {
            let r = try onTerminal(["report", "--db", db, "--out", report] + quiet)
            XCTAssertEqual(r.status, 0, r.screen)
            XCTAssertFalse(r.screen.contains("report: "), "\(quiet): \(r.screen.debugDescription)")
        }
        let piped = try callstats(["report", "--db", db, "--out", report])
        XCTAssertEqual(piped.status, 0, piped.err)
        XCTAssertEqual(piped.err, "", "nothing on standard error in a pipe")

        for quiet in [["--quiet"], ["--json"]] {
            let copy = dir.appendingPathComponent("quiet\(quiet[0]).sqlite").path
            try FileManager.default.copyItem(atPath: db, toPath: copy)
            let r = try onTerminal(["prune", "--db", copy, "--before", "2100-01-01"] + quiet)
            XCTAssertEqual(r.status, 0, r.screen)
            XCTAssertFalse(r.screen.contains("prune: "), "\(quiet): \(r.screen.debugDescription)")
        }
        let pipedCopy = dir.appendingPathComponent("piped.sqlite").path
        try FileManager.default.copyItem(atPath: db, toPath: pipedCopy)
        let pipedPrune = try callstats(["prune", "--db", pipedCopy, "--before", "2100-01-01"])
        XCTAssertEqual(pipedPrune.status, 0, pipedPrune.err)
        XCTAssertEqual(pipedPrune.err, "")
        XCTAssertTrue(pipedPrune.out.hasPrefix("removed 300 calls"), pipedPrune.out)

        let pruned = try onTerminal(["prune", "--db", db, "--before", "2100-01-01", "--vacuum"])
        XCTAssertEqual(pruned.status, 0, pruned.screen)
        for stage in [
            "prune: removing the calls that started before the cut-off and rebuilding the rollups they counted in…",
            "prune: vacuuming \(db)…",
        ] {
            XCTAssertTrue(pruned.screen.contains(Self.statusStart + stage), "no status line \(stage) in \(pruned.screen.debugDescription)")
        }
        XCTAssertTrue(pruned.screen.contains(Self.statusStart + "removed 300 calls"), pruned.screen.debugDescription)
    }
}
