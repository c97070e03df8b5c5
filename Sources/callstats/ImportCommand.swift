import ConsoleOutput
import ArgumentParser
import CallLog
import Simulator
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `callstats import-chromium`: the shared Chromium recording as log format v1.
struct ImportChromiumCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import-chromium",
        abstract: "Convert a Chromium getStats recording (.jsonl[.zst]) into log format v1.",
        discussion: """
            One call, each side a peer connection (pc "a" / "b"); page events become SDK events \
            (callMetric, iceState, iceGathering) and callEnd the end record.

            Example:
              callstats import-chromium ../shared/data/chromium-call-30ms-2pct.jsonl.zst --out /tmp/chromium.ndjson.zst --every 5
            """)

    @Argument(help: "The recording (.jsonl or .jsonl.zst).")
    var input: String

    @Option(help: "Output log file (.ndjson.zst compressed, .ndjson plain).")
    var out: String

    @Option(help: "Keep every K-th snapshot per side (5 turns the 1 s recording into 5 s).")
    var every: Int = 1

    @Option(help: "Call id to write (default: the recording's).")
    var call: String?

    @Flag(help: "Write every statistics snapshot in full (no deltas).")
    var fullSnapshots = false

    func validate() throws {
        guard every >= 1 else { throw ValidationError("--every must be at least 1") }
    }

    func run() throws {
        let result = ChromiumImporter(every: every, callID: call).convert(path: input)
        for issue in result.issues { Terminal.error(issue.description) }
        guard !result.records.isEmpty else {
            Terminal.error("\(input): no recording lines found")
            throw ExitCode(ExitStatus.failure)
        }
        unlink(out)
        var options = LogWriter.Options()
        options.deltaStats = !fullSnapshots
        let writer = try LogWriter(path: out, options: options)
        for r in result.records { try writer.append(r) }
        try writer.close()
        let sides = result.snapshots.keys.sorted().map { "\($0): \(result.snapshots[$0]!)" }.joined(separator: ", ")
        print("\(result.records.count) records (snapshots \(sides)) written to \(out), \(writer.bytesWritten) bytes")
        if !result.issues.isEmpty || result.skipped > 0 { throw ExitCode(ExitStatus.skippedInput) }
    }
}
