@testable import Analysis
import CallLog
import MaterialScanning
import MaterialTestSupport
import XCTest

/// The analysis settings by name: files, `--set`, and what they change in an analysis.
final class SettingsTests: XCTestCase {
    let t0: Int64 = 1_700_000_000_000

    func testSettingsRoundTripThroughTheirJSON() throws {
        XCTAssertEqual(try AnalysisConfig(settingsJSON: AnalysisConfig().settingsJSON, source: "defaults"), AnalysisConfig())
        var c = AnalysisConfig()
        try c.apply(assignments: ["loss_warn_pct=0.35", "jitter_warn_ms=27.5", "setup_poor_ms=12000", "gap_factor=2.25"])
        let again = try AnalysisConfig(settingsJSON: c.settingsJSON, source: "changed")
        XCTAssertEqual(again, c)
        XCTAssertEqual(again.lossWarnPct, 0.35)
        XCTAssertEqual(again.setupPoorMs, 12_000)
        XCTAssertTrue(c.settingsJSON.contains("\"jitter_warn_ms\": 27.5"), c.settingsJSON)
        XCTAssertTrue(c.settingsJSON.contains("\"setup_poor_ms\": 12000"), "whole numbers without a fraction: \(c.settingsJSON)")
    }

    /// Each setting reads and writes its own field, and no other: a setting wired to the wrong
    /// field would change another threshold than the one a user named.
    func testEverySettingChangesItsOwnFieldOnly() throws {
        XCTAssertEqual(Set(AnalysisConfig.settings.map(\.name)).count, AnalysisConfig.settings.count, "names are unique")
        let defaults = AnalysisConfig()
        for s in AnalysisConfig.settings {
            var c = defaults
            let v = defaults.value(of: s) + 1
            try c.set(s.name, to: v)
            XCTAssertEqual(c.value(of: s), v, s.name)
            XCTAssertEqual(c.changes(from: defaults).map(\.name), [s.name], s.name)
            XCTAssertNotEqual(c, defaults, "\(s.name) is a field the config compares")
        }
    }

    func testBadSettingsFilesSayWhereAndWhat() {
        func error(_ text: String) -> String {
            do {
                _ = try AnalysisConfig(settingsJSON: text, source: "grading.json")
                return "accepted"
            } catch {
                return error.description
            }
        }
        XCTAssertEqual(error("{\n  \"loss_warn_pct\": 2,\n  \"jitter_warn_ms\" 40\n}"), "grading.json: line 3, column 20: expected ':'")
        XCTAssertTrue(
            error("{\"jiter_warn_ms\": 40}").hasPrefix("grading.json: line 1: unknown setting jiter_warn_ms (`callstats config` lists them: loss_warn_pct,"))
        XCTAssertEqual(error("{\"jitter_warn_ms\": \"40\"}"), "grading.json: line 1: jitter_warn_ms: expected a number")
        XCTAssertEqual(error("{\"jitter_warn_ms\": 40, \"jitter_warn_ms\": 50}"), "grading.json: line 1: jitter_warn_ms is given twice")
        XCTAssertEqual(error("{\"setup_warn_ms\": 2500.5}"), "grading.json: line 1: setup_warn_ms must be a whole number")
        XCTAssertEqual(error("{\"rtt_warn_ms\": -1}"), "grading.json: line 1: rtt_warn_ms must be a number from 0 to 1e12")
        XCTAssertEqual(error("{\"loss_warn_pct\": 6}"), "grading.json: loss_warn_pct (6) is above loss_poor_pct (5)")
        XCTAssertEqual(error("{\"mos_poor\": 3.8}"), "grading.json: mos_poor (3.8) is above mos_fair (3.6)")
        // A file of several lines: the line of the setting at fault, past nested values,
        // strings holding braces and commas, and an escaped quote.
        let file = """
            {
              "loss_warn_pct": 2,
              "note": {"a": [1, {"b": "}, \\"x"}]},
              "jitter_warn_ms":
                "40",
              "rtt_warn_ms": 400
            }
            """
        XCTAssertEqual(
            error(file),
            "grading.json: line 3: unknown setting note (`callstats config` lists them: " + AnalysisConfig.settingNames.joined(separator: ", ") + ")")
        XCTAssertEqual(
            error(file.replacingOccurrences(of: "\"note\"", with: "\"loss_poor_pct\"")),
            "grading.json: line 3: loss_poor_pct: expected a number")
        XCTAssertEqual(
            error(file.replacingOccurrences(of: "\"note\": {\"a\": [1, {\"b\": \"}, \\\"x\"}]}", with: "\"loss_poor_pct\": 6")),
            "grading.json: line 4: jitter_warn_ms: expected a number", "the note replaced by a valid setting")
        XCTAssertEqual(AnalysisConfig.keyLines(in: file), [2, 3, 4, 6])
        XCTAssertEqual(error("[1, 2]"), "grading.json: expected a JSON object of setting names and numbers")
        XCTAssertEqual(error("{\"jitter_warn_ms\": 40}"), "accepted", "names left out keep their defaults")
        XCTAssertEqual(error("\u{FEFF}{\"jitter_warn_ms\": 40}\n"), "accepted", "a byte order mark is not an error")
    }

