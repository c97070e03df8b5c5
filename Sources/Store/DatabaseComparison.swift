import Analysis
import Foundation
import MaterialCodec
import MaterialScanning
import SQLiteDatabase

/// Whether two databases hold the same results, and what one holds, as text: one definition
/// of what is compared, for `callstats internal compare-databases` and for the tests.
///
/// Compared: every table users read, rows exactly (REAL values bit for bit), whatever their
/// order in the file. Left out: what says when rather than what (`ingested_files.ingested_at`,
/// the `meta` rows recording when an upgrade step ran) and each call's filing number
/// (`calls.call_key`, which follows the order calls were written); intervals and events are
/// compared through their views, by call id, so databases of schema versions 1 and 2 compare too.
public enum DatabaseComparison {
    static let ignoredColumns: Set<String> = ["ingested_files.ingested_at", "calls.call_key", "conference_participants.call_key"]
    /// Compared through the views `intervals` and `events` instead.
    static let keyedTables: Set<String> = ["interval_rows", "event_rows"]
    /// Rows left out, by table: a condition on the rows compared.
    /// (`views_hash` is a hash of each store's own SQL: equal views, other text.)
    static let comparedRows: [String: String] = ["meta": "key NOT LIKE 'migration.%' AND key != 'views_hash'"]

    /// One table of a comparison. A table in only one database has nil rows in the other.
    /// Rows are compared on the columns both have; a column only one has makes the table differ.
    public struct TableComparison: Sendable {
        public var name: String
        public var rows: (first: Int64?, second: Int64?)
        public var onlyInFirst: Int64
        public var onlyInSecond: Int64
        public var columnsOnlyInFirst: [String] = []
        public var columnsOnlyInSecond: [String] = []
        public var same: Bool {
            rows.first != nil && rows.first == rows.second && onlyInFirst == 0 && onlyInSecond == 0
                && columnsOnlyInFirst.isEmpty && columnsOnlyInSecond.isEmpty
        }
    }

    /// Every table of either database, by name. `materialByContent`: call material is compared
    /// by what it holds (each read and written again in the current layout, without the files
    /// it names), not by its bytes.
    public static func compare(_ first: String, _ second: String, materialByContent: Bool = false) throws -> [TableComparison] {
        let db = try SQLiteReader(path: first).connection
        try db.run("ATTACH DATABASE ? AS other", [.text(second)])
        let inFirst = Set(try tables(db, schema: "main")), inSecond = Set(try tables(db, schema: "other"))
        var out: [TableComparison] = []
        for name in inFirst.union(inSecond).sorted() {
            guard inFirst.contains(name), inSecond.contains(name) else {
                out.append(
                    TableComparison(
                        name: name, rows: (inFirst.contains(name) ? 0 : nil, inSecond.contains(name) ? 0 : nil),
                        onlyInFirst: 0, onlyInSecond: 0))
                continue
            }
            if name == MaterialTable.name, materialByContent {
                out.append(try compareMaterialContent(db))
                continue
            }
            let table = quoted(name)
            let firstColumns = try comparedColumns(db, table: name, schema: "main")
            let secondColumns = try comparedColumns(db, table: name, schema: "other")
            let columns = firstColumns.filter(secondColumns.contains).map(quoted).joined(separator: ", ")
            let filter = comparedRows[name].map { " WHERE \($0)" } ?? ""
            func count(_ sql: String) throws -> Int64 { try db.scalar(sql)?.int64 ?? 0 }
            func select(_ schema: String) -> String { "SELECT \(columns) FROM \(schema).\(table)\(filter)" }
            out.append(
                TableComparison(
                    name: name,
                    rows: (try count("SELECT count(*) FROM (\(select("main")))"), try count("SELECT count(*) FROM (\(select("other")))")),
                    onlyInFirst: try count("SELECT count(*) FROM (\(select("main")) EXCEPT \(select("other")))"),
                    onlyInSecond: try count("SELECT count(*) FROM (\(select("other")) EXCEPT \(select("main")))"),
                    columnsOnlyInFirst: firstColumns.filter { !secondColumns.contains($0) },
                    columnsOnlyInSecond: secondColumns.filter { !firstColumns.contains($0) }))
        }
        return out
    }

    /// What `text(of:)` includes.
    public struct TextOptions: Sendable {
        public enum Intervals: Sendable {
            /// Every interval row.
            case everyRow
            /// Per stream: the count of intervals and sums of packets, MOS and jitter (smaller
            /// text, for databases of many calls).
            case totalsPerStream
        }

        public enum Material: Sendable {
            case none
            case count
            /// Each call's material, byte for byte.
            case bytes
        }

        public var intervals = Intervals.everyRow
        public var material = Material.none
        /// The bookkeeping too (`meta`, the ledger, `rollup_pending`): left out by default, as
        /// two databases made from the same logs in other folders or runs differ there.
        public var bookkeeping = false
        /// Only these calls' rows; rollups and material, which depend on every call, are left out.
        public var calls: Set<String>?

