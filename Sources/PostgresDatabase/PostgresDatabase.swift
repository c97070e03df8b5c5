import CLibPQ

/// A thin, safe layer over libpq: just what the store needs. This module knows nothing of
/// callstats' tables; the `Store` module owns the schema and every statement.
///
/// Values reach SQL as parameters (`PQexecParams`) or as COPY data escaped here, never through
/// string building, so nothing read from a log can change a statement.
public final class PostgresConnection {
    private let handle: OpaquePointer
    /// The URL given, with any password left out: for messages.
    public let displayName: String

    /// An error of the server or of the connection: the server's message, and the statement it
    /// came from when there was one.
    public struct Error: Swift.Error, CustomStringConvertible {
        public var message: String
        /// The SQLSTATE code, when the server sent one (`23505`: a unique key violated).
        public var sqlState: String?
        public var sql: String?
        /// The connection is gone (the server stopped or the network dropped it).
        public var connectionLost: Bool

        /// Whether the same statement may succeed when run again unchanged: a lost connection,
        /// or a SQLSTATE class of passing conditions (08 connection, 40 serialization and
        /// deadlock, 53 resources such as a full disk, 57 an operator's shutdown, 58 the
        /// server's I/O). Permissions, missing objects and bad data (42, 22, 23, …) fail the
        /// same way until someone fixes them.
        public var mayPassOnRetry: Bool {
            if connectionLost { return true }
            guard let state = sqlState, state.count == 5 else { return false }
            return ["08", "40", "53", "57", "58"].contains(String(state.prefix(2)))
        }
        /// One line: the statement (not when the connection was lost, which no statement caused)
        /// with its line breaks as spaces.
        public var description: String {
            guard let sql, !connectionLost else { return message }
            let statement = sql.prefix(160).split(whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\t" }).joined(separator: " ")
            return message + " (in: \(statement))"
        }
    }

    /// Connects with libpq's own parsing of `url` (`postgres://user:password@host:port/db?sslmode=...`),
    /// so `PGPASSWORD`, `~/.pgpass`, `PGSSLMODE` and the other libpq settings apply as for psql.
    /// libpq itself is loaded by the first connection of the process (`libpq_load`), so that
    /// commands on SQLite files never map it; without it, this fails as an unreachable server
    /// does, with what to install.
    public init(url: String) throws {
        displayName = PostgresConnection.withoutPassword(url)
        if let failure = libpq_load() {
            throw Error(message: "cannot connect to \(displayName): \(String(cString: failure))", sqlState: nil, sql: nil, connectionLost: true)
        }
        guard let conn = PQconnectdb(url) else {
            throw Error(message: "cannot connect to \(displayName): out of memory", sqlState: nil, sql: nil, connectionLost: true)
        }
        guard PQstatus(conn) == CONNECTION_OK else {
            let message = PostgresConnection.trimmed(PQerrorMessage(conn))
            PQfinish(conn)
            throw Error(message: "cannot connect to \(displayName): \(message)", sqlState: nil, sql: nil, connectionLost: true)
        }
        handle = conn
        // NOTICEs (such as "relation already exists, skipping") are not for the user.
        PQsetNoticeProcessor(conn, { _, _ in }, nil)
    }

    deinit { PQfinish(handle) }

    /// `url` with the password of its user part replaced by `***`.
    public static func withoutPassword(_ url: String) -> String {
        let chars = Array(url)
        guard let slash = (0..<max(0, chars.count - 2)).first(where: { chars[$0] == ":" && chars[$0 + 1] == "/" && chars[$0 + 2] == "/" })
        else { return url }
        let userStart = slash + 3
        guard let at = chars[userStart...].firstIndex(where: { $0 == "@" }),
            !chars[userStart..<at].contains("/"),
            let colon = chars[userStart..<at].firstIndex(of: ":")
        else { return url }
        return String(chars[..<colon]) + ":***" + String(chars[at...])
    }

    /// libpq's message on one line (it breaks long ones and indents the rest with tabs).
    private static func trimmed(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "" }
        return String(cString: text).split(whereSeparator: { $0 == "\n" || $0 == "\t" || $0 == "\r" })
            .map { $0.drop(while: { $0 == " " }) }.filter { !$0.isEmpty }.joined(separator: " ")
    }

    var connectionLost: Bool { PQstatus(handle) != CONNECTION_OK }

