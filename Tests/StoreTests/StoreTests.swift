import Analysis
import CSQLite
import Foundation
import SQLiteDatabase
import MaterialScanning
import Store
import TestSupport
import XCTest

final class StoreTests: XCTestCase {
    var dir: URL!
    var path: String { dir.appendingPathComponent("t.sqlite").path }
    override func setUp() { dir = TestPaths.temporaryDirectory("store") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    static let hour: Int64 = 3_600_000
    static let base: Int64 = 1_795_300_000_000 / 86_400_000 * 86_400_000  // a UTC midnight

    func call(_ id: String, start: Int64, mos: Double?, grade: Grade, network: String = "wifi", setup: Int64? = 900) -> CallAnalysis {
        var c = CallSummary(callID: id, startTs: start, endTs: start + 60_000)
        c.network = network
        c.mosCQ = mos
        c.mosWorst = mos
        c.grade = grade
        c.mediaMs = setup
        c.app = "demo"
        c.appVersion = "1.0"
        var s = StreamSummary(
            callID: id, streamID: "a:inbound:audio:1", ssrc: 1, direction: .inbound, kind: .audio,
            source: "w3c", startTs: start, endTs: start + 60_000)
        s.packets = 3000
        var i = IntervalMetrics(callID: id, streamID: s.streamID, startTs: start, endTs: start + 10_000)
        i.mosCQ = mos
        i.lossPct = .nan  // not measurements: must be stored as NULL
        i.jitterMs = .infinity
        i.rttMs = -.infinity
        let f = Finding(callID: id, code: "high_loss", severity: .warn, startTs: start, durationMs: 30_000, value: 2.5, detail: "loss 2.5 %")
        var pc = PeerConnectionSummary(callID: id, pcID: "a", firstTs: start, lastTs: start + 60_000)
        pc.packets = 3000
        pc.streams = 1
        pc.connectedTs = start + 400
        pc.connectedMs = 59_600
        return CallAnalysis(
            call: c, streams: [s], intervals: [i],
            events: [CallEvent(callID: id, ts: start, kind: "event", action: "callMetric", type: "callCreate")],
            findings: [f], peerConnections: [pc])
    }

    func testEveryColumnIsDocumented() throws {
        let store = try SQLiteStore(path: path)
        let doc = try String(contentsOf: TestPaths.repositoryRoot.appendingPathComponent("Data/SCHEMA.md"), encoding: .utf8)
        let tables = try store.db.rows("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").compactMap { $0[0].string }
        XCTAssertTrue(tables.contains("rollups"))
        for table in tables {
            XCTAssertTrue(doc.contains("`\(table)`"), "\(table) is not in SCHEMA.md")
            for col in try store.db.rows("SELECT name FROM pragma_table_info(?)", [.text(table)]).compactMap({ $0[0].string }) {
                // Percentile columns are documented by pattern (mos_p5 … mos_p99).
                let pattern = col.replacingOccurrences(of: #"_p(5|50|90|95|99)$"#, with: "_p5", options: .regularExpression)
                XCTAssertTrue(
                    doc.contains("`\(col)`") || doc.contains("`\(pattern)`"),
                    "\(table).\(col) is not in SCHEMA.md")
            }
        }
    }

    /// Each column's values have the type its column list declares (or are NULL), and an
    /// insert names the columns in the list's order: a value bound to the wrong column would
    /// show here as text in a REAL column or a number in a TEXT one.
    func testEveryColumnHoldsTheTypeItIsDeclaredWith() throws {
        let store = try SQLiteStore(path: path)
        var a = call("typed", start: Self.base, mos: 3.5, grade: .fair)
        a.call.jitterBufferMs = 42.5
        a.call.iceOutcome = "iceNormal"
        a.call.endStatusCode = 200
        a.streams[0].codec = "audio/opus"
        a.streams[0].qualityLimitation = "cpu"
        a.intervals[0].qualityLimitation = "cpu"
        a.intervals[0].width = 640
        try store.write(a, complete: true, material: [7])
        func check<T: StoredTable>(_ table: T.Type, where condition: String) throws {
            for column in table.columnDescriptions {
                let declared = String(column.declaration.prefix { $0 != " " }).lowercased()
                let type = try store.db.scalar("SELECT typeof(\(column.name)) FROM \(table.name) WHERE \(condition)")?.string
                XCTAssertTrue(type == declared || type == "null", "\(table.name).\(column.name) holds \(type ?? "no row"), declared \(declared)")
            }
        }
        try check(CallsTable.self, where: "call_id = 'typed'")
        try check(StreamsTable.self, where: "call_id = 'typed'")
        try check(IntervalsTable.self, where: "1")
        try check(EventsTable.self, where: "1")
        try check(FindingsTable.self, where: "call_id = 'typed'")
        try check(MaterialTable.self, where: "call_id = 'typed'")
        XCTAssertEqual(try store.db.scalar("SELECT jitter_buffer_ms FROM calls")?.double, 42.5)
        XCTAssertEqual(try store.db.scalar("SELECT codec FROM streams")?.string, "audio/opus")
    }

    func testWriteReplacesACallWhole() throws {
        let store = try SQLiteStore(path: path)
        try store.write(call("c1", start: Self.base, mos: 4.1, grade: .good), complete: false, material: [1, 2, 3])
        try store.write(call("c1", start: Self.base, mos: 2.9, grade: .poor), complete: true, material: [4])
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM calls")?.int64, 1)
        XCTAssertEqual(try store.db.scalar("SELECT mos_cq FROM calls")?.double, 2.9)
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM intervals")?.int64, 1)
        // The replaced call's rows are gone, not only out of the views' sight (filed under its old key).
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM interval_rows")?.int64, 1)
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM event_rows")?.int64, 1)
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM findings")?.int64, 1)
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM peer_connections")?.int64, 1)
        XCTAssertEqual(try store.db.scalar("SELECT loss_pct FROM intervals"), .null)
        XCTAssertEqual(try store.db.scalar("SELECT jitter_ms FROM intervals"), .null)
        XCTAssertEqual(try store.db.scalar("SELECT rtt_ms FROM intervals"), .null)
        let stored = try store.storedCall("c1")
        XCTAssertEqual(stored?.complete, true)
        XCTAssertEqual(stored?.material, [4])
    }

    /// A run into a database without calls skips looking its calls up: a call's material alone
    /// (as stored for a call without a summary) counts as a call.
    func testADatabaseWithoutCallsSaysSo() throws {
        let store = try SQLiteStore(path: path)
        XCTAssertTrue(try store.hasNoCalls())
        try store.write(call("c1", start: Self.base, mos: 4.1, grade: .good), complete: false, material: [1, 2, 3])
        XCTAssertFalse(try store.hasNoCalls())
        try store.db.execute("DELETE FROM calls")
        XCTAssertFalse(try store.hasNoCalls(), "the material is still there")
        try store.db.execute("DELETE FROM call_material")
        XCTAssertTrue(try store.hasNoCalls())
    }

    /// A call's rows are found through an index in every table: replacing a call deletes them
    /// by call id, and drill-downs (the report, the dashboards) select them that way. A full
    /// scan of intervals per call would make a run over an existing database quadratic.
    func testACallsRowsAreFoundByIndex() throws {
        let store = try SQLiteStore(path: path)
        for table in ["calls", "streams", "intervals", "events", "findings", "peer_connections", "call_material"] {
            let plan = try store.db.rows("EXPLAIN QUERY PLAN SELECT * FROM \(table) WHERE call_id = ?", [.text("c1")])
                .compactMap { $0.last?.string }.joined(separator: "; ")
            XCTAssertTrue(plan.hasPrefix("SEARCH") && !plan.contains("SCAN"), "\(table): \(plan)")
        }
        // A replaced call's keyed rows are deleted by its key.
        for table in ["interval_rows", "event_rows"] {
            let plan = try store.db.rows(
                "EXPLAIN QUERY PLAN DELETE FROM \(table) WHERE call_key IN (SELECT call_key FROM calls WHERE call_id = ?)",
                [.text("c1")]
            ).compactMap { $0.last?.string }.joined(separator: "; ")
            XCTAssertTrue(!plan.contains("SCAN"), "\(table): \(plan)")
        }
    }

    /// Row text is bound from a buffer that grows between rows: text longer than it, text after
    /// it grew, NUL bytes and the empty string all come back exactly.
    func testRowTextComesBackExactly() throws {
        let store = try SQLiteStore(path: path)
        let texts = [String(repeating: "é", count: 6_000), "", "a\u{0}b", String(repeating: "x", count: 9_000), "short"]
        var a = call("t1", start: Self.base, mos: 4, grade: .good)
        a.events = texts.enumerated().map { k, t in
            CallEvent(callID: "t1", ts: Self.base + Int64(k), kind: "event", action: t, type: "x\(k)", detailJSON: t + t)
        }
        try store.write(a, complete: true, material: nil, replacing: false)
        let rows = try store.db.rows("SELECT action, type, detail FROM events WHERE call_id = 't1' ORDER BY ts")
        XCTAssertEqual(rows.map { $0[0].string }, texts)
        XCTAssertEqual(rows.map { $0[1].string }, texts.indices.map { "x\($0)" })
        XCTAssertEqual(rows.map { $0[2].string }, texts.map { $0 + $0 })
    }

    /// Intervals go in blocks of rows per statement, the rest in blocks of halving sizes: every
    /// count must store each row once, in order, with its own values in its own columns.
    func testEveryIntervalIsStoredOnceWithItsValues() throws {
        let store = try SQLiteStore(path: path)
        for count in Array(0...40) + [63, 64, 65, 70, 127] {
            var a = call("n\(count)", start: Self.base, mos: 4, grade: .good)
            a.intervals = (0..<count).map { k in
                var i = IntervalMetrics(
                    callID: a.call.callID, streamID: "s\(k % 3)", startTs: Self.base + Int64(k) * 1000,
                    endTs: Self.base + Int64(k + 1) * 1000)
                i.packets = Int64(k)
                i.jitterMs = Double(k) / 4
                i.mosCQ = k % 2 == 0 ? 4 - Double(k) / 100 : nil
                i.qualityLimitation = k % 5 == 0 ? "cpu" : nil
                return i
            }
            try store.write(a, complete: true, material: nil, replacing: false)
            let rows = try store.db.rows(
                "SELECT stream_id, start_ts, end_ts, packets, jitter_ms, mos_cq, quality_limitation FROM intervals WHERE call_id = ? ORDER BY rowid",
                [.text(a.call.callID)])
            XCTAssertEqual(rows.count, count)
            for (k, r) in rows.enumerated() {
                let i = a.intervals[k]
                XCTAssertEqual(r[0].string, i.streamID)
                XCTAssertEqual(r[1].int64, i.startTs)
                XCTAssertEqual(r[2].int64, i.endTs)
                XCTAssertEqual(r[3].int64, i.packets)
                XCTAssertEqual(r[4].double, i.jitterMs)
                XCTAssertEqual(r[5].double, i.mosCQ)
                XCTAssertEqual(r[6].string, i.qualityLimitation)
            }
        }
    }

    /// Bytes this process has handed to write calls (Linux), to see what a transaction writes.
    static func bytesWritten() -> Int? {
        guard let io = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return nil }
        return io.split(separator: "\n").first { $0.hasPrefix("wchar:") }.flatMap { Int($0.dropFirst(6).trimmingCharacters(in: .whitespaces)) }
    }

    /// A database the store creates is filled under a rollback journal, and left in WAL mode
    /// when the store is done; one that exists is written under WAL from the start.
    func testANewDatabaseIsFilledUnderARollbackJournalAndLeftInWALMode() throws {
        do {
            let store = try SQLiteStore(path: path)
            XCTAssertTrue(store.bulkLoading)
            XCTAssertEqual(try store.db.scalar("PRAGMA journal_mode")?.string, "delete")
            XCTAssertEqual(try store.db.scalar("PRAGMA synchronous")?.int64, 2, "FULL under the rollback journal")
            try store.write(call("c1", start: Self.base, mos: 4.1, grade: .good), complete: true, material: [1], replacing: false)
            store.endBulkLoad()
            XCTAssertFalse(store.bulkLoading)
            XCTAssertEqual(try store.db.scalar("PRAGMA journal_mode")?.string, "wal")
            XCTAssertEqual(try store.db.scalar("PRAGMA synchronous")?.int64, 1, "NORMAL under WAL")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-journal"))
        let again = try SQLiteStore(path: path)
        XCTAssertFalse(again.bulkLoading)
        XCTAssertEqual(try again.db.scalar("PRAGMA journal_mode")?.string, "wal")
        XCTAssertEqual(try again.db.scalar("SELECT count(*) FROM calls")?.int64, 1)
    }

    /// Under the rollback journal a commit must wait for readers to finish: the run that fills a
    /// new database waits up to a minute for them (readers, and runs into an existing database
    /// under WAL, 5 s), and its commit goes through once the reader is done.
    func testACommitInANewDatabaseWaitsForAReader() throws {
        do {
            let store = try SQLiteStore(path: path)
            XCTAssertEqual(try store.db.scalar("PRAGMA busy_timeout")?.int64, 60_000)
            try store.write(call("c1", start: Self.base, mos: 4.1, grade: .good), complete: true, material: nil, replacing: false)
            let reader = try Database(path: path, readOnly: true)
            XCTAssertEqual(try reader.scalar("PRAGMA busy_timeout")?.int64, 5_000)
            try reader.execute("BEGIN")
            XCTAssertEqual(try reader.scalar("SELECT count(*) FROM calls")?.int64, 1)  // its read lock is held until COMMIT
            try store.db.execute("BEGIN IMMEDIATE")
            try store.write(call("c2", start: Self.base + 1, mos: 4.0, grade: .good), complete: true, material: nil, replacing: false)
            let readerDone = DispatchSemaphore(value: 0)
            nonisolated(unsafe) let lateReader = reader  // used by that thread alone until it signals
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) {
                try? lateReader.execute("COMMIT")
                readerDone.signal()
            }
            let started = Date()
            try store.db.execute("COMMIT")
            XCTAssertGreaterThan(Date().timeIntervalSince(started), 0.3, "the commit waited for the reader")
            readerDone.wait()
            XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM calls")?.int64, 2)
        }
        let existing = try SQLiteStore(path: path)
        XCTAssertEqual(try existing.db.scalar("PRAGMA busy_timeout")?.int64, 5_000)
    }

    /// A run killed while it filled a new database leaves a rollback journal ("hot": no writer
    /// holds the file). A reader plays it back, finds the database as it was before the
    /// transaction, and still cannot write.
    func testAReaderRecoversADatabaseLeftWithARollbackJournal() throws {
        let crashed = dir.appendingPathComponent("crashed.sqlite").path
        do {
            let store = try SQLiteStore(path: path)
            try store.write(call("before", start: Self.base, mos: 4.1, grade: .good), complete: true, material: nil, replacing: false)
            // A cache of a few pages spills the transaction's pages into the file before it commits.
            try store.db.execute("PRAGMA cache_size = 4")
            try store.db.execute("BEGIN IMMEDIATE")
            for n in 0..<200 {
                try store.write(
                    call("c\(n)", start: Self.base + Int64(n), mos: 3, grade: .fair), complete: true,
                    material: [UInt8](repeating: 7, count: 3000), replacing: false)
            }
            // The files as a kill at this moment leaves them.
            try FileManager.default.copyItem(atPath: path, toPath: crashed)
            try FileManager.default.copyItem(atPath: path + "-journal", toPath: crashed + "-journal")
            try store.db.execute("ROLLBACK")
        }
        let reader = try SQLiteStore(path: crashed, forWriting: false)
        XCTAssertEqual(try reader.db.scalar("SELECT count(*) FROM calls")?.int64, 1)
        XCTAssertEqual(try reader.db.scalar("PRAGMA integrity_check")?.string, "ok")
        XCTAssertFalse(FileManager.default.fileExists(atPath: crashed + "-journal"))
        XCTAssertThrowsError(try reader.db.execute("DELETE FROM calls")) { XCTAssertTrue("\($0)".contains("readonly"), "\($0)") }
    }

    /// A long transaction of many calls into a new database writes about the database's size
    /// (its pages once, under the rollback journal), not several times more: WAL wrote each
    /// page twice (the log, then the checkpoint), and multi-row interval inserts under SQLite's
    /// default conflict handling copied every touched page to a statement journal first.
    func testALongTransactionWritesAboutTheDatabaseSize() throws {
        guard let before = Self.bytesWritten() else { throw XCTSkip("needs /proc/self/io") }
        do {
            let store = try SQLiteStore(path: path)
            try store.db.execute("BEGIN IMMEDIATE")
            for n in 0..<300 {
                var a = call(String(format: "%08x-call", (n &* 2_654_435_761) & 0xFFFF_FFFF), start: Self.base + Int64(n) * 1000, mos: 4, grade: .good)
                a.intervals = (0..<240).map { k in
                    var i = IntervalMetrics(
                        callID: a.call.callID, streamID: "stream-\(k % 4)", startTs: Self.base + Int64(k) * 10_000,
                        endTs: Self.base + Int64(k + 1) * 10_000)
                    i.packets = Int64(k * 50)
                    i.jitterMs = Double(k % 40)
                    i.mosCQ = 4.2 - Double(k % 7) / 10
                    return i
                }
                try store.write(a, complete: true, material: [UInt8](repeating: UInt8(n & 0xFF), count: 2000), replacing: false)
            }
            try store.db.execute("COMMIT")
        }
        guard let after = Self.bytesWritten() else { return XCTFail("/proc/self/io went away") }
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        XCTAssertGreaterThan(size, 5_000_000)
        // WAL plus checkpoint was twice the size; a statement journal made it about ten times.
        XCTAssertLessThan(after - before, size + size / 2, "\(after - before) bytes written for a \(size)-byte database")
    }

    /// Every rollup row against a computation of its own: counts and sums by SQL over the
    /// bucket's calls, percentiles from the group's values sorted here. Calls spread over hours of
    /// two days, with ties, missing values and a dimension value per network; buckets rebuilt
    /// both whole and from pending marks.
    func testRollupsEqualEachGroupComputedAlone() throws {
        let store = try SQLiteStore(path: path)
        var rng = SystemRandomNumberGenerator()
        let networks = ["wifi", "cellular", "ethernet", "unknown-net"]
        let grades: [Grade] = [.good, .fair, .poor, .noMedia, .unanswered]
        for n in 0..<300 {
            let start = Self.base + Int64.random(in: 0..<(40 * Self.hour), using: &rng)
            let mos: Double? = n % 7 == 0 ? nil : Double(Int.random(in: 10...45, using: &rng)) / 10  // ties
            var c = call(
                "c\(n)", start: start, mos: mos, grade: grades[n % grades.count],
                network: networks[Int.random(in: 0..<networks.count, using: &rng)],
                setup: n % 5 == 0 ? nil : Int64.random(in: 200...3000, using: &rng))
            c.call.jitterMs = n % 3 == 0 ? .nan : Double.random(in: 0...60, using: &rng)
            try store.write(c, complete: true, material: nil)
        }
        func check(_ label: String) throws {
            let rows = try store.db.rows(
                "SELECT period, bucket_ts, value, calls, poor, mos_n, mos_mean, mos_p5, mos_p50, mos_p99, jitter_n, jitter_p90, setup_p95 FROM rollups WHERE dimension = 'network'"
            )
            var seen = 0
            for period in [("hour", Self.hour), ("day", 24 * Self.hour)] {
                let buckets = try store.db.rows("SELECT DISTINCT start_ts / ?1 * ?1 FROM calls", [.integer(period.1)]).compactMap { $0[0].int64 }
                for bucket in buckets {
                    for network in networks {
                        let calls = try store.db.rows(
                            "SELECT mos_cq, jitter_ms, media_ms, grade FROM calls WHERE start_ts >= ? AND start_ts < ? AND network = ?",
                            [.integer(bucket), .integer(bucket + period.1), .text(network)])
                        let row = rows.first { $0[0].string == period.0 && $0[1].int64 == bucket && $0[2].string == network }
                        guard !calls.isEmpty else { XCTAssertNil(row, "\(label) \(period.0) \(bucket) \(network)"); continue }
                        guard let row else { XCTFail("\(label): no row for \(period.0) \(bucket) \(network)"); continue }
                        seen += 1
                        let mos = calls.compactMap { $0[0].double }.sorted()
                        let jitter = calls.compactMap { $0[1].double }.sorted()
                        let setup = calls.compactMap { $0[2].double }.sorted()
                        let expected: [SQLValue] = [
                            .integer(Int64(calls.count)), .integer(Int64(calls.filter { $0[3].string == "poor" }.count)),
                            .real(Double(mos.count)), mos.isEmpty ? .null : .real(mos.reduce(0, +) / Double(mos.count)),
                            RollupBuilder.nearestRank(mos, 0.05).map(SQLValue.real) ?? .null, RollupBuilder.nearestRank(mos, 0.5).map(SQLValue.real) ?? .null,
                            RollupBuilder.nearestRank(mos, 0.99).map(SQLValue.real) ?? .null,
                            .real(Double(jitter.count)), RollupBuilder.nearestRank(jitter, 0.9).map(SQLValue.real) ?? .null,
                            RollupBuilder.nearestRank(setup, 0.95).map(SQLValue.real) ?? .null,
                        ]
                        XCTAssertEqual(Array(row[3...]), expected, "\(label) \(period.0) \(bucket) \(network)")
                    }
                }
            }
            XCTAssertEqual(seen, rows.count, label)
            XCTAssertGreaterThan(seen, 50, label)
        }
        try store.rebuildAllRollups()
        try check("whole")
        // Marks for every hour and day, and one hour mark whose day is not marked.
        try store.db.execute("DELETE FROM rollups WHERE period = 'hour' AND bucket_ts = \(Self.base + 3 * Self.hour)")
        try store.db.execute("UPDATE rollups SET calls = -1")
        try store.markRollupsPending(forCallStarts: try store.db.rows("SELECT start_ts FROM calls").compactMap { $0[0].int64 })
        try store.db.execute("DELETE FROM rollup_pending WHERE period = 'day' AND bucket_ts = \(Self.base)")
        try store.db.execute(
            "UPDATE rollups SET calls = (SELECT count(*) FROM calls WHERE start_ts >= bucket_ts AND start_ts < bucket_ts + 86400000 AND coalesce(network, 'unknown') = value) WHERE period = 'day' AND bucket_ts = \(Self.base) AND dimension = 'network'"
        )
        try store.refreshPendingRollups()
        try check("pending")
        // Every marked bucket was rebuilt; the unmarked day kept its rows.
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM rollups WHERE calls < 0 AND NOT (period = 'day' AND bucket_ts = \(Self.base))")?.int64, 0)
        XCTAssertEqual(
            try store.db.scalar("SELECT count(*) FROM rollups WHERE calls < 0")?.int64, Int64(Schema.rollupDimensions.count) - 1,
            "the unmarked day's rows: one per dimension but network, whose counts were put back")
    }

    func testRollupsMatchHandComputedPercentiles() throws {
        let store = try SQLiteStore(path: path)
        // Ten calls in one hour with MOS 1.5, 1.8, ... ; two on cellular.
        let moses = [4.3, 4.2, 4.1, 4.0, 3.9, 3.5, 3.0, 2.5, 1.8, 1.5]
        for (n, m) in moses.enumerated() {
            let g: Grade = m >= 4 ? .good : m >= 3.5 ? .fair : .poor
            try store.write(
                call(
                    "c\(n)", start: Self.base + Int64(n) * 60_000, mos: m, grade: g,
                    network: n < 8 ? "wifi" : "cellular", setup: Int64(500 + 100 * n)), complete: true, material: nil)
        }
        try store.write(call("other-day", start: Self.base + 30 * Self.hour, mos: nil, grade: .noMedia), complete: true, material: nil)
        try store.rebuildAllRollups()
        let row = try store.db.rows(
            """
            SELECT calls, good, fair, poor, no_media, mos_n, mos_p5, mos_p50, mos_p95, setup_p95, round(mos_mean, 4)
            FROM rollups WHERE period = 'hour' AND bucket_ts = ? AND dimension = 'all'
            """, [.integer(Self.base)]
        ).first
        // Sorted MOS: 1.5 1.8 2.5 3.0 3.5 3.9 4.0 4.1 4.2 4.3; nearest rank p5 → 1st, p50 → 5th, p95 → 10th.
        XCTAssertEqual(
            row, [.integer(10), .integer(4), .integer(2), .integer(4), .integer(0), .real(10), .real(1.5), .real(3.5), .real(4.3), .real(1400), .real(3.28)])
        let cellular = try store.db.rows("SELECT calls, poor FROM rollups WHERE period = 'day' AND dimension = 'network' AND value = 'cellular'")
        XCTAssertEqual(cellular, [[.integer(2), .integer(2)]])
        XCTAssertEqual(try store.db.scalar("SELECT count(DISTINCT bucket_ts) FROM rollups WHERE period = 'day'")?.int64, 2)
        // Views answer the first questions.
        let share = try store.db.rows("SELECT network, calls, poor_pct FROM poor_share_by_network WHERE network = 'cellular'")
        XCTAssertEqual(share, [[.text("cellular"), .integer(2), .real(100)]])
        let setup = try store.db.rows("SELECT app_version, calls, setup_p95_ms FROM setup_p95_by_app_version")
        XCTAssertEqual(setup, [[.text("demo 1.0"), .integer(11), .integer(1400)]])
        XCTAssertEqual(try store.db.scalar("SELECT call_id FROM worst_calls LIMIT 1")?.string, "other-day")
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM worst_calls_last_day")?.int64, 1)
        XCTAssertEqual(try store.db.scalar("SELECT calls FROM findings_summary WHERE code = 'high_loss'")?.int64, 11)
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM daily_quality")?.int64, 2)
    }

    /// Every setup phase and ICE gathering get percentiles; direction and ICE outcome are
    /// dimensions. Five calls in one hour, their phases known: nearest-rank by hand.
    func testSetupPhasesAndICEGatheringHavePercentilesByDirectionAndOutcome() throws {
        let store = try SQLiteStore(path: path)
        let phases: [(rest: Int64?, ringing: Int64?, answer: Int64?, gathering: Int64?, direction: String, outcome: String?)] = [
            (120, 900, 4_000, 300, "outgoing", "iceNormal"), (80, 700, 2_500, 250, "outgoing", "iceNormal"),
            (200, 1_500, 9_000, 2_100, "outgoing", "iceOneRelay"), (nil, nil, 1_200, 400, "incoming", "iceNormal"),
            (60, nil, nil, nil, "incoming", nil),
        ]
        for (n, p) in phases.enumerated() {
            var c = call("c\(n)", start: Self.base + Int64(n) * 60_000, mos: 4.2, grade: .good)
            c.call.restSentMs = p.rest
            c.call.ringingMs = p.ringing
            c.call.answerMs = p.answer
            c.call.iceGatheringMs = p.gathering
            c.call.direction = p.direction
            c.call.iceOutcome = p.outcome
            try store.write(c, complete: true, material: nil)
        }
        try store.rebuildAllRollups()
        let all = try store.db.rows(
            """
            SELECT rest_sent_n, rest_sent_p50, rest_sent_p95, ringing_n, ringing_p50, answer_n, answer_p50, answer_p95,
                   ice_gathering_n, ice_gathering_p50, ice_gathering_p99, ice_gathering_mean
            FROM rollups WHERE period = 'hour' AND bucket_ts = ? AND dimension = 'all'
            """, [.integer(Self.base)])
        // rest 60 80 120 200: p50 → 2nd, p95 → 4th; ringing 700 900 1500; answer 1200 2500 4000 9000;
        // gathering 250 300 400 2100 (mean 762.5).
        XCTAssertEqual(
            all.first,
            [.real(4), .real(80), .real(200), .real(3), .real(900), .real(4), .real(2_500), .real(9_000), .real(4), .real(300), .real(2_100), .real(762.5)])
        let byDirection = try store.db.rows(
            "SELECT value, calls, answer_p50 FROM rollups WHERE period = 'day' AND dimension = 'direction' ORDER BY value")
        XCTAssertEqual(byDirection, [[.text("incoming"), .integer(2), .real(1_200)], [.text("outgoing"), .integer(3), .real(4_000)]])
        let byOutcome = try store.db.rows("SELECT value, calls FROM rollups WHERE period = 'day' AND dimension = 'ice_outcome' ORDER BY value")
        XCTAssertEqual(byOutcome, [[.text("iceNormal"), .integer(3)], [.text("iceOneRelay"), .integer(1)], [.text("unknown"), .integer(1)]])
    }

    func testNearestRank() {
        XCTAssertNil(RollupBuilder.nearestRank([], 0.5))
        XCTAssertEqual(RollupBuilder.nearestRank([7], 0.99), 7)
        XCTAssertEqual(RollupBuilder.nearestRank([1, 2, 3, 4], 0.5), 2)
        XCTAssertEqual(RollupBuilder.nearestRank([1, 2, 3, 4], 0.51), 3)
        XCTAssertEqual(RollupBuilder.nearestRank(Array(1...100).map(Double.init), 0.95), 95)
    }

    func testSecondWriterIsRefusedClearly() throws {
        let first = try SQLiteStore(path: path)
        XCTAssertThrowsError(try SQLiteStore(path: path)) { error in
            XCTAssertTrue("\(error)".contains("being written by another callstats run (analyze or regrade"), "\(error)")
        }
        // Readers are not blocked.
        XCTAssertNoThrow(try SQLiteStore(path: path, forWriting: false))
        _ = first
    }

    /// A peer connection's row holds its figures (NULL where not measured: never connected,
    /// no pair), and goes with its call when the call is removed.
    func testPeerConnectionRowsAreStoredAndRemovedWithTheirCall() throws {
        let store = try SQLiteStore(path: path)
        var a = call("pcs", start: Self.base, mos: 4.2, grade: .good)
        var media = a.peerConnections[0]
        media.role = "p2p"
        media.localCandidateType = "relay"
        media.remoteCandidateType = "host"
        media.transport = "tls"
        media.relayUsed = true
        media.pairChanges = 2
        media.iceState = "connected"
        media.connectionState = "connected"
        media.disconnects = 1
        media.disconnectedMs = 6_000
        media.reconnects = 1
        var idle = PeerConnectionSummary(callID: "pcs", pcID: "b", firstTs: Self.base + 10, lastTs: Self.base + 50_000)
        idle.role = "media_server"
        idle.iceState = "failed"
        idle.failed = true
        idle.failedTs = Self.base + 30_000
        a.peerConnections = [media, idle]
        try store.write(a, complete: true, material: [1])
        try store.write(call("other", start: Self.base + 1_000, mos: 4.0, grade: .good), complete: true, material: [2])
        let rows = try store.db.rows(
            """
            SELECT pc_id, role, local_candidate_type, remote_candidate_type, transport, relay_used, pair_changes, streams, packets,
                   carried_media, ice_state, connection_state, connected_ts, connected_ms, failed, failed_ts, disconnects,
                   disconnected_ms, reconnects, first_ts, last_ts
            FROM peer_connections WHERE call_id = 'pcs' ORDER BY pc_id
            """)
        XCTAssertEqual(rows.count, 2)
        XCTAssertEqual(
            rows[0].map(\.description),
            [
                "a", "p2p", "relay", "host", "tls", "1", "2", "1", "3000", "1", "connected", "connected", "\(Self.base + 400)", "59600",
                "0", "NULL", "1", "6000", "1", "\(Self.base)", "\(Self.base + 60_000)",
            ])
        XCTAssertEqual(
            rows[1].map(\.description),
            [
                "b", "media_server", "NULL", "NULL", "NULL", "0", "0", "0", "0", "0", "failed", "NULL", "NULL", "0", "1",
                "\(Self.base + 30_000)", "0", "0", "0", "\(Self.base + 10)", "\(Self.base + 50_000)",
            ])
        let removal = try store.removeCalls(["pcs"])
        XCTAssertEqual(removal.peerConnections, 2)
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM peer_connections WHERE call_id = 'pcs'")?.int64, 0)
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM peer_connections")?.int64, 1, "the other call's stays")
    }

    /// A database of version 5 gets the table `peer_connections` from its upgrade step
    /// (`v6-peer-connections`, recorded in `meta`), empty for the calls stored before, and the
    /// next calls written fill it.
    func testAVersion5DatabaseGetsThePeerConnectionsTable() throws {
        do {
            let store = try SQLiteStore(path: path)
            try store.write(call("old", start: Self.base, mos: 4.1, grade: .good), complete: true, material: [1])
            try store.db.execute(
                """
                DROP TABLE peer_connections; DELETE FROM meta WHERE key LIKE 'migration.v6-%';
                UPDATE meta SET value = '5' WHERE key = 'schema_version';
                """)
        }
        XCTAssertTrue(Schema.upgradeSummary(from: 5).contains("peer_connections"), Schema.upgradeSummary(from: 5))
        var announced: [Int] = []
        let store = try SQLiteStore(path: path, willUpgrade: { announced.append($0) })
        XCTAssertEqual(announced, [5])
        XCTAssertEqual(store.upgradedFrom, 5)
        XCTAssertEqual(try store.db.scalar("SELECT value FROM meta WHERE key = 'schema_version'")?.string, String(Schema.version))
        XCTAssertNotNil(try store.db.scalar("SELECT value FROM meta WHERE key = 'migration.v6-peer-connections'")?.string)
        XCTAssertEqual(
            try store.db.rows("SELECT name FROM pragma_table_info('peer_connections')").compactMap { $0[0].string },
            PeerConnectionsTable.columnNames)
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM peer_connections")?.int64, 0, "stored calls get rows at a regrade")
        try store.write(call("old", start: Self.base, mos: 4.1, grade: .good), complete: true, material: [1])
        XCTAssertEqual(try store.db.scalar("SELECT pc_id FROM peer_connections WHERE call_id = 'old'")?.string, "a")
    }

    /// A view whose definition changed since the database was made (another release's, same
    /// schema version) is made again at the next writing open; a view a user made stays.
    func testAChangedViewReachesAnExistingDatabase() throws {
        do {
            let store = try SQLiteStore(path: path)
            let views = try store.db.rows("SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name").compactMap { $0[0].string }
            XCTAssertEqual(views, Schema.viewNames.sorted(), "Schema.viewNames lists exactly the views a database has")
            try store.db.execute(
                """
                DROP VIEW conversations; CREATE VIEW conversations AS SELECT 1 AS an_older_definition;
                CREATE VIEW my_calls AS SELECT call_id FROM calls;
                UPDATE meta SET value = 'an-older-hash' WHERE key = 'views_hash';
                """)
        }
        do {
            let reader = try SQLiteReader(path: path).connection
            XCTAssertEqual(try reader.rows("SELECT * FROM conversations").first?.first?.int64, 1, "a reader changes nothing")
        }
        let store = try SQLiteStore(path: path)
        let sql = try store.db.scalar("SELECT sql FROM sqlite_master WHERE name = 'conversations'")?.string ?? ""
        XCTAssertTrue(sql.contains("worst_leg"), sql)
        XCTAssertEqual(try store.db.scalar("SELECT value FROM meta WHERE key = 'views_hash'")?.string, Schema.definitionHash(Schema.views))
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM my_calls")?.int64, 0, "the user's own view is left alone")
    }

    func testNewerSchemaIsRefusedAndGarbageIsNotADatabase() throws {
        do {
            let store = try SQLiteStore(path: path)
            try store.db.run("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
        }
        XCTAssertThrowsError(try SQLiteStore(path: path)) { XCTAssertTrue("\($0)".contains("schema version 99"), "\($0)") }
        let junk = dir.appendingPathComponent("junk.sqlite").path
        try Data(repeating: 0x42, count: 4096).write(to: URL(fileURLWithPath: junk))
        XCTAssertThrowsError(try SQLiteStore(path: junk)) { XCTAssertTrue("\($0)".contains("not a callstats database"), "\($0)") }
    }

    func testValuesFromLogsCannotInjectSQL() throws {
        let store = try SQLiteStore(path: path)
        try store.write(call("x'); DROP TABLE calls; --", start: Self.base, mos: 4, grade: .good), complete: true, material: nil)
        XCTAssertEqual(try store.db.scalar("SELECT call_id FROM calls")?.string, "x'); DROP TABLE calls; --")
    }

    /// SQLite's memory statistics are off (each allocation took a process-wide mutex for them):
    /// after a connection has written, SQLite reports no memory in use.
    func testSQLiteKeepsNoMemoryStatistics() throws {
        let store = try SQLiteStore(path: path)
        try store.write(call("m", start: Self.base, mos: 4, grade: .good), complete: true, material: nil)
        var current: Int64 = -1, highest: Int64 = -1
        XCTAssertEqual(sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &current, &highest, 0), SQLITE_OK)
        XCTAssertEqual(current, 0)
        XCTAssertEqual(highest, 0)
    }
}
