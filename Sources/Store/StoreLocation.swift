import Analysis
import Foundation
import PostgresDatabase

/// Where `--db` points: a PostgreSQL server for a `postgres://` or `postgresql://` URL, an
/// SQLite file for anything else. The one place that tells them apart and opens either: jobs,
/// the report and the commands ask here, never a backend by name.
public enum StoreLocation {
    public static func isPostgres(_ location: String) -> Bool {
        let lower = location.lowercased()
        return lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://")
    }

    /// `location` as messages show it: a URL without its password.
    public static func displayName(_ location: String) -> String {
        isPostgres(location) ? PostgresConnection.withoutPassword(location) : location
    }

    /// Whether there is a database to read: a server always (whether it holds one is told when it
    /// is opened), a file when it exists.
    public static func exists(_ location: String) -> Bool {
        isPostgres(location) || FileManager.default.fileExists(atPath: location)
    }

    /// What a job may ask of an SQLite file it opens for writing (a server has none of these).
    public struct SQLiteWriting {
        /// Called before an older database is upgraded (it can take minutes).
        public var willUpgrade: ((Int) -> Void)?
        /// How long a commit into a new database waits for its readers before it says so.
        public var readerWaitSeconds: Double?
        /// Told each time a commit has waited `readerWaitSeconds`, with who holds the file.
        public var onReaderWait: ((String) -> Void)?

        public init(willUpgrade: ((Int) -> Void)? = nil, readerWaitSeconds: Double? = nil, onReaderWait: ((String) -> Void)? = nil) {
            (self.willUpgrade, self.readerWaitSeconds, self.onReaderWait) = (willUpgrade, readerWaitSeconds, onReaderWait)
        }
    }

    /// The database for the jobs that write (analyze, regrade, prune, forget).
    public static func openForWriting(_ location: String, sqlite: SQLiteWriting = .init()) throws -> any ResultStore & RetentionStore {
        if isPostgres(location) { return try PostgresStore(url: location) }
        let store = try SQLiteStore(path: location, willUpgrade: sqlite.willUpgrade)
        if let seconds = sqlite.readerWaitSeconds { store.setReaderWait(seconds: seconds) }
        store.onReaderWait = sqlite.onReaderWait
        return store
    }

    /// A database opened read-only: the user's SQL (`queries`), the report's rows (`rows`), and
    /// the name a page shows it by (a file's name; a URL without its password).
    public struct Reading {
        public let queries: any QueryableStore
        public let rows: any StoreRows
        public let name: String
    }

    public static func openForReading(_ location: String) throws -> Reading {
        if isPostgres(location) {
            let reader = try PostgresReader(url: location)
            return Reading(queries: reader, rows: reader, name: reader.name)
        }
        let reader = try SQLiteReader(path: location)
        return Reading(queries: reader, rows: reader.connection, name: (location as NSString).lastPathComponent)
    }
}