    func testAssignments() throws {
        var c = AnalysisConfig()
        try c.apply(assignments: ["jitter_warn_ms=40", " loss_warn_pct = 2 "])
        XCTAssertEqual(c.jitterWarnMs, 40)
        XCTAssertEqual(c.lossWarnPct, 2)
        XCTAssertThrowsError(try c.apply(assignments: ["jitter_warn_ms"])) {
            XCTAssertEqual("\($0)", "--set jitter_warn_ms: expected name=number, e.g. jitter_warn_ms=40")
        }
        XCTAssertThrowsError(try c.apply(assignments: ["jitter_warn_ms=forty"]))
        XCTAssertThrowsError(try c.apply(assignments: ["jitter=40"])) { XCTAssertTrue("\($0)".hasPrefix("unknown setting jitter ")) }
        XCTAssertThrowsError(try c.apply(assignments: ["persistence_count=6"])) {
            XCTAssertEqual("\($0)", "persistence_count (6) is above persistence_window (5)")
        }
    }

    /// `label_dimensions`, the one setting that is a list: in a file an array of keys, with
    /// `--set` keys separated by commas; left out of the JSON while empty (a database graded
    /// with the defaults keeps its text); keys that could not be a JSON path are refused.
    func testLabelDimensions() throws {
        XCTAssertFalse(AnalysisConfig().settingsJSON.contains("label_dimensions"))
        var c = AnalysisConfig()
        try c.apply(assignments: ["label_dimensions = region, tenant", "jitter_warn_ms=40"])
        XCTAssertEqual(c.labelDimensions, ["region", "tenant"])
        XCTAssertTrue(c.settingsJSON.hasSuffix(",\n  \"label_dimensions\": [\"region\", \"tenant\"]\n}"), c.settingsJSON)
        XCTAssertEqual(try AnalysisConfig(settingsJSON: c.settingsJSON, source: "labels"), c)
        XCTAssertEqual(c.changeCount(from: AnalysisConfig()), 2)
        XCTAssertEqual(
            c.changesText(from: AnalysisConfig(), otherLabel: "database:"),
            "jitter_warn_ms 40 (database: 30), label_dimensions region,tenant (database: none)")
        var fewer = c
        fewer.labelDimensions = ["region"]
        XCTAssertNotEqual(c, fewer, "a different list is other settings")
        try c.apply(assignments: ["label_dimensions="])
        XCTAssertEqual(c.labelDimensions, [])
        try c.apply(assignments: ["label_dimensions=none"])
        XCTAssertEqual(c.labelDimensions, [])

        for bad in ["region,region", "a'b", "a\"b", "", "region,", String(repeating: "k", count: 65)] where !bad.isEmpty {
            var d = AnalysisConfig()
            XCTAssertThrowsError(try d.apply(assignments: ["label_dimensions=\(bad)"]), bad)
        }
        XCTAssertThrowsError(try AnalysisConfig(settingsJSON: "{\"label_dimensions\": \"region\"}", source: "f")) {
            XCTAssertEqual("\($0)", "f: line 1: label_dimensions: expected an array of label keys, e.g. [\"region\", \"tenant\"]")
        }
        XCTAssertThrowsError(try AnalysisConfig(settingsJSON: "{\"label_dimensions\": [\"x') --\"]}", source: "f")) {
            XCTAssertTrue("\($0)".contains("is not a label key"), "\($0)")
        }
    }

    /// 7.4 % loss in the intervals `lossy` (`Harness.lossyCall`), analysed with `settings` changed.
    func call(_ lossy: Set<Int>, _ settings: [String] = []) throws -> CallAnalysis {
        var config = AnalysisConfig()
        try config.apply(assignments: settings)
        return try Harness.lossyCall(lossy, id: "s", t0: t0, config: config)
    }

    func testThresholdsDecideFindingsAndGrades() throws {
        let sustained: Set = [5, 6, 7]
        let byDefault = try call(sustained)
        XCTAssertEqual(byDefault.findings.first { $0.code == "high_loss" }?.severity, .poor)
        XCTAssertEqual(byDefault.call.grade, .poor)

        let lenient = try call(sustained, ["loss_poor_pct=10"])
        XCTAssertEqual(lenient.findings.first { $0.code == "high_loss" }?.severity, .warn, "7.4 % is below the poor threshold now")
        let mos = try XCTUnwrap(lenient.call.mosWorst)
        XCTAssertGreaterThan(mos, 3.1, "the loss alone does not make the MOS poor")
        XCTAssertEqual(lenient.call.grade, .fair)

        let relaxed = try call(sustained, ["loss_warn_pct=8", "loss_poor_pct=10"])
        XCTAssertFalse(relaxed.findings.contains { $0.code == "high_loss" })
        XCTAssertEqual(relaxed.call.grade, mos < 3.6 ? .fair : .good, "graded by the MOS alone")
        let strictMOS = try call(sustained, ["loss_warn_pct=8", "loss_poor_pct=10", "mos_fair=4.4", "mos_poor=\(mos + 0.01)"])
        XCTAssertEqual(strictMOS.call.grade, .poor, "worst sustained MOS \(mos) is below mos_poor now")

        // Persistence: one lossy window is a blip by default, a finding when one window is enough.
        XCTAssertFalse(try call([5]).findings.contains { $0.code == "high_loss" })
        XCTAssertTrue(try call([5], ["persistence_count=1"]).findings.contains { $0.code == "high_loss" })
    }
}
