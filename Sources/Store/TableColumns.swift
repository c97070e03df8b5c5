import PostgresDatabase
import SQLiteDatabase

/// How the tables written from Swift values are described: each table lists its columns once
/// (`StoredTable.columns`), and that one list gives the `CREATE TABLE`, the insert statement,
/// the order values are bound in, and the `ALTER TABLE` of a column added later. Nothing else
/// names these columns by position, so the DDL and the bound row cannot drift apart.
///
/// The list is a generic function read by two visitors: `ColumnDescriptions` records names and
/// declarations (values never evaluated), `RowBinding` binds one row. Specialised for
/// `RowBinding`, the list compiles to the straight-line binds a hand-written insert would make:
/// no array of closures is walked per row.

/// A value a column holds. The SQL type a column is declared with comes from the Swift type of
/// its value, so the declaration and the bound value cannot disagree.
package protocol ColumnValue {
    static var sqlType: String { get }
    /// The type in PostgreSQL: one that holds every value the SQLite type holds, exactly.
    static var postgresType: String { get }
    func bind(to row: inout RowBinder) throws
    /// The value in a row of COPY's binary format (PostgreSQL), as `postgresType`.
    func copy(to rows: inout CopyRows)
}

extension String: ColumnValue {
    package static var sqlType: String { "TEXT" }
    @inline(__always) package func bind(to row: inout RowBinder) throws { try row.add(self) }
    package static var postgresType: String { "TEXT" }
    @inline(__always) package func copy(to rows: inout CopyRows) { rows.add(self) }
}

extension Int64: ColumnValue {
    package static var sqlType: String { "INTEGER" }
    @inline(__always) package func bind(to row: inout RowBinder) throws { try row.add(self) }
    package static var postgresType: String { "BIGINT" }
    @inline(__always) package func copy(to rows: inout CopyRows) { rows.add(self) }
}

extension Int: ColumnValue {
    package static var sqlType: String { "INTEGER" }
    @inline(__always) package func bind(to row: inout RowBinder) throws { try row.add(self) }
    package static var postgresType: String { "BIGINT" }
    @inline(__always) package func copy(to rows: inout CopyRows) { rows.add(self) }
}

extension UInt32: ColumnValue {
    package static var sqlType: String { "INTEGER" }
    @inline(__always) package func bind(to row: inout RowBinder) throws { try row.add(Int64(self)) }
    package static var postgresType: String { "BIGINT" }
    @inline(__always) package func copy(to rows: inout CopyRows) { rows.add(Int64(self)) }
}

extension Bool: ColumnValue {
    package static var sqlType: String { "INTEGER" }
    @inline(__always) package func bind(to row: inout RowBinder) throws { try row.add(Int64(self ? 1 : 0)) }
    package static var postgresType: String { "BIGINT" }
    @inline(__always) package func copy(to rows: inout CopyRows) { rows.add(Int64(self ? 1 : 0)) }
}

/// NaN and infinities are not measurements: they are stored as NULL (`RowBinder.add(Double)`).
extension Double: ColumnValue {
    package static var sqlType: String { "REAL" }
    @inline(__always) package func bind(to row: inout RowBinder) throws { try row.add(self) }
    package static var postgresType: String { "DOUBLE PRECISION" }
    @inline(__always) package func copy(to rows: inout CopyRows) { rows.add(self) }
}

extension [UInt8]: ColumnValue {
    package static var sqlType: String { "BLOB" }
    @inline(__always) package func bind(to row: inout RowBinder) throws { try row.add(self) }
    package static var postgresType: String { "BYTEA" }
    @inline(__always) package func copy(to rows: inout CopyRows) { rows.add(self) }
}

/// nil is NULL: *not measured*, never zero.
extension Optional: ColumnValue where Wrapped: ColumnValue {
    package static var sqlType: String { Wrapped.sqlType }
    package static var postgresType: String { Wrapped.postgresType }
    @inline(__always) package func copy(to rows: inout CopyRows) {
        if let value = self { value.copy(to: &rows) } else { rows.addNull() }
    }
    @inline(__always) package func bind(to row: inout RowBinder) throws {
        if let value = self { try value.bind(to: &row) } else { try row.addNull() }
    }
}

/// What a column declares beyond its type.
package enum ColumnConstraint: String {
    case none = ""
    case notNull = " NOT NULL"
    case primaryKey = " PRIMARY KEY"
}

/// Reads a table's column list (see `StoredTable.columns`).
package protocol ColumnVisitor<Row> {
    associatedtype Row
    /// One column: its name, constraint, the schema version whose migration added it to
    /// existing tables (nil: it is in the table's first `CREATE TABLE`), and its value in a row.
    mutating func column<Value: ColumnValue>(
        _ name: String, _ constraint: ColumnConstraint, addedIn: Int?,
        _ value: (Row) -> Value) throws
}

extension ColumnVisitor {
    @inline(__always)
    package mutating func column<Value: ColumnValue>(
        _ name: String, _ constraint: ColumnConstraint = .none,
        _ value: (Row) -> Value
    ) throws {
        try column(name, constraint, addedIn: nil, value)
    }
}

