import ConsoleOutput
import Analysis
import ArgumentParser
import CallLog
import Foundation
import Jobs
import MaterialScanning
import Store

/// `callstats analyze`: logs in, scored calls and rollups out.
struct AnalyzeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "analyze",
        abstract: "Analyse call logs into an SQLite database (calls, streams, intervals, findings, rollups).",
        discussion: """
            Reads .ndjson.zst, .ndjson.gz and .ndjson files and folders of them, scores every call (ITU-T G.107 \
            E-model for audio, a 1-5 video score, setup times, ICE outcome, findings) and writes the \
            results into the database, creating it if needed. Runs are incremental: files already \
            ingested are skipped, and calls that continue in new files are updated, so running it \
            again over the same logs changes nothing.

            Exit status: 0 when everything was read, 3 when some input was skipped (damaged or \
            malformed; each case is reported with file and line), 1 on failure.

            Grading: findings and grades use the thresholds that `callstats config` lists. A \
            database keeps the settings its calls were graded with, and later runs use them; \
            --config and --set choose others for a new database (for one that holds calls graded \
            otherwise, use `callstats regrade`).

            Privacy: with --pseudonymize-key, call ids, person fields (user, caller, email, phone, \
            ..., at any depth, names matched loosely), e-mail addresses, phone numbers and the call's \
            id in any text, and peer-connection names become keyed pseudonyms (`anon-` + 16 hex \
            digits), and IP addresses are replaced (in captured streams' ids too), before anything \
            is stored. \
            Use the same key for every run over one database so that calls still merge.

            Examples:
              callstats analyze Data/sample --db calls.sqlite
              callstats analyze /var/log/callstats/*.ndjson.zst --db calls.sqlite --quiet
              callstats analyze logs/ --db shared.sqlite --pseudonymize-key 000102030405060708090a0b0c0d0e0f
              callstats analyze logs/ --db strict.sqlite --set jitter_warn_ms=20 --set loss_warn_pct=0.5
            """,
        aliases: ["analyse"])

    @Argument(help: "Log files or folders (searched recursively for *.ndjson, *.ndjson.zst and *.ndjson.gz, following symbolic links); - reads standard input.")
    var paths: [String]

    @Option(name: .long, help: "The database to write: an SQLite file, or a postgres:// URL (libpq conventions).")
    var db = "callstats.sqlite"

    @Option(help: "Reader threads (default: one per core).")
    var threads: Int?

    @Flag(help: "Read files again even if the ledger says they were ingested.")
    var force = false

    @Flag(name: .shortAndLong, help: "Print only the summary (no progress, no per-line issues).")
    var quiet = false

    @Option(help: "Print at most this many input problems individually (the rest are counted).")
    var showIssues = 20

    @OptionGroup var pseudonymization: PseudonymizationOptions

    /// Small transactions make a killed run stop between many commits (the fault tests use it).
    @Option(help: .hidden)
    var callsPerTransaction: Int?

    @OptionGroup var settings: SettingsOptions

    @Flag(help: "Print the summary as one JSON object (no progress; warnings still go to standard error).")
    var json = false

    /// Seconds a commit to a new database waits for readers before saying who they are and
    /// waiting again (the reader tests shorten it).
    @Option(help: .hidden)
    var readerWaitSeconds: Double?

    /// The readers' bounds (`RecordIngestor.Bounds`), small in the tests that attack them.
    @Option(help: .hidden)
    var maxOpenCalls: Int?
    @Option(help: .hidden)
    var maxRecordsPerCall: Int?
    @Option(help: .hidden)
    var maxIDBytes: Int?
    @Option(help: .hidden)
    var maxObjectsPerPeerConnection: Int?

    /// Calls written at a time (measuring the writer's batch size).
    @Option(help: .hidden)
    var callsPerWrite: Int?

    func validate() throws {
        if let threads { try OptionRange.check("--threads", threads, OptionRange.threads) }
    }

    func run() throws {
        let (paths, standardInput) = try StandardInput.replacingDash(in: self.paths)
        defer { standardInput?.remove() }
        // A path the user named that is not there is a mistake in the command, not input to skip:
        // nothing is created and nothing is read.
        let missing = paths.filter { !FileManager.default.fileExists(atPath: $0) }
        if !missing.isEmpty {
            throw CommandFailure(message: missing.map { "\($0): no such file or folder" }.joined(separator: "\n"))
        }
        var options = AnalyzeRun.Options(paths: paths, database: db)
        options.force = force
        options.config = try settings.settings(database: db)
        if let k = pseudonymization.key {
            options.pseudonymizer = CallPseudonymizer(key: k, keepAddresses: pseudonymization.keptAddresses)
        }
        if let threads { options.readers = max(1, threads) }
        if let callsPerTransaction { options.callsPerTransaction = max(1, callsPerTransaction) }
        if let callsPerWrite { options.callsPerWrite = max(1, callsPerWrite) }
        options.issuesHandedOver = max(AnalyzeRun.Options.defaultIssuesHandedOver, showIssues)
        if let maxOpenCalls { options.bounds.maximumOpenCalls = max(1, maxOpenCalls) }
        if let maxRecordsPerCall { options.bounds.maximumRecordsPerCall = max(1, maxRecordsPerCall) }
        if let maxObjectsPerPeerConnection { options.bounds.maximumObjectsPerChain = max(1, maxObjectsPerPeerConnection) }
        if let maxIDBytes { options.bounds.maximumIDBytes = max(1, maxIDBytes) }
        if let readerWaitSeconds { options.readerWaitSeconds = max(0.001, readerWaitSeconds) }
        let run = AnalyzeRun(options: options)
        // Always said, --quiet and --json too: it is why the run does not end.
        let database = db
        run.onReaderWait = { readers in
            Terminal.clearStatus()
            Terminal.error(
                "note: \(database) is being read by \(readers): the run's work is kept and its commit waits "
                    + "until the reading ends (a new database is written under a rollback journal)")
        }
        let issuesLeftToShow = Locked(quiet ? 0 : showIssues)
        run.onIssue = { issue in
            let show = issuesLeftToShow.withLock { left in
                guard left > 0 else { return false }
                left -= 1
                return true
            }
            if show {
                Terminal.clearStatus()
                Terminal.error((issue.category.isNote ? "note: " : "warning: ") + Printable.escaped(issue.description))
            }
        }
        if !quiet && !json {
            // A line, not the status line: it says why nothing moves for a while, in logs too.
            run.onUpgrade = { from in
                Terminal.error("upgrading \(db) from schema version \(from) to \(Schema.version), once: \(Schema.upgradeSummary(from: from))…")
            }
            run.onProgress = { p in
                let mbps = p.seconds > 0 ? Double(p.textBytes) / 1e6 / p.seconds : 0
                let rps = p.seconds > 0 ? Double(p.records) / p.seconds : 0
                // Read from disk against the files' sizes: one large file moves too.
                let read = p.bytesToRead > 0 ? min(100, 100 * Double(p.bytesRead) / Double(p.bytesToRead)) : 100
                Terminal.status(
                    String(
                        format: "files %d/%d  read %.0f %%  calls %d  records %d (%.0f/s)  %.0f MB/s",
                        p.filesDone + p.filesSkipped, p.filesTotal, read, p.callsWritten, p.records, rps, mbps))
            }
        }
        let report = try run.run()
        Terminal.clearStatus()
        if let other = report.otherQualityModel {
            Terminal.error(AnalyzeSummary.otherQualityModelWarning(other, database: db))
        }
        if json {
            JSONSummary.print(
                JSONSummary.analyze(
                    report, database: StoreLocation.displayName(db),
                    exitStatus: report.skippedAnything ? ExitStatus.skippedInput : ExitStatus.ok))
        } else {
            var out = OutputBuffer()
            for line in AnalyzeSummary.lines(report, database: StoreLocation.displayName(db)) { out.line(line) }
            out.flush()
        }
        if report.skippedAnything { throw ExitCode(ExitStatus.skippedInput) }
    }
}