        public init(intervals: Intervals = .everyRow, material: Material = .none, bookkeeping: Bool = false, calls: Set<String>? = nil) {
            self.intervals = intervals
            self.material = material
            self.bookkeeping = bookkeeping
            self.calls = calls
        }
    }

    /// Everything a user sees in a database, as text, in a fixed order: equal text means equal
    /// results (the same columns and rows `compare` compares).
    public static func text(of path: String, _ options: TextOptions = TextOptions()) throws -> String {
        let db = try SQLiteReader(path: path).connection
        let callFilter = options.calls.map { ids in
            "call_id IN (" + ids.sorted().map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" }.joined(separator: ", ") + ")"
        }
        var queries: [String] = []
        func rows(of table: String) throws {
            let columns = try comparedColumns(db, table: table, schema: "main").map(quoted).joined(separator: ", ")
            let conditions = [comparedRows[table], callFilter].compactMap { $0 }
            let filter = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
            queries.append("SELECT \(columns) FROM \(quoted(table))\(filter) ORDER BY \(columns)")
        }
        for table in [CallsTable.name, StreamsTable.name] { try rows(of: table) }
        switch options.intervals {
        case .everyRow: try rows(of: "intervals")
        case .totalsPerStream:
            queries.append(
                "SELECT call_id, stream_id, count(*), sum(packets), round(sum(mos_cq), 6), round(sum(jitter_ms), 6) FROM intervals"
                    + (callFilter.map { " WHERE \($0)" } ?? "") + " GROUP BY 1, 2 ORDER BY 1, 2")
        }
        for table in ["events", FindingsTable.name] { try rows(of: table) }
        // Version 6's: a database not yet upgraded has none.
        if try db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'peer_connections'")?.int64 == 1 {
            try rows(of: PeerConnectionsTable.name)
        }
        if options.calls == nil {
            try rows(of: "rollups")
            // Version 4's: a database not yet upgraded has none.
            if try db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'call_conversations'")?.int64 == 1 {
                try rows(of: "call_conversations")
            }
            // Version 7's.
            if try db.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'conference_matrix'")?.int64 == 1 {
                for table in [ConferenceParticipantsTable.name, ConferenceMatrixTable.name] { try rows(of: table) }
            }
            switch options.material {
            case .none: break
            case .count: queries.append("SELECT count(*) FROM \(MaterialTable.name)")
            case .bytes: queries.append("SELECT call_id, hex(material) FROM \(MaterialTable.name) ORDER BY call_id")
            }
            if options.bookkeeping {
                for table in ["meta", "ingested_files", "rollup_pending"] { try rows(of: table) }
            }
        }
        var out = ""
        for sql in queries {
            out += "-- \(sql)\n"
            for row in try db.rows(sql) { out += row.map(\.description).joined(separator: "|") + "\n" }
        }
        return out
    }

    /// The tables (and the views `intervals`, `events`) of `schema` that are compared.
    private static func tables(_ db: Database, schema: String) throws -> [String] {
        try db.rows(
            """
            SELECT name FROM \(schema).sqlite_master
            WHERE (type = 'table' OR name IN ('intervals', 'events')) AND name NOT LIKE 'sqlite_%'
            """
        ).compactMap { $0[0].string }.filter { !keyedTables.contains($0) }
    }

    /// The columns of `table` in `schema` that are compared, in table order.
    private static func comparedColumns(_ db: Database, table: String, schema: String) throws -> [String] {
        try db.rows("SELECT name FROM pragma_table_info(?, ?)", [.text(table), .text(schema)]).compactMap { $0[0].string }
            .filter { !ignoredColumns.contains("\(table).\($0)") }
    }

    static func quoted(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    /// Call material by call id, each read and written again in the current layout; calls whose
    /// material is only in one database or differs count on both sides.
    private static func compareMaterialContent(_ db: Database) throws -> TableComparison {
        func contents(_ schema: String) throws -> [String: [UInt8]] {
            var out: [String: [UInt8]] = [:]
            for row in try db.rows("SELECT call_id, material FROM \(schema).\(MaterialTable.name)") {
                guard let id = row[0].string, case .blob(let bytes) = row[1] else { continue }
                // The files a call was read from are bookkeeping, as the ledger's paths are.
                out[id] =
                    (try? CallMaterial(decoding: bytes)).map { m in
                        var m = m
                        (m.infoFile, m.endFile) = (nil, nil)
                        return m.encoded()
                    } ?? bytes
            }
            return out
        }
        let first = try contents("main"), second = try contents("other")
        return TableComparison(
            name: MaterialTable.name + " (content)", rows: (Int64(first.count), Int64(second.count)),
            onlyInFirst: Int64(first.filter { second[$0.key] != $0.value }.count),
            onlyInSecond: Int64(second.filter { first[$0.key] != $0.value }.count))
    }
}

