import ConsoleOutput
import Analysis
import ArgumentParser
import Foundation
import Jobs
import Store

/// `callstats regrade`: a database's calls analysed again from their stored material, with new
/// settings, without the logs.
struct RegradeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "regrade",
        abstract: "Grade a database's calls again with other settings (no logs needed).",
        discussion: """
            Every call is analysed again from the material the database stores for it (all the \
            inputs its analysis used), with the settings given by --config and --set, or with \
            the database's own when neither is given (after an upgrade of callstats). Findings, \
            grades, intervals and rollups are replaced; the database then records the new \
            settings, and later runs of analyze use them.

            One transaction: an interrupted regrade changes nothing.

            Examples:
              callstats regrade --db calls.sqlite --set jitter_warn_ms=40
              callstats regrade --db calls.sqlite --config grading.json
            """)

    @Option(name: .long, help: "The database to regrade.")
    var db = "callstats.sqlite"

    @OptionGroup var settings: SettingsOptions

    @Option(help: "Analysis threads (default: one per core).")
    var threads: Int?

    func validate() throws {
        if let threads { try OptionRange.check("--threads", threads, OptionRange.threads) }
    }

    @Flag(name: .shortAndLong, help: "Print only the summary (no progress).")
    var quiet = false

    @Flag(help: "Print the summary as one JSON object (no progress).")
    var json = false

    func run() throws {
        var options = RegradeRun.Options(database: db)
        options.config = try settings.settings(database: db)
        if let threads { options.threads = max(1, threads) }
        let run = RegradeRun(options: options)
        if !quiet && !json {
            run.onProgress = { done, total, seconds in
                Terminal.status(String(format: "calls %d/%d  (%.0f/s)", done, total, seconds > 0 ? Double(done) / seconds : 0))
            }
        }
        let report = try run.run()
        Terminal.clearStatus()
        if json { return JSONSummary.print(JSONSummary.regrade(report, database: db)) }
        var out = OutputBuffer()
        for line in RegradeSummary.lines(report, database: db) { out.line(line) }
        out.flush()
    }
}

enum RegradeSummary {
    static func lines(_ r: RegradeRun.Report, database: String) -> [String] {
        let changed = r.settings.changesText(from: r.previousSettings, otherLabel: "was")
        let grades = Grade.allCases.map { g in
            "\(g.rawValue.replacingOccurrences(of: "_", with: " ")) \(r.gradesBefore[g.rawValue] ?? 0) → \(r.gradesAfter[g.rawValue] ?? 0)"
        }
        return AlignedRows.render([
            ("calls regraded", "\(r.calls)"),
            ("grades", grades.joined(separator: ", ")),
            ("findings", "\(r.findingsBefore) → \(r.findingsAfter)"),
            ("settings", changed.isEmpty ? "unchanged (\(r.settings.summaryText))" : changed),
            ("quality model", r.previousQualityModel.map { $0 == r.qualityModel ? r.qualityModel : "\(r.qualityModel) (was \($0))" } ?? r.qualityModel),
            ("time", String(format: "%.2f s  (%.0f calls/s)", r.seconds, r.seconds > 0 ? Double(r.calls) / r.seconds : 0)),
            ("database", database),
        ])
    }
}
