import CallLog
import Foundation
import Simulator
import TestSupport
import XCTest

/// Files: deterministic bytes, readable with zero issues, calls interleaved and continued
/// across files.
final class OutputTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("simulator") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    func config(seed: UInt64 = 11, workers: Int = 2, calls: Int = 24) -> SimulatorConfiguration {
        var c = SimulatorConfiguration(calls: calls, seed: seed)
        c.files = 4
        c.days = 1
        c.workers = workers
        return c
    }

    func files(in sub: String) throws -> [String: Data] {
        let d = dir.appendingPathComponent(sub)
        var out: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: d.path) {
            out[name] = try Data(contentsOf: d.appendingPathComponent(name))
        }
        return out
    }

    func testSameSeedSameBytesWhateverTheThreads() throws {
        _ = try Simulator(config(workers: 2)).write(to: dir.appendingPathComponent("a").path)
        _ = try Simulator(config(workers: 1)).write(to: dir.appendingPathComponent("b").path)
        _ = try Simulator(config(seed: 12)).write(to: dir.appendingPathComponent("c").path)
        let a = try files(in: "a"), b = try files(in: "b"), c = try files(in: "c")
        XCTAssertEqual(a.keys.sorted(), ["calls-000.ndjson.zst", "calls-001.ndjson.zst", "calls-002.ndjson.zst", "calls-003.ndjson.zst"])
        XCTAssertEqual(a, b, "byte-identical")
        XCTAssertEqual(a.keys.sorted(), c.keys.sorted())
        XCTAssertNotEqual(a, c, "another seed, other calls")
        // Writing again over the same folder gives the same bytes (files are replaced, not appended).
        _ = try Simulator(config()).write(to: dir.appendingPathComponent("a").path)
        XCTAssertEqual(try files(in: "a"), b)
    }

    func testFilesReadBackWithoutIssuesAndCallsContinueAcrossFiles() throws {
        let sim = Simulator(config(calls: 40))
        let summary = try sim.write(to: dir.path)
        XCTAssertEqual(summary.calls, 40)
        XCTAssertEqual(summary.files, 4)
        XCTAssertGreaterThanOrEqual(summary.splitCalls, 1)
        XCTAssertGreaterThan(summary.uncompressedBytes, summary.bytes * 5, "deltas and zstd")
        var perCall: [String: [LogRecord]] = [:]
        var filesPerCall: [String: Set<String>] = [:]
        var total = 0, interleaved = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() {
            let (records, issues) = LogReader(path: dir.appendingPathComponent(name).path).readAll()
            XCTAssertEqual(issues, [], name)
            total += records.count
            XCTAssertEqual(records.map(\.ts), records.map(\.ts).sorted(), "time order within a file")
            for (a, b) in zip(records, records.dropFirst()) where a.call != b.call { interleaved += 1 }
            for r in records.map(canonical) {
                perCall[r.call, default: []].append(r)
                filesPerCall[r.call, default: []].insert(name)
            }
        }
        XCTAssertEqual(total, summary.records)
        XCTAssertEqual(perCall.count, 40)
        XCTAssertGreaterThan(interleaved, 40, "calls interleave within files")
        XCTAssertEqual(filesPerCall.values.filter { $0.count == 2 }.count, summary.splitCalls)
        // Every call, put back together from its files, is exactly what the simulator made.
        for i in [0, 17, 33] {
            let expected = sim.records(forCall: i)
            XCTAssertEqual(perCall[expected[0].call], expected.map(canonical))
        }
        let split = try XCTUnwrap(filesPerCall.first { $0.value.count == 2 }?.key)
        let index = try XCTUnwrap((0..<40).first { sim.plan($0).id == split })
        XCTAssertEqual(perCall[split], sim.records(forCall: index).map(canonical))
    }

    func testFullSnapshotsWriteNoDeltas() throws {
        var c = config()
        c.calls = 8
        c.files = 1
        c.fullSnapshots = true
        _ = try Simulator(c).write(to: dir.path)
        var lines = 0
        LogLineReader(path: dir.appendingPathComponent("calls-000.ndjson.zst").path).forEachLine(
            { bytes, _ in
                let r = try! LogRecord(parsing: bytes)
                if r.kind == .stats {
                    XCTAssertNil(r["delta"])
                    XCTAssertNotNil(r["report"])
                }
                lines += 1
            }, issue: { XCTFail($0.description) })
        XCTAssertGreaterThan(lines, 20)
    }

    func testTimeRangeAndPeriodAreConfigurable() {
        var c = SimulatorConfiguration(calls: 30, seed: 3)
        c.endMs = 1_700_000_000_000
        c.days = 2
        c.periodSeconds = 5
        let sim = Simulator(c)
        XCTAssertTrue(sim.spans.allSatisfy { $0.startMs >= 1_700_000_000_000 - 2 * 86_400_000 && $0.startMs < 1_700_000_000_000 })
        let i = (0..<30).first { sim.plan($0).script.mediaSeconds > 40 }!
        let ts = sim.records(forCall: i).filter { $0.kind == .stats }.map(\.ts)
        for (a, b) in zip(ts, ts.dropFirst()) { XCTAssertEqual(Double(b - a), 5_000, accuracy: 5) }
    }
}
