import Foundation
import Analysis
import PostgresDatabase
import SQLiteDatabase

/// What `callstats query` and `callstats config` read, from either store.
public protocol QueryableStore: AnyObject {
    /// A user's SQL (one statement), at most `limit` rows, unable to change anything.
    func query(_ sql: String, limit: Int) throws -> QueryResult
    /// Every table and view with a line saying what it holds.
    func relations() throws -> QueryResult
    /// The columns of table or view `name` (no rows when there is none).
    func columns(of name: String) throws -> QueryResult
    func recordedSettings() throws -> AnalysisConfig
}

/// Rows of a read-only query with `?` parameters, from either store: what the HTML report reads.
public protocol StoreRows {
    func selectRows(_ sql: String, _ values: [SQLValue]) throws -> [[SQLValue]]
    /// Each row of `sql` in turn, for results too large to hold at once (every call).
    func forEachRow(_ sql: String, _ values: [SQLValue], _ body: ([SQLValue]) throws -> Void) throws
    /// Whether table or view `table` has column `column`: what a reader of a database written
    /// by an older schema version asks before naming a newer column.
    func hasColumn(_ table: String, _ column: String) throws -> Bool
}

extension StoreRows {
    public func forEachRow(_ sql: String, _ values: [SQLValue], _ body: ([SQLValue]) throws -> Void) throws {
        for row in try selectRows(sql, values) { try body(row) }
    }
}

extension Database: StoreRows {
    public func selectRows(_ sql: String, _ values: [SQLValue]) throws -> [[SQLValue]] { try rows(sql, values) }
    public func forEachRow(_ sql: String, _ values: [SQLValue], _ body: ([SQLValue]) throws -> Void) throws {
        try eachRow(sql, values, body)
    }
    public func hasColumn(_ table: String, _ column: String) throws -> Bool {
        try scalar("SELECT count(*) FROM pragma_table_info(?) WHERE name = ?", [.text(table), .text(column)])?.int64 == 1
    }
}

extension PostgresReader: StoreRows {
    /// `sql`'s `?` placeholders become `$1`, `$2`, ... (the report's statements hold no `?`
    /// in literals).
    public func selectRows(_ sql: String, _ values: [SQLValue]) throws -> [[SQLValue]] {
        var numbered = "", n = 0
        for c in sql {
            if c == "?" {
                n += 1
                numbered += "$\(n)"
            } else {
                numbered.append(c)
            }
        }
        let parameters: [PostgresValue] = values.map {
            switch $0 {
            case .null: .null
            case .integer(let i): .text(String(i))
            case .real(let d): .text(d.description)
            case .text(let t): .text(t)
            case .blob(let b): .bytes(b)
            }
        }
        return try checked {
            let r = try db.query(numbered, parameters)
            return r.rows.map { PostgresReader.values($0, types: r.types) }
        }
    }

    /// Without parameters (the report's large reads have none), each value converted where
    /// libpq holds it.
    public func forEachRow(_ sql: String, _ values: [SQLValue], _ body: ([SQLValue]) throws -> Void) throws {
        guard values.isEmpty else {
            for row in try selectRows(sql, values) { try body(row) }
            return
        }
        var out: [SQLValue] = []
        try checked {
            try db.forEachRow(sql) { row in
                out.removeAll(keepingCapacity: true)
                for c in 0..<row.columns {
                    guard !row.isNull(c) else {
                        out.append(.null)
                        continue
                    }
                    let type = row.type(c)
                    out.append(
                        row.withText(c) { text in
                            // Numbers read from libpq's NUL-terminated text, without a String.
                            if type == 701 || type == 700, let base = text.baseAddress {
                                var end: UnsafeMutablePointer<CChar>?
                                let d = base.withMemoryRebound(to: CChar.self, capacity: text.count + 1) { strtod($0, &end) }
                                if let end, UnsafeRawPointer(end) == UnsafeRawPointer(base + text.count) { return .real(d) }
                            }
                            return PostgresReader.value(String(decoding: text, as: UTF8.self), type: type)
                        })
                }
                try body(out)
            }
        }
    }

    public func hasColumn(_ table: String, _ column: String) throws -> Bool {
        try selectRows(
            "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?",
            [.text(table), .text(column)]
        ).first?.first?.int64 == 1
    }
}

