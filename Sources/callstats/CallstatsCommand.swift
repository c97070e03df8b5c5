import ConsoleOutput
import ArgumentParser
import Foundation
import CallLog
import Store

@main
struct Callstats: ParsableCommand {
    /// A misspelt command is answered with the nearest one, before the parser would call it an
    /// unexpected argument of `callstats` itself.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let first = arguments.first, let suggestion = CommandSuggestion.unknownCommand(first, among: subcommandNames) {
            Terminal.error(suggestion)
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        main(arguments)
    }

    /// Every name and alias a subcommand answers to.
    static var subcommandNames: [String] {
        configuration.subcommands.flatMap { command in
            let c = command.configuration
            return [c.commandName ?? ""] + c.aliases
        }.filter { !$0.isEmpty } + ["help"]
    }

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
              callstats import dumps... --out logs/           webrtc-internals and rtcstats dumps
              callstats serve --out logs/                     take records posted by browsers (agent.js)
            """,
        version: Callstats.versionText,
        subcommands: [
            AnalyzeCommand.self, QueryCommand.self, ReportCommand.self, ConfigCommand.self, RegradeCommand.self,
            PruneCommand.self, ForgetCommand.self,
            CatCommand.self, CaptureCommand.self, ServeCommand.self,
            SimulateCommand.self, ImportCommand.self, InternalCommand.self,
        ]
    )

    /// The release, and the versions of the formats it reads and writes: what a bug report needs.
    static let release = "0.1.0"
    static var versionText: String {
        "callstats \(release) (log format v\(LogRecord.formatVersion), database schema v\(Schema.version))"
    }
}
