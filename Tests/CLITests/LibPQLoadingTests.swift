import Foundation
import TestSupport
import XCTest

/// libpq is opened by the first PostgreSQL connection, not at process start (CLibPQ): commands
/// on SQLite files never map it or the 22 libraries it brings, which cost every process about
/// 19 million instructions when it was linked; and a PostgreSQL URL without libpq says what to
/// install. The PostgreSQL features themselves are PostgresTests'.
final class LibPQLoadingTests: BinaryTestCase {
    override var folderName: String { "libpq" }

    /// Runs `callstats args` with this process's environment plus `variables`.
    private func callstats(_ args: [String], with variables: [String: String]) throws -> ProcessResult {
        let environment = ProcessInfo.processInfo.environment.merging(variables) { $1 }
        return try runProcess(CommandLineTests.binary, args, in: dir, environment: environment)
    }

    #if os(Linux)
    /// The dynamic loader's own account (`LD_DEBUG=libs`) of each library it maps, at start and
    /// by `dlopen` later: none is libpq, for `--version` nor for an analyze and a query of an
    /// SQLite file.
    func testSQLiteCommandsDoNotLoadLibPQ() throws {
        let db = dir.appendingPathComponent("calls.sqlite").path
        let log = TestPaths.sampleData.appendingPathComponent("sample/calls-000.ndjson.zst").path
        for args in [["--version"], ["analyze", log, "--db", db, "--quiet"], ["query", "--db", db, "SELECT count(*) FROM calls"]] {
            let r = try callstats(args, with: ["LD_DEBUG": "libs"])
            XCTAssertEqual(r.status, 0, "\(args): \(r.err.suffix(2000))")
            XCTAssertTrue(r.err.contains("libsqlite3"), "LD_DEBUG lists the libraries loaded: \(r.err.prefix(500))")
            // The library's file name: a folder's name may well contain "libpq" (a worktree's).
            let libpq = r.err.split(separator: "\n").filter { $0.contains("libpq.so") }
            XCTAssertEqual(libpq, [], "callstats \(args.joined(separator: " ")) loads libpq")
        }
        // The same account shows libpq opened for a PostgreSQL URL (found or not; no server needed).
        let postgres = try callstats(["query", "--db", "postgresql://postgres@127.0.0.1:1/x", "SELECT 1"], with: ["LD_DEBUG": "libs"])
        XCTAssertEqual(postgres.status, 1, postgres.err.suffix(2000).description)
        XCTAssertTrue(postgres.err.contains("libpq.so"), postgres.err.suffix(2000).description)
    }

    /// A library that is not libpq is refused by the first function it lacks.
    func testALibraryWithoutLibPQsFunctionsIsRefused() throws {
        let r = try callstats(["query", "--db", "postgresql://postgres@127.0.0.1:1/x", "SELECT 1"], with: ["CALLSTATS_LIBPQ": "libsqlite3.so.0"])
        XCTAssertEqual(r.status, 1, r.err)
        XCTAssertTrue(r.err.contains("libsqlite3.so.0 is not a usable libpq: it lacks PQconnectdb"), r.err)
    }
    #endif

    /// Without libpq (here: CALLSTATS_LIBPQ names a file that does not exist), a PostgreSQL URL
    /// fails as an unreachable server does: exit status 1, the URL without its password, and
    /// what to install.
    func testAPostgreSQLURLWithoutLibPQSaysWhatToInstall() throws {
        let missing = dir.appendingPathComponent("libpq.so.5").path
        let r = try callstats(["query", "--db", "postgresql://postgres:secret@127.0.0.1:1/x", "SELECT 1"], with: ["CALLSTATS_LIBPQ": missing])
        XCTAssertEqual(r.status, 1, r.err)
        let expected = "cannot connect to postgresql://postgres:***@127.0.0.1:1/x: libpq, the PostgreSQL client library, cannot be loaded"
        XCTAssertTrue(r.err.contains(expected), r.err)
        XCTAssertTrue(r.err.contains(missing), r.err)
        #if os(Linux)
        XCTAssertTrue(r.err.contains("apt-get install libpq5"), r.err)
        #endif
        XCTAssertFalse(r.err.contains("secret"), r.err)
    }
}
