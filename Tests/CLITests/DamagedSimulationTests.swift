import Foundation
import TestSupport
import XCTest

/// Damage as a disk or a copy does it, to files the simulator really wrote: `analyze` keeps
/// every call the damage did not reach. The simulator never flushes, so what bounds the loss is
/// the log writer's own flush points (every call end, every 1 MiB of text) and segments.
final class DamagedSimulationTests: BinaryTestCase {
    override var folderName: String { "cli-damaged-simulation" }

    /// 200 calls in two files of about 5 MB of text: one file cut at two thirds, one byte flipped
    /// in the middle of the other. With one frame and one checkpoint per file 71 calls (36 %)
    /// were kept; a cut now costs the text after the last flush point before it and a flip the
    /// rest of one 1 MiB segment: 167 calls (84 %) are kept, the lost ones the cut third's.
    func testCutAndFlippedSimulationKeepsMostCalls() throws {
        let sim = dir.appendingPathComponent("sim")
        let made = try callstats(["simulate", "--calls", "200", "--out", sim.path])
        XCTAssertEqual(made.status, 0, made.err)
        let files = try FileManager.default.contentsOfDirectory(atPath: sim.path).sorted().map { sim.appendingPathComponent($0) }
        XCTAssertEqual(files.count, 2)

        let cut = try Data(contentsOf: files[0])
        try cut.prefix(cut.count * 2 / 3).write(to: files[0])
        var flipped = [UInt8](try Data(contentsOf: files[1]))
        flipped[flipped.count / 2] ^= 0xFF
        try Data(flipped).write(to: files[1])

        let db = dir.appendingPathComponent("calls.sqlite").path
        let run = try callstats(["analyze", sim.path, "--db", db, "--json"])
        XCTAssertEqual(run.status, 3, "damage skipped and reported: \(run.err)")
        let summary = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any])
        let calls = try XCTUnwrap(summary["calls_analysed"] as? Int)
        XCTAssertGreaterThanOrEqual(calls, 150, "at least 75 % of 200 calls kept, not 71")
        XCTAssertLessThan(calls, 200, "a third of one file is gone: some calls must be missing")
    }
}
