import Analysis
import SQLiteDatabase

/// The `meta` rows both stores keep about their calls (`Data/SCHEMA.md`, "Bookkeeping").
public enum MetaKey {
    /// The settings every stored call was graded with (JSON).
    static let settings = "analysis_config"
    /// The quality model that scored them.
    static let qualityModel = "quality_model"
    /// The fingerprint of the pseudonymisation key they were written with.
    static let keyFingerprint = "pseudonymization_key"
    /// The fingerprint a database written without `--pseudonymize-key` records.
    public static let noKeyFingerprint = "none"
}

/// The analysis settings a database's calls were graded with, kept in `meta.analysis_config`
/// (the JSON of `AnalysisConfig.settingsJSON`), so that later runs grade new calls alike and a
/// run asking for other settings is refused instead of mixing two gradings in one rollup.
extension SQLiteStore {
    /// The recorded settings; the defaults for a database that records none (written before
    /// settings were recorded, when every run used the defaults).
    public func recordedSettings() throws -> AnalysisConfig { try Self.recordedSettings(in: db, path: path) }

    static func recordedSettings(in db: Database, path: String) throws -> AnalysisConfig {
        guard let text = try db.scalar("SELECT value FROM meta WHERE key = ?", [.text(MetaKey.settings)])?.string else {
            return AnalysisConfig()
        }
        do {
            return try AnalysisConfig(settingsJSON: text, source: "meta.analysis_config")
        } catch {
            throw StoreError.unreadableSettings(path: path, reason: error.description)
        }
    }

    /// The recorded settings as reports say them: "defaults", or those that differ from them.
    public func recordedSettingsSummary() throws -> String { try recordedSettings().summaryText }

    /// Records `config` as the settings of every call stored (inside the caller's transaction).
    public func record(settings config: AnalysisConfig) throws {
        try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [.text(MetaKey.settings), .text(config.settingsJSON)])
    }

    /// The version of the quality model (`CallAnalyzer.qualityModelVersion`) that graded the
    /// stored calls, as `meta.quality_model` records it; nil in a database written before it
    /// was kept.
    public func recordedQualityModel() throws -> String? {
        try db.scalar("SELECT value FROM meta WHERE key = ?", [.text(MetaKey.qualityModel)])?.string
    }

    /// Records `version` as the quality model of every stored call (inside the caller's
    /// transaction). Only a run that grades every stored call with it may say so: `regrade`, or
    /// `analyze` into a database that holds none (or records none); `analyze` adding calls
    /// to a database graded by another model keeps that model's name and warns.
    public func record(qualityModel version: String) throws {
        try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [.text(MetaKey.qualityModel), .text(version)])
    }

    /// The settings a run uses: `asked` when given (refused if calls graded otherwise are
    /// stored), else the database's own. `hasCalls`: whether the database holds calls (the
    /// caller has looked).
    public func settingsForRun(asked: AnalysisConfig?, hasCalls: Bool) throws -> AnalysisConfig {
        let recorded = try recordedSettings()
        guard let asked else { return recorded }
        if asked != recorded, hasCalls {
            throw StoreError.otherSettings(path: path, differences: asked.changesText(from: recorded, otherLabel: "database:"))
        }
        return asked
    }

    /// The pseudonymisation key's fingerprint the database records (`meta.pseudonymization_key`:
    /// a keyed hash of a fixed text under the key, or "none"); nil in a database written before
    /// it was kept.
    public func recordedKeyFingerprint() throws -> String? {
        try db.scalar("SELECT value FROM meta WHERE key = ?", [.text(MetaKey.keyFingerprint)])?.string
    }

    /// Refuses a run whose key (`fingerprint`) is not the one the database was written with:
    /// one call would be stored under two pseudonyms, or raw ids mixed with pseudonyms. Checked
    /// before anything is written; only one process writes a SQLite database at a time (the
    /// writer lock), so the run's first transaction records it (`record(keyFingerprint:)`).
    public func checkKey(fingerprint: String) throws {
        if let recorded = try recordedKeyFingerprint(), recorded != fingerprint {
            throw StoreError.otherKey(path: path, recorded: recorded, asked: fingerprint)
        }
    }

    /// Records the key's fingerprint unless one is recorded (inside the caller's transaction):
    /// a database that records none (written before it was kept) takes its next run's.
    public func record(keyFingerprint fingerprint: String) throws {
        try db.run("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", [.text(MetaKey.keyFingerprint), .text(fingerprint)])
    }
}
