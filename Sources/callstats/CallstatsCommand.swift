import ArgumentParser

@main
struct Callstats: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "callstats",
        abstract: "Call-quality analytics: record, capture, analyse and query call statistics.",
        subcommands: [CatCommand.self, QueryCommand.self, SimulateCommand.self, ImportChromiumCommand.self]
    )
}