/// The end-of-run summary: aligned, labelled, short.
enum AnalyzeSummary {
    /// Said on stderr after every run into a database whose calls a different quality model
    /// graded (also with --quiet and --json), until a regrade grades them all with one.
    static func otherQualityModelWarning(_ other: String, database: String) -> String {
        "warning: \(database) holds calls scored by quality model \(other); this callstats scores with "
            + "\(CallAnalyzer.qualityModelVersion), so its MOS and grades mix two models (this run's calls are scored "
            + "with the latter). Run `callstats regrade --db \(database)` to score every stored call with this one"
    }

    static func lines(_ r: AnalyzeRun.Report, database: String) -> [String] {
        let p = r.progress
        var rows: [(String, String)] = []
        rows.append(("files read", "\(p.filesDone)" + (r.alreadyIngested.isEmpty ? "" : "  (\(r.alreadyIngested.count) already ingested, skipped)")))
        if !r.missing.isEmpty { rows.append(("not found", r.missing.joined(separator: ", "))) }
        if !r.foldersWithoutLogs.isEmpty { rows.append(("no logs in", r.foldersWithoutLogs.joined(separator: ", "))) }
        rows.append(("records", "\(p.records)"))
        rows.append(("data", String(format: "%.1f MB compressed, %.1f MB NDJSON", Double(p.compressedBytes) / 1e6, Double(p.textBytes) / 1e6)))
        rows.append(
            (
                "time",
                String(
                    format: "%.2f s  (%.0f MB/s, %.0f records/s)", p.seconds,
                    p.seconds > 0 ? Double(p.textBytes) / 1e6 / p.seconds : 0,
                    p.seconds > 0 ? Double(p.records) / p.seconds : 0)
            ))
        let g = r.gradesInRun
        rows.append(
            (
                "calls analysed",
                "\(r.callsInRun)  (good \(g[.good] ?? 0), fair \(g[.fair] ?? 0), poor \(g[.poor] ?? 0), no media \(g[.noMedia] ?? 0), unanswered \(g[.unanswered] ?? 0), unmeasured \(g[.unmeasured] ?? 0))"
            ))
        let t = r.totals
        rows.append(
            (
                "database",
                "\(database): \(t.calls) \(t.calls == 1 ? "call" : "calls"), \(t.byGrade["poor"] ?? 0) poor, "
                    + "\(t.byGrade["no_media"] ?? 0) without media, \(t.files) \(t.files == 1 ? "file" : "files")"
            ))
        rows.append(("settings", r.settings.summaryText))
        if let from = r.upgradedFrom {
            rows.append(("upgraded", "from schema version \(from) to \(Schema.version) (older callstats can read it, not write it)"))
        }
        if r.issueCounts.isEmpty {
            rows.append(("skipped", "nothing"))
        } else {
            let parts = r.issueCounts.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map {
                LogIssue.Category(rawValue: $0.key)?.counted($0.value) ?? "\($0.value) \($0.key)"
            }
            rows.append(("skipped", parts.joined(separator: ", ")))
        }
        return AlignedRows.render(rows)
    }
}
