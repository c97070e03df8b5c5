import ConsoleOutput
import Analysis
import ArgumentParser
import CallLog
import Foundation
import Jobs
import MaterialScanning
import Store

/// `callstats prune`: calls older than a date leave the database, whole.
struct PruneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Remove calls that started before a date (retention), keeping rollups exact.",
        discussion: """
            Each call goes whole (streams, intervals, events, findings, stored material), and every \
            hour and day rollup it counted in is rebuilt from the calls that remain, in one \
            transaction. The logs the calls came from stay in the ledger, so the next analyze does \
            not read them again (analyze --force does). Freed pages are reused by later runs; \
            --vacuum returns them to the file system (the file is rewritten: it needs as much \
            free disk as the database is large, and readers wait meanwhile). With a PostgreSQL \
            --db, workers may keep writing meanwhile; --vacuum runs VACUUM, which makes the space \
            reusable without locking them out.

            Examples:
              callstats prune --older-than 90d
              callstats prune --before 2026-01-01 --db calls.sqlite --vacuum --json
            """)

    @Option(name: .long, help: "The database.")
    var db = "callstats.sqlite"

    @Option(help: ArgumentHelp("Remove calls that started before this date (ISO 8601, UTC).", valueName: "date"))
    var before: String?

    @Option(name: .customLong("older-than"), help: ArgumentHelp("Remove calls older than this: 90d, 12w, 36h.", valueName: "age"))
    var olderThan: String?

    @Flag(help: "Return the freed space to the file system (VACUUM).")
    var vacuum = false

    @Option(
        help: ArgumentHelp(
            "With --vacuum: seconds to wait for readers holding an older snapshot, which keep the removed bytes on disk (then exit 1 naming them).",
            valueName: "s"))
    var vacuumWait = 30.0

    @Flag(help: "Print the summary as JSON.")
    var json = false

    @Flag(name: .shortAndLong, help: "No progress line.")
    var quiet = false

    func validate() throws {
        guard (before == nil) != (olderThan == nil) else { throw ValidationError("give one of --before DATE or --older-than AGE") }
        if let before, SimulateCommand.parseDate(before) == nil {
            throw ValidationError("--before \(before): expected an ISO 8601 date such as 2026-01-01 or 2026-01-01T00:00:00Z")
        }
        if let olderThan, RetentionAge.milliseconds(olderThan) == nil {
            throw ValidationError("--older-than \(olderThan): expected a number and a unit, such as 90d, 12w or 36h, of at most a century (36500d)")
        }
        try OptionRange.check("--vacuum-wait", seconds: vacuumWait, 0...3_600)
    }

    func run() throws {
        guard StoreLocation.exists(db) else { throw CommandFailure(message: "\(db): no such database") }
        let cutoff: Int64
        if let before, let ms = SimulateCommand.parseDate(before) {
            cutoff = ms
        } else {
            cutoff = Int64(Date().timeIntervalSince1970 * 1000) - (olderThan.flatMap(RetentionAge.milliseconds) ?? 0)
        }
        let report = try RetentionRun.prune(
            database: db, before: cutoff, reclaim: vacuum, readerWaitSeconds: vacuumWait, progress: ProgressLine.stages("prune", quiet: quiet || json))
        Terminal.clearStatus()
        RetentionSummary.print(report, command: "prune", json: json, extra: [("before", RetentionSummary.isoDate(cutoff))])
    }
}

/// `callstats forget`: named calls, or every call of one person, leave the database.
struct ForgetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Remove named calls, or every call of one person, keeping rollups exact (a deletion request).",
        discussion: """
            --user matches the person fields of each call's `call` record and its labels (user, \
            userId, caller, callee, from, to, email, phone, …), as text or as a number. In a \
            database analysed with --pseudonymize-key, give the same key: the call ids and the \
            user are then looked up by their pseudonyms. Calls go whole and rollups are rebuilt, \
            as with prune; --vacuum also removes the freed pages from the file, so that the \
            deleted bytes are gone from disk, not only unreachable (on PostgreSQL it runs VACUUM: \
            the rows' space is reused by later writes; VACUUM FULL, which locks each table while \
            it rewrites it, removes their bytes at once).

            Examples:
              callstats forget --call 7E60066C-C7F3-438A-95B1-DDE8634E1072
              callstats forget --user alice@example.com --vacuum --json
            """)

    @Option(name: .long, help: "The database.")
    var db = "callstats.sqlite"

    @Option(name: .customLong("call"), help: ArgumentHelp("A call id to remove (repeatable).", valueName: "id"))
    var calls: [String] = []

    @Option(help: ArgumentHelp("Remove every call whose call record names this person.", valueName: "value"))
    var user: String?

    @Option(help: ArgumentHelp("The key the database was pseudonymised with.", valueName: "hex"))
    var pseudonymizeKey: String?

    @Flag(help: "Return the freed space to the file system (VACUUM).")
    var vacuum = false

    @Option(
        help: ArgumentHelp(
            "With --vacuum: seconds to wait for readers holding an older snapshot, which keep the removed bytes on disk (then exit 1 naming them).",
            valueName: "s"))
    var vacuumWait = 30.0

    @Flag(help: "Print the summary as JSON.")
    var json = false

    @Flag(name: .shortAndLong, help: "No progress line.")
    var quiet = false

    func validate() throws {
        if calls.isEmpty && user == nil { throw ValidationError("give --call ID (repeatable) or --user VALUE") }
        if let k = pseudonymizeKey, SipHashKey(hex: k) == nil {
            throw ValidationError("--pseudonymize-key must be 32 hexadecimal digits (a 128-bit key), got \(k.count) characters")
        }
        try OptionRange.check("--vacuum-wait", seconds: vacuumWait, 0...3_600)
    }

    func run() throws {
        guard StoreLocation.exists(db) else { throw CommandFailure(message: "\(db): no such database") }
        let pseudonymizer = pseudonymizeKey.flatMap(SipHashKey.init(hex:)).map { CallPseudonymizer(key: $0) }
        let report = try RetentionRun.forget(
            database: db, callIDs: calls, user: user, pseudonymizer: pseudonymizer, reclaim: vacuum, readerWaitSeconds: vacuumWait,
            progress: ProgressLine.stages("forget", quiet: quiet || json))
        Terminal.clearStatus()
        RetentionSummary.print(report, command: "forget", json: json, extra: [])
    }
}

