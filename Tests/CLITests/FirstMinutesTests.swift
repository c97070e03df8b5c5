import Foundation
import TestSupport
import XCTest

/// What a new user runs into in the first minutes: spellings, defaults, mistakes in paths.
final class FirstMinutesTests: BinaryTestCase {
    override var folderName: String { "first-minutes" }

    func testTheBritishSpellingAnalyses() throws {
        let logs = dir.appendingPathComponent("logs").path
        XCTAssertEqual(try callstats(["simulate", "--calls", "3", "--seed", "5", "--out", logs]).status, 0)
        let r = try callstats(["analyse", logs, "--db", "calls.sqlite", "--quiet"])
        XCTAssertEqual(r.status, 0, r.err)
        let n = try callstats(["query", "--db", "calls.sqlite", "--format", "csv", "SELECT count(*) AS n FROM calls"])
        XCTAssertEqual(n.out.split(separator: "\n").last, "3")
    }

    func testAMisspeltCommandIsAnsweredWithTheNearestOne() throws {
        let r = try callstats(["analize", "logs"])
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.err.contains("unknown command 'analize'"), r.err)
        XCTAssertTrue(r.err.contains("Did you mean 'analyse'") || r.err.contains("Did you mean 'analyze'"), r.err)
        let far = try callstats(["frobnicate"])
        XCTAssertNotEqual(far.status, 0)
        XCTAssertTrue(far.err.contains("unknown command 'frobnicate'") && !far.err.contains("Did you mean"), far.err)
        // Options and real commands still reach the parser.
        XCTAssertEqual(try callstats(["--version"]).status, 0)
        XCTAssertEqual(try callstats(["help", "query"]).status, 0)
    }

    func testAnalyzeOfAMissingPathFailsAndCreatesNothing() throws {
        let r = try callstats(["analyze", "no-such-folder", "--db", "calls.sqlite"])
        XCTAssertEqual(r.status, 1, r.err)
        XCTAssertTrue(r.err.contains("no-such-folder: no such file or folder"), r.err)
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        XCTAssertEqual(left, [], "nothing is created for a command that could not run")
    }

    func testRegradeUsesTheSameDefaultDatabaseAsAnalyze() throws {
        let logs = dir.appendingPathComponent("logs").path
        XCTAssertEqual(try callstats(["simulate", "--calls", "4", "--seed", "9", "--out", logs]).status, 0)
        let missing = try callstats(["regrade", "--quiet"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.err.contains("callstats.sqlite: no such database"), missing.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("callstats.sqlite").path))
        XCTAssertEqual(try callstats(["analyze", logs, "--quiet"]).status, 0)
        let r = try callstats(["regrade", "--quiet", "--set", "jitter_warn_ms=40"])
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertTrue(r.out.contains("4"), r.out)
    }

    func testSimulateDoesNotOverwriteEarlierLogsUnlessForced() throws {
        let logs = dir.appendingPathComponent("logs").path
        XCTAssertEqual(try callstats(["simulate", "--calls", "2", "--seed", "1", "--out", logs]).status, 0)
        let first = try FileManager.default.contentsOfDirectory(atPath: logs).sorted()
        let before = try first.map { try Data(contentsOf: URL(fileURLWithPath: logs).appendingPathComponent($0)) }
        let again = try callstats(["simulate", "--calls", "2", "--seed", "2", "--out", logs])
        XCTAssertEqual(again.status, 1)
        XCTAssertTrue(again.err.contains("would overwrite") && again.err.contains("--force"), again.err)
        let after = try first.map { try Data(contentsOf: URL(fileURLWithPath: logs).appendingPathComponent($0)) }
        XCTAssertEqual(before, after, "the refused run wrote nothing")
        XCTAssertEqual(try callstats(["simulate", "--calls", "2", "--seed", "2", "--out", logs, "--force"]).status, 0)
    }
}

/// The writer's lock beside a database: never followed through a link, never left behind.
final class WriterLockTests: BinaryTestCase {
    override var folderName: String { "writer-lock" }

    private func logs() throws -> String {
        let logs = dir.appendingPathComponent("logs").path
        XCTAssertEqual(try callstats(["simulate", "--calls", "3", "--seed", "4", "--out", logs]).status, 0)
        return logs
    }

