import ArgumentParser
import Foundation
import Ingest
import Report
import Simulator
import SQLiteDatabase
import Store

/// `callstats bench report`: how long the HTML report takes, and how big it is, on a
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
        let store = try CallStore(path: db, forWriting: false)
        let have = try store.db.scalar("SELECT count(*) FROM calls")?.int64 ?? 0
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

        let store = try CallStore(path: db)
        let copies = (calls + base - 1) / base - 1
        print("copying to \(calls) calls (\(copies) copies)…")
        // Every copy lists its table's columns as the table has them (no list written here that
        // a new column would leave behind), each column's value in the copy made by `value`.
        func copy(_ table: String, _ value: (String) -> String) throws -> String {
            try store.db.rows("SELECT name FROM pragma_table_info(?)", [.text(table)]).compactMap { $0[0].string }
                .map(value).joined(separator: ", ")
        }
        let columns = try store.db.rows("SELECT name FROM pragma_table_info('calls')").compactMap { $0[0].string }
        let keys = try store.db.scalar("SELECT max(call_key) FROM calls")?.int64 ?? 0
        // Copy k of a call starts k seconds after it (within the original's hour, mostly), and
        // has a key of its own past the originals'.
        func copied(_ c: String) -> String {
            switch c {
            case "call_id": "call_id || '#' || k.n"
            case "call_key": "call_key + k.n * \(keys)"
            case "start_ts", "end_ts": "\(c) + k.n * 1000"
            default: c
            }
        }
        try store.db.transaction {
            try store.db.execute("CREATE TEMP TABLE k(n INTEGER PRIMARY KEY)")
            for n in 1...max(1, copies) { try store.db.run("INSERT INTO k VALUES (?)", [.integer(Int64(n))]) }
            try store.db.run("DELETE FROM k WHERE n > ?", [.integer(Int64(copies))])
            try store.db.execute("""
                INSERT INTO calls (\(columns.joined(separator: ", ")))
                SELECT \(columns.map(copied).joined(separator: ", ")) FROM calls, k
                """)
            // The last copy is partial when --calls is not a multiple of --base.
            let excess = base * (copies + 1) - calls
            if excess > 0 {
                try store.db.run("DELETE FROM calls WHERE call_id IN (SELECT call_id FROM calls WHERE call_id LIKE ? LIMIT ?)",
                                 [.text("%#\(copies)"), .integer(Int64(excess))])
            }
            let finding = try copy("findings") { c in
                switch c {
                case "call_id": "f.call_id || '#' || k.n"
                case "start_ts": "f.start_ts + k.n * 1000"
                default: "f.\(c)"
                }
            }
            try store.db.execute("""
                INSERT INTO findings SELECT \(finding)
                FROM findings f JOIN k JOIN calls c ON c.call_id = f.call_id || '#' || k.n
                """)
        }
        print("rebuilding rollups…")
        try store.rebuildAllRollups()
        // The calls the report drills into get their originals' streams, intervals and events.
        let worst = try ReportData.worstCallIDs(store.db, limit: ReportData.Options().worstCalls)
        // ?1 the copy's id, ?2 its time shift, ?3 the original's id.
        let copyKey = "(SELECT call_key FROM calls WHERE call_id = ?1)"
        let stream = try copy("streams") { c in
            switch c {
            case "call_id": "?1"
            case "start_ts", "end_ts": "\(c) + ?2"
            default: c
            }
        }
        let interval = try copy("interval_rows") { c in
            switch c {
            case "call_key": copyKey
            case "start_ts", "end_ts": "\(c) + ?2"
            default: c
            }
        }
        let event = try copy("event_rows") { c in
            switch c {
            case "call_key": copyKey
            case "ts": "ts + ?2"
            default: c
            }
        }
        let originalKey = "(SELECT call_key FROM calls WHERE call_id = ?3)"
        try store.db.transaction {
            for id in worst where id.contains("#") {
                let parts = id.split(separator: "#")
                let (original, shift) = (String(parts[0]), (Int64(parts[1]) ?? 0) * 1000)
                let values: [SQLValue] = [.text(id), .integer(shift), .text(original)]
                try store.db.run("INSERT INTO streams SELECT \(stream) FROM streams WHERE call_id = ?3", values)
                // Filed under the copy's key; read by call id through the views.
                try store.db.run("INSERT INTO interval_rows SELECT \(interval) FROM interval_rows WHERE call_key = \(originalKey)", values)
                try store.db.run("INSERT INTO event_rows SELECT \(event) FROM event_rows WHERE call_key = \(originalKey)", values)
            }
        }
        print("built \(db) in \(fmt(Date().timeIntervalSince(started), 1)) s")
    }
}
