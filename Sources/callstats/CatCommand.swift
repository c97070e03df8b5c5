import ConsoleOutput
import ArgumentParser
import CallLog

/// `callstats cat`: a log as plain NDJSON with statistics restored to full snapshots.
struct CatCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cat",
        abstract: "Print log files as NDJSON, statistics deltas restored to full snapshots.",
        discussion: """
            Reads .ndjson.zst, .ndjson.gz and .ndjson files (or folders of them) and prints one record per line, \
            exactly as the agent recorded it. Damaged parts are reported on standard error with file \
            and line; everything readable is printed.

            Examples:
              callstats cat Data/sample/calls-000.ndjson.zst | head -3
              callstats cat --kind event --call c-0001 Data/sample
            """)

    @Argument(help: "Log files or folders; - reads standard input.")
    var paths: [String]

    @Option(help: "Only records of this kind (call, stats, event, quality, end, rtp, rtcp, ice, agent).")
    var kind: String?

    @Option(help: "Only records of this call.")
    var call: String?

    @Flag(help: "Keep statistics as written (deltas) instead of restoring full snapshots.")
    var raw = false

    func run() throws {
        let (paths, standardInput) = try StandardInput.replacingDash(in: self.paths)
        defer { standardInput?.remove() }
        let search = LogFiles.find(paths)
        let (files, missing) = (search.files, search.missing)
        for m in missing { Terminal.error(Printable.escaped(m) + ": no such file or folder") }
        for f in search.foldersWithoutLogs { Terminal.error(Printable.escaped(f) + ": no log files (*.ndjson, *.ndjson.zst, *.ndjson.gz) in this folder") }
        var out = OutputBuffer()
        var problems = 0
        for file in files {
            let emit: (LogRecord) -> Void = { r in
                if let kind, r.kind.rawValue != kind { return }
                if let call, r.call != call { return }
                out.line(r.jsonLine)
            }
            let issue: (LogIssue) -> Void = {
                problems += 1; Terminal.error(Printable.escaped($0.description))
            }
            if raw {
                LogLineReader(path: file).forEachLine(
                    { bytes, n in
                        do throws(RecordError) { emit(try LogRecord(parsing: bytes)) } catch {
                            issue(LogIssue(file: file, line: n, category: .invalidRecord, message: error.description))
                        }
                    }, issue: issue)
            } else {
                LogReader(path: file).forEachRecord({ r, _ in emit(r) }, issue: issue)
            }
        }
        out.flush()
        if problems > 0 || !missing.isEmpty { throw ExitCode(ExitStatus.skippedInput) }
    }
}