    private func error(_ result: OpaquePointer?, sql: String?) -> Error {
        let state = result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "C"))) }.map { String(cString: $0) }
        var message = PostgresConnection.trimmed(result.map { PQresultErrorMessage($0) } ?? PQerrorMessage(handle))
        if message.isEmpty { message = PostgresConnection.trimmed(PQerrorMessage(handle)) }
        let lost = connectionLost
        if lost { message = "the connection was lost: \(message)" }
        return Error(message: message, sqlState: state, sql: sql, connectionLost: lost)
    }

    /// Runs one or more statements without parameters (DDL, BEGIN/COMMIT).
    public func execute(_ sql: String) throws {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else { throw error(result, sql: sql) }
    }

    /// Runs `sql` with `parameters` ($1, $2, ...) and returns its rows (none for a command) and
    /// the number of rows a command changed.
    @discardableResult
    public func query(_ sql: String, _ parameters: [PostgresValue] = []) throws -> PostgresResult {
        // Each parameter's bytes live until the call returns: texts NUL-terminated, bytea binary.
        // Never empty, so that each has an address (an empty bytea's length says 0).
        var buffers: [[UInt8]] = parameters.map { p in
            switch p {
            case .null: [0]
            case .text(let s): Array(s.utf8) + [0]
            case .bytes(let b): b.isEmpty ? [0] : b
            }
        }
        let formats: [Int32] = parameters.map { if case .bytes = $0 { 1 } else { 0 } }
        let lengths: [Int32] = parameters.map { if case .bytes(let b) = $0 { Int32(b.count) } else { 0 } }
        let result: OpaquePointer? = buffers.withUnsafeMutableBufferPointer { buffers in
            // The arrays' storage stays where it is while `buffers` is borrowed here.
            var pointers: [UnsafePointer<CChar>?] = []
            for i in buffers.indices {
                if case .null = parameters[i] {
                    pointers.append(nil)
                } else {
                    pointers.append(buffers[i].withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self) })
                }
            }
            return PQexecParams(handle, sql, Int32(parameters.count), nil, pointers, lengths, formats, 0)
        }
        defer { PQclear(result) }
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        guard let result, status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else { throw error(result, sql: sql) }
        return PostgresResult(result)
    }

    /// Runs `sql` (no parameters) and hands each row to `body` as libpq holds it, without
    /// making a string of every value first: for results of every call.
    public func forEachRow(_ sql: String, _ body: (PostgresRow) throws -> Void) throws {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        guard let result, status == PGRES_TUPLES_OK else { throw error(result, sql: sql) }
        var row = PostgresRow(result: result, row: 0, columns: PQnfields(result))
        for r in 0..<PQntuples(result) {
            row.row = r
            try body(row)
        }
    }

    /// The first column of the first row, if any (nil also for NULL).
    public func scalar(_ sql: String, _ parameters: [PostgresValue] = []) throws -> String? {
        let r = try query(sql, parameters)
        return r.rows.first?.first ?? nil
    }

    /// Runs `COPY ... FROM STDIN` (`sql`, without a format: binary is added) with `rows`.
    public func copy(_ sql: String, rows: CopyRows) throws {
        let statement = sql + " WITH (FORMAT binary)"
        let start = PQexec(handle, statement)
        let startStatus = start.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        if startStatus != PGRES_COPY_IN {
            let e = error(start, sql: statement)
            PQclear(start)
            throw e
        }
        PQclear(start)
        func put(_ bytes: [UInt8]) -> Int32 {
            bytes.withUnsafeBufferPointer { p in
                p.baseAddress!.withMemoryRebound(to: CChar.self, capacity: p.count) { PQputCopyData(handle, $0, Int32(p.count)) }
            }
        }
        let sent = put(rows.data) == 1 && put(CopyRows.trailer) == 1
        let ended = PQputCopyEnd(handle, sent ? nil : "sending the rows failed")
        var failure: Error?
        if !sent || ended != 1 { failure = error(nil, sql: statement) }
        // Every result of the COPY is read, so that the connection is ready for the next statement.
        while let result = PQgetResult(handle) {
            if PQresultStatus(result) != PGRES_COMMAND_OK, failure == nil { failure = error(result, sql: statement) }
            PQclear(result)
            if connectionLost { break }
        }
        if let failure { throw failure }
    }

    /// The server's major version (15 for 15.4).
    public var serverVersion: Int { Int(PQserverVersion(handle)) / 10_000 }
}

/// A parameter: text (PostgreSQL converts it to the column's type), raw bytes for `bytea`, or NULL.
public enum PostgresValue: Equatable, Sendable {
    case null
    case text(String)
    case bytes([UInt8])
}

/// One row of a result, read in place (valid only inside `forEachRow`'s body).
public struct PostgresRow {
    let result: OpaquePointer
    var row: Int32
    public let columns: Int32

    /// The column's type OID (as `PostgresResult.types`).
    public func type(_ column: Int32) -> UInt32 { UInt32(PQftype(result, column)) }
    public func isNull(_ column: Int32) -> Bool { PQgetisnull(result, row, column) == 1 }
    /// The value's text (libpq's text format), NUL-terminated.
    public func withText<T>(_ column: Int32, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
        let length = Int(PQgetlength(result, row, column))
        let p = UnsafeRawPointer(PQgetvalue(result, row, column)!).assumingMemoryBound(to: UInt8.self)
        return try body(UnsafeBufferPointer(start: p, count: length))
    }
}

/// A statement's rows, every value as text (libpq's text format), with each column's type.
public struct PostgresResult: Sendable {
    public var columns: [String]
    /// Each column's type OID (`pg_type.oid`): 20, 21, 23 integers, 700, 701, 1700 numbers,
    /// 16 boolean, 17 bytea.
    public var types: [UInt32]
    public var rows: [[String?]]
    /// The rows a command changed (`INSERT ... ON CONFLICT DO NOTHING`: those inserted).
    public var changed: Int

