import SQLiteDatabase
import Store

/// Everything a user sees in a database, as text, to compare databases: not the calls' filing
/// numbers (`call_key`, which follow the order calls were written). Intervals are summed unless
/// `everyInterval`; `material` adds each call's stored material, byte for byte.
func databaseText(_ db: String, everyInterval: Bool = false, material: Bool = false) throws -> String {
    let store = try CallStore(path: db, forWriting: false)
    let callColumns = try store.db.rows("SELECT name FROM pragma_table_info('calls') WHERE name != 'call_key'")
        .compactMap { $0[0].string }.joined(separator: ", ")
    var queries = [
        "SELECT \(callColumns) FROM calls ORDER BY call_id", "SELECT * FROM streams ORDER BY call_id, stream_id",
        everyInterval ? "SELECT * FROM intervals ORDER BY call_id, stream_id, start_ts" : "SELECT count(*), sum(packets), round(sum(mos_cq), 6) FROM intervals",
        "SELECT * FROM findings ORDER BY call_id, code, start_ts, stream_id",
        "SELECT * FROM events ORDER BY call_id, ts, kind, action, type, detail", "SELECT * FROM rollups ORDER BY 1, 2, 3, 4",
    ]
    if material { queries.append("SELECT call_id, material FROM call_material ORDER BY call_id") }
    var out = ""
    for sql in queries {
        out += "-- \(sql)\n"
        for row in try store.db.rows(sql) { out += row.map(\.description).joined(separator: "|") + "\n" }
    }
    return out
}
