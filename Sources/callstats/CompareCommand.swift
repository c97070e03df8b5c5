import Analysis
import ArgumentParser
import MaterialCodec
import MaterialScanning
import Store

/// `callstats internal compare-databases A B`: whether two databases hold the same rows, table
/// by table. A change meant to make analysis faster or the code clearer must leave every row as
/// it was; this is how that is checked on real corpora (the tests check it on small ones).
struct CompareDatabasesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compare-databases",
        abstract: "Compare two callstats databases row by row, table by table (exit 1 when they differ).",
        discussion: """
            Rows are compared exactly (REAL values bit for bit), whatever their order in the file. \
            The time a file was ingested is left out, and so is each call's filing number \
            (calls.call_key, which follows the order calls were written): intervals and events are \
            compared through their views, by call id, so databases of schema versions 1 and 2 compare too.

            Example, before and after a change:
              callstats analyze logs/ --db before.sqlite   # with the old binary
              callstats analyze logs/ --db after.sqlite
              callstats internal compare-databases before.sqlite after.sqlite
            """)

    @Argument(help: "The first database.")
    var first: String

    @Argument(help: "The second database.")
    var second: String

    @Flag(help: "Compare stored call material by what it holds (both read, then written in the current layout), not by its bytes: for a change of the material's layout.")
    var materialByContent = false

    /// Columns that say when, not what; and the key a call's intervals and events are filed
    /// under, which follows the order calls were written in (readers on threads vary it).
    static let ignored: Set<String> = ["ingested_files.ingested_at", "calls.call_key"]
    /// Compared through the views `intervals` and `events` instead, by call id (and so with
    /// databases of schema version 1, where those were tables).
    static let keyedTables: Set<String> = ["interval_rows", "event_rows"]

    func run() throws {
        let store = try CallStore(path: first, forWriting: false)
        let db = store.db
        try db.run("ATTACH DATABASE ? AS other", [.text(second)])
        func tables(_ schema: String) throws -> [String] {
            try db.rows("""
                SELECT name FROM \(schema).sqlite_master
                WHERE (type = 'table' OR name IN ('intervals', 'events')) AND name NOT LIKE 'sqlite_%'
                """).compactMap { $0[0].string }.filter { !Self.keyedTables.contains($0) }
        }
        let inFirst = Set(try tables("main")), inSecond = Set(try tables("other"))
        var table = Table(header: ["table", "rows (1st)", "rows (2nd)", "only in 1st", "only in 2nd"])
        var differing: [String] = []
        for name in inFirst.union(inSecond).sorted() {
            guard inFirst.contains(name), inSecond.contains(name) else {
                table.rows.append([name, inFirst.contains(name) ? "table" : "-", inSecond.contains(name) ? "table" : "-", "", ""])
                differing.append(name)
                continue
            }
            if name == "call_material", materialByContent {
                let (rows, onlyFirst, onlySecond) = try compareMaterial(db)
                if rows.0 != rows.1 || onlyFirst > 0 || onlySecond > 0 { differing.append(name) }
                table.rows.append([name + " (content)", "\(rows.0)", "\(rows.1)", "\(onlyFirst)", "\(onlySecond)"])
                continue
            }
            let quoted = "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            let columns = try db.rows("SELECT name FROM pragma_table_info(?)", [.text(name)]).compactMap { $0[0].string }
                .filter { !Self.ignored.contains("\(name).\($0)") }
                .map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }.joined(separator: ", ")
            func count(_ sql: String) throws -> Int64 { try db.scalar(sql)?.int64 ?? 0 }
            let rows = (try count("SELECT count(*) FROM main.\(quoted)"), try count("SELECT count(*) FROM other.\(quoted)"))
            let onlyFirst = try count("SELECT count(*) FROM (SELECT \(columns) FROM main.\(quoted) EXCEPT SELECT \(columns) FROM other.\(quoted))")
            let onlySecond = try count("SELECT count(*) FROM (SELECT \(columns) FROM other.\(quoted) EXCEPT SELECT \(columns) FROM main.\(quoted))")
            if rows.0 != rows.1 || onlyFirst > 0 || onlySecond > 0 { differing.append(name) }
            table.rows.append([name, "\(rows.0)", "\(rows.1)", "\(onlyFirst)", "\(onlySecond)"])
        }
        print(table.render())
        print()
        if differing.isEmpty {
            print("same rows in every table")
        } else {
            print("different: " + differing.joined(separator: ", "))
            throw ExitCode(1)
        }
    }

    /// Call material by call id, each read and written again in the current layout; calls whose
    /// material is only in one database or differs count on both sides.
    private func compareMaterial(_ db: Database) throws -> (rows: (Int, Int), onlyFirst: Int, onlySecond: Int) {
        func contents(_ schema: String) throws -> [String: [UInt8]] {
            var out: [String: [UInt8]] = [:]
            for row in try db.rows("SELECT call_id, material FROM \(schema).call_material") {
                guard let id = row[0].string, case .blob(let bytes) = row[1] else { continue }
                out[id] = (try? CallMaterial(decoding: bytes))?.encoded() ?? bytes
            }
            return out
        }
        let first = try contents("main"), second = try contents("other")
        let onlyFirst = first.filter { second[$0.key] != $0.value }.count
        let onlySecond = second.filter { first[$0.key] != $0.value }.count
        return ((first.count, second.count), onlyFirst, onlySecond)
    }
}