    init(_ result: OpaquePointer) {
        let n = Int(PQnfields(result))
        columns = (0..<n).map { String(cString: PQfname(result, Int32($0))) }
        types = (0..<n).map { UInt32(PQftype(result, Int32($0))) }
        let count = Int(PQntuples(result))
        rows = []
        rows.reserveCapacity(count)
        for r in 0..<count {
            rows.append(
                (0..<n).map { c in
                    if PQgetisnull(result, Int32(r), Int32(c)) == 1 { return nil }
                    let length = Int(PQgetlength(result, Int32(r), Int32(c)))
                    let p = UnsafeRawPointer(PQgetvalue(result, Int32(r), Int32(c))!).assumingMemoryBound(to: UInt8.self)
                    return String(decoding: UnsafeBufferPointer(start: p, count: length), as: UTF8.self)
                })
        }
        changed = Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    /// A `bytea` value in the text format (`\x` then hex) as bytes.
    public static func bytes(fromHex text: String) -> [UInt8] {
        var out: [UInt8] = []
        let utf8 = Array(text.utf8.dropFirst(2))
        out.reserveCapacity(utf8.count / 2)
        func nibble(_ c: UInt8) -> UInt8 { c <= 57 ? c - 48 : (c | 0x20) - 87 }
        var i = 0
        while i + 1 < utf8.count {
            out.append(nibble(utf8[i]) << 4 | nibble(utf8[i + 1]))
            i += 2
        }
        return out
    }
}

/// Rows for `COPY ... FROM STDIN` in the text format: tab between values, newline after each
/// row, `\N` for NULL, and backslash, tab, newline and carriage return escaped in text.
/// Rows in COPY's binary format (PostgreSQL's "Binary Format" of COPY): the server reads each
/// value as its type's binary form, so that numbers and bytes are not turned into text and
/// parsed back. Each value must be added as its column's type: `Int64` for BIGINT, `Double`
/// for DOUBLE PRECISION, `String` for TEXT, bytes for BYTEA (`ColumnValue.postgresType`).
public struct CopyRows {
    /// The signature, flags and header extension length that open the data.
    static let header: [UInt8] = Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00] + [0, 0, 0, 0] + [0, 0, 0, 0]
    /// The field count -1 that ends it.
    static let trailer: [UInt8] = [0xFF, 0xFF]

    /// The header and the rows so far (`PostgresConnection.copy` adds the trailer).
    public private(set) var data: [UInt8] = CopyRows.header
    public private(set) var rows = 0
    /// Where the row being written keeps its field count, and the count so far.
    private var countAt = -1
    private var fields: UInt16 = 0

    public init() { data.reserveCapacity(1 << 16) }

    private mutating func field() {
        if countAt < 0 {
            countAt = data.count
            data.append(0)
            data.append(0)
        }
        fields += 1
    }

    private mutating func append<T: FixedWidthInteger>(bigEndian value: T) {
        withUnsafeBytes(of: value.bigEndian) { data.append(contentsOf: $0) }
    }

    public mutating func endRow() {
        if countAt < 0 { field(); fields = 0 }
        data[countAt] = UInt8(fields >> 8)
        data[countAt + 1] = UInt8(fields & 0xFF)
        countAt = -1
        fields = 0
        rows += 1
    }

    public mutating func removeAll() {
        data.removeAll(keepingCapacity: true)
        data.append(contentsOf: CopyRows.header)
        rows = 0
        countAt = -1
        fields = 0
    }

    public mutating func addNull() {
        field()
        append(bigEndian: Int32(-1))
    }

    public mutating func add(_ value: Int64) {
        field()
        append(bigEndian: Int32(8))
        append(bigEndian: value)
    }

    public mutating func add(_ value: Int) { add(Int64(value)) }

    /// NaN and infinities are not measurements: NULL.
    public mutating func add(_ value: Double) {
        guard value.isFinite else { return addNull() }
        field()
        append(bigEndian: Int32(8))
        append(bigEndian: value.bitPattern)
    }

    public mutating func add(_ value: Double?) {
        if let value { add(value) } else { addNull() }
    }

    public mutating func add(_ value: String) {
        field()
        let lengthAt = data.count
        append(bigEndian: Int32(0))
        for byte in value.utf8 {
            // NUL cannot be stored in PostgreSQL text: it is kept visible as U+FFFD.
            if byte == 0 { data.append(contentsOf: [0xEF, 0xBF, 0xBD]) } else { data.append(byte) }
        }
        let length = UInt32(data.count - lengthAt - 4)
        withUnsafeBytes(of: length.bigEndian) { for (i, b) in $0.enumerated() { data[lengthAt + i] = b } }
    }

    /// A bytea value.
    public mutating func add(_ bytes: [UInt8]) {
        field()
        append(bigEndian: Int32(bytes.count))
        data.append(contentsOf: bytes)
    }
}