    func testNoLockFileIsLeftBehind() throws {
        let logs = try logs()
        XCTAssertEqual(try callstats(["analyze", logs, "--db", "calls.sqlite", "--quiet"]).status, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("calls.sqlite.lock").path))
        XCTAssertEqual(try callstats(["regrade", "--db", "calls.sqlite", "--quiet", "--set", "jitter_warn_ms=35"]).status, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("calls.sqlite.lock").path))
    }

    func testALinkedLockFileIsRefusedAndItsTargetUntouched() throws {
        let logs = try logs()
        let victim = dir.appendingPathComponent("victim.txt")
        try "precious\n".write(to: victim, atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(
            atPath: dir.appendingPathComponent("calls.sqlite.lock").path,
            withDestinationPath: victim.path)
        let r = try callstats(["analyze", logs, "--db", "calls.sqlite", "--quiet"])
        XCTAssertEqual(r.status, 1, r.out)
        XCTAssertTrue(r.err.contains("calls.sqlite.lock") && r.err.contains("symbolic link"), r.err)
        XCTAssertEqual(try String(contentsOf: victim, encoding: .utf8), "precious\n")
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: dir.appendingPathComponent("calls.sqlite").path),
            "a run without its lock writes nothing")
    }

    func testALockPathThatCannotBeOpenedStopsTheRun() throws {
        let logs = try logs()
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("calls.sqlite.lock"), withIntermediateDirectories: true)
        let r = try callstats(["analyze", logs, "--db", "calls.sqlite", "--quiet"])
        XCTAssertEqual(r.status, 1, r.out)
        XCTAssertTrue(r.err.contains("cannot take the writer's lock"), r.err)
        XCTAssertFalse(r.err.contains("UNIQUE constraint"), r.err)
    }
}

/// `callstats query` opens the database to read: nothing a query says may change it.
final class ReadOnlyQueryTests: BinaryTestCase {
    override var folderName: String { "read-only-query" }

