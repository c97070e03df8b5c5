import ConsoleOutput
import Analysis
import ArgumentParser
import Foundation
import Store

/// `--config FILE` and `--set name=value`, shared by `analyze`, `regrade` and `config`.
struct SettingsOptions: ParsableArguments {
    @Option(
        name: .customLong("config"),
        help: ArgumentHelp(
            "Analysis settings from this JSON file (`callstats config --json` writes one); settings it leaves out are the defaults.",
            valueName: "file"))
    var configFile: String?

    @Option(
        name: .customLong("set"),
        help: ArgumentHelp(
            "Change one setting, e.g. --set jitter_warn_ms=40 (repeatable; `callstats config` lists them).",
            valueName: "name=value"))
    var assignments: [String] = []

    /// The settings asked for; nil when neither option is given. `--set` changes the file's
    /// settings, or without a file those of `database` (the defaults when it has none).
    func settings(database: String?) throws -> AnalysisConfig? {
        guard configFile != nil || !assignments.isEmpty else { return nil }
        var config: AnalysisConfig
        if let configFile {
            let text: String
            do {
                text = try String(contentsOfFile: configFile, encoding: .utf8)
            } catch {
                throw CommandFailure(message: "\(configFile): cannot be read (\((error as NSError).localizedDescription))")
            }
            config = try AnalysisConfig(settingsJSON: text, source: configFile)
        } else {
            config = try database.map(Self.recordedSettings(of:)) ?? AnalysisConfig()
        }
        try config.apply(assignments: assignments)
        return config
    }

    /// A database's settings, or the defaults when the file does not exist yet.
    static func recordedSettings(of database: String) throws -> AnalysisConfig {
        guard StoreLocation.exists(database) else { return AnalysisConfig() }
        do {
            return try StoreLocation.openForReading(database).queries.recordedSettings()
        } catch StoreError.notADatabase where StoreLocation.isPostgres(database) {
            // A server without the schema yet has no settings: the defaults, as for a new file.
            return AnalysisConfig()
        }
    }
}

/// `callstats config`: the analysis settings (thresholds and model constants) with their
/// defaults, units and meanings; a database's, or what `--config`/`--set` make of them.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Show the analysis settings (thresholds for findings and grades), or write them as a settings file.",
        discussion: """
            Every threshold that findings and grades use, with its value, default, unit and \
            meaning. With --db, the settings that database's calls were graded with (each \
            database keeps them; later runs of analyze use them). With --config and --set, the \
            settings those make. --json prints a settings file to edit and pass to analyze or \
            regrade with --config.

            Examples:
              callstats config
              callstats config --db calls.sqlite
              callstats config --set jitter_warn_ms=40 --set loss_warn_pct=2 --json > grading.json
              callstats config --set label_dimensions=region,tenant --json > grading.json
              callstats regrade --db calls.sqlite --config grading.json
            """)

    @Option(name: .long, help: "Show this database's settings (the starting point for --set).")
    var db: String?

    @OptionGroup var settings: SettingsOptions

    @Flag(help: "Print the settings as a JSON settings file.")
    var json = false

    func run() throws {
        if let db, !StoreLocation.exists(db) { throw CommandFailure(message: "\(db): no such database") }
        let config: AnalysisConfig
        if let asked = try settings.settings(database: db) {
            config = asked
        } else if let db {
            config = try SettingsOptions.recordedSettings(of: db)
        } else {
            config = AnalysisConfig()
        }
        var out = OutputBuffer()
        if json {
            out.line(config.settingsJSON)
        } else {
            let defaults = AnalysisConfig()
            var table = Table(header: ["setting", "value", "", "default", "unit", "meaning"], textColumns: [2, 4, 5])
            for s in AnalysisConfig.settings {
                let value = config.value(of: s), standard = defaults.value(of: s)
                table.rows.append([
                    s.name, AnalysisConfig.text(value), value == standard ? "" : "*",
                    AnalysisConfig.text(standard), s.unit, s.meaning,
                ])
            }
            let labels = AnalysisConfig.labelDimensionsSetting
            table.rows.append([
                labels.name, config.labelDimensionsText, config.labelDimensions == defaults.labelDimensions ? "" : "*",
                defaults.labelDimensionsText, labels.unit, labels.meaning,
            ])
            out.line(table.render())
            let changed = config.changeCount(from: defaults)
            out.line(changed == 0 ? "(all defaults)" : "(* \(changed) changed from the default)")
        }
        out.flush()
    }
}
