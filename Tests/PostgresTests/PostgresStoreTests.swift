import CallLog
import Foundation
import Importers
import SQLiteDatabase
import Store
import TestSupport
import XCTest

/// The PostgreSQL store against a real server (`PostgresServer`, one for the suite, a database
/// per test), through the built binary: the same logs give the same rows as the SQLite file,
/// readers work, several writers at once end as one run, and faults leave what a rerun mends.
final class PostgresStoreTests: XCTestCase {
    nonisolated(unsafe) static var server: PostgresServer?
    nonisolated(unsafe) static var unavailable: Error?
    /// The corpus (simulated calls, some continuing in the next file, and the shared Chromium
    /// recording imported), and its analysis into SQLite by one run: the reference.
    nonisolated(unsafe) static var corpus: URL!
    nonisolated(unsafe) static var reference: String!

    static var binary: URL { TestPaths.callstatsBinary }

    override class func setUp() {
        do {
            server = try PostgresServer.start()
        } catch {
            unavailable = error
        }
    }

    override class func tearDown() {
        server?.stop()
        server = nil
        if let corpus { try? FileManager.default.removeItem(at: corpus.deletingLastPathComponent()) }
    }

    var server: PostgresServer!

    override func setUpWithError() throws {
        if let skip = Self.unavailable as? PostgresServer.Skip { throw XCTSkip(skip.reason) }
        if let failure = Self.unavailable { throw failure }
        server = Self.server
        if Self.corpus == nil { try Self.makeCorpus() }
    }

    @discardableResult
    static func callstats(_ args: [String]) throws -> ProcessResult { try runProcess(binary, args) }

    static func makeCorpus() throws {
        let dir = TestPaths.temporaryDirectory("pg-corpus")
        let logs = dir.appendingPathComponent("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        let sim = try callstats(["simulate", "--calls", "240", "--files", "4", "--seed", "5", "--days", "2", "--out", logs.path])
        XCTAssertEqual(sim.status, 0, sim.err)
        // A 6-party conference, one leg a file: workers that share the files link its legs and
        // attribute its poor streams as one run does.
        let conference = try callstats(["simulate", "--conference", "6", "--seed", "2", "--seconds", "60", "--out", logs.path])
        XCTAssertEqual(conference.status, 0, conference.err)
        if let recording = TestPaths.chromiumRecording {
            // The recording's two peers as two legs of one conversation, each in a file of its
            // own, as two agents would log them (linked by their SSRCs).
            let legs = RecordingLegs.split(ChromiumImporter().convert(path: recording.path).records, a: "peer-a", b: "peer-b")
            for (name, records) in [("peer-a", legs.a), ("peer-b", legs.b)] {
                let w = try LogWriter(path: logs.appendingPathComponent("\(name).ndjson.zst").path)
                for r in records { try w.append(r) }
                try w.close()
            }
        }
        let db = dir.appendingPathComponent("reference.sqlite").path
        let run = try callstats(["analyze", logs.path, "--db", db, "--quiet"])
        XCTAssertEqual(run.status, 0, run.err)
        corpus = logs
        reference = db
    }

    var logFiles: [String] {
        get throws {
            try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).filter { $0.contains(".ndjson") }.sorted()
                .map { Self.corpus.appendingPathComponent($0).path }
        }
    }

    /// Every compared table of `url` equals the reference SQLite file's, and holds rows.
    func assertSameAsReference(_ url: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let tables = try DatabaseComparison.compareAcrossStores(Self.reference, url)
        for t in tables {
            XCTAssertTrue(t.same, "\(t.name): \(t.rows) rows, \(t.onlyInFirst) only in SQLite, \(t.onlyInSecond) only in PostgreSQL", file: file, line: line)
            let mayBeEmpty = t.name == "rollup_pending" || (t.name == "call_conversations" && TestPaths.chromiumRecording == nil)
            if !mayBeEmpty { XCTAssertGreaterThan(t.rows.first ?? 0, 0, t.name, file: file, line: line) }
        }
    }