extension SQLiteReader: QueryableStore {}

/// A reader of a PostgreSQL callstats database. A user's SQL runs in a read-only transaction
/// (`SET TRANSACTION READ ONLY`) that is rolled back, and as one statement: libpq's extended
/// protocol (`PQexecParams`) refuses text holding a second statement.
public final class PostgresReader: QueryableStore {
    let db: PostgresConnection
    public let name: String

    public init(url: String) throws {
        db = try PostgresStore.connect(url)
        name = db.displayName
        let hasCalls = try checked { try db.scalar("SELECT to_regclass('calls') IS NOT NULL") }
        guard hasCalls == "t" else { throw StoreError.notADatabase(path: name, reason: "it has no calls table") }
    }

    func checked<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as PostgresConnection.Error {
            throw StoreError.server(name: name, reason: e.description, retryable: e.mayPassOnRetry)
        }
    }

    /// Runs `sql` in a read-only transaction; values typed as SQLite would give them (integers,
    /// reals, text, blobs), so output looks the same from either store.
    public func query(_ sql: String, limit: Int = .max) throws -> QueryResult {
        try checked {
            try db.execute("BEGIN; SET TRANSACTION READ ONLY")
            defer { try? db.execute("ROLLBACK") }
            let r = try db.query(sql)
            return QueryResult(columns: r.columns, rows: r.rows.prefix(limit).map { PostgresReader.values($0, types: r.types) })
        }
    }

    static func values(_ row: [String?], types: [UInt32]) -> [SQLValue] {
        zip(row, types).map { text, type in text.map { value($0, type: type) } ?? .null }
    }

    static func value(_ text: String, type: UInt32) -> SQLValue {
        switch type {
        case 20, 21, 23, 26: Int64(text).map(SQLValue.integer) ?? .text(text)
        case 700, 701, 1700: Double(text).map(SQLValue.real) ?? .text(text)
        case 16: .integer(text == "t" ? 1 : 0)
        case 17: .blob(PostgresResult.bytes(fromHex: text))
        default: .text(text)
        }
    }

    public func relations() throws -> QueryResult {
        let existing = Set(
            try query("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()").rows.compactMap {
                $0[0].string
            })
        let known = SchemaGuide.relations.filter { existing.contains($0.name) }
        let others = existing.subtracting(known.map(\.name)).sorted().map { (name: $0, summary: "") }
        return QueryResult(columns: ["name", "what it holds"], rows: (known + others).map { [.text($0.name), .text($0.summary)] })
    }

    public func columns(of name: String) throws -> QueryResult {
        try checked {
            let r = try db.query(
                """
                SELECT c.column_name AS column, upper(c.data_type) AS type, (c.is_nullable = 'NO')::int AS not_null,
                       coalesce((SELECT k.ordinal_position FROM information_schema.key_column_usage k
                                 JOIN information_schema.table_constraints t ON t.constraint_name = k.constraint_name
                                      AND t.table_schema = k.table_schema AND t.constraint_type = 'PRIMARY KEY'
                                 WHERE k.table_schema = c.table_schema AND k.table_name = c.table_name
                                       AND k.column_name = c.column_name), 0) AS key
                FROM information_schema.columns c
                WHERE c.table_schema = current_schema() AND c.table_name = $1 ORDER BY c.ordinal_position
                """, [.text(name)])
            return QueryResult(columns: r.columns, rows: r.rows.map { PostgresReader.values($0, types: r.types) })
        }
    }

    public func recordedSettings() throws -> AnalysisConfig {
        guard let text = try checked({ try db.scalar("SELECT value FROM meta WHERE key = $1", [.text(MetaKey.settings)]) }) else {
            return AnalysisConfig()
        }
        do {
            return try AnalysisConfig(settingsJSON: text, source: "meta.analysis_config")
        } catch {
            throw StoreError.unreadableSettings(path: name, reason: error.description)
        }
    }

    /// Every row of `sql`, typed as `query` types them (for the cross-store comparison).
    func rows(_ sql: String) throws -> [[SQLValue]] {
        try checked {
            let r = try db.query(sql)
            return r.rows.map { PostgresReader.values($0, types: r.types) }
        }
    }
}
