import ConsoleOutput
import Analysis
import CallLog
import Jobs
import Store

/// The `--json` summaries of analyze, regrade, capture, report, prune and forget: one JSON
/// object on standard output, for schedulers and CI jobs. Field names are part of the interface
/// (documented in Data/SCHEMA.md, "Command summaries as JSON"): add fields, never rename one.
enum JSONSummary {
    static func print(_ object: JSONObject) {
        var out = OutputBuffer()
        out.line(JSONValue.object(object).serialized())
        out.flush()
    }

    static func number(_ n: Int) -> JSONValue { .number(Double(n)) }
    static func number(_ n: Int64) -> JSONValue { .number(Double(n)) }
    static func seconds(_ s: Double) -> JSONValue { .number((s * 1000).rounded() / 1000) }
    static func strings(_ s: [String]) -> JSONValue { .array(s.map { .string($0) }) }
    static func counts(_ c: [String: Int]) -> JSONValue {
        .object(JSONObject(c.sorted { $0.key < $1.key }.map { (key: $0.key, value: number($0.value)) }))
    }
    static func grades(_ g: [String: Int]) -> JSONValue {
        .object(JSONObject(Grade.allCases.map { (key: $0.rawValue, value: number(g[$0.rawValue] ?? 0)) }))
    }

    static func analyze(_ r: AnalyzeRun.Report, database: String, exitStatus: Int32) -> JSONObject {
        let p = r.progress
        return JSONObject([
            ("command", .string("analyze")), ("database", .string(database)), ("exit_status", number(Int(exitStatus))),
            ("files_read", number(p.filesDone)),
            ("files_already_ingested", .array(r.alreadyIngested.map { .object(["file": .string($0.file), "as": .string($0.as)]) })),
            ("not_found", strings(r.missing)), ("folders_without_logs", strings(r.foldersWithoutLogs)),
            ("records", number(p.records)), ("compressed_bytes", number(p.compressedBytes)), ("ndjson_bytes", number(p.textBytes)),
            ("seconds", seconds(p.seconds)),
            ("calls_analysed", number(r.callsInRun)),
            ("grades_analysed", grades(Dictionary(uniqueKeysWithValues: r.gradesInRun.map { ($0.key.rawValue, $0.value) }))),
            ("database_calls", number(r.totals.calls)), ("database_grades", grades(r.totals.byGrade)),
            ("database_files", number(r.totals.files)),
            ("settings", .string(r.settings.summaryText)),
            ("upgraded_from", r.upgradedFrom.map { number($0) } ?? .null),
            ("quality_model", .string(r.otherQualityModel ?? CallAnalyzer.qualityModelVersion)),
            ("other_quality_model", .bool(r.otherQualityModel != nil)),
            ("skipped", counts(r.issueCounts)),
        ])
    }

    static func regrade(_ r: RegradeRun.Report, database: String) -> JSONObject {
        JSONObject([
            ("command", .string("regrade")), ("database", .string(database)), ("calls", number(r.calls)),
            ("grades_before", grades(r.gradesBefore)), ("grades_after", grades(r.gradesAfter)),
            ("findings_before", number(r.findingsBefore)), ("findings_after", number(r.findingsAfter)),
            ("settings_changed", .string(r.settings.changesText(from: r.previousSettings, otherLabel: "was"))),
            ("settings", .string(r.settings.summaryText)),
            ("quality_model", .string(r.qualityModel)), ("previous_quality_model", r.previousQualityModel.map { .string($0) } ?? .null),
            ("seconds", seconds(r.seconds)),
        ])
    }
}

/// The status line of a command that goes through stages (`report`, `prune`, `forget`), as
/// `analyze` has one: rewritten in place on a terminal, nothing elsewhere (`Terminal.status`),
/// nothing with --quiet or --json. The caller clears it before printing its summary.
enum ProgressLine {
    static func stages(_ command: String, quiet: Bool) -> ((String) -> Void)? {
        guard !quiet else { return nil }
        return { stage in Terminal.status("\(command): \(Printable.escaped(stage))…") }
    }
}
