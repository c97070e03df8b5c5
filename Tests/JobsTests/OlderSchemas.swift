import SQLiteDatabase
import Store

/// A database written now, laid out as an older schema version wrote it: what the upgrade
/// tests start from.
enum OlderSchemas {
    /// The columns version 4 added to the calls and streams tables, as `table.column`.
    static var addedIn4: [(table: String, column: String)] {
        CallsTable.columnDescriptions.filter { $0.addedIn == 4 }.map { ("calls", $0.name) }
            + StreamsTable.columnDescriptions.filter { $0.addedIn == 4 }.map { ("streams", $0.name) }
    }

    /// Undoes version 7 in `db`: the conference tables and views.
    static func makeVersion6(_ db: Database) throws {
        try db.execute(
            """
            DROP VIEW conferences; DROP VIEW conference_offenders; DROP TABLE conference_participants; DROP TABLE conference_matrix;
            DELETE FROM findings WHERE code LIKE 'caused_poor_%';
            DELETE FROM meta WHERE key LIKE 'migration.v7-%'; UPDATE meta SET value = '6' WHERE key = 'schema_version';
            """)
    }

    /// Undoes versions 7 and 6 in `db`: the table of peer connections.
    static func makeVersion5(_ db: Database) throws {
        try makeVersion6(db)
        try db.execute(
            "DROP TABLE peer_connections; DELETE FROM meta WHERE key LIKE 'migration.v6-%'; UPDATE meta SET value = '5' WHERE key = 'schema_version';"
        )
    }

    /// Undoes versions 7, 6 and 5 in `db`: the sent direction's rollup metrics.
    static func makeVersion4(_ db: Database) throws {
        try makeVersion5(db)
        try db.execute(
            Schema.rollupMetricColumns(addedIn: 5).map { "ALTER TABLE rollups DROP COLUMN \($0);" }.joined(separator: "\n")
                + "\nDELETE FROM meta WHERE key LIKE 'migration.v5-%'; UPDATE meta SET value = '4' WHERE key = 'schema_version';")
    }

    /// Undoes versions 7, 6, 5 and 4 in `db`: their tables and columns, their rollup counts, metrics and
    /// dimensions, the conversations table and views. Rows keep what they hold; callers change
    /// grades themselves.
    static func makeVersion3(_ db: Database) throws {
        try makeVersion4(db)
        try db.execute(
            """
            DROP VIEW conversations; DROP VIEW conversation_legs; DROP TABLE call_conversations;
            DROP VIEW daily_quality; ALTER TABLE rollups DROP COLUMN unmeasured;
            \(Schema.rollupMetricColumns(addedIn: 4).map { "ALTER TABLE rollups DROP COLUMN \($0);" }.joined())
            DELETE FROM rollups WHERE dimension IN ('direction', 'ice_outcome');
            \(addedIn4.map { "ALTER TABLE \($0.table) DROP COLUMN \($0.column);" }.joined(separator: "\n"))
            UPDATE meta SET value = '3' WHERE key = 'schema_version';
            """)
    }
}
