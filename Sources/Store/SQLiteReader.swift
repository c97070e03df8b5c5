import Analysis
import Foundation
import SQLiteDatabase

/// A read-only connection to a callstats database: what readers (the HTML report,
/// `callstats query`, comparisons) use. It takes no lock and writes nothing: statements run
/// under `PRAGMA query_only`, so a user's SQL cannot change the file.
public final class SQLiteReader {
    public let path: String
    /// The read-only connection, for readers that build their own queries over the documented
    /// tables and views (`Data/SCHEMA.md`).
    public let connection: Database

    /// Opens `path`; a missing file, or one that is not a callstats database, is an error naming it.
    public init(path: String) throws {
        self.path = path
        connection = try SQLiteStore.openForReading(path: path)
    }

    /// A user's SQL (one statement), at most `limit` rows. From the first such query on, the
    /// connection may only read (`Database.allowOnlyReading`): `query_only` alone does not stop
    /// `VACUUM INTO` or a change of journal mode.
    public func query(_ sql: String, limit: Int = .max) throws -> QueryResult {
        connection.allowOnlyReading()
        return try connection.query(sql, limit: limit)
    }

    /// Every table and view with a line saying what it holds (`SchemaGuide`), those people
    /// query first; then any the guide does not know (a newer schema, a user's own).
    public func relations() throws -> QueryResult {
        let existing = Set(try connection.query("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").rows.compactMap { $0[0].string })
        let known = SchemaGuide.relations.filter { existing.contains($0.name) }
        let others = existing.subtracting(known.map(\.name)).sorted().map { (name: $0, summary: "") }
        return QueryResult(columns: ["name", "what it holds"], rows: (known + others).map { [.text($0.name), .text($0.summary)] })
    }

    /// The columns of table or view `name` (no rows when there is none).
    public func columns(of name: String) throws -> QueryResult {
        let literal = "'" + name.replacingOccurrences(of: "'", with: "''") + "'"
        return try connection.query("SELECT name AS column, type, \"notnull\" AS not_null, pk AS key FROM pragma_table_info(\(literal))")
    }

    /// The settings the stored calls were graded with (the defaults when none are recorded).
    public func recordedSettings() throws -> AnalysisConfig {
        try SQLiteStore.recordedSettings(in: connection, path: path)
    }

    /// The recorded settings as reports say them: "defaults", or those that differ from them.
    public func recordedSettingsSummary() throws -> String { try recordedSettings().summaryText }
}
