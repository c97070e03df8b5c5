import Analysis
import SQLiteDatabase

/// A read-only connection to a callstats database: what readers (the HTML report,
/// `callstats query`, comparisons) use. It takes no lock and writes nothing: statements run
/// under `PRAGMA query_only`, so a user's SQL cannot change the file.
public final class StoreReader {
    public let path: String
    /// The read-only connection, for readers that build their own queries over the documented
    /// tables and views (`Data/SCHEMA.md`).
    public let connection: Database

    /// Opens `path`; a missing file, or one that is not a callstats database, is an error naming it.
    public init(path: String) throws {
        self.path = path
        connection = try CallStore.openForReading(path: path)
    }

    /// A user's SQL (one statement), at most `limit` rows.
    public func query(_ sql: String, limit: Int = .max) throws -> QueryResult {
        try connection.query(sql, limit: limit)
    }

    /// The settings the stored calls were graded with (the defaults when none are recorded).
    public func recordedSettings() throws -> AnalysisConfig {
        try CallStore.recordedSettings(in: connection, path: path)
    }

    /// The recorded settings as reports say them: "defaults", or those that differ from them.
    public func recordedSettingsSummary() throws -> String { try recordedSettings().summaryText }
}