    func testQueriesThatWouldWriteAreRefused() throws {
        let logs = dir.appendingPathComponent("logs").path
        XCTAssertEqual(try callstats(["simulate", "--calls", "3", "--seed", "4", "--out", logs]).status, 0)
        XCTAssertEqual(try callstats(["analyze", logs, "--db", "calls.sqlite", "--quiet"]).status, 0)
        let mode = { try self.callstats(["query", "--db", "calls.sqlite", "--format", "csv", "PRAGMA table_info(calls)"]) }
        XCTAssertEqual(try mode().status, 0, "describing pragmas are allowed")
        let before = try Data(contentsOf: dir.appendingPathComponent("calls.sqlite"))
        for sql in [
            "PRAGMA journal_mode = DELETE", "VACUUM INTO 'copy.sqlite'", "PRAGMA query_only = OFF",
            "DELETE FROM calls", "ATTACH 'other.sqlite' AS o", "CREATE TABLE t(x)", "PRAGMA user_version = 7",
        ] {
            let r = try callstats(["query", "--db", "calls.sqlite", sql])
            XCTAssertEqual(r.status, 1, "\(sql) was not refused: \(r.out)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("copy.sqlite").path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("other.sqlite").path))
        XCTAssertEqual(
            try callstats(["query", "--db", "calls.sqlite", "--format", "csv", "PRAGMA journal_mode"]).status, 1,
            "even reading the journal mode is a pragma outside the list")
        XCTAssertEqual(try Data(contentsOf: dir.appendingPathComponent("calls.sqlite")), before)
        let wal = try callstats(["query", "--db", "calls.sqlite", "--format", "csv", "SELECT count(*) AS n FROM calls"])
        XCTAssertEqual(wal.out.split(separator: "\n").last, "3")
    }

    func testASecondStatementIsRefusedNotDropped() throws {
        let logs = dir.appendingPathComponent("logs").path
        XCTAssertEqual(try callstats(["simulate", "--calls", "2", "--seed", "4", "--out", logs]).status, 0)
        XCTAssertEqual(try callstats(["analyze", logs, "--db", "calls.sqlite", "--quiet"]).status, 0)
        let two = try callstats(["query", "--db", "calls.sqlite", "SELECT 1; SELECT 2"])
        XCTAssertEqual(two.status, 1)
        XCTAssertTrue(two.err.contains("one statement at a time") && two.err.contains("SELECT 2"), two.err)
        let one = try callstats(["query", "--db", "calls.sqlite", "--format", "csv", "SELECT 1 AS x; -- a comment\n"])
        XCTAssertEqual(one.status, 0, one.err)
        XCTAssertEqual(one.out.split(separator: "\n").last, "1")
    }
}

extension ReadOnlyQueryTests {
    func testQueryWithoutSQLListsEveryTableAndViewWithALine() throws {
        let logs = dir.appendingPathComponent("logs").path
        XCTAssertEqual(try callstats(["simulate", "--calls", "2", "--seed", "4", "--out", logs]).status, 0)
        XCTAssertEqual(try callstats(["analyze", logs, "--quiet"]).status, 0)
        let list = try callstats(["query", "--format", "csv"])
        XCTAssertEqual(list.status, 0, list.err)
        let rows = list.out.split(separator: "\n").dropFirst().map { $0.split(separator: ",", maxSplits: 1).map(String.init) }
        let names = Set(
            try callstats(["query", "--format", "csv", "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"])
                .out.split(separator: "\n").dropFirst().map(String.init))
        XCTAssertEqual(Set(rows.map { $0[0] }), names, "every table and view is listed, once")
        for row in rows { XCTAssertTrue(row.count == 2 && !row[1].isEmpty, "\(row[0]) has no line saying what it holds") }
        XCTAssertEqual(rows.first?.first, "calls", "the tables people query come first")

        let columns = try callstats(["query", "--describe", "worst_calls", "--format", "csv"])
        XCTAssertEqual(columns.status, 0, columns.err)
        XCTAssertTrue(columns.out.contains("grade_reason"), columns.out)
        let none = try callstats(["query", "--describe", "nothing_here"])
        XCTAssertEqual(none.status, 1)
        XCTAssertTrue(none.err.contains("nothing_here: no such table or view"), none.err)
        let missing = try callstats(["query", "--db", "absent.sqlite"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("absent.sqlite").path))
    }
}

extension FirstMinutesTests {
    /// Each header word starts where its rule of dashes starts, with and without changed settings.
    func testConfigTableHeaderLinesUpWithItsRule() throws {
        for args in [["config"], ["config", "--set", "loss_warn_pct=2"]] {
            let r = try callstats(args)
            XCTAssertEqual(r.status, 0, r.err)
            let lines = r.out.split(separator: "\n").map(String.init)
            func starts(_ line: String, of character: (Character) -> Bool) -> [Int] {
                let c = Array(line)
                return c.indices.filter { character(c[$0]) && ($0 == 0 || !character(c[$0 - 1])) }
            }
            XCTAssertEqual(starts(lines[0]) { $0 != " " }, starts(lines[1]) { $0 == "-" }, "\(args):\n\(lines[0])\n\(lines[1])")
        }
    }
}

extension FirstMinutesTests {
    /// `import` makes its output folder, as `capture` and `simulate` do, however deep.
    func testImportCreatesItsOutputFolder() throws {
        guard let recording = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is absent") }
        let r = try callstats(["import", recording.path, "--out", "new/folder/inside"])
        XCTAssertEqual(r.status, 0, r.err)
        let made = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("new/folder/inside").path)
        XCTAssertEqual(made.filter { $0.hasSuffix(".ndjson.zst") }.count, 1, "\(made)")
    }
}

extension FirstMinutesTests {
    /// A pcap given to `analyze` or `cat` is named as one, once, with the command that reads it,
    /// and stays out of the ledger, so that the next run says so again.
    func testAPacketCaptureGivenAsALogIsNamedOnceAndNotEnteredInTheLedger() throws {
        let pcap = dir.appendingPathComponent("call.pcap")
        var bytes: [UInt8] = [0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0] + [UInt8](repeating: 0, count: 8) + [0xFF, 0xFF, 0, 0, 1, 0, 0, 0]
        for i in 0..<2_000 { bytes += [UInt8(i & 0xFF), 0, 0, 0, 0, 0, 0, 0, 60, 0, 0, 0, 60, 0, 0, 0] + [UInt8](repeating: 0x0A, count: 60) }
        try Data(bytes).write(to: pcap)
        for _ in 0..<2 {
            let r = try callstats(["analyze", pcap.path, "--db", "calls.sqlite"])
            XCTAssertEqual(r.status, 3, r.out)
            XCTAssertTrue(r.err.contains("pcap packet capture") && r.err.contains("callstats capture -r"), r.err)
            XCTAssertEqual(r.err.split(separator: "\n").filter { $0.contains("warning") }.count, 1, r.err)
            XCTAssertFalse(r.out.contains("already ingested"), r.out)
        }
        let cat = try callstats(["cat", pcap.path])
        XCTAssertEqual(cat.err.split(separator: "\n").count, 1, cat.err)
        XCTAssertTrue(cat.err.contains("callstats capture -r"), cat.err)
    }
}

extension FirstMinutesTests {
    /// `-` reads standard input, compressed or plain, for `cat` and `analyze`.
    func testADashReadsStandardInput() throws {
        let logs = dir.appendingPathComponent("logs").path
        XCTAssertEqual(try callstats(["simulate", "--calls", "2", "--seed", "8", "--files", "1", "--out", logs]).status, 0)
        let file = try XCTUnwrap(FileManager.default.contentsOfDirectory(atPath: logs).first { $0.hasSuffix(".ndjson.zst") })
        func piped(_ args: [String]) throws -> ProcessResult {
            let input = try FileHandle(forReadingFrom: URL(fileURLWithPath: logs + "/" + file))
            return try runProcess(CommandLineTests.binary, args, in: dir, standardInput: input)
        }
        let fromFile = try callstats(["cat", logs + "/" + file])
        let fromInput = try piped(["cat", "-"])
        XCTAssertEqual(fromInput.status, 0)
        XCTAssertEqual(fromInput.out, fromFile.out)
        XCTAssertGreaterThan(fromInput.out.split(separator: "\n").count, 10)
        XCTAssertEqual(try piped(["analyze", "-", "--db", "calls.sqlite", "--quiet"]).status, 0)
        let n = try callstats(["query", "--db", "calls.sqlite", "--format", "csv", "SELECT count(*) AS n FROM calls"])
        XCTAssertEqual(n.out.split(separator: "\n").last, "2")
    }
}

extension FirstMinutesTests {
    /// A newline in a file name cannot forge a line of the output, and an escape sequence in a
    /// call id does not reach the terminal: control characters are printed as escapes.
    func testControlCharactersInNamesAndIdsArePrintedAsEscapes() throws {
        let logs = dir.appendingPathComponent("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        let forged = logs.appendingPathComponent("x\nwarning: all good.ndjson")
        let id = "call-\u{1B}[31mred"
        let escapedID = id.replacingOccurrences(of: "\u{1B}", with: "\\u001b")
        let lines = [
            #"{"v":1,"kind":"call","call":"\#(escapedID)","ts":1772400000000,"direction":"outgoing","sdk":"s","media":["audio"]}"#,
            "not json",
            #"{"v":1,"kind":"end","call":"\#(escapedID)","ts":1772400060000,"reason":"hangup"}"#,
        ]
        try (lines.joined(separator: "\n") + "\n").write(to: forged, atomically: true, encoding: .utf8)
        let r = try callstats(["analyze", logs.path, "--db", "calls.sqlite"])
        XCTAssertEqual(r.status, 3, r.err)
        XCTAssertFalse(r.err.split(separator: "\n").contains { $0.hasPrefix("warning: all good") }, r.err)
        XCTAssertTrue(r.err.contains("x\\nwarning: all good.ndjson"), r.err)
        XCTAssertFalse(r.out.contains("\u{1B}") || r.err.contains("\u{1B}"))
        for format in ["table", "csv"] {
            let q = try callstats(["query", "--db", "calls.sqlite", "--format", format, "SELECT call_id FROM calls"])
            XCTAssertEqual(q.status, 0, q.err)
            XCTAssertFalse(q.out.contains("\u{1B}"), "\(format): \(q.out)")
            XCTAssertTrue(q.out.contains("call-\\e[31mred"), "\(format): \(q.out)")
        }
        let json = try callstats(["query", "--db", "calls.sqlite", "--format", "json", "SELECT call_id FROM calls"])
        XCTAssertTrue(json.out.contains(#"call-\u001b[31mred"#), json.out)
    }
}

extension FirstMinutesTests {
    /// `report` says what went wrong in one line naming the file, not as a dump of an error object.
    func testReportErrorsAreOneLineNamingTheFile() throws {
        let logs = dir.appendingPathComponent("logs").path
        XCTAssertEqual(try callstats(["simulate", "--calls", "2", "--seed", "3", "--out", logs]).status, 0)
        XCTAssertEqual(try callstats(["analyze", logs, "--quiet"]).status, 0)
        let r = try callstats(["report", "--out", "no/such/folder/r.html"])
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(r.err.split(separator: "\n").count, 1, r.err)
        XCTAssertTrue(r.err.contains("no/such/folder/r.html: cannot be written"), r.err)
        XCTAssertFalse(r.err.contains("NSCocoaErrorDomain") || r.err.contains("UserInfo"), r.err)
        let missing = try callstats(["report", "--db", "absent.sqlite"])
        XCTAssertTrue(missing.err.contains("absent.sqlite: no such database"), missing.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("absent.sqlite").path))
    }
}

extension FirstMinutesTests {
    /// A reader that comes while another run is still creating the database is told so, and
    /// to try again, not that the file is no callstats database.
    func testAReaderDuringCreationIsToldToTryAgain() throws {
        let db = dir.appendingPathComponent("calls.sqlite")
        XCTAssertTrue(FileManager.default.createFile(atPath: db.path, contents: Data()))
        let plain = try callstats(["query", "--db", db.path, "SELECT 1"])
        XCTAssertEqual(plain.status, 1)
        XCTAssertTrue(plain.err.contains("not a callstats database"), plain.err)
        // A live writer's pid in the lock file: this test's own process stands in for it.
        try String(ProcessInfo.processInfo.processIdentifier).write(to: URL(fileURLWithPath: db.path + ".lock"), atomically: true, encoding: .utf8)
        let r = try callstats(["query", "--db", db.path, "SELECT 1"])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.err.contains("being created by another callstats run (pid \(ProcessInfo.processInfo.processIdentifier))"), r.err)
        XCTAssertTrue(r.err.contains("try again"), r.err)
    }
}
