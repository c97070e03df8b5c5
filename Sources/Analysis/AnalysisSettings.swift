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
    }

    /// Every setting, in the order `callstats config` lists them and settings files are written.
    public static let settings: [Setting] = [
        .init(name: "loss_warn_pct", unit: "%", meaning: "inbound network loss over an interval: warn above", isWhole: false,
              get: { $0.lossWarnPct }, set: { $0.lossWarnPct = $1 }),
        .init(name: "loss_poor_pct", unit: "%", meaning: "inbound network loss: poor above", isWhole: false,
              get: { $0.lossPoorPct }, set: { $0.lossPoorPct = $1 }),
        .init(name: "jitter_warn_ms", unit: "ms", meaning: "inbound jitter: warn above", isWhole: false,
              get: { $0.jitterWarnMs }, set: { $0.jitterWarnMs = $1 }),
        .init(name: "rtt_warn_ms", unit: "ms", meaning: "RTCP round-trip time: warn above", isWhole: false,
              get: { $0.rttWarnMs }, set: { $0.rttWarnMs = $1 }),
        .init(name: "rtt_poor_ms", unit: "ms", meaning: "RTCP round-trip time: poor above", isWhole: false,
              get: { $0.rttPoorMs }, set: { $0.rttPoorMs = $1 }),
        .init(name: "concealment_warn_pct", unit: "%", meaning: "concealed share of played audio: warn above", isWhole: false,
              get: { $0.concealmentWarnPct }, set: { $0.concealmentWarnPct = $1 }),
        .init(name: "low_fps", unit: "fps", meaning: "received video frame rate while not paused: warn below", isWhole: false,
              get: { $0.lowFps }, set: { $0.lowFps = $1 }),
        .init(name: "freeze_warn_pct", unit: "%", meaning: "frozen share of a window's video: warn above", isWhole: false,
              get: { $0.freezeWarnPct }, set: { $0.freezeWarnPct = $1 }),
        .init(name: "freeze_poor_pct", unit: "%", meaning: "frozen share of a window's video: poor above", isWhole: false,
              get: { $0.freezePoorPct }, set: { $0.freezePoorPct = $1 }),
        .init(name: "setup_warn_ms", unit: "ms", meaning: "time from the answer to media: warn above", isWhole: true,
              get: { Double($0.setupWarnMs) }, set: { $0.setupWarnMs = Int64($1) }),
        .init(name: "setup_poor_ms", unit: "ms", meaning: "time from the answer to media: poor above", isWhole: true,
              get: { Double($0.setupPoorMs) }, set: { $0.setupPoorMs = Int64($1) }),
        .init(name: "mos_fair", unit: "MOS", meaning: "worst sustained MOS-CQ: the call is fair below", isWhole: false,
              get: { $0.mosFair }, set: { $0.mosFair = $1 }),
        .init(name: "mos_poor", unit: "MOS", meaning: "worst sustained MOS-CQ: the call is poor below", isWhole: false,
              get: { $0.mosPoor }, set: { $0.mosPoor = $1 }),
        .init(name: "window_ms", unit: "ms", meaning: "intervals merged into windows at least this long", isWhole: true,
              get: { Double($0.windowMs) }, set: { $0.windowMs = Int64($1) }),
        .init(name: "persistence_count", unit: "windows", meaning: "a finding needs its condition in this many of the last persistence_window windows", isWhole: true,
              get: { Double($0.persistenceCount) }, set: { $0.persistenceCount = Int($1) }),
        .init(name: "persistence_window", unit: "windows", meaning: "windows that persistence_count looks back over", isWhole: true,
              get: { Double($0.persistenceWindow) }, set: { $0.persistenceWindow = Int($1) }),
        .init(name: "worst_windows", unit: "windows", meaning: "consecutive windows averaged for the worst sustained MOS", isWhole: true,
              get: { Double($0.worstWindow) }, set: { $0.worstWindow = Int($1) }),
        .init(name: "gap_factor", unit: "periods", meaning: "snapshots further apart than this many median periods are no interval", isWhole: false,
              get: { $0.gapFactor }, set: { $0.gapFactor = $1 }),
        .init(name: "clock_skew_ms", unit: "ms", meaning: "agent and stats clocks differing by more is reported", isWhole: true,
              get: { Double($0.clockSkewMs) }, set: { $0.clockSkewMs = Int64($1) }),
        .init(name: "device_allowance_ms", unit: "ms", meaning: "added to one-way delay for devices and processing (E-model)", isWhole: false,
              get: { $0.deviceAllowanceMs }, set: { $0.deviceAllowanceMs = $1 }),
        .init(name: "packet_time_ms", unit: "ms", meaning: "audio packet time added to one-way delay (E-model)", isWhole: false,
              get: { $0.packetTimeMs }, set: { $0.packetTimeMs = $1 }),
    ]

    public static func setting(named name: String) -> Setting? { settings.first { $0.name == name } }

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
        return out
    }

    /// The settings as a JSON object, one per line in `settings` order: what a settings file
    /// holds and what a database keeps.
    public var settingsJSON: String {
        let lines = Self.settings.map { "  \"\($0.name)\": \(Self.text(value(of: $0)))" }
        return "{\n" + lines.joined(separator: ",\n") + "\n}"
    }

    /// The settings whose values differ from `other`'s.
    public func changes(from other: AnalysisConfig) -> [(name: String, value: Double, other: Double)] {
        Self.settings.compactMap { s in
            value(of: s) == other.value(of: s) ? nil : (s.name, value(of: s), other.value(of: s))
        }
    }

    /// "name value (other's value), …", "" when none differ.
    public func changesText(from other: AnalysisConfig, otherLabel: String) -> String {
        changes(from: other).map { "\($0.name) \(Self.text($0.value)) (\(otherLabel) \(Self.text($0.other)))" }.joined(separator: ", ")
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
        var config = base
        var seen = Set<String>()
        for (name, v) in object.entries {
            guard seen.insert(name).inserted else { throw .badFile(source, "\(name) is given twice") }
            guard let number = v.doubleValue else { throw .badFile(source, "\(name): expected a number") }
            do {
                try config.set(name, to: number)
            } catch {
                throw .badFile(source, error.description)
            }
        }
        if let first = config.problems.first { throw .badFile(source, first) }
        self = config
    }

    /// Applies `name=value` pairs (`--set`), in order, then checks the result.
    public mutating func apply(assignments: [String]) throws(SettingsError) {
        for a in assignments {
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
            "unknown setting \(name) (`callstats config` lists them: \(AnalysisConfig.settings.map(\.name).joined(separator: ", ")))"
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
