import CallLog
import Foundation
import Simulator
import SQLiteDatabase
import Store
import TestSupport
import XCTest

/// Real processes killed with SIGKILL at random moments: the log writer, `analyze` and `regrade`.
///
/// Kill moments are random (seeded), and no assertion depends on how fast the machine is:
/// the writer is killed after a random number of its own flush reports, `analyze` after a
/// random fraction of a clean run's duration, and whatever moment a kill lands on, the
/// checks are the same.
final class KillTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("faults-kill") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// The writer killed at any moment loses nothing it reported as flushed, and what a kill
    /// cuts off (a partial frame, a partial line) is reported and skipped, never misread.
    func testKilledWriterLosesNoFlushedRecord() throws {
        let kills = Soak.count("CALLSTATS_SOAK_KILLS", ci: 20)
        let logs = dir.appendingPathComponent("agent")
        var rng = SplitMix64(seed: 0xFA17)
        var flushed: [Int: Int] = [:]  // run → highest record number reported flushed
        var killed = 0
        for run in 0..<kills {
            let writer = try Binary.start([
                "internal", "write-forever", "--out", logs.path, "--run", "\(run)",
                "--seed", "\(rng.next() % 1000)",
            ])
            let lines = PipeLines(writer.stdout)
            // Kill after 1…400 flush reports: early in a file, across rotations, deep in a frame.
            let target = 1 + Int(rng.next() % 400)
            var reports = 0, last = -1
            while reports < target, let line = lines.next() {
                if let n = Self.flushedNumber(line) { last = n; reports += 1 }
            }
            writer.kill()
            // Reports already in the pipe when the kill landed are promises too.
            while let line = lines.next() { if let n = Self.flushedNumber(line) { last = n } }
            writer.process.waitUntilExit()
            if writer.wasKilled { killed += 1 }
            flushed[run] = last
        }
        XCTAssertEqual(killed, kills, "every writer was still running when killed")

        // Read everything back with the reference reader.
        var seen: [Int: Set<Int>] = [:]
        var issues: [LogIssue] = []
        var records = 0
        for file in Corpus.files(in: logs) {
            LogReader(path: file).forEachRecord(
                { r, line in
                    records += 1
                    guard let n = r["n"]?.int64Value.map(Int.init), let run = Int(r.call.dropFirst().prefix { $0 != "-" }) else {
                        return XCTFail("\(file):\(line): a record the writer never wrote: \(r.jsonLine.prefix(200))")
                    }
                    XCTAssertTrue(seen[run, default: []].insert(n).inserted, "\(file):\(line): record \(n) of run \(run) read twice")
                    if r.kind == .stats {
                        // The restored snapshot is the one written (deltas applied correctly after a kill).
                        guard case .array(let report)? = r["report"] else { return XCTFail("\(file):\(line): no report") }
                        let received = report.first?["packetsReceived"]?.doubleValue
                        XCTAssertEqual(received, Double(50 * n), "\(file):\(line): snapshot \(n) restored wrongly")
                    }
                }, issue: { issues.append($0) })
        }
        var lost = 0
        for (run, last) in flushed where last >= 0 {
            let missing = (0...last).filter { !(seen[run]?.contains($0) ?? false) }
            lost += missing.count
            XCTAssertEqual(missing, [], "run \(run): flushed records not read back (first: \(missing.prefix(5)))")
        }
        // A kill leaves at most a cut frame or a partial line at the end of a file: reported, nothing else.
        let allowed: Set<LogIssue.Category> = [.truncatedFile, .partialLine]
        XCTAssertEqual(issues.filter { !allowed.contains($0.category) }.map(\.description), [])
        XCTAssertTrue(issues.allSatisfy { $0.line != nil }, "every cut is reported with its line")
        XCTAssertGreaterThan(issues.count, 0, "kills inside open frames are reported as cuts")

        // The analyser reads the same files without failing and reports the same cuts.
        let db = dir.appendingPathComponent("agent.sqlite").path
        let report = try analyzeInProcess([logs.path], db: db)
        XCTAssertEqual(Set(report.issueCounts.keys).subtracting(allowed.map(\.rawValue)), [])
        XCTAssertEqual(report.issueCounts.values.reduce(0, +), issues.count)
        XCTAssertEqual(report.progress.records, records)

        Soak.figure("writer_kills", killed)
        Soak.figure("writer_records_flushed", flushed.values.reduce(0) { $0 + $1 + 1 })
        Soak.figure("writer_records_lost", lost)
    }

    static func flushedNumber(_ line: String) -> Int? {
        line.hasPrefix("flushed ") ? Int(line.dropFirst(8)) : nil
    }

    /// `analyze` killed at random points (once or twice per database) is completed by the next
    /// run to exactly the database a clean run makes.
    func testKilledAnalyzeIsCompletedByTheNextRun() throws {
        let kills = Soak.count("CALLSTATS_SOAK_ANALYZE_KILLS", ci: 10)
        let logs = try Corpus.simulate(into: dir.appendingPathComponent("logs"), calls: 150, files: 6, seed: 17)
        // Small transactions: a kill can land between many commits, not just before the one.
        let analyze = { (db: String) in ["analyze", logs.path, "--db", db, "--quiet", "--calls-per-transaction", "7"] }

        let clean = dir.appendingPathComponent("clean.sqlite").path
        let started = Date()
        let first = try Binary.run(analyze(clean))
        let cleanSeconds = Date().timeIntervalSince(started)
        XCTAssertEqual(first.status, 0, first.err)
        let expected = try dumpDatabase(clean)

        var rng = SplitMix64(seed: 0xA11A)
        var interrupted = 0
        for i in 0..<kills {
            let db = dir.appendingPathComponent("killed-\(i).sqlite").path
            for _ in 0...(rng.next() % 2) {
                let p = try Binary.start(analyze(db))
                // Anywhere in the run: the clean run's duration is the scale, not a speed assumption.
                usleep(useconds_t(Double(rng.next() % 1000) / 1000 * cleanSeconds * 1e6))
                p.kill()
                _ = p.stdout.fileHandleForReading.readDataToEndOfFile()
                _ = p.stderr.fileHandleForReading.readDataToEndOfFile()
                p.process.waitUntilExit()
                if p.wasKilled { interrupted += 1 }
            }
            let finish = try Binary.run(analyze(db))
            XCTAssertEqual(finish.status, 0, "run after kill \(i): \(finish.err)")
            assertSameResults(try dumpDatabase(db), expected, "database after kill \(i) and a full run")
            let integrity = try SQLiteStore(path: db, forWriting: false).db.scalar("PRAGMA integrity_check")?.string
            XCTAssertEqual(integrity, "ok")
            try? FileManager.default.removeItem(atPath: db)
        }
        XCTAssertGreaterThan(interrupted, 0, "some kills landed while analyze was running")
        Soak.figure("analyze_kills", interrupted)
    }

    /// A regrade runs in one transaction: killed anywhere, it leaves the database as it was
    /// (calls, rollups and the recorded settings), and the next regrade completes.
    func testKilledRegradeChangesNothing() throws {
        let kills = Soak.count("CALLSTATS_SOAK_ANALYZE_KILLS", ci: 6)
        let logs = try Corpus.simulate(into: dir.appendingPathComponent("logs"), calls: 150, files: 3, seed: 23)
        let db = dir.appendingPathComponent("graded.sqlite").path
        XCTAssertEqual(try Binary.run(["analyze", logs.path, "--db", db, "--quiet"]).status, 0)
        let expected = try dumpDatabase(db)
        let regrade = ["regrade", "--db", db, "--quiet", "--set", "jitter_warn_ms=10", "--set", "loss_warn_pct=0.2"]
        // The clean regrade's duration, on a copy, is the scale of the kill moments.
        let copy = dir.appendingPathComponent("copy.sqlite").path
        try FileManager.default.copyItem(atPath: db, toPath: copy)
        let started = Date()
        XCTAssertEqual(try Binary.run(regrade.map { $0 == db ? copy : $0 }).status, 0)
        let cleanSeconds = Date().timeIntervalSince(started)
        let regraded = try dumpDatabase(copy)
        XCTAssertNotEqual(regraded, expected, "the regrade changes the results")

        var rng = SplitMix64(seed: 0x5E6D)
        var interrupted = 0
        for i in 0..<kills {
            let p = try Binary.start(regrade)
            usleep(useconds_t(Double(rng.next() % 1000) / 1000 * cleanSeconds * 1e6))
            p.kill()
            _ = p.stdout.fileHandleForReading.readDataToEndOfFile()
            _ = p.stderr.fileHandleForReading.readDataToEndOfFile()
            p.process.waitUntilExit()
            let store = try SQLiteStore(path: db, forWriting: false)
            XCTAssertEqual(try store.db.scalar("PRAGMA integrity_check")?.string, "ok")
            // Before its commit, nothing changed; after it (the kill came late), all of it.
            let now = try dumpDatabase(db)
            if now == regraded {
                XCTAssertEqual(try store.recordedSettings().jitterWarnMs, 10, "the new settings, with the new results")
                break
            }
            if p.wasKilled { interrupted += 1 }
            assertSameResults(now, expected, "database after kill \(i)")
            XCTAssertEqual(try store.recordedSettings().jitterWarnMs, 30, "the settings are the old ones")
        }
        XCTAssertGreaterThan(interrupted, 0, "some kills landed while regrade was running")
        XCTAssertEqual(try Binary.run(regrade).status, 0)
        assertSameResults(try dumpDatabase(db), regraded, "database after a regrade that ran to its end")
        Soak.figure("regrade_kills", interrupted)
    }
}
