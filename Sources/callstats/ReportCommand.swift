import ConsoleOutput
import ArgumentParser
import Foundation
import Report
import CallLog
import Store

/// `callstats report`: the database as one self-contained HTML page.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Write a self-contained HTML report of an analysis database.",
        discussion: """
            One file with inline styles, data and charts (it opens without network access): \
            quality over time, distributions of MOS, loss, jitter, RTT and setup time, breakdowns \
            by network, platform, SDK, app version, codec and candidate type, the worst calls with \
            their findings, and a drill-down of each on one time axis. Filters by time range and \
            dimension. Built from the rollups, so it stays fast and small on millions of calls.

            Examples:
              callstats report --db demo.sqlite --out report.html
              callstats report --db calls.sqlite --out worst.html --worst 500
            """)

    @Option(name: .long, help: "The analysis database.")
    var db = "callstats.sqlite"

    @Option(name: .long, help: "The HTML file to write.")
    var out = "report.html"

    @Option(help: "Worst calls listed (the filters pick among them).")
    var worst = 200

    @Option(help: "Worst calls with a drill-down (intervals, events, findings).")
    var drillDowns = 50

    @Flag(help: "Print the summary as one JSON object.")
    var json = false

    @Flag(name: .shortAndLong, help: "No progress line.")
    var quiet = false

    func run() throws {
        guard worst >= 0, drillDowns >= 0 else { throw ValidationError("--worst and --drill-downs must not be negative") }
        var options = ReportData.Options()
        options.worstCalls = worst
        options.drillDowns = min(drillDowns, worst)
        guard StoreLocation.exists(db) else { throw CommandFailure(message: "\(db): no such database") }
        let r: ReportWriter.Result
        do {
            defer { Terminal.clearStatus() }
            r = try ReportWriter.write(
                database: db, output: out, options: options, progress: ProgressLine.stages("report", quiet: quiet || json))
        } catch let error as CocoaError {
            // A file system error names the report's path; say it in one line, not as a dump.
            let reason = (error.userInfo[NSUnderlyingErrorKey] as? NSError)?.localizedDescription ?? error.localizedDescription
            throw CommandFailure(message: "\(out): cannot be written (\(reason))")
        }
        if json {
            return JSONSummary.print(
                JSONObject([
                    ("command", .string("report")), ("database", .string(db)), ("report", .string(out)),
                    ("calls", JSONSummary.number(r.calls)), ("poor", JSONSummary.number(r.poor)),
                    ("bytes", JSONSummary.number(r.bytes)), ("seconds", JSONSummary.seconds(r.seconds)),
                ]))
        }
        print("report    \(out)")
        print("calls     \(r.calls) (\(r.poor) poor)")
        print("size      \(String(format: "%.0f", Double(r.bytes) / 1024)) KiB")
        print("time      \(String(format: "%.2f", r.seconds)) s")
    }
}