/// A table whose rows are written from values of `Row`.
package protocol StoredTable {
    associatedtype Row
    static var name: String { get }
    /// A leading `call_key INTEGER NOT NULL` column, bound from the call being written rather
    /// than from the row (`interval_rows`, `event_rows`); nil for tables without one.
    static var keyColumn: String? { get }
    /// Every column in table order, each once. A column added later goes at the end of the list,
    /// with `addedIn:` its schema version: `ALTER TABLE` puts it there in an upgraded file, so
    /// new and upgraded files have their columns in the same order.
    static func columns<Visitor: ColumnVisitor<Row>>(_ table: inout Visitor) throws
}

extension StoredTable {
    package static var keyColumn: String? { nil }

    /// The columns as declared: name, `TYPE CONSTRAINT`, and the version that added them.
    package static var columnDescriptions: [ColumnDescription] {
        var list = ColumnDescriptions<Row>()
        try! columns(&list)  // describing evaluates no value and cannot fail
        let key =
            keyColumn.map {
                [ColumnDescription(name: $0, declaration: "INTEGER NOT NULL", postgresDeclaration: "BIGINT NOT NULL", addedIn: nil)]
            } ?? []
        return key + list.columns
    }

    package static var columnNames: [String] { columnDescriptions.map(\.name) }

    /// The column definitions of a `CREATE TABLE`: those a table of schema `version` has (all
    /// when nil), one a line.
    package static func columnDefinitions(atVersion version: Int? = nil, postgres: Bool = false) -> String {
        columnDescriptions.filter { c in version.map { c.addedIn ?? 0 <= $0 } ?? true }
            .map { "\($0.name) \(postgres ? $0.postgresDeclaration : $0.declaration)" }.joined(separator: ",\n    ")
    }

    /// The insert of `rows` rows, naming every column (an upgraded table has its added columns
    /// at the end; naming them keeps the bind order the list's). Several rows go in with
    /// `OR FAIL`: under the default `ABORT` a statement that writes several rows must be able to
    /// undo its own earlier rows, so SQLite copies every page it touches, already changed in the
    /// transaction, to a statement journal in a temporary file first (550 MB of writes for 700
    /// real-shaped calls). A failure here rolls the whole transaction back anyway.
    package static func insertSQL(rows: Int = 1) -> String {
        let names = columnNames
        let row = "(" + Array(repeating: "?", count: names.count).joined(separator: ", ") + ")"
        let verb = rows > 1 ? "INSERT OR FAIL" : "INSERT"
        return "\(verb) INTO \(name)(\(names.joined(separator: ", "))) VALUES "
            + Array(repeating: row, count: rows).joined(separator: ", ")
    }

    /// Binds `row`'s values in column order (after the key, which the caller binds first).
    @inline(__always)
    package static func bind(_ row: UnsafePointer<Row>, to binder: inout RowBinder) throws {
        var binding = RowBinding(row: row, binder: binder)
        try columns(&binding)
        binder = binding.binder
    }
}

package struct ColumnDescription: Equatable {
    package var name: String
    /// The SQL type and constraint, as in `CREATE TABLE`.
    package var declaration: String
    /// The same in PostgreSQL.
    package var postgresDeclaration: String
    package var addedIn: Int?
}

extension StoredTable {
    /// Appends `row`'s values as a row of COPY's text format, after the key when the table has
    /// one (the caller adds it first).
    @inline(__always)
    package static func copy(_ row: UnsafePointer<Row>, to rows: inout CopyRows) {
        var writing = CopyWriting(row: row, rows: CopyRows())
        swap(&writing.rows, &rows)
        try! columns(&writing)  // writing COPY text cannot fail
        swap(&writing.rows, &rows)
        rows.endRow()
    }
}

/// Writes one row's values in COPY's text format.
struct CopyWriting<Row>: ColumnVisitor {
    let row: UnsafePointer<Row>
    var rows: CopyRows

    @inline(__always)
    mutating func column<Value: ColumnValue>(
        _ name: String, _ constraint: ColumnConstraint, addedIn: Int?,
        _ value: (Row) -> Value
    ) throws {
        value(row.pointee).copy(to: &rows)
    }
}

/// Records the columns of a list; evaluates no value.
struct ColumnDescriptions<Row>: ColumnVisitor {
    var columns: [ColumnDescription] = []

    mutating func column<Value: ColumnValue>(
        _ name: String, _ constraint: ColumnConstraint, addedIn: Int?,
        _ value: (Row) -> Value
    ) throws {
        columns.append(
            ColumnDescription(
                name: name, declaration: Value.sqlType + constraint.rawValue,
                postgresDeclaration: Value.postgresType + constraint.rawValue, addedIn: addedIn))
    }
}

/// Binds one row's values, reading the row where it lies (a copy of it would retain and
/// release each of its strings).
struct RowBinding<Row>: ColumnVisitor {
    let row: UnsafePointer<Row>
    var binder: RowBinder

    @inline(__always)
    mutating func column<Value: ColumnValue>(
        _ name: String, _ constraint: ColumnConstraint, addedIn: Int?,
        _ value: (Row) -> Value
    ) throws {
        try value(row.pointee).bind(to: &binder)
    }
}