/// Where the rows of a comparison come from: an SQLite file or a PostgreSQL server.
private protocol ComparedStore {
    /// The compared columns of `table` (a table or the view `intervals`/`events`), in order.
    func columns(of table: String) throws -> [String]
    func rows(_ sql: String) throws -> [[SQLValue]]
}

private struct ComparedSQLite: ComparedStore {
    let db: Database
    func columns(of table: String) throws -> [String] {
        try db.rows("SELECT name FROM pragma_table_info(?)", [.text(table)]).compactMap { $0[0].string }
    }
    func rows(_ sql: String) throws -> [[SQLValue]] { try db.rows(sql) }
}

private struct ComparedPostgres: ComparedStore {
    let reader: PostgresReader
    func columns(of table: String) throws -> [String] {
        try reader.rows(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = '\(table)' ORDER BY ordinal_position"
        ).compactMap { $0[0].string }
    }
    func rows(_ sql: String) throws -> [[SQLValue]] { try reader.rows(sql) }
}

extension DatabaseComparison {
    /// The tables (and views) compared across stores: what users read, and the bookkeeping
    /// that makes later runs behave alike.
    package static let crossStoreTables =
        [
            CallsTable.name, StreamsTable.name, "intervals", "events", FindingsTable.name, PeerConnectionsTable.name, "rollups", MaterialTable.name,
            "call_conversations", ConferenceParticipantsTable.name, ConferenceMatrixTable.name,
            "ingested_files", "rollup_pending", "meta",
        ] + Schema.viewNames.filter { $0 != "intervals" && $0 != "events" }

    /// Two databases wherever they are (`StoreLocation`): `compare` for two SQLite files, else
    /// `compareAcrossStores` (rows as multisets, reals to 12 digits).
    public static func compare(locations first: String, _ second: String, materialByContent: Bool = false) throws -> [TableComparison] {
        StoreLocation.isPostgres(first) || StoreLocation.isPostgres(second)
            ? try compareAcrossStores(first, second) : try compare(first, second, materialByContent: materialByContent)
    }

    /// `compare` for two databases in any stores (`StoreLocation`: an SQLite file or a
    /// PostgreSQL URL each). Rows are compared as multisets with REAL values rounded to 12
    /// significant digits: sums made in another order (a rollup's minutes, of calls starting in
    /// the same millisecond) may differ in their last bits. Ignored as in `compare`.
    public static func compareAcrossStores(_ first: String, _ second: String) throws -> [TableComparison] {
        func open(_ location: String) throws -> any ComparedStore {
            StoreLocation.isPostgres(location)
                ? ComparedPostgres(reader: try PostgresReader(url: location)) : ComparedSQLite(db: try SQLiteReader(path: location).connection)
        }
        let a = try open(first), b = try open(second)
        var out: [TableComparison] = []
        for table in crossStoreTables {
            let firstColumns = try a.columns(of: table).filter { !ignoredColumns.contains("\(table).\($0)") }
            let secondColumns = try b.columns(of: table).filter { !ignoredColumns.contains("\(table).\($0)") }
            let shared = firstColumns.filter(secondColumns.contains)
            let filter = comparedRows[table].map { " WHERE \($0)" } ?? ""
            let sql = "SELECT \(shared.map(quoted).joined(separator: ", ")) FROM \(quoted(table))\(filter)"
            func counted(_ store: any ComparedStore) throws -> [String: Int64] {
                var counts: [String: Int64] = [:]
                for row in try store.rows(sql) { counts[row.map(canonical).joined(separator: "|"), default: 0] += 1 }
                return counts
            }
            let x = try counted(a), y = try counted(b)
            let onlyInFirst = x.reduce(Int64(0)) { $0 + max(0, $1.value - (y[$1.key] ?? 0)) }
            let onlyInSecond = y.reduce(Int64(0)) { $0 + max(0, $1.value - (x[$1.key] ?? 0)) }
            out.append(
                TableComparison(
                    name: table, rows: (x.values.reduce(0, +), y.values.reduce(0, +)), onlyInFirst: onlyInFirst, onlyInSecond: onlyInSecond,
                    columnsOnlyInFirst: firstColumns.filter { !secondColumns.contains($0) },
                    columnsOnlyInSecond: secondColumns.filter { !firstColumns.contains($0) }))
        }
        return out
    }

    private static func canonical(_ value: SQLValue) -> String {
        switch value {
        case .null: "NULL"
        case .integer(let i): String(i)
        case .real(let d): d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(format: "%.12g", d)
        case .text(let t): "'" + t
        case .blob(let b): "x" + b.map { String(format: "%02x", $0) }.joined()
        }
    }
}