    func scalar(_ url: String, _ sql: String) throws -> String {
        try server.psql(sql, database: String(url.split(separator: "/").last!)).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Starts `analyze` of `files` into `url` and returns once it has committed some calls (it
    /// commits in batches as it writes), still running: the moment a fault is injected.
    func analyzeUntilCommitted(_ files: [String], into url: String, standardError: Pipe?) throws -> Process {
        let p = Process()
        p.executableURL = Self.binary
        p.arguments = ["analyze"] + files + ["--db", url, "--quiet"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = standardError ?? FileHandle.nullDevice
        try p.run()
        let deadline = Date().addingTimeInterval(30)
        func committed() throws -> Int {
            guard try scalar(url, "SELECT count(*) FROM pg_tables WHERE tablename = 'calls'") == "1" else { return 0 }
            return Int(try scalar(url, "SELECT count(*) FROM calls")) ?? 0
        }
        while p.isRunning, Date() < deadline, try committed() < 20 { usleep(20_000) }
        XCTAssertTrue(p.isRunning, "the run ended before the fault: make the corpus larger")
        return p
    }

    // MARK: - Same results

    func testSameLogsGiveTheSameRowsAsSQLite() throws {
        let url = try server.createDatabase()
        let run = try Self.callstats(["analyze", Self.corpus.path, "--db", url, "--quiet"])
        XCTAssertEqual(run.status, 0, run.err)
        try assertSameAsReference(url)
        // Every call's peer connections, equal to SQLite's row for row (`assertSameAsReference`).
        XCTAssertTrue(DatabaseComparison.crossStoreTables.contains("peer_connections"))
        XCTAssertGreaterThan(Int(try scalar(url, "SELECT count(*) FROM peer_connections")) ?? 0, 200)
        if TestPaths.chromiumRecording != nil {
            // The recording's call (2 % loss, 30 ms jitter) is there with its intervals.
            XCTAssertGreaterThan(Int(try scalar(url, "SELECT count(*) FROM intervals i JOIN calls c USING (call_id) WHERE c.sdk = 'chromium'")) ?? 0, 10)
        }
        // A second run reads nothing again and changes nothing.
        let again = try Self.callstats(["analyze", Self.corpus.path, "--db", url, "--json"])
        XCTAssertEqual(again.status, 0, again.err)
        XCTAssertTrue(again.out.contains("\"files_read\":0") || again.out.contains("\"files_read\": 0"), again.out)
        try assertSameAsReference(url)
    }

    /// Label dimensions (a setting) give the same rollups in both stores, and the quality model
    /// is recorded in both.
    func testLabelDimensionsAndTheQualityModelAsInSQLite() throws {
        let url = try server.createDatabase()
        let sqlite = Self.corpus.deletingLastPathComponent().appendingPathComponent("labels-\(UUID().uuidString).sqlite").path
        let files = Array(try logFiles.prefix(2))
        for db in [sqlite, url] {
            let run = try Self.callstats(["analyze"] + files + ["--db", db, "--quiet", "--set", "label_dimensions=region,profile"])
            XCTAssertEqual(run.status, 0, run.err)
        }
        for t in try DatabaseComparison.compareAcrossStores(sqlite, url) {
            XCTAssertTrue(t.same, "\(t.name): \(t.rows) rows, \(t.onlyInFirst) only in SQLite, \(t.onlyInSecond) only in PostgreSQL")
        }
        let regions = try scalar(url, "SELECT string_agg(DISTINCT value, ',' ORDER BY value) FROM rollups WHERE dimension = 'label.region'")
        XCTAssertTrue(regions.contains("eu-west"), regions)
        XCTAssertFalse(try scalar(url, "SELECT value FROM meta WHERE key = 'quality_model'").isEmpty)
    }

    /// `prune` and `forget` leave the same rows in both stores, rollups and links included.
    func testPruneAndForgetAsInSQLite() throws {
        let url = try server.createDatabase()
        XCTAssertEqual(try Self.callstats(["analyze", Self.corpus.path, "--db", url, "--quiet"]).status, 0)
        let sqlite = Self.corpus.deletingLastPathComponent().appendingPathComponent("pruned-\(UUID().uuidString).sqlite").path
        try FileManager.default.copyItem(atPath: Self.reference, toPath: sqlite)
        let middle = try scalar(
            url, "SELECT to_char(to_timestamp((min(start_ts) + max(start_ts)) / 2000) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM calls")
        let victim = try scalar(
            url, "SELECT call_id FROM calls WHERE start_ts > (SELECT (min(start_ts) + max(start_ts)) / 2 FROM calls) ORDER BY call_id LIMIT 1")
        for db in [sqlite, url] {
            let prune = try Self.callstats(["prune", "--db", db, "--before", middle, "--json"])
            XCTAssertEqual(prune.status, 0, prune.err)
            XCTAssertFalse(prune.out.contains("\"calls\":0,"), prune.out)
            let forget = try Self.callstats(["forget", "--db", db, "--call", victim, "--vacuum", "--quiet"])
            XCTAssertEqual(forget.status, 0, forget.err)
        }
        XCTAssertEqual(try scalar(url, "SELECT count(*) FROM calls WHERE call_id = '\(victim)'"), "0")
        for t in try DatabaseComparison.compareAcrossStores(sqlite, url) {
            XCTAssertTrue(t.same, "\(t.name): \(t.rows) rows, \(t.onlyInFirst) only in SQLite, \(t.onlyInSecond) only in PostgreSQL")
        }
    }

    func testQueryAndReportReadPostgres() throws {
        let url = try server.createDatabase()
        XCTAssertEqual(try Self.callstats(["analyze", Self.corpus.path, "--db", url, "--quiet"]).status, 0)
        let sql = "SELECT grade, count(*) AS n FROM calls GROUP BY grade ORDER BY grade"
        let fromPG = try Self.callstats(["query", "--db", url, "--format", "csv", sql])
        let fromSQLite = try Self.callstats(["query", "--db", Self.reference, "--format", "csv", sql])
        XCTAssertEqual(fromPG.status, 0, fromPG.err)
        XCTAssertEqual(fromPG.out, fromSQLite.out)
        XCTAssertTrue(fromPG.out.contains("good,"), fromPG.out)
        // Views answer alike, rounded values included (rows that tie in a view's order may come
        // in either order: compared as sorted lists of rows).
        func rows(_ db: String, _ q: String) throws -> [String] {
            let out = try Self.callstats(["query", "--db", db, "--format", "json", q]).out
            let list = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(out.utf8)) as? [Any], out)
            return try list.map { String(decoding: try JSONSerialization.data(withJSONObject: $0, options: .sortedKeys), as: UTF8.self) }.sorted()
        }
        for view in ["poor_share_by_network", "findings_summary", "daily_quality", "worst_calls", "conversations", "conversation_legs"] {
            let q = "SELECT * FROM \(view)"
            let (pg, sqlite) = (try rows(url, q), try rows(Self.reference, q))
            XCTAssertEqual(pg, sqlite, view)
            if view != "conversations" && view != "conversation_legs" || TestPaths.chromiumRecording != nil {
                XCTAssertFalse(pg.isEmpty, view)
            }
        }
        let list = try Self.callstats(["query", "--db", url])
        XCTAssertEqual(list.status, 0, list.err)
        for name in SchemaGuide.relations.map(\.name) { XCTAssertTrue(list.out.contains(name), "\(name) not listed: \(list.out)") }
        // Read-only, and one statement.
        let write = try Self.callstats(["query", "--db", url, "DELETE FROM calls"])
        XCTAssertEqual(write.status, 1)
        XCTAssertTrue(write.err.contains("read-only transaction"), write.err)
        XCTAssertEqual(
            try scalar(url, "SELECT count(*) FROM calls"),
            try Self.callstats(["query", "--db", Self.reference, "--format", "csv", "SELECT count(*) AS n FROM calls"]).out.split(separator: "\n").last.map(
                String.init))
        XCTAssertEqual(try Self.callstats(["query", "--db", url, "SELECT 1; DELETE FROM calls"]).status, 1)
        // The report.
        let out = Self.corpus.deletingLastPathComponent().appendingPathComponent("pg-report.html").path
        let report = try Self.callstats(["report", "--db", url, "--out", out])
        XCTAssertEqual(report.status, 0, report.err)
        let html = try String(contentsOfFile: out, encoding: .utf8)
        let calls = try scalar(url, "SELECT count(*) FROM calls")
        XCTAssertNotNil(report.out.range(of: "calls +\(calls) ", options: .regularExpression), report.out)
        XCTAssertGreaterThan(html.count, 10_000)
    }

    // MARK: - Many writers

    /// Three workers at once over overlapping halves of the files (each file read by two of them,
    /// calls that continue in the next file read by different workers) end as one run over all.
    func testConcurrentWorkersOverOverlappingInputsEndAsOneRun() throws {
        let url = try server.createDatabase()
        let files = try logFiles
        XCTAssertGreaterThanOrEqual(files.count, 4)
        let n = files.count
        let shares = [Array(files[0..<(n / 2 + 1)]), Array(files[(n / 2 - 1)...]), files.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)]
        let processes = try shares.map { share -> (Process, Pipe) in
            let p = Process()
            p.executableURL = Self.binary
            p.arguments = ["analyze"] + share + ["--db", url, "--quiet"]
            let err = Pipe()
            p.standardError = err
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            return (p, err)
        }
        for (p, err) in processes {
            let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            XCTAssertEqual(waitForExit(p), 0, message)
        }
        XCTAssertEqual(try scalar(url, "SELECT count(*) FROM ingested_files"), String(n))
        try assertSameAsReference(url)
    }

