import ConsoleOutput
import ArgumentParser
import CallLog
import Foundation
import Importers

/// `callstats import`: dumps users already have, as log format v1 (one call per dump).
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Convert webrtc-internals dumps, rtcstats dumps and Chromium test-page recordings into log format v1.",
        discussion: """
            The format is told by content (gzip and zstd are decompressed): chrome://webrtc-internals \
            dumps (standard or legacy statistics), rtcstats dumps (rtcstats-server's files as stored: \
            a connectionInfo line, a metadata object or no header first; rtcstats-js 3's \
            table-compressed ones too; Chrome's "rtcstats dump"), and the project's Chromium \
            test-page recordings. rtcstats-server's JVB, Jicofo and Jigasi samples are not browser \
            dumps and are refused. Each dump becomes one \
            call in DIR/<call>.ndjson.zst, its peer connections as "pc"; `callstats analyze DIR` \
            scores it. The call id is the dump's file name (--call for one dump). Labels come only \
            from --label.

            Exit status as analyze's: 0 all imported, 3 some input left out (details on stderr), \
            1 nothing imported.

            Examples:
              callstats import webrtc_internals_dump.txt rtcstats-*.gz --out imported/ --label tenant=acme
              callstats analyze imported/ --db calls.sqlite
            """,
        aliases: ["import-chromium"])

    @Argument(help: "Dump files.")
    var inputs: [String]

    @Option(help: "Output directory (a .ndjson[.zst] file name: one input written to that file).")
    var out: String

    @Option(name: .customLong("label"), help: "A label for every imported call (key=value; repeatable).")
    var labels: [String] = []

    @Option(help: "Call id to write (one input only; default: the file name, or a recording's own id).")
    var call: String?

    @Option(help: "Test-page recordings: keep every K-th snapshot per side (5 turns the 1 s recording into 5 s).")
    var every: Int = 1

    @Flag(help: "Write every statistics snapshot in full (no deltas).")
    var fullSnapshots = false

    @OptionGroup var pseudonymization: PseudonymizationOptions

    var outIsFile: Bool { DumpImportRun.Options(inputs: [], out: out).outIsFile }

    func validate() throws {
        guard every >= 1 else { throw ValidationError("--every must be at least 1") }
        if call != nil && inputs.count > 1 { throw ValidationError("--call names one call: give one input") }
        if outIsFile && inputs.count > 1 { throw ValidationError("--out is a file: give one input, or a directory") }
        for l in labels where !l.contains("=") || l.hasPrefix("=") {
            throw ValidationError("--label \(l): expected key=value")
        }
    }

    func run() throws {
        var options = DumpImportRun.Options(inputs: inputs, out: out)
        for l in labels {
            let i = l.firstIndex(of: "=")!
            options.labels[String(l[..<i])] = String(l[l.index(after: i)...])
        }
        options.callID = call
        options.every = every
        options.deltaStats = !fullSnapshots
        options.privacy = pseudonymization.key.map { RecordPrivacy(key: $0, keepAddresses: pseudonymization.keptAddresses) }
        let report: DumpImportRun.Report
        do {
            report = try DumpImportRun(options: options).run(
                imported: { d in
                    print(
                        "\(d.input): \(d.result.format?.rawValue ?? "?"), call \(d.callID), \(d.result.peerConnections) peer connection(s)"
                            + (d.snapshots.isEmpty ? ", no snapshots" : " (snapshots \(d.snapshots))") + ", \(d.result.records) records -> \(d.path)")
                }, problem: { Terminal.error($0) })
        } catch let e as DumpError {
            Terminal.error(e.description)
            throw ExitCode(ExitStatus.failure)
        }
        if report.imported == 0 { throw ExitCode(ExitStatus.failure) }
        if report.failed > 0 || report.partial > 0 { throw ExitCode(ExitStatus.skippedInput) }
    }
}
