import ConsoleOutput
import ArgumentParser
import BenchmarkSupport
import Foundation
import Jobs
import Report
import Simulator
import SQLiteDatabase
import Store

/// `callstats-bench report`: how long the HTML report takes, and how big it is, on a
/// database of many calls.
struct ReportBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Report generation time and size on a database of many calls (1 million by default).",
        discussion: """
            Builds the database once (then reuses it): simulates --base calls over one week, \
            analyses them, then copies every call (with its findings) until there are --calls, \
            each copy starting a few seconds after its original, so the week holds them all. \
            Rollups are rebuilt from the copied calls, so they really cover every call; the \
            worst calls shown get copies of their streams, intervals and events too, so each \
            drill-down has its data. Then times `callstats report` on it.
            """)

    @Option(help: "Calls in the database.")
    var calls = 1_000_000

    @Option(help: "Calls simulated and analysed before copying.")
    var base = 2_000

    @Option(help: "The database (built there when missing).")
    var db = "bench-data/report-1m.sqlite"

    @Option(help: "Runs; the best is printed.")
    var runs = 2

    func run() throws {
        guard calls >= base, base > 0 else { throw ValidationError("--calls must be at least --base") }
        if !FileManager.default.fileExists(atPath: db) { try build() }
        let have = try SQLiteReader(path: db).query("SELECT count(*) FROM calls").rows.first?.first?.int64 ?? 0
        let out = NSTemporaryDirectory() + "callstats-bench-report-\(getpid()).html"
        defer { try? FileManager.default.removeItem(atPath: out) }
        var best: ReportWriter.Result?
        for _ in 0..<max(1, runs) {
            let r = try ReportWriter.write(database: db, output: out)
            if best == nil || r.seconds < best!.seconds { best = r }
        }
        let dbBytes = (try? FileManager.default.attributesOfItem(atPath: db)[.size] as? Int) ?? 0
        var table = Table(header: ["database", "calls", "database MB", "report seconds", "report KiB"])
        table.rows.append([db, "\(have)", fmt(Double(dbBytes) / 1e6, 0), fmt(best!.seconds), fmt(Double(best!.bytes) / 1024, 0)])
        print(table.render())
    }

    /// The database: `base` analysed calls, copied up to `calls`.
    private func build() throws {
        let dir = (db as NSString).deletingLastPathComponent
        let logs = (dir.isEmpty ? "." : dir) + "/report-base-logs"
        try? FileManager.default.removeItem(atPath: logs)
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: logs) }
        let started = Date()
        print("simulating and analysing \(base) calls…")
        _ = try Simulator(SimulatorConfiguration(calls: base, seed: 11)).write(to: logs) { _ in }
        _ = try AnalyzeRun(options: AnalyzeRun.Options(paths: [logs], database: db)).run()

        let store = try SQLiteStore(path: db)
        print("copying to \(calls) calls (\((calls + base - 1) / base - 1) copies)…")
        try store.appendCopiesOfCalls(upTo: calls)
        print("rebuilding rollups…")
        try store.rebuildAllRollups()
        // The calls the report drills into get their originals' streams, intervals and events.
        try store.copyDetail(ofCopies: try ReportData.worstCallIDs(SQLiteReader(path: db).connection, limit: ReportData.Options().worstCalls))
        print("built \(db) in \(fmt(Date().timeIntervalSince(started), 1)) s")
    }
}