/// `90d`, `12w`, `36h` as milliseconds.
enum RetentionAge {
    /// The longest age: a century, so that now less the age stays a date.
    static let maximumMilliseconds: Int64 = 36_500 * 24 * 3_600_000

    /// `90d`, `12w`, `36h` in milliseconds; nil for any other text or an age past a century.
    static func milliseconds(_ text: String) -> Int64? {
        guard let unit = text.last, let n = Int64(text.dropLast()), n >= 0 else { return nil }
        let hour: Int64 = 3_600_000
        let unitMs: Int64
        switch unit {
        case "h": unitMs = hour
        case "d": unitMs = 24 * hour
        case "w": unitMs = 7 * 24 * hour
        default: return nil
        }
        let (ms, overflow) = n.multipliedReportingOverflow(by: unitMs)
        return overflow || ms > maximumMilliseconds ? nil : ms
    }
}

/// What prune and forget print: for people, or as one JSON object (fields in Data/SCHEMA.md,
/// "Retention and deletion").
enum RetentionSummary {
    static func print(_ r: RetentionRun.Report, command: String, json: Bool, extra: [(String, String)]) {
        let m = r.removal
        var out = OutputBuffer()
        if json {
            var object = JSONObject([("command", .string(command)), ("database", .string(r.database))])
            for (key, value) in extra { object.entries.append((key: key, value: .string(value))) }
            object.entries += [
                ("calls", JSONSummary.number(m.calls)), ("streams", JSONSummary.number(m.streams)),
                ("intervals", JSONSummary.number(m.intervals)), ("events", JSONSummary.number(m.events)),
                ("findings", JSONSummary.number(m.findings)), ("peer_connections", JSONSummary.number(m.peerConnections)),
                ("materials", JSONSummary.number(m.materials)),
                ("rollup_buckets_rebuilt", JSONSummary.number(m.rollupBuckets)),
                ("first_start", m.firstStart.map { .string(isoDate($0)) } ?? .null),
                ("last_start", m.lastStart.map { .string(isoDate($0)) } ?? .null),
                ("file_bytes", JSONSummary.number(r.fileBytes)), ("free_bytes", JSONSummary.number(r.freeBytes)),
                ("vacuumed", .bool(r.reclaimed)),
            ].map { (key: $0.0, value: $0.1) }
            return JSONSummary.print(object)
        } else if m.calls == 0 {
            out.line("\(command): no call matched; \(r.database) is unchanged")
        } else {
            let span = m.firstStart.flatMap { f in m.lastStart.map { "started \(isoDate(f)) … \(isoDate($0))" } } ?? ""
            out.line("removed \(m.calls) call\(m.calls == 1 ? "" : "s") \(span)")
            out.line(
                "  with \(m.streams) streams, \(m.intervals) intervals, \(m.events) events, \(m.findings) findings, "
                    + "\(m.peerConnections) peer connections, \(m.materials) stored materials")
            out.line("  \(m.rollupBuckets) rollup buckets rebuilt from the calls that remain")
            if r.reclaimed {
                out.line("  \(r.database) vacuumed: \(mb(r.fileBytes)) MB")
            } else {
                out.line("  \(mb(r.freeBytes)) MB of \(mb(r.fileBytes)) MB is now free pages, reused by later runs (--vacuum returns them)")
            }
        }
        out.flush()
    }

    static func mb(_ bytes: Int64) -> String { String(format: "%.1f", Double(bytes) / 1e6) }

    static func isoDate(_ ms: Int64) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }
}
