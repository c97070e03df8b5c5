import CSQLite

/// A thin, safe layer over the SQLite C API: just what the store needs. This module knows
/// nothing of callstats' tables; the `Store` module owns the schema and every statement.
///
/// Every value reaches SQL through bound parameters, never through string building, so nothing
/// read from a log can change a statement.
public final class Database {
    let handle: OpaquePointer
    public let path: String
    private var statements: [String: Statement] = [:]

    public struct Error: Swift.Error, CustomStringConvertible {
        public var code: Int32
        public var message: String
        public var sql: String?
        public var description: String { message + (sql.map { " (in: \($0.prefix(120)))" } ?? "") }
    }

    /// `readOnly`: statements cannot write (`PRAGMA query_only`), but the file is opened for
    /// writing where the system allows: a run killed while it filled a new database leaves a
    /// rollback journal that the next reader must play back first, which a connection opened
    /// read-only cannot do ("attempt to write a readonly database"). A write-protected file is
    /// opened read-only by SQLite itself.
    public init(path: String, readOnly: Bool = false) throws {
        _ = Database.configured
        var db: OpaquePointer?
        let flags = readOnly ? SQLITE_OPEN_READWRITE : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(db)
            throw Error(code: rc, message: "cannot open \(path): \(message)")
        }
        handle = db
        self.path = path
        sqlite3_busy_timeout(db, 5_000)
        if readOnly { try execute("PRAGMA query_only = ON") }
    }

    /// From now on this connection may read and compute, nothing else: for SQL that a user
    /// wrote. `query_only` alone lets a statement switch the journal mode or `VACUUM INTO` a new
    /// file, and lets `PRAGMA query_only = OFF` lift it; the authorizer denies every action that
    /// is not a read, and every pragma but those that only describe the schema or the build.
    public func allowOnlyReading() {
        sqlite3_set_authorizer(handle, Database.authorizeReading, nil)
    }

    private static let authorizeReading:
        @convention(c) (
            UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?
        ) -> Int32 = { _, action, first, _, _, _ in
            switch action {
            case SQLITE_SELECT, SQLITE_READ, SQLITE_FUNCTION, SQLITE_RECURSIVE, SQLITE_TRANSACTION:
                return SQLITE_OK
            case SQLITE_PRAGMA:
                guard let first else { return SQLITE_DENY }
                return Database.describingPragmas.contains(String(cString: first).lowercased()) ? SQLITE_OK : SQLITE_DENY
            default:
                return SQLITE_DENY
            }
        }

    /// Pragmas that read and never write, whatever their argument (a table or index name).
    static let describingPragmas: Set<String> = [
        "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo", "foreign_key_list",
        "database_list", "collation_list", "function_list", "module_list", "pragma_list", "compile_options",
    ]

    /// Process-wide settings, made once before the first connection. Memory statistics off: the
    /// store never reads them, and keeping them took a mutex on every SQLite allocation.
    private static let configured: Void = { _ = callstats_sqlite3_disable_memory_statistics() }()

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// How long a statement waits for another connection's lock before failing (5 s from `init`).
    public func setBusyTimeout(milliseconds: Int32) {
        sqlite3_busy_timeout(handle, milliseconds)
    }

    /// Whether a transaction is open on this connection (after a COMMIT that failed with
    /// SQLITE_BUSY it still is, and the COMMIT can be run again).
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    func error(_ rc: Int32, sql: String? = nil) -> Error {
        Error(code: rc, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    /// Runs one or more statements without parameters (DDL, pragmas, BEGIN/COMMIT).
    public func execute(_ sql: String) throws {
        var err: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &err)
        if rc != SQLITE_OK {
            let message = err.map { String(cString: $0) } ?? "error \(rc)"
            sqlite3_free(err)
            throw Error(code: rc, message: message, sql: sql)
        }
    }

    /// A prepared statement, cached by its text: hot inserts are prepared once per connection.
    public func statement(_ sql: String) throws -> Statement {
        if let s = statements[sql] {
            s.reset()
            return s
        }
        let s = try Statement(db: self, sql: sql)
        statements[sql] = s
        return s
    }

    /// Runs `sql` with `values` bound in order.
    public func run(_ sql: String, _ values: [SQLValue] = []) throws {
        let s = try statement(sql)
        try s.bind(values)
        while try s.step() {}
    }

    /// All rows of a query, as values. `cached`: the statement is prepared once per connection
    /// (for queries that run per call; preparing costs more than a small query itself).
    public func rows(_ sql: String, _ values: [SQLValue] = [], cached: Bool = false) throws -> [[SQLValue]] {
        let s = cached ? try statement(sql) : try Statement(db: self, sql: sql)
        try s.bind(values)
        var out: [[SQLValue]] = []
        while try s.step() { out.append((0..<s.columnCount).map { s.value($0) }) }
        return out
    }

    /// Each row of a query in turn, as values: for results too large to hold at once. `body`
    /// gets one array, refilled for each row.
    public func eachRow(_ sql: String, _ values: [SQLValue] = [], _ body: ([SQLValue]) throws -> Void) throws {
        let s = try Statement(db: self, sql: sql)
        try s.bind(values)
        var row: [SQLValue] = []
        while try s.step() {
            row.removeAll(keepingCapacity: true)
            for i in 0..<s.columnCount { row.append(s.value(i)) }
            try body(row)
        }
    }

    /// The first column of the first row, if any.
    public func scalar(_ sql: String, _ values: [SQLValue] = [], cached: Bool = false) throws -> SQLValue? {
        try rows(sql, values, cached: cached).first?.first
    }

    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    public var changes: Int { Int(sqlite3_changes(handle)) }
}

