import ConsoleOutput
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
            Rows are compared exactly (REAL values bit for bit), whatever their order in the file, \
            on the columns both databases have (a column only one has is listed, and its table differs). \
            The time a file was ingested (and an upgrade step ran) is left out, and so is each call's filing number \
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

    @Flag(
        help:
            "Compare stored call material by what it holds (both read, then written in the current layout, without the names of the files it was read from), not by its bytes: for a change of the material's layout, or logs read under other names."
    )
    var materialByContent = false

    func run() throws {
        let tables = try DatabaseComparison.compare(locations: first, second, materialByContent: materialByContent)
        var table = Table(header: ["table", "rows (1st)", "rows (2nd)", "only in 1st", "only in 2nd"])
        for t in tables {
            if t.rows.first == nil || t.rows.second == nil {
                table.rows.append([t.name, t.rows.first == nil ? "-" : "table", t.rows.second == nil ? "-" : "table", "", ""])
            } else {
                table.rows.append([t.name, "\(t.rows.first!)", "\(t.rows.second!)", "\(t.onlyInFirst)", "\(t.onlyInSecond)"])
            }
        }
        print(table.render())
        for t in tables where !t.columnsOnlyInFirst.isEmpty || !t.columnsOnlyInSecond.isEmpty {
            let only = [("1st", t.columnsOnlyInFirst), ("2nd", t.columnsOnlyInSecond)].filter { !$0.1.isEmpty }
            print(
                "\(t.name): columns only in " + only.map { "the \($0.0): \($0.1.joined(separator: ", "))" }.joined(separator: "; ")
                    + " (rows compared on the others)")
        }
        print()
        let differing = tables.filter { !$0.same }.map(\.name)
        if differing.isEmpty {
            print("same rows in every table")
        } else {
            print("different: " + differing.joined(separator: ", "))
            throw ExitCode(1)
        }
    }
}