    /// A worker killed at a random moment, then run again, leaves the clean result.
    func testKilledWorkerRerunConverges() throws {
        let url = try server.createDatabase()
        let files = try logFiles
        let p = try analyzeUntilCommitted(files, into: url, standardError: nil)
        kill(p.processIdentifier, SIGKILL)
        XCTAssertEqual(waitForExit(p), 128 + SIGKILL)
        let partial = Int(try scalar(url, "SELECT count(*) FROM calls")) ?? 0
        let total =
            Int(
                try Self.callstats(["query", "--db", Self.reference, "--format", "csv", "SELECT count(*) AS n FROM calls"]).out.split(separator: "\n").last
                    ?? "") ?? 0
        XCTAssertLessThan(partial, total, "the kill came after the last commit")
        let rerun = try Self.callstats(["analyze"] + files + ["--db", url, "--quiet"])
        XCTAssertEqual(rerun.status, 0, rerun.err)
        try assertSameAsReference(url)
    }

    /// Two workers started together on a new database, asking for different settings: one is
    /// accepted and the other refused (the settings are claimed, not compared with an empty
    /// database), and every stored call is graded as `meta` says, equal to a SQLite run graded so.
    func testWorkersAskingForOtherSettingsOnANewDatabaseAreNotBothAccepted() throws {
        let url = try server.createDatabase()
        let files = try logFiles
        let jitters = ["5", "40"]
        let processes = try jitters.map { jitter -> (Process, Pipe) in
            let p = Process()
            p.executableURL = Self.binary
            p.arguments = ["analyze"] + files + ["--db", url, "--quiet", "--set", "jitter_warn_ms=\(jitter)"]
            let err = Pipe()
            p.standardError = err
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            return (p, err)
        }
        let outcomes = processes.map { p, err in
            let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            return (status: waitForExit(p), message: message)
        }
        let accepted = outcomes.indices.filter { outcomes[$0].status == 0 }
        XCTAssertEqual(accepted.count, 1, "\(outcomes)")
        guard accepted.count == 1, let winner = accepted.first else { return }
        let refused = outcomes[1 - winner]
        XCTAssertTrue(refused.message.contains("other settings"), refused.message)
        XCTAssertTrue(refused.message.contains("regrade"), refused.message)
        // The stored calls are those of a clean SQLite run with the accepted worker's settings.
        let sqlite = Self.corpus.deletingLastPathComponent().appendingPathComponent("jitter-\(UUID().uuidString).sqlite").path
        let clean = try Self.callstats(["analyze"] + files + ["--db", sqlite, "--quiet", "--set", "jitter_warn_ms=\(jitters[winner])"])
        XCTAssertEqual(clean.status, 0, clean.err)
        for t in try DatabaseComparison.compareAcrossStores(sqlite, url) {
            XCTAssertTrue(t.same, "\(t.name): \(t.rows) rows, \(t.onlyInFirst) only in SQLite, \(t.onlyInSecond) only in PostgreSQL")
        }
        XCTAssertEqual(
            try scalar(url, "SELECT value FROM meta WHERE key = 'analysis_config'"),
            try SQLiteStore(path: sqlite, forWriting: false).db.scalar("SELECT value FROM meta WHERE key = 'analysis_config'")?.string)
    }

