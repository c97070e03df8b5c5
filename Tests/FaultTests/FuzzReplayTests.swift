import Foundation
import TestSupport
import XCTest

/// The fuzzers' seeds and every input a fuzzer ever crashed on (`Fuzz/regressions/<target>/`,
/// committed once fixed), fed through the same entry points the fuzz targets call. A fixed
/// crash that comes back fails here, in every `make test`, without a fuzzer.
final class FuzzReplayTests: XCTestCase {
    static let fuzz = TestPaths.repositoryRoot.appendingPathComponent("Fuzz")

    func inputs(_ folder: String, _ target: String) throws -> [(name: String, bytes: [UInt8])] {
        let dir = FuzzReplayTests.fuzz.appendingPathComponent(folder).appendingPathComponent(target)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path))?.filter { !$0.hasPrefix(".") }.sorted() ?? []
        return try names.map { ($0, [UInt8](try Data(contentsOf: dir.appendingPathComponent($0)))) }
    }

    func testSeedsExerciseEveryTarget() throws {
        let records = try inputs("corpus", "records")
        XCTAssertGreaterThanOrEqual(records.count, 3)
        for (name, bytes) in records {
            let r = bytes.withUnsafeBufferPointer { FuzzEntryPoints.records($0) }
            let lines = bytes.split(separator: 0x0A).count
            XCTAssertEqual(r.parsed, lines, "\(name): every seed line is a valid record")
            XCTAssertEqual(r.ingested, lines, "\(name): and the analyser takes every one")
        }
        let frames = try inputs("corpus", "zstd")
        XCTAssertFalse(frames.isEmpty)
        for (name, bytes) in frames {
            XCTAssertGreaterThan(bytes.withUnsafeBytes { FuzzEntryPoints.zstd($0) }, 0, "\(name): lines come out of the frames")
        }
        let captures = try inputs("corpus", "capture")
        XCTAssertFalse(captures.isEmpty)
        let written = captures.reduce(0) { n, c in n + c.bytes.withUnsafeBytes { FuzzEntryPoints.capture($0) } }
        XCTAssertGreaterThan(written, 0, "the capture seeds make records")
        Soak.figure("fuzz_seeds_replayed", records.count + frames.count + captures.count)
    }

    /// Inputs that once crashed a target: each must now go through without trapping.
    func testRegressionsNoLongerCrash() throws {
        var replayed = 0
        for target in ["records", "zstd", "capture"] {
            for (_, bytes) in try inputs("regressions", target) {
                switch target {
                case "records": _ = bytes.withUnsafeBufferPointer { FuzzEntryPoints.records($0) }
                case "zstd": _ = bytes.withUnsafeBytes { FuzzEntryPoints.zstd($0) }
                default: _ = bytes.withUnsafeBytes { FuzzEntryPoints.capture($0) }
                }
                replayed += 1
            }
        }
        let listed = try ["records", "zstd", "capture"].reduce(0) { $0 + (try inputs("regressions", $1)).count }
        XCTAssertEqual(replayed, listed)
        Soak.figure("fuzz_regressions_replayed", replayed)
    }
}
