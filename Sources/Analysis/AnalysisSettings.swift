import CallLog

/// `AnalysisConfig` by name, for people: the names, units and meanings that `callstats config`
/// prints, a JSON settings file (`--config`), `--set name=value`, and the copy each database
/// keeps of the settings its calls were graded with (`meta.analysis_config`).
///
/// Names are snake_case and stable: they are what users keep in files and what databases
/// hold, so a field of `AnalysisConfig` may be renamed in Swift but its setting may not.
extension AnalysisConfig {
    public struct Setting: Sendable {
        public let name: String
        public let unit: String
        public let meaning: String
        /// Counts and milliseconds are whole numbers.
        public let isWhole: Bool
        let get: @Sendable (AnalysisConfig) -> Double
        let set: @Sendable (inout AnalysisConfig, Double) -> Void

        init(_ name: String, _ unit: String, _ meaning: String, _ field: WritableKeyPath<AnalysisConfig, Double> & Sendable) {
            (self.name, self.unit, self.meaning, isWhole) = (name, unit, meaning, false)
            get = { $0[keyPath: field] }
            set = { $0[keyPath: field] = $1 }
        }

        init(_ name: String, _ unit: String, _ meaning: String, whole field: WritableKeyPath<AnalysisConfig, Int64> & Sendable) {
            (self.name, self.unit, self.meaning, isWhole) = (name, unit, meaning, true)
            get = { Double($0[keyPath: field]) }
            set = { $0[keyPath: field] = Int64($1) }
        }

        init(_ name: String, _ unit: String, _ meaning: String, whole field: WritableKeyPath<AnalysisConfig, Int> & Sendable) {
            (self.name, self.unit, self.meaning, isWhole) = (name, unit, meaning, true)
            get = { Double($0[keyPath: field]) }
            set = { $0[keyPath: field] = Int($1) }
        }
    }

    /// Every setting, in the order `callstats config` lists them and settings files are written.
    public static let settings: [Setting] = [
        .init("loss_warn_pct", "%", "inbound network loss over an interval: warn above", \.lossWarnPct),
        .init("loss_poor_pct", "%", "inbound network loss: poor above", \.lossPoorPct),
        .init("jitter_warn_ms", "ms", "inbound jitter: warn above", \.jitterWarnMs),
        .init("rtt_warn_ms", "ms", "RTCP round-trip time: warn above", \.rttWarnMs),
        .init("rtt_poor_ms", "ms", "RTCP round-trip time: poor above", \.rttPoorMs),
        .init("concealment_warn_pct", "%", "concealed share of played audio: warn above", \.concealmentWarnPct),
        .init("low_fps", "fps", "received video frame rate while not paused: warn below", \.lowFps),
        .init("freeze_warn_pct", "%", "frozen share of a window's video: warn above", \.freezeWarnPct),
        .init("freeze_poor_pct", "%", "frozen share of a window's video: poor above", \.freezePoorPct),
        .init("setup_warn_ms", "ms", "time from the answer to media: warn above", whole: \.setupWarnMs),
        .init("setup_poor_ms", "ms", "time from the answer to media: poor above", whole: \.setupPoorMs),
        .init("mos_fair", "MOS", "worst sustained MOS-CQ: the call is fair below", \.mosFair),
        .init("mos_poor", "MOS", "worst sustained MOS-CQ: the call is poor below", \.mosPoor),
        .init("window_ms", "ms", "intervals merged into windows at least this long", whole: \.windowMs),
        .init("persistence_count", "windows", "a finding needs its condition in this many of the last persistence_window windows", whole: \.persistenceCount),
        .init("persistence_window", "windows", "windows that persistence_count looks back over", whole: \.persistenceWindow),
        .init("worst_windows", "windows", "consecutive windows averaged for the worst sustained MOS", whole: \.worstWindow),
        .init("gap_factor", "periods", "snapshots further apart than this many median periods are no interval", \.gapFactor),
        .init("clock_skew_ms", "ms", "agent and stats clocks differing by more is reported", whole: \.clockSkewMs),
        .init("device_allowance_ms", "ms", "added to one-way delay for devices and processing (E-model)", \.deviceAllowanceMs),
        .init("packet_time_ms", "ms", "audio packet time added to one-way delay (E-model)", \.packetTimeMs),
        .init("far_end_jitter_buffer_ms", "ms", "the far end's jitter-buffer delay in the sent direction's E-model", \.farEndJitterBufferMs),
        .init("playout_warn_ms", "ms", "inbound audio jitter-buffer delay: warn above, when it is the largest part of the delay", \.playoutWarnMs),
    ]