/// A value crossing the SQLite boundary.
public enum SQLValue: Equatable, Sendable, CustomStringConvertible {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let i): String(i)
        case .real(let d): String(d)
        case .text(let s): s
        case .blob(let b): "<\(b.count) bytes>"
        }
    }

    public var int64: Int64? {
        switch self {
        case .integer(let i): i
        case .real(let d): Int64(exactly: d.rounded())
        default: nil
        }
    }

    public var double: Double? {
        switch self {
        case .integer(let i): Double(i)
        case .real(let d): d
        default: nil
        }
    }

    public var string: String? { if case .text(let s) = self { return s }; return nil }
}

/// Conversions so rows can be written as `[x, y, z]` with optionals meaning NULL.
public protocol SQLConvertible { var sqlValue: SQLValue { get } }
extension SQLValue: SQLConvertible { public var sqlValue: SQLValue { self } }
extension Int: SQLConvertible { public var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Int64: SQLConvertible { public var sqlValue: SQLValue { .integer(self) } }
extension UInt32: SQLConvertible { public var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Bool: SQLConvertible { public var sqlValue: SQLValue { .integer(self ? 1 : 0) } }
extension String: SQLConvertible { public var sqlValue: SQLValue { .text(self) } }
extension Double: SQLConvertible {
    /// NaN and infinities are not measurements: they become NULL.
    public var sqlValue: SQLValue { isFinite ? .real(self) : .null }
}
extension Optional: SQLConvertible where Wrapped: SQLConvertible {
    public var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

public final class Statement {
    @usableFromInline let handle: OpaquePointer
    unowned let db: Database
    let sql: String

    /// Text bound by `insertRow` is copied here and bound as static: SQLite's own copy
    /// (`SQLITE_TRANSIENT`) freed and allocated a buffer for every text value of every row.
    /// Valid until the next `insertRow`, which binds every parameter again before stepping.
    private var textArena: UnsafeMutableRawPointer
    private var textArenaCapacity = 4_096
    private var textArenaUsed = 0
    /// Set when a row did not fit: the arena grows before the next row (never while bound).
    private var textArenaWanted = 0
    private var bindingRow = false
    /// Which parameters hold NULL (index 0 unused): binding NULL again is skipped, since an
    /// interval row leaves a third of its columns empty and each bind is a library call.
    /// A raw buffer: an array property of a class is checked for exclusive access each time.
    @usableFromInline let boundNull: UnsafeMutableBufferPointer<Bool>

    init(db: Database, sql: String) throws {
        textArena = UnsafeMutableRawPointer.allocate(byteCount: textArenaCapacity, alignment: 8)
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v2(db.handle, sql, -1, &stmt, nil)
        guard rc == SQLITE_OK, let stmt else {
            textArena.deallocate()
            throw db.error(rc, sql: sql)
        }
        handle = stmt
        self.db = db
        self.sql = sql
        boundNull = .allocate(capacity: Int(sqlite3_bind_parameter_count(stmt)) + 1)
        boundNull.initialize(repeating: true)
    }

    deinit {
        sqlite3_finalize(handle)
        textArena.deallocate()
        boundNull.deallocate()
    }

    /// Ready to bind and step again (bindings cleared).
    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        boundNull.update(repeating: true)
    }

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    public func bind(_ values: [SQLValue]) throws {
        for (i, v) in values.enumerated() { try bind(v, at: Int32(i + 1)) }
    }

    /// Binds one parameter (1-based `index`).
    @inline(__always)
    public func bind(_ value: SQLValue, at index: Int32) throws {
        switch value {
        case .null: try bindNull(at: index)
        case .integer(let n): try bind(integer: n, at: index)
        case .real(let d): try bind(real: d, at: index)
        case .text(let s): try bind(text: s, at: index)
        case .blob(let b): try bind(blob: b, at: index)
        }
    }

