import Analysis
import CallLog
import Foundation
import Jobs
import MaterialScanning
import Simulator
import SQLiteDatabase
import Store
import TestSupport
import XCTest

/// One database, one pseudonymisation key: the database records the key's fingerprint (never
/// the key) when its first run writes, and a run with another key, or none where one was used,
/// or one where none was, is refused before it writes anything.
final class KeyFingerprintTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("keys") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    let keyA = SipHashKey(hex: "000102030405060708090a0b0c0d0e0f")!
    let keyB = SipHashKey(hex: "f0e0d0c0b0a090807060504030201000")!

    func logs() throws -> [String] {
        var config = SimulatorConfiguration(calls: 30, seed: 11)
        config.files = 3
        _ = try Simulator(config).write(to: dir.appendingPathComponent("logs").path) { _ in }
        return LogFiles.find([dir.appendingPathComponent("logs").path]).files
    }

    @discardableResult
    func analyze(_ paths: [String], db: String, key: SipHashKey?) throws -> AnalyzeRun.Report {
        var o = AnalyzeRun.Options(paths: paths, database: db)
        o.pseudonymizer = key.map { CallPseudonymizer(key: $0) }
        return try AnalyzeRun(options: o).run()
    }

    /// Every row, the ledger and `meta` included.
    func dump(_ db: String) throws -> String { try DatabaseComparison.text(of: db, .init(bookkeeping: true)) }

    func recordedFingerprint(_ db: String) throws -> String? { try SQLiteStore(path: db, forWriting: false).recordedKeyFingerprint() }

    /// `body` throws `StoreError.otherKey` whose message contains each of `phrases`, and the
    /// database is as it was.
    func assertRefused(_ db: String, saying phrases: [String], _ body: () throws -> Void, line: UInt = #line) throws {
        let before = try dump(db)
        do {
            try body()
            XCTFail("the run was accepted", line: line)
        } catch let e as StoreError {
            guard case .otherKey = e else { return XCTFail("\(e)", line: line) }
            for p in phrases { XCTAssertTrue(e.description.contains(p), "\(p) not in: \(e)", line: line) }
        }
        XCTAssertEqual(try dump(db), before, "a refused run writes nothing", line: line)
    }

    func testTheFingerprintIsAKeyedHashNeverTheKey() {
        let a = CallPseudonymizer(key: keyA).keyFingerprint
        XCTAssertEqual(a, CallPseudonymizer(key: keyA).keyFingerprint)
        XCTAssertNotEqual(a, CallPseudonymizer(key: keyB).keyFingerprint)
        XCTAssertFalse(a.contains("0001020304"), a)
        XCTAssertNotEqual(a, MetaKey.noKeyFingerprint)
    }

    func testAnotherKeyOrNoKeyIsRefusedAndTheSameKeyAccepted() throws {
        let files = try logs()
        let db = dir.appendingPathComponent("a.sqlite").path
        try analyze([files[0]], db: db, key: keyA)
        XCTAssertEqual(try recordedFingerprint(db), CallPseudonymizer(key: keyA).keyFingerprint)
        try assertRefused(db, saying: ["another --pseudonymize-key", "new --db"]) { try analyze([files[1]], db: db, key: keyB) }
        try assertRefused(db, saying: ["gives no key", "raw call ids", "new --db"]) { try analyze([files[1]], db: db, key: nil) }
        // The same key is accepted and adds the file's calls.
        let before = try SQLiteStore(path: db, forWriting: false).totals().calls
        try analyze([files[1]], db: db, key: keyA)
        XCTAssertGreaterThan(try SQLiteStore(path: db, forWriting: false).totals().calls, before)
    }

    func testAKeyIsRefusedWhereNoneWasUsed() throws {
        let files = try logs()
        let db = dir.appendingPathComponent("plain.sqlite").path
        try analyze([files[0]], db: db, key: nil)
        XCTAssertEqual(try recordedFingerprint(db), MetaKey.noKeyFingerprint)
        try assertRefused(db, saying: ["without --pseudonymize-key", "Leave --pseudonymize-key out"]) {
            try analyze([files[1]], db: db, key: keyA)
        }
        try analyze([files[1]], db: db, key: nil)
    }

    /// A database written before the fingerprint was kept takes its next run's.
    func testADatabaseThatRecordsNoFingerprintTakesTheNextRunsKey() throws {
        let files = try logs()
        let db = dir.appendingPathComponent("older.sqlite").path
        try analyze([files[0]], db: db, key: keyA)
        try SQLiteStore(path: db).db.run("DELETE FROM meta WHERE key = 'pseudonymization_key'")
        XCTAssertNil(try recordedFingerprint(db))
        try analyze([files[1]], db: db, key: keyB)
        XCTAssertEqual(try recordedFingerprint(db), CallPseudonymizer(key: keyB).keyFingerprint)
        try assertRefused(db, saying: ["another --pseudonymize-key"]) { try analyze([files[2]], db: db, key: keyA) }
    }
}