    public static func setting(named name: String) -> Setting? { settings.first { $0.name == name } }

    /// The one setting that is not a number: `labelDimensions`, a list of label keys (in a
    /// settings file a JSON array of strings, on the command line `--set label_dimensions=a,b`).
    public static let labelDimensionsSetting = (
        name: "label_dimensions", unit: "label keys",
        meaning: "keys of the call record's labels that rollups break results down by (dimension label.<key>)"
    )

    /// Every setting's name, the numbers' then `label_dimensions`.
    public static var settingNames: [String] { settings.map(\.name) + [labelDimensionsSetting.name] }

    /// At most this many label dimensions: each multiplies the rows of every rollup bucket.
    public static let maximumLabelDimensions = 16

    /// The label dimensions as `--set` takes them and `callstats config` shows them: "a,b", or
    /// "none".
    public var labelDimensionsText: String { labelDimensions.isEmpty ? "none" : labelDimensions.joined(separator: ",") }

    /// A label key that can be a dimension: 1-64 ASCII letters, digits, `_`, `-` and `.`. The
    /// store writes it into SQL as a JSON path (`json_extract(labels, '$."key"')`): these
    /// characters need no quoting there, so no key can change that SQL.
    public static func isLabelKey(_ key: String) -> Bool {
        guard (1...64).contains(key.utf8.count) else { return false }
        return key.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b == 0x2D || b == 0x2E
        }
    }

    /// Sets `label_dimensions` from `--set`'s text: keys separated by commas ("" or "none": none).
    public mutating func setLabelDimensions(_ text: Substring) {
        let trimmed = text.trimmingSpaces
        labelDimensions = []
        guard !trimmed.isEmpty, trimmed != "none" else { return }
        labelDimensions = trimmed.split(separator: ",", omittingEmptySubsequences: false).map { String($0.trimmingSpaces) }
    }

    public func value(of setting: Setting) -> Double { setting.get(self) }

    /// Sets one setting; the value must be finite, not negative, and whole where the setting counts.
    public mutating func set(_ name: String, to value: Double) throws(SettingsError) {
        guard let s = Self.setting(named: name) else { throw .unknownSetting(name) }
        guard value.isFinite, value >= 0, value <= 1e12 else { throw .badValue(name, "must be a number from 0 to 1e12") }
        guard !s.isWhole || value.rounded() == value else { throw .badValue(name, "must be a whole number") }
        s.set(&self, value)
    }

    /// Settings that contradict each other or cannot work, as sentences; empty when none do.
    public var problems: [String] {
        var out: [String] = []
        func order(_ low: String, _ high: String, _ a: Double, _ b: Double) {
            if a > b { out.append("\(low) (\(Self.text(a))) is above \(high) (\(Self.text(b)))") }
        }
        order("loss_warn_pct", "loss_poor_pct", lossWarnPct, lossPoorPct)
        order("rtt_warn_ms", "rtt_poor_ms", rttWarnMs, rttPoorMs)
        order("freeze_warn_pct", "freeze_poor_pct", freezeWarnPct, freezePoorPct)
        order("setup_warn_ms", "setup_poor_ms", Double(setupWarnMs), Double(setupPoorMs))
        order("mos_poor", "mos_fair", mosPoor, mosFair)
        order("persistence_count", "persistence_window", Double(persistenceCount), Double(persistenceWindow))
        if persistenceCount < 1 { out.append("persistence_count must be at least 1") }
        if worstWindow < 1 { out.append("worst_windows must be at least 1") }
        if windowMs < 1 { out.append("window_ms must be at least 1") }
        if gapFactor < 1 { out.append("gap_factor must be at least 1") }
        if mosFair > 5 || mosPoor > 5 { out.append("mos_fair and mos_poor are MOS values, at most 5") }
        for key in labelDimensions where !Self.isLabelKey(key) {
            out.append("label_dimensions: \"\(key)\" is not a label key (1-64 letters, digits, _, - and .)")
        }
        if Set(labelDimensions).count != labelDimensions.count { out.append("label_dimensions names a key twice") }
        if labelDimensions.count > Self.maximumLabelDimensions {
            out.append("label_dimensions: at most \(Self.maximumLabelDimensions) keys")
        }
        return out
    }

    /// The settings as a JSON object, one per line in `settings` order: what a settings file
    /// holds and what a database keeps.
    public var settingsJSON: String {
        var lines = Self.settings.map { "  \"\($0.name)\": \(Self.text(value(of: $0)))" }
        // Only when set: a database graded with the defaults keeps the text it always had.
        if !labelDimensions.isEmpty {
            let keys = labelDimensions.map { JSONValue.string($0).serialized() }.joined(separator: ", ")
            lines.append("  \"\(Self.labelDimensionsSetting.name)\": [\(keys)]")
        }
        return "{\n" + lines.joined(separator: ",\n") + "\n}"
    }

    /// The settings whose values differ from `other`'s.
    public func changes(from other: AnalysisConfig) -> [(name: String, value: Double, other: Double)] {
        Self.settings.compactMap { s in
            value(of: s) == other.value(of: s) ? nil : (s.name, value(of: s), other.value(of: s))
        }
    }

    /// How many settings differ from `other`'s, `label_dimensions` included.
    public func changeCount(from other: AnalysisConfig) -> Int {
        changes(from: other).count + (labelDimensions == other.labelDimensions ? 0 : 1)
    }

    /// "name value (other's value), …", "" when none differ.
    public func changesText(from other: AnalysisConfig, otherLabel: String) -> String {
        var parts = changes(from: other).map { "\($0.name) \(Self.text($0.value)) (\(otherLabel) \(Self.text($0.other)))" }
        if labelDimensions != other.labelDimensions {
            parts.append("\(Self.labelDimensionsSetting.name) \(labelDimensionsText) (\(otherLabel) \(other.labelDimensionsText))")
        }
        return parts.joined(separator: ", ")
    }

    /// "defaults", or the settings that differ from them with the default in brackets: what
    /// summaries and reports say the calls were graded with.
    public var summaryText: String {
        let changes = changesText(from: AnalysisConfig(), otherLabel: "default")
        return changes.isEmpty ? "defaults" : changes
    }

    /// Reads a settings object (`settingsJSON`'s form) over `base`: names it leaves out keep
    /// `base`'s values. `source` names the text in errors (a file's path).
    public init(settingsJSON text: String, over base: AnalysisConfig = AnalysisConfig(), source: String) throws(SettingsError) {
        // Some editors start a UTF-8 file with a byte order mark, which JSON does not allow.
        let text = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
        let value: JSONValue
        do {
            value = try JSONValue.parse(text)
        } catch {
            throw .badFile(source, Self.position(of: error.offset, in: text) + ": " + error.message)
        }
        guard let object = value.objectValue else { throw .badFile(source, "expected a JSON object of setting names and numbers") }
        // The parsed object keeps its members in order, duplicates included: the n-th entry is
        // the n-th key in the text, whose line an error names.
        let lines = Self.keyLines(in: text)
        var config = base
        var seen = Set<String>()
        for (n, (name, v)) in object.entries.enumerated() {
            let at = n < lines.count ? "line \(lines[n]): " : ""
            guard seen.insert(name).inserted else { throw .badFile(source, "\(at)\(name) is given twice") }
            if name == Self.labelDimensionsSetting.name {
                guard let keys = v.arrayValue?.compactMap(\.stringValue), keys.count == v.arrayValue?.count else {
                    throw .badFile(source, "\(at)\(name): expected an array of label keys, e.g. [\"region\", \"tenant\"]")
                }
                config.labelDimensions = keys
                continue
            }
            guard Self.setting(named: name) != nil else { throw .badFile(source, at + SettingsError.unknownSetting(name).description) }
            guard let number = v.doubleValue else { throw .badFile(source, "\(at)\(name): expected a number") }
            do {
                try config.set(name, to: number)
            } catch {
                throw .badFile(source, at + error.description)
            }
        }
        if let first = config.problems.first { throw .badFile(source, first) }
        self = config
    }

    /// Applies `name=value` pairs (`--set`), in order, then checks the result.
    public mutating func apply(assignments: [String]) throws(SettingsError) {
        for a in assignments {
            if let eq = a.firstIndex(of: "="), a[..<eq].trimmingSpaces == Self.labelDimensionsSetting.name {
                setLabelDimensions(a[a.index(after: eq)...])
                continue
            }
            guard let eq = a.firstIndex(of: "="), let number = Double(a[a.index(after: eq)...].trimmingSpaces) else {
                throw .badAssignment(a)
            }
            try set(String(a[..<eq].trimmingSpaces), to: number)
        }
        if let first = problems.first { throw .inconsistent(first) }
    }

    /// A value as settings files write it: whole numbers without a fraction, others in full.
    public static func text(_ v: Double) -> String {
        v.rounded() == v && abs(v) < 1e15 ? String(Int64(v)) : "\(v)"
    }

    /// The line of each key of a JSON text's top-level object, in order (the text has parsed).
    static func keyLines(in text: String) -> [Int] {
        var lines: [Int] = []
        var line = 1, depth = 0
        var inString = false, escaped = false, expectKey = false
        for byte in text.utf8 {
            if byte == 0x0A { line += 1 }
            if inString {
                if escaped { escaped = false } else if byte == 0x5C { escaped = true } else if byte == 0x22 { inString = false }
                continue
            }
            switch byte {
            case 0x22:
                inString = true
                if depth == 1 && expectKey { lines.append(line); expectKey = false }
            case 0x7B, 0x5B:
                depth += 1
                expectKey = depth == 1 && byte == 0x7B
            case 0x7D, 0x5D: depth -= 1
            case 0x2C: expectKey = depth == 1
            default: break
            }
        }
        return lines
    }

    /// "line L, column C" of a byte offset.
    static func position(of offset: Int, in text: String) -> String {
        var line = 1, column = 1
        for byte in text.utf8.prefix(offset) {
            if byte == 0x0A { line += 1; column = 1 } else { column += 1 }
        }
        return "line \(line), column \(column)"
    }
}

public enum SettingsError: Error, CustomStringConvertible, Equatable, Sendable {
    case unknownSetting(String)
    case badValue(String, String)
    case badAssignment(String)
    case badFile(String, String)
    case inconsistent(String)

    public var description: String {
        switch self {
        case .unknownSetting(let name):
            "unknown setting \(name) (`callstats config` lists them: \(AnalysisConfig.settingNames.joined(separator: ", ")))"
        case .badValue(let name, let why): "\(name) \(why)"
        case .badAssignment(let text): "--set \(text): expected name=number, e.g. jitter_warn_ms=40"
        case .badFile(let source, let why): "\(source): \(why)"
        case .inconsistent(let why): why
        }
    }
}

private extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return s
    }
}