    // Typed binds: the hot inserts bind through these without making an `SQLValue` per value.
    // Inlinable: the store binds every value of every row through them from another module.

    @inlinable @inline(__always) func bindNull(at index: Int32) throws {
        guard !boundNull[Int(index)] else { return }
        try bound(sqlite3_bind_null(handle, index), isNull: true, at: index)
    }

    @inlinable @inline(__always) func bind(integer n: Int64, at index: Int32) throws {
        try bound(sqlite3_bind_int64(handle, index, n), isNull: false, at: index)
    }

    @inlinable @inline(__always) func bind(real d: Double, at index: Int32) throws {
        try bound(sqlite3_bind_double(handle, index, d), isNull: false, at: index)
    }

    @usableFromInline func bind(blob bytes: [UInt8], at index: Int32) throws {
        let rc = bytes.withUnsafeBytes { sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), Statement.transient) }
        try bound(rc, isNull: false, at: index)
    }

    @usableFromInline func bind(text: String, at index: Int32) throws {
        var s = text
        // With its length, not as a C string: a value from a log may contain NUL, and cut
        // there two different call ids ("a\0x", "a\0y") would become the same row.
        // (A nil pointer would bind NULL: the empty string gets a real one.)
        let rc =
            s.isEmpty
            ? sqlite3_bind_text(handle, index, "", 0, Statement.transient)
            : s.withUTF8 { utf8 in
                if bindingRow, let arenaText = copyToArena(utf8) {
                    return sqlite3_bind_text(handle, index, arenaText, Int32(utf8.count), nil)  // nil: SQLITE_STATIC
                }
                return utf8.withMemoryRebound(to: CChar.self) {
                    sqlite3_bind_text(handle, index, $0.baseAddress, Int32($0.count), Statement.transient)
                }
            }
        try bound(rc, isNull: false, at: index)
    }

    /// Notes what a bind left. After a failed bind the parameter's value is unknown: NULL is
    /// bound again next time.
    @inlinable @inline(__always) func bound(_ rc: Int32, isNull: Bool, at index: Int32) throws {
        boundNull[Int(index)] = isNull && rc == SQLITE_OK
        guard rc == SQLITE_OK else { throw failedBind(rc) }
    }

    @usableFromInline func failedBind(_ rc: Int32) -> Database.Error { db.error(rc, sql: sql) }

    /// Runs the statement once with a row bound by `body` in parameter order, straight from
    /// typed values: the hot inserts build no array per row. Every parameter must be bound
    /// (bindings are not cleared between rows).
    public func insertRow(_ body: (inout RowBinder) throws -> Void) throws {
        sqlite3_reset(handle)
        if textArenaWanted > textArenaCapacity {
            textArena.deallocate()
            textArenaCapacity = max(textArenaWanted, 2 * textArenaCapacity)
            textArena = UnsafeMutableRawPointer.allocate(byteCount: textArenaCapacity, alignment: 8)
        }
        textArenaUsed = 0
        bindingRow = true
        defer { bindingRow = false }
        var row = RowBinder(statement: self)
        try body(&row)
        precondition(row.next - 1 == sqlite3_bind_parameter_count(handle), "\(sql): \(row.next - 1) values bound")
        while try step() {}
    }

    /// A copy of `text` in the arena, or nil when it is full (the row binds a transient copy).
    private func copyToArena(_ text: UnsafeBufferPointer<UInt8>) -> UnsafePointer<CChar>? {
        guard let source = text.baseAddress else { return nil }
        guard textArenaUsed + text.count <= textArenaCapacity else {
            textArenaWanted = max(textArenaWanted, textArenaUsed + text.count)
            return nil
        }
        let target = textArena + textArenaUsed
        target.copyMemory(from: source, byteCount: text.count)
        textArenaUsed += text.count
        return UnsafePointer(target.assumingMemoryBound(to: CChar.self))
    }

    /// Advances; true while a row is available.
    public func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw db.error(rc, sql: sql)
        }
    }

    public var columnCount: Int { Int(sqlite3_column_count(handle)) }

    public func columnName(_ i: Int) -> String { String(cString: sqlite3_column_name(handle, Int32(i))) }

    public func value(_ i: Int) -> SQLValue {
        let idx = Int32(i)
        switch sqlite3_column_type(handle, idx) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, idx))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, idx))
        case SQLITE_TEXT:
            // Text first, then its length in bytes (SQLite's documented order); NULs kept.
            guard let p = sqlite3_column_text(handle, idx) else { return .text("") }
            let n = Int(sqlite3_column_bytes(handle, idx))
            return .text(String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self))
        case SQLITE_BLOB:
            let n = Int(sqlite3_column_bytes(handle, idx))
            guard n > 0, let p = sqlite3_column_blob(handle, idx) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: p, count: n)))
        default: return .null
        }
    }
}

