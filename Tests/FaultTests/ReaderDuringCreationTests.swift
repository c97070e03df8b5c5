import Foundation
import SQLiteDatabase
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A reader that keeps a read transaction open while `analyze` fills a new database (written
/// under a rollback journal, whose commits must wait for readers).
final class ReaderDuringCreationTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("faults-reader") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// The reader here holds its transaction several times longer than the commit waits
    /// (`--reader-wait-seconds 0.2`), as a query reading for over a minute does against the
    /// default wait: the run says who reads (this process, by pid), keeps its work, and ends
    /// with the database a run without the reader makes.
    func testAReaderDuringCreationDelaysTheRunAndIsNamed() throws {
        let logs = try Corpus.simulate(into: dir.appendingPathComponent("logs"), calls: 200, files: 4, seed: 41)
        let clean = dir.appendingPathComponent("clean.sqlite").path
        try analyzeInProcess([logs.path], db: clean)
        let expected = try dumpDatabase(clean)

        let db = dir.appendingPathComponent("new.sqlite").path
        let run = try Binary.start([
            "analyze", logs.path, "--db", db, "--quiet", "--threads", "1", "--calls-per-transaction", "5",
            "--reader-wait-seconds", "0.2",
        ])
        var reader: Database?
        let deadline = Date().addingTimeInterval(60)
        while reader == nil, Date() < deadline, run.process.isRunning {
            if FileManager.default.fileExists(atPath: db), let r = try? Database(path: db, readOnly: true),
                (try? r.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'calls'"))??.int64 == 1
            {
                reader = r
            } else {
                usleep(2_000)
            }
        }
        guard let reader else {
            run.kill()
            return XCTFail("the database's tables never appeared while analyze ran")
        }
        try reader.execute("BEGIN")
        _ = try reader.scalar("SELECT count(*) FROM calls")
        usleep(1_500_000)
        try reader.execute("COMMIT")

        let err = String(decoding: run.stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        _ = run.stdout.fileHandleForReading.readDataToEndOfFile()
        run.process.waitUntilExit()
        XCTAssertEqual(run.process.terminationStatus, 0, err)
        XCTAssertTrue(err.contains("\(db) is being read by pid \(getpid()) ("), err)
        XCTAssertTrue(err.contains("the run's work is kept"), err)
        XCTAssertFalse(err.contains("database is locked"), err)
        assertSameResults(try dumpDatabase(db), expected, "a run kept waiting by a reader")
    }
}
