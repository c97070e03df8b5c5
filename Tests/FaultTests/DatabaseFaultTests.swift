import CallLog
import Foundation
import Simulator
import SQLiteDatabase
import Store
import TestSupport
import XCTest

/// One database, several runs at once; databases this callstats did not write.
final class DatabaseFaultTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("faults-db") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    static let lockedMessage = "is being written by another callstats run (analyze or regrade: "

    /// Three `analyze` processes started together on one database: each either completes or is
    /// refused at once with a message naming the other run; the database ends exactly as one
    /// clean run makes it.
    func testConcurrentRunsAreSafeOrRefusedClearly() throws {
        let rounds = Soak.count("CALLSTATS_SOAK_CONCURRENT", ci: 3)
        let logs = try Corpus.simulate(into: dir.appendingPathComponent("logs"), calls: 60, files: 4, seed: 31)
        let clean = dir.appendingPathComponent("clean.sqlite").path
        try analyzeInProcess([logs.path], db: clean)
        let expected = try dumpDatabase(clean)
        var refused = 0
        for round in 0..<rounds {
            let db = dir.appendingPathComponent("shared-\(round).sqlite").path
            let runs = try (0..<3).map { _ in try Binary.start(["analyze", logs.path, "--db", db, "--quiet", "--calls-per-transaction", "5"]) }
            var completed = 0
            for p in runs {
                let err = String(decoding: p.stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                _ = p.stdout.fileHandleForReading.readDataToEndOfFile()
                p.process.waitUntilExit()
                switch p.process.terminationStatus {
                case 0: completed += 1
                case 1:
                    XCTAssertTrue(err.contains(Self.lockedMessage), "refused without saying why: \(err)")
                    refused += 1
                default: XCTFail("status \(p.process.terminationStatus): \(err)")
                }
            }
            XCTAssertGreaterThanOrEqual(completed, 1, "one of the runs did the work")
            let last = try Binary.run(["analyze", logs.path, "--db", db, "--quiet"])
            XCTAssertEqual(last.status, 0, last.err)
            assertSameResults(try dumpDatabase(db), expected, "round \(round)")
        }
        Soak.figure("concurrent_runs_refused", refused)
    }

    /// A database written by another schema version, someone else's SQLite file, and a file
    /// that is no database: each refused with a message saying what to do, and left unchanged.
    func testOtherSchemasAndForeignDatabasesAreRefusedUnchanged() throws {
        let logs = try Corpus.simulate(into: dir.appendingPathComponent("logs"), calls: 5, files: 1, seed: 2)

        func analyzeRefused(_ db: String, _ message: String) throws {
            let r = try Binary.run(["analyze", logs.path, "--db", db, "--quiet"])
            XCTAssertEqual(r.status, 1, r.out + r.err)
            XCTAssertTrue(r.err.contains(message), "expected “\(message)” in: \(r.err)")
        }

        for (version, message) in [
            (99, "has schema version 99, newer than this callstats understands (\(Schema.version)); upgrade callstats"),
            (0, "has schema version 0, older than this callstats writes (\(Schema.version)) and it cannot be upgraded"),
        ] {
            let db = dir.appendingPathComponent("v\(version).sqlite").path
            try analyzeInProcess([logs.path], db: db)
            try Database(path: db).run("UPDATE meta SET value = ? WHERE key = 'schema_version'", [.text(String(version))])
            let before = try tableDump(db)
            try analyzeRefused(db, message)
            XCTAssertEqual(try tableDump(db), before, "a refused database is not touched")
        }

        // Someone else's SQLite database: no callstats table is added, its journal mode kept.
        let foreign = dir.appendingPathComponent("notes.sqlite").path
        do {
            let db = try Database(path: foreign)
            try db.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes(text) VALUES ('keep me');")
        }
        try analyzeRefused(foreign, "is not a callstats database: it has tables but no callstats schema version")
        let db = try Database(path: foreign)
        XCTAssertEqual(try db.rows("SELECT name FROM sqlite_master WHERE type = 'table'").map { $0[0].string }, ["notes"])
        XCTAssertEqual(try db.scalar("PRAGMA journal_mode")?.string, "delete")

        let junk = dir.appendingPathComponent("junk.sqlite")
        try Data(repeating: 0x42, count: 8192).write(to: junk)
        try analyzeRefused(junk.path, "is not a callstats database")
        XCTAssertEqual(try Data(contentsOf: junk), Data(repeating: 0x42, count: 8192))
    }

    /// Every table's content, schema version included.
    func tableDump(_ path: String) throws -> String {
        let db = try Database(path: path, readOnly: true)
        var out = ""
        for table in try db.rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").compactMap({ $0[0].string }) {
            out += "-- \(table)\n"
            for row in try db.rows("SELECT * FROM \"\(table)\" ORDER BY 1") { out += row.map(\.description).joined(separator: "|") + "\n" }
        }
        return out
    }
}
