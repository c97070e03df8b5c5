import ArgumentParser
import CallLog
import Store

@main
struct Callstats: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "callstats",
        abstract: "Call-quality analytics: record, capture, analyse and query call statistics.",
        discussion: """
            Typical use:
              callstats analyze LOGS... --db calls.sqlite     score calls into SQLite
              callstats query --db calls.sqlite "SELECT * FROM worst_calls LIMIT 10"
              callstats report --db calls.sqlite --out report.html   charts in one HTML file
              callstats capture -r call.pcap -o logs/         measure calls on the wire
              callstats simulate --calls 100 --out logs/      realistic sample logs
              callstats serve --out logs/                     take records posted by browsers (agent.js)
            """,
        version: Callstats.versionText,
        subcommands: [
            AnalyzeCommand.self, QueryCommand.self, ReportCommand.self, ConfigCommand.self, RegradeCommand.self,
            CatCommand.self, CaptureCommand.self, ServeCommand.self,
            SimulateCommand.self, ImportChromiumCommand.self, BenchCommand.self, InternalCommand.self,
        ]
    )

    /// The release, and the versions of the formats it reads and writes: what a bug report needs.
    static let release = "0.1.0"
    static var versionText: String {
        "callstats \(release) (log format v\(LogRecord.formatVersion), database schema v\(Schema.version))"
    }
}
