import ConsoleOutput
import Foundation
import ArgumentParser
import CallLog
import SQLiteDatabase
import Store

/// `callstats query`: SQL over the analysis database, printed for people or programs.
struct QueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Run SQL against an analysis database and print the result.",
        discussion: """
            The database is opened read-only. Without SQL, the tables and views are listed with \
            a line each; --describe NAME lists one's columns. Data/SCHEMA.md describes them all.

            Examples:
              callstats query
              callstats query --describe calls
              callstats query "SELECT * FROM poor_share_by_network"
              callstats query --format csv "SELECT call_id, mos_cq FROM calls WHERE grade = 'poor'"
              callstats query --format json "SELECT * FROM worst_calls LIMIT 5"
            """)

    @Argument(help: "One SQL statement (without it: the tables and views).")
    var sql: String?

    @Option(help: ArgumentHelp("List the columns of this table or view.", valueName: "name"))
    var describe: String?

    @Option(name: .long, help: "The analysis database: an SQLite file, or a postgres:// URL.")
    var db = "callstats.sqlite"

    @Option(help: "table (aligned, for people), csv, or json (an array of objects).")
    var format: OutputFormat = .table

    @Option(help: "Print at most this many rows.")
    var limit: Int = 10_000

    func validate() throws {
        try OptionRange.check("--limit", limit, 0...Int.max)
    }

    func run() throws {
        let reader = try StoreLocation.openForReading(db).queries
        let result: QueryResult
        if let describe {
            result = try reader.columns(of: describe)
            if result.rows.isEmpty { throw CommandFailure(message: "\(describe): no such table or view (callstats query lists them)") }
        } else if let sql {
            result = try reader.query(sql, limit: limit)
        } else {
            result = try reader.relations()
        }
        var out = OutputBuffer()
        for line in ResultFormatter.render(result, as: format) { out.line(line) }
        out.flush()
    }
}

enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case table, csv, json
}

/// Renders query results as aligned text, CSV (RFC 4180) or JSON.
enum ResultFormatter {
    static func render(_ r: QueryResult, as format: OutputFormat) -> [String] {
        switch format {
        case .table: table(r)
        case .csv: csv(r)
        case .json: [json(r)]
        }
    }

    static func cell(_ v: SQLValue) -> String {
        switch v {
        case .null: ""
        case .real(let d):
            // Enough digits to read, not the binary noise of a double.
            d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(format3(d))
        default: v.description
        }
    }

    static func format3(_ d: Double) -> String {
        let scaled = (d * 1000).rounded() / 1000
        return scaled.description
    }

    /// Columns aligned; numbers right-aligned, and a column of reals printed with one number of
    /// decimals (as many as its values need, at most 3) so that its decimal points line up.
    static func table(_ r: QueryResult) -> [String] {
        let decimals: [Int?] = r.columns.indices.map { i in
            var most: Int?
            for row in r.rows {
                guard case .real(let d) = row[i] else { continue }
                let text = cell(.real(d))
                let places = text.firstIndex(of: ".").map { text.distance(from: $0, to: text.endIndex) - 1 } ?? 0
                most = max(most ?? 0, min(places, 3))
            }
            return most
        }
        let cells = r.rows.map { row in
            row.indices.map { i -> String in
                switch (row[i], decimals[i]) {
                case (.real(let d), let places?) where d.isFinite: String(format: "%.\(places)f", d)
                case (.integer(let n), let places?) where places > 0: String(format: "%.\(places)f", Double(n))
                default: Printable.escaped(cell(row[i]))
                }
            }
        }
        let numeric = r.columns.indices.map { i in
            r.rows.contains { if case .integer = $0[i] { true } else if case .real = $0[i] { true } else { false } }
        }
        let table = Table(
            header: r.columns.map { Printable.escaped($0) }, rows: cells,
            textColumns: Set(r.columns.indices.filter { !numeric[$0] }), firstColumnIsText: !(numeric.first ?? false))
        return table.render().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            + ["(\(r.rows.count) row\(r.rows.count == 1 ? "" : "s"))"]
    }

    static func csv(_ r: QueryResult) -> [String] {
        func quote(_ s: String) -> String {
            s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" })
                ? "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : s
        }
        // Quoting carries line breaks and tabs; other control characters are escaped.
        func field(_ s: String) -> String { quote(Printable.escaped(s, keeping: ["\n", "\r", "\t"])) }
        return [r.columns.map(field).joined(separator: ",")] + r.rows.map { $0.map { field(cell($0)) }.joined(separator: ",") }
    }

    static func json(_ r: QueryResult) -> String {
        var out = "["
        for (n, row) in r.rows.enumerated() {
            out += n == 0 ? "{" : ",{"
            for (i, v) in row.enumerated() {
                if i > 0 { out += "," }
                out += jsonString(r.columns[i]) + ":"
                switch v {
                case .null: out += "null"
                case .integer(let x): out += String(x)
                case .real(let d): out += d.isFinite ? String(d) : "null"
                case .text(let s): out += jsonString(s)
                case .blob(let b): out += jsonString("<\(b.count) bytes>")
                }
            }
            out += "}"
        }
        return out + "]"
    }

    /// `s` as a JSON string, escaped as the log writer escapes it.
    static func jsonString(_ s: String) -> String {
        var out: [UInt8] = []
        JSONValue.writeString(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