    /// A run with another pseudonymisation key, with none into a pseudonymised database, or with
    /// one into a database written without, is refused and writes nothing; `meta` holds the
    /// key's fingerprint, never the key.
    func testAnotherKeyOrNoKeyIsRefused() throws {
        let (keyA, keyB) = ("000102030405060708090a0b0c0d0e0f", "f0e0d0c0b0a090807060504030201000")
        let files = try logFiles
        let url = try server.createDatabase()
        let first = try Self.callstats(["analyze", files[0], "--db", url, "--quiet", "--pseudonymize-key", keyA])
        XCTAssertEqual(first.status, 0, first.err)
        let fingerprint = try scalar(url, "SELECT value FROM meta WHERE key = 'pseudonymization_key'")
        // The same fingerprint as a SQLite database written with the key records.
        let sqlite = Self.corpus.deletingLastPathComponent().appendingPathComponent("key-\(UUID().uuidString).sqlite").path
        XCTAssertEqual(try Self.callstats(["analyze", files[0], "--db", sqlite, "--quiet", "--pseudonymize-key", keyA]).status, 0)
        XCTAssertEqual(fingerprint, try SQLiteStore(path: sqlite, forWriting: false).recordedKeyFingerprint())
        XCTAssertFalse(fingerprint.contains(keyA))
        let calls = try scalar(url, "SELECT count(*) FROM calls"), ledger = try scalar(url, "SELECT count(*) FROM ingested_files")
        for (key, phrase) in [(Optional(keyB), "another --pseudonymize-key"), (nil, "gives no key")] {
            let run = try Self.callstats(["analyze", files[1], "--db", url, "--quiet"] + (key.map { ["--pseudonymize-key", $0] } ?? []))
            XCTAssertNotEqual(run.status, 0)
            XCTAssertTrue(run.err.contains(phrase), run.err)
            XCTAssertTrue(run.err.contains("new --db"), run.err)
            XCTAssertEqual(try scalar(url, "SELECT count(*) FROM calls"), calls)
            XCTAssertEqual(try scalar(url, "SELECT count(*) FROM ingested_files"), ledger)
        }
        let same = try Self.callstats(["analyze", files[1], "--db", url, "--quiet", "--pseudonymize-key", keyA])
        XCTAssertEqual(same.status, 0, same.err)

        let plain = try server.createDatabase()
        XCTAssertEqual(try Self.callstats(["analyze", files[0], "--db", plain, "--quiet"]).status, 0)
        XCTAssertEqual(try scalar(plain, "SELECT value FROM meta WHERE key = 'pseudonymization_key'"), MetaKey.noKeyFingerprint)
        let keyed = try Self.callstats(["analyze", files[1], "--db", plain, "--quiet", "--pseudonymize-key", keyA])
        XCTAssertNotEqual(keyed.status, 0)
        XCTAssertTrue(keyed.err.contains("without --pseudonymize-key"), keyed.err)
        XCTAssertEqual(try scalar(plain, "SELECT count(*) FROM ingested_files"), "1")
    }

