import CallLog
@testable import Collector
import Foundation
import TestSupport
import XCTest

/// Files: rotation by size and age, the disk cap, and what happens when the disk cannot be
/// written (full, not writable, directory removed): drops counted, retried, reported.
final class WriterTests: XCTestCase {
    /// A report of numbers that compress poorly, so that files grow at a known pace.
    static func noisySnapshot(_ seed: Int) -> StatsSnapshot {
        var rng = SplitMix(seed: UInt64(seed))
        var report = [JSONValue]()
        for i in 0..<12 {
            var o: JSONObject = ["id": .string("obj\(i)"), "type": "inbound-rtp", "timestamp": .number(Double(seed))]
            for f in 0..<14 { o["f\(f)"] = .number(Double(rng.next() % 1_000_000_007)) }
            report.append(.object(o))
        }
        return .report(report, format: .w3c)
    }

    static let info = CallInfo(direction: .outgoing, sdk: "test", sdkVersion: "1")

    func testRotationBySizeGivesTimeSortedIndependentFiles() throws {
        let dir = Logs.directory()
        let clock = ManualClock()
        var config = Logs.configuration(dir)
        config.interval = 1
        config.fileBytes = 32 << 10
        let agent = CallStatsAgent(configuration: config, clock: clock, storage: FileStorage())
        let n = Counter()
        let r = agent.attach(callID: "big", info: Self.info, call: FakeCall { Self.noisySnapshot(n.next()) })
        for _ in 0..<60 {
            clock.advance(by: 5_000)  // five snapshots, then a write
            agent.flush()
        }
        r.end(CallEnd(reason: .terminatedLocally))
        agent.shutdown()

        let files = Logs.files(dir)
        XCTAssertGreaterThanOrEqual(files.count, 4, "about 300 snapshots of ~1 KiB compressed in 32 KiB files")
        let namePattern = try Regex(#"^calls-\d{8}T\d{9}Z-\d{4}\.ndjson\.zst$"#)
        var previousLast = Int64.min
        for f in files {
            let name = (f as NSString).lastPathComponent
            XCTAssertNotNil(try namePattern.wholeMatch(in: name), name)
            let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: f)[.size] as? Int)
            XCTAssertLessThan(size, (32 << 10) + (48 << 10), "\(name): rotation within one flush of the limit")
            // Each file stands alone: it decodes without the others (chains restart in full).
            let (records, issues) = LogReader(path: f).readAll()
            XCTAssertEqual(issues, [])
            let stats = records.filter { $0.kind == .stats }
            XCTAssertEqual(stats.first?["report"]?.arrayValue?.count, 12, "a file starts with a full snapshot")
            // Names sort by time: every record of a file is newer than the previous file's.
            XCTAssertGreaterThanOrEqual(records.map(\.ts).min() ?? .max, previousLast)
            previousLast = records.map(\.ts).max() ?? previousLast
        }
        let stats = Logs.records(dir).filter { $0.kind == .stats }
        XCTAssertEqual(stats.count, 301)
        XCTAssertEqual(
            stats.map { $0["report"]!.arrayValue![0]["timestamp"]!.doubleValue! }, (0...300).map(Double.init),
            "every snapshot once, in order")
        XCTAssertEqual(agent.counters.droppedTotal, 0)
    }

    func testRotationByAgeClosesIdleFiles() {
        let dir = Logs.directory()
        let clock = ManualClock()
        var config = Logs.configuration(dir)
        config.fileAge = 60
        let agent = CallStatsAgent(configuration: config, clock: clock, storage: FileStorage())
        let n = Counter()
        let r = agent.attach(callID: "long", info: Self.info, call: FakeCall { Self.noisySnapshot(n.next()) })
        for _ in 0..<25 {
            clock.advance(by: 10_000)
            agent.flush()
        }
        r.end(CallEnd(reason: .terminatedLocally))
        agent.flush()
        // Idle: the housekeeping tick closes the file once it is a minute old.
        clock.advance(by: 70_000)
        let files = Logs.files(dir)
        XCTAssertEqual(agent.closedFiles(), files, "nothing is open any more")
        XCTAssertGreaterThanOrEqual(files.count, 4)
        for f in files {
            let ts = LogReader(path: f).readAll().records.map(\.ts)
            XCTAssertLessThanOrEqual((ts.max() ?? 0) - (ts.min() ?? 0), 60_000, "a file spans at most its age limit")
        }
        XCTAssertEqual(Logs.records(dir).filter { $0.kind == .stats }.count, 26)
        agent.shutdown()
    }

    func testDiskCapDeletesOldestClosedFilesAndReportsThem() throws {
        let dir = Logs.directory()
        // Files of an earlier run of the app, and a file that is not ours.
        let old = (1...6).map { dir + "/calls-20250101T00000\($0)000Z-0001.ndjson.zst" }
        for f in old { XCTAssertTrue(FileManager.default.createFile(atPath: f, contents: Data(repeating: 7, count: 30_000))) }
        XCTAssertTrue(FileManager.default.createFile(atPath: dir + "/upload-state.json", contents: Data("{}".utf8)))
        let clock = ManualClock()
        var config = Logs.configuration(dir)
        config.interval = 1
        config.fileBytes = 20_000
        config.diskCap = 100_000
        let agent = CallStatsAgent(configuration: config, clock: clock, storage: FileStorage())
        let n = Counter()
        let r = agent.attach(callID: "capped", info: Self.info, call: FakeCall { Self.noisySnapshot(n.next()) })
        var peak = 0
        for _ in 0..<80 {
            clock.advance(by: 3_000)
            agent.flush()
            peak = max(peak, Logs.files(dir).reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: $1)[.size] as? Int) ?? 0) })
        }
        r.end(CallEnd(reason: .terminatedLocally))
        agent.shutdown()

        XCTAssertLessThanOrEqual(peak, 100_000 + 48 << 10, "the logs stay under the cap (plus one flush)")
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir + "/upload-state.json"), "files that are not logs are never deleted")
        let remaining = Set(Logs.files(dir))
        XCTAssertTrue(old.allSatisfy { !remaining.contains($0) }, "the oldest files went first")
        let c = agent.counters
        XCTAssertGreaterThan(c.filesDeleted, old.count, "the run's own early files were deleted too")
        XCTAssertGreaterThanOrEqual(c.bytesDeleted, old.count * 30_000)
        // The deletions are reported in agent records (summed: some may sit in deleted files).
        let agentRecords = Logs.records(dir).filter { $0.kind == .agent }
        XCTAssertFalse(agentRecords.isEmpty)
        XCTAssertTrue(agentRecords.allSatisfy { $0.call == "-" && $0["event"] == "dropped" })
        XCTAssertGreaterThan(agentRecords.compactMap { $0["filesDeleted"]?.int64Value }.reduce(0, +), 0)
    }

    /// The log directory cannot exist (its parent is a regular file): nothing is written,
    /// nothing crashes, every record is counted; once the path is usable, writing resumes
    /// with an `agent` record of the losses.
    func testUnwritableDirectoryDropsCountsAndRecovers() throws {
        let base = Logs.directory()
        let blocker = base + "/not-a-directory"
        XCTAssertTrue(FileManager.default.createFile(atPath: blocker, contents: Data("x".utf8)))
        let dir = blocker + "/logs"
        let clock = ManualClock()
        let agent = CallStatsAgent(configuration: Logs.configuration(dir), clock: clock, storage: FileStorage())
        let n = Counter()
        let r = agent.attach(callID: "lost", info: Self.info, call: FakeCall { Self.noisySnapshot(n.next()) })
        clock.advance(by: 30_000)
        r.event(SDKEvent(action: "callMetric", type: "callRinging"))
        r.end(CallEnd(reason: .terminatedRemotely, statusCode: 9900))
        agent.flush()
        XCTAssertEqual(agent.counters.dropped, [.notWritable: 1 + 3 + 1 + 1 + 1], "call, 3 samples, event, last sample, end")
        XCTAssertEqual(agent.counters.recordsWritten, 0)

        try FileManager.default.removeItem(atPath: blocker)
        let r2 = agent.attach(callID: "after", info: Self.info)
        agent.flush()
        XCTAssertEqual(agent.counters.dropped[.notWritable], 8, "retried only after the retry interval")
        clock.advance(by: 10_000)
        r2.end(CallEnd(reason: .terminatedLocally))
        agent.flush()
        let records = Logs.records(dir)
        XCTAssertEqual(records.map(\.kind), [.agent, .end])
        let report = try XCTUnwrap(records.first)
        XCTAssertEqual(report["records"], 8)
        XCTAssertEqual(report["reasons"], ["notWritable": 8])
        XCTAssertEqual(report["error"], .string(String(cString: strerror(ENOTDIR))))
        agent.shutdown()
    }

    /// A full disk, simulated at the storage seam: what was not yet flushed is lost and
    /// counted, later records are dropped until the retry, and the first thing written after
    /// recovery is the `agent` record. Every record is either in the log or counted.
    func testFullDiskDropsCountsAndReportsOnRecovery() throws {
        let dir = Logs.directory()
        let clock = ManualClock()
        let storage = FaultyStorage()
        let agent = CallStatsAgent(configuration: Logs.configuration(dir), clock: clock, storage: storage)
        let n = Counter()
        let r = agent.attach(callID: "full", info: Self.info, call: FakeCall { Self.noisySnapshot(n.next()) })
        clock.advance(by: 20_000)
        agent.flush()
        XCTAssertEqual(agent.counters.recordsWritten, 3)

        storage.full = true
        clock.advance(by: 30_000)  // three snapshots lost at the flush
        r.state(.mute)
        agent.flush()
        clock.advance(by: 5_000)  // still failing, before the retry: dropped as they come
        r.state(.unmute)
        agent.flush()
        XCTAssertEqual(agent.counters.dropped, [.diskFull: 5])

        storage.full = false
        clock.advance(by: 5_000)  // the retry interval has passed
        r.end(CallEnd(reason: .terminatedLocally, durationMs: 60_000))
        agent.flush()
        let records = Logs.records(dir)
        let report = try XCTUnwrap(records.first { $0.kind == .agent })
        XCTAssertEqual(report["reasons"], ["diskFull": 5])
        XCTAssertEqual(report["records"], 5)
        XCTAssertEqual(report["error"], .string(String(cString: strerror(ENOSPC))))
        let afterReport = records.drop { $0.kind != .agent }.dropFirst()
        XCTAssertEqual(afterReport.map(\.kind), [.stats, .stats, .end], "the tick at 60 s, the last sample, the end")
        let produced = 1 + n.value + 2 + 1  // call, every sample, two events, end
        XCTAssertEqual(records.filter { $0.kind != .agent }.count + agent.counters.droppedTotal, produced)
        XCTAssertEqual(Logs.files(dir).count, 2, "a new file after the failure")
        // The analyser reads a log with agent records without skipping anything.
        let analysed = try Logs.analyze(dir)
        XCTAssertEqual(analysed["full"]?.call.endReason, "terminatedLocally")
        agent.shutdown()
    }

    func testDirectoryRemovedWhileWritingIsCreatedAgain() throws {
        let dir = Logs.directory() + "/nested/logs"
        let clock = ManualClock()
        let agent = CallStatsAgent(configuration: Logs.configuration(dir), clock: clock, storage: FileStorage())
        let n = Counter()
        let r = agent.attach(callID: "moved", info: Self.info, call: FakeCall { Self.noisySnapshot(n.next()) })
        clock.advance(by: 20_000)
        agent.flush()
        try FileManager.default.removeItem(atPath: (dir as NSString).deletingLastPathComponent)
        clock.advance(by: 10_000)
        r.end(CallEnd(reason: .terminatedLocally))
        agent.flush()
        let records = Logs.records(dir)
        XCTAssertEqual(records.map(\.kind), [.stats, .stats, .end], "the sample at 30 s, the last one, the end")
        XCTAssertEqual(agent.counters.droppedTotal, 0)
        agent.shutdown()
    }

    /// A collector's file, flipped and cut at sampled offsets: a flip loses at most one
    /// segment's text, a cut at most one flush's beyond what zstd still decodes, and nothing
    /// altered is read (`DamageSweep`; the other writers' files in `FaultTests.WriterDamageTests`).
    func testOneDamagedByteCostsAtMostOneSegment() throws {
        let dir = Logs.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let clock = ManualClock()
        var config = Logs.configuration(dir)
        config.interval = 1
        config.fileBytes = 32 << 20
        config.diskCap = 128 << 20
        let agent = CallStatsAgent(configuration: config, clock: clock, storage: FileStorage())
        let n = Counter()
        let r = agent.attach(callID: "long", info: Self.info, call: FakeCall { Self.noisySnapshot(n.next()) })
        for _ in 0..<150 {
            clock.advance(by: 5_000)
            agent.flush()
        }
        r.end(CallEnd(reason: .terminatedLocally))
        agent.shutdown()
        let files = Logs.files(dir)
        XCTAssertEqual(files.count, 1)
        let file = try XCTUnwrap(files.first)
        let sweep = try DamageSweep(path: file)
        XCTAssertEqual(sweep.records.filter { $0.kind == .stats }.count, 751, "a snapshot a second for 750 s, and the first")
        let report = try sweep.sweep(
            flips: 24, cuts: 8, options: LogWriter.Options(), scratch: URL(fileURLWithPath: dir).appendingPathComponent("scratch"))
        XCTAssertGreaterThanOrEqual(report.frames, 3, "\(sweep.textBytes) bytes of text in 1 MiB segments")
        XCTAssertEqual(report.failures, [])
        XCTAssertGreaterThan(report.worstFlipText, 0, "some flip costs a part of a segment")
    }
}

/// A small deterministic generator for test data.
struct SplitMix {
    var state: UInt64
    /// Different seeds give unrelated sequences (not one sequence shifted).
    init(seed: UInt64) {
        state = seed
        state = next() ^ 0xD1B5_4A32_D192_ED03
    }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
