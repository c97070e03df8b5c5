import SQLiteDatabase
import Store

/// Copies of stored rows, for benchmarks: a large database made from a small analysed one,
/// and the floor of what writing a run's rows costs SQLite alone. Each copy lists its table's
/// columns as the table has them, so a column added to a table is copied too.
extension SQLiteStore {
    /// Grows the database to `calls` calls with copies of the stored ones (and their findings):
    /// copy k of a call is `<id>#k`, starts k seconds after it and has a `call_key` of its own.
    /// Copies have no streams, intervals or events until `copyDetail(ofCopies:)` gives them
    /// their originals'. One transaction; rollups are not rebuilt.
    public func appendCopiesOfCalls(upTo calls: Int) throws {
        let base = Int(try db.scalar("SELECT count(*) FROM calls")?.int64 ?? 0)
        guard base > 0, calls > base else { return }
        let copies = (calls + base - 1) / base - 1
        let keys = try db.scalar("SELECT max(call_key) FROM calls")?.int64 ?? 0
        let callColumns = try columns(of: CallsTable.name)
        func copied(_ c: String) -> String {
            switch c {
            case "call_id": "call_id || '#' || k.n"
            case "call_key": "call_key + k.n * \(keys)"
            case "start_ts", "end_ts": "\(c) + k.n * 1000"
            default: c
            }
        }
        let findingColumns = try columns(of: FindingsTable.name)
        func copiedFinding(_ c: String) -> String {
            switch c {
            case "call_id": "f.call_id || '#' || k.n"
            case "start_ts": "f.start_ts + k.n * 1000"
            default: "f.\(c)"
            }
        }
        try inTransaction {
            try db.execute("CREATE TEMP TABLE IF NOT EXISTS k(n INTEGER PRIMARY KEY); DELETE FROM k")
            for n in 1...copies { try db.run("INSERT INTO k VALUES (?)", [.integer(Int64(n))]) }
            try db.execute(
                """
                INSERT INTO calls (\(callColumns.joined(separator: ", ")))
                SELECT \(callColumns.map(copied).joined(separator: ", ")) FROM calls, k
                """)
            // The last copy is partial when `calls` is not a multiple of the calls stored.
            let excess = base * (copies + 1) - calls
            if excess > 0 {
                try db.run(
                    "DELETE FROM calls WHERE call_id IN (SELECT call_id FROM calls WHERE call_id LIKE ? LIMIT ?)",
                    [.text("%#\(copies)"), .integer(Int64(excess))])
            }
            try db.execute(
                """
                INSERT INTO findings (\(findingColumns.joined(separator: ", ")))
                SELECT \(findingColumns.map(copiedFinding).joined(separator: ", "))
                FROM findings f JOIN k JOIN calls c ON c.call_id = f.call_id || '#' || k.n
                """)
            try db.execute("DROP TABLE k")
        }
    }

    /// Gives the copies among `ids` (`<id>#k`, see `appendCopiesOfCalls`) their originals'
    /// streams, peer connections, intervals and events, shifted as the copy is. One transaction.
    public func copyDetail(ofCopies ids: [String]) throws {
        // ?1 the copy's id, ?2 its time shift, ?3 the original's id.
        let copyKey = "(SELECT call_key FROM calls WHERE call_id = ?1)"
        let originalKey = "(SELECT call_key FROM calls WHERE call_id = ?3)"
        func shifted(_ table: String, _ value: (String) -> String?) throws -> (columns: String, values: String) {
            let names = try columns(of: table)
            return (names.joined(separator: ", "), names.map { value($0) ?? $0 }.joined(separator: ", "))
        }
        let stream = try shifted(StreamsTable.name) { c in
            switch c {
            case "call_id": "?1"
            case "start_ts", "end_ts": "\(c) + ?2"
            default: nil
            }
        }
        let peerConnection = try shifted(PeerConnectionsTable.name) { c in
            switch c {
            case "call_id": "?1"
            case "first_ts", "last_ts", "connected_ts", "failed_ts": "\(c) + ?2"
            default: nil
            }
        }
        let interval = try shifted(IntervalsTable.name) { c in
            switch c {
            case "call_key": copyKey
            case "start_ts", "end_ts": "\(c) + ?2"
            default: nil
            }
        }
        let event = try shifted(EventsTable.name) { c in
            switch c {
            case "call_key": copyKey
            case "ts": "ts + ?2"
            default: nil
            }
        }
        try inTransaction {
            for id in ids where id.contains("#") {
                let parts = id.split(separator: "#")
                let values: [SQLValue] = [.text(id), .integer((Int64(parts[1]) ?? 0) * 1000), .text(String(parts[0]))]
                try db.run("INSERT INTO streams (\(stream.columns)) SELECT \(stream.values) FROM streams WHERE call_id = ?3", values)
                try db.run(
                    "INSERT INTO peer_connections (\(peerConnection.columns)) SELECT \(peerConnection.values) FROM peer_connections WHERE call_id = ?3",
                    values)
                // Filed under the copy's key; read by call id through the views.
                try db.run(
                    "INSERT INTO interval_rows (\(interval.columns)) SELECT \(interval.values) FROM interval_rows WHERE call_key = \(originalKey)", values)
                try db.run("INSERT INTO event_rows (\(event.columns)) SELECT \(event.values) FROM event_rows WHERE call_key = \(originalKey)", values)
            }
        }
    }

    /// The tables a run writes rows into, in the order it fills them.
    static let writtenTables = [
        "ingested_files", CallsTable.name, StreamsTable.name, IntervalsTable.name, EventsTable.name,
        FindingsTable.name, PeerConnectionsTable.name, MaterialTable.name, "rollups",
    ]

    /// Copies every row a run wrote into `source` into this (new) database, in one transaction,
    /// by `INSERT … SELECT` (no binding, no analysis), in the order the run wrote them: what
    /// writing those rows costs SQLite alone.
    public func copyRows(from source: String) throws {
        try db.run("ATTACH DATABASE ? AS source", [.text(source)])
        defer { _ = try? db.execute("DETACH DATABASE source") }
        try inTransaction {
            // Rowid tables in rowid order (the order the run inserted rows); streams and peer
            // connections in the order of their calls' rows, as a run writes them.
            for table in Self.writtenTables {
                let names = try columns(of: table).map { "t.\($0)" }.joined(separator: ", ")
                let order =
                    switch table {
                    case StreamsTable.name, PeerConnectionsTable.name: "JOIN source.calls c USING (call_id) ORDER BY c.rowid"
                    case "rollups": ""
                    default: "ORDER BY t.rowid"
                    }
                try db.execute("INSERT INTO main.\(table) (\(try columns(of: table).joined(separator: ", "))) SELECT \(names) FROM source.\(table) t \(order)")
            }
        }
    }

    /// Rows of each table a run writes, here and in `source`.
    public func rowCounts(comparedWith source: String) throws -> [(table: String, here: Int64, there: Int64)] {
        try db.run("ATTACH DATABASE ? AS source", [.text(source)])
        defer { _ = try? db.execute("DETACH DATABASE source") }
        return try Self.writtenTables.map { table in
            let counts = try db.rows("SELECT (SELECT count(*) FROM main.\(table)), (SELECT count(*) FROM source.\(table))")[0]
            return (table, counts[0].int64 ?? 0, counts[1].int64 ?? 0)
        }
    }

    /// The columns `table` has in this file, in table order.
    private func columns(of table: String) throws -> [String] {
        try db.rows("SELECT name FROM pragma_table_info(?)", [.text(table)]).compactMap { $0[0].string }
    }
}