    /// A view whose definition changed (another release's, same schema version) is made again
    /// by the next worker, as in SQLite; a view of the user's stays.
    func testAChangedViewReachesAnExistingDatabase() throws {
        let url = try server.createDatabase()
        let database = String(url.split(separator: "/").last!)
        XCTAssertEqual(try Self.callstats(["analyze", try logFiles[0], "--db", url, "--quiet"]).status, 0)
        try server.psql(
            """
            DROP VIEW conversations; CREATE VIEW conversations AS SELECT 1 AS an_older_definition;
            CREATE VIEW my_calls AS SELECT call_id FROM calls;
            UPDATE meta SET value = 'an-older-hash' WHERE key = 'views_hash';
            """, database: database)
        XCTAssertEqual(try Self.callstats(["analyze", try logFiles[1], "--db", url, "--quiet"]).status, 0)
        XCTAssertEqual(try scalar(url, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'conversations' AND column_name = 'worst_leg'"), "1")
        XCTAssertGreaterThan(Int(try scalar(url, "SELECT count(*) FROM my_calls")) ?? 0, 0, "the user's own view is left alone")
        XCTAssertNotEqual(try scalar(url, "SELECT value FROM meta WHERE key = 'views_hash'"), "an-older-hash")
    }

    /// A database of version 5 gets `peer_connections` from the next run, which says it
    /// upgraded; a `regrade` gives the calls stored before their rows, as in SQLite.
    func testAVersion5DatabaseGetsThePeerConnectionsTable() throws {
        let url = try server.createDatabase()
        let database = String(url.split(separator: "/").last!)
        XCTAssertEqual(try Self.callstats(["analyze", try logFiles[0], "--db", url, "--quiet"]).status, 0)
        let rows = try scalar(url, "SELECT count(*) FROM peer_connections")
        XCTAssertGreaterThan(Int(rows) ?? 0, 0)
        try server.psql("DROP TABLE peer_connections; UPDATE meta SET value = '5' WHERE key = 'schema_version'", database: database)
        let upgrade = try Self.callstats(["analyze", try logFiles[0], "--db", url, "--json"])
        XCTAssertEqual(upgrade.status, 0, upgrade.err)
        XCTAssertTrue(upgrade.out.contains("\"upgraded_from\":5") || upgrade.out.contains("\"upgraded_from\": 5"), upgrade.out)
        XCTAssertEqual(try scalar(url, "SELECT value FROM meta WHERE key = 'schema_version'"), String(Schema.version))
        XCTAssertEqual(try scalar(url, "SELECT count(*) FROM peer_connections"), "0", "the file was read before: nothing rewritten")
        XCTAssertEqual(try Self.callstats(["regrade", "--db", url, "--quiet"]).status, 0)
        XCTAssertEqual(try scalar(url, "SELECT count(*) FROM peer_connections"), rows)
    }

    // MARK: - Faults

    func testUnreachableServerAndNewerSchemaAreRefusedClearly() throws {
        let refused = try Self.callstats(["analyze", Self.corpus.path, "--db", "postgresql://postgres:secret@127.0.0.1:\(PostgresServer.freePort())/x"])
        XCTAssertEqual(refused.status, 1, refused.err)
        XCTAssertTrue(refused.err.contains("cannot connect to postgresql://postgres:***@127.0.0.1"), refused.err)
        XCTAssertTrue(refused.err.contains("Connection refused"), refused.err)
        XCTAssertFalse(refused.err.contains("secret"), refused.err)

        let missing = try Self.callstats(["query", "--db", server.url("no_such_database")])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.err.contains("database \"no_such_database\" does not exist"), missing.err)

        let url = try server.createDatabase()
        XCTAssertEqual(try Self.callstats(["analyze", try logFiles[0], "--db", url, "--quiet"]).status, 0)
        try server.psql("UPDATE meta SET value = '99' WHERE key = 'schema_version'", database: String(url.split(separator: "/").last!))
        let newer = try Self.callstats(["analyze", Self.corpus.path, "--db", url])
        XCTAssertEqual(newer.status, 1)
        XCTAssertTrue(newer.err.contains("has schema version 99, newer than this callstats understands"), newer.err)

    }

    func testWrongUserBadURLAndAlteredTableAreRefusedClearly() throws {
        let url = try server.createDatabase()
        let database = String(url.split(separator: "/").last!)
        let wrongUser = try Self.callstats(["analyze", Self.corpus.path, "--db", "postgresql://nobody_here@127.0.0.1:\(server.port)/\(database)"])
        XCTAssertEqual(wrongUser.status, 1)
        XCTAssertTrue(wrongUser.err.contains("role \"nobody_here\" does not exist"), wrongUser.err)
        XCTAssertTrue(wrongUser.err.contains("check the --db URL"), wrongUser.err)

        let badURL = try Self.callstats(["query", "--db", "postgresql://127.0.0.1:port/\(database)"])
        XCTAssertEqual(badURL.status, 1)
        XCTAssertTrue(badURL.err.contains("invalid"), badURL.err)

        XCTAssertEqual(try Self.callstats(["analyze", try logFiles[0], "--db", url, "--quiet"]).status, 0)
        try server.psql("ALTER TABLE calls DROP COLUMN mos_cq CASCADE", database: database)
        let calls = try scalar(url, "SELECT count(*) FROM calls")
        let altered = try Self.callstats(["analyze", Self.corpus.path, "--db", url])
        XCTAssertEqual(altered.status, 1)
        XCTAssertTrue(altered.err.contains("table calls lacks the column mos_cq"), altered.err)
        XCTAssertEqual(try scalar(url, "SELECT count(*) FROM calls"), calls, "nothing written")
    }

    /// A role without the right to write: the error says what the server said, and does not
    /// promise that running the command again completes the work (it fails the same way until
    /// the grant is fixed).
    func testAPermissionErrorIsNotCalledPassing() throws {
        let url = try server.createDatabase()
        let database = String(url.split(separator: "/").last!)
        XCTAssertEqual(try Self.callstats(["analyze", try logFiles[0], "--db", url, "--quiet"]).status, 0)
        try server.psql("CREATE ROLE looker LOGIN", database: database)
        let refused = try Self.callstats(["analyze", Self.corpus.path, "--db", "postgresql://looker@127.0.0.1:\(server.port)/\(database)"])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.err.contains("permission denied"), refused.err)
        XCTAssertTrue(refused.err.contains("a rerun fails the same way until this is fixed"), refused.err)
        XCTAssertFalse(refused.err.contains("completes the work"), refused.err)
    }

    /// The server stopped at once (as a crash leaves it) while a worker writes: the worker stops
    /// with a clear error, and once the server is back a rerun leaves the clean result.
    func testServerGoingAwayMidRunThenRerunConverges() throws {
        let url = try server.createDatabase()
        let files = try logFiles
        let err = Pipe()
        let p = try analyzeUntilCommitted(files, into: url, standardError: err)
        server.stop(removing: false)
        let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(waitForExit(p), 1, message)
        XCTAssertTrue(message.contains("PostgreSQL postgresql://postgres@127.0.0.1"), message)
        XCTAssertTrue(message.contains("running the same command again completes the work"), message)
        XCTAssertEqual(message.split(separator: "\n").count, 1, "one line: \(message)")
        try server.restart()
        let rerun = try Self.callstats(["analyze"] + files + ["--db", url, "--quiet"])
        XCTAssertEqual(rerun.status, 0, rerun.err)
        try assertSameAsReference(url)
    }
}