/// Binds a row's values in parameter order (see `Statement.insertRow`).
public struct RowBinder {
    @usableFromInline let statement: Statement
    @usableFromInline var next: Int32 = 1

    init(statement: Statement) { self.statement = statement }

    @inlinable @inline(__always)
    public mutating func add<T: SQLConvertible>(_ value: T) throws {
        try statement.bind(value.sqlValue, at: next)
        next += 1
    }

    // The types rows are made of, bound as their `sqlValue` would be, without making one.

    /// NaN and infinities are not measurements: NULL, as `Double.sqlValue` makes them.
    @inlinable @inline(__always) public mutating func add(_ value: Double) throws {
        if value.isFinite { try statement.bind(real: value, at: next) } else { try statement.bindNull(at: next) }
        next += 1
    }

    @inlinable @inline(__always) public mutating func add(_ value: Int64) throws {
        try statement.bind(integer: value, at: next)
        next += 1
    }

    @inlinable @inline(__always) public mutating func add(_ value: Int) throws {
        try statement.bind(integer: Int64(value), at: next)
        next += 1
    }

    @inlinable @inline(__always) public mutating func addNull() throws {
        try statement.bindNull(at: next)
        next += 1
    }

    @inlinable @inline(__always) public mutating func add(_ value: [UInt8]) throws {
        try statement.bind(blob: value, at: next)
        next += 1
    }

    @inlinable @inline(__always) public mutating func add(_ value: String) throws {
        try statement.bind(text: value, at: next)
        next += 1
    }

    @inlinable @inline(__always) public mutating func add(_ value: Double?) throws {
        if let value, value.isFinite { try statement.bind(real: value, at: next) } else { try statement.bindNull(at: next) }
        next += 1
    }

    @inlinable @inline(__always) public mutating func add(_ value: Int64?) throws {
        if let value { try statement.bind(integer: value, at: next) } else { try statement.bindNull(at: next) }
        next += 1
    }

    @inlinable @inline(__always) public mutating func add(_ value: Int?) throws {
        if let value { try statement.bind(integer: Int64(value), at: next) } else { try statement.bindNull(at: next) }
        next += 1
    }

    @inlinable @inline(__always) public mutating func add(_ value: String?) throws {
        if let value { try statement.bind(text: value, at: next) } else { try statement.bindNull(at: next) }
        next += 1
    }
}

extension Database {
    /// The text after `sql`'s first statement when it holds another statement (not only
    /// semicolons, spaces and comments), nil otherwise.
    func statementAfterTheFirst(_ sql: String) -> String? {
        sql.withCString { base -> String? in
            var first: OpaquePointer?
            var tail: UnsafePointer<CChar>?
            let rc = sqlite3_prepare_v2(handle, base, -1, &first, &tail)
            sqlite3_finalize(first)
            guard rc == SQLITE_OK, let tail, tail.pointee != 0 else { return nil }
            var next: OpaquePointer?
            let nextRC = sqlite3_prepare_v2(handle, tail, -1, &next, nil)
            sqlite3_finalize(next)
            let rest = String(String(cString: tail).drop { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" || $0 == ";" })
            return nextRC != SQLITE_OK || next != nil ? rest : nil
        }
    }
}

/// The result of a user's query: column names and rows, for printing.
public struct QueryResult: Sendable {
    public var columns: [String]
    public var rows: [[SQLValue]]

    public init(columns: [String], rows: [[SQLValue]]) {
        self.columns = columns
        self.rows = rows
    }
}

extension Database {
    /// Runs a user's SQL (one statement) and returns names and rows. SQL holding a second
    /// statement is refused, not cut: running only the first would answer another question.
    public func query(_ sql: String, limit: Int = .max) throws -> QueryResult {
        if let rest = statementAfterTheFirst(sql) {
            throw Error(code: SQLITE_MISUSE, message: "one statement at a time: the SQL goes on after the first statement with `\(rest.prefix(60))`")
        }
        let s = try Statement(db: self, sql: sql)
        let columns = (0..<s.columnCount).map { s.columnName($0) }
        var rows: [[SQLValue]] = []
        while rows.count < limit, try s.step() { rows.append((0..<s.columnCount).map { s.value($0) }) }
        return QueryResult(columns: columns, rows: rows)
    }
}
