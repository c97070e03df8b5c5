import CallLog
import Foundation
import TestSupport
import XCTest

@testable import Importers

/// Small dumps made to hurt the importer: each must end at once with its records bounded
/// (`ImportBounds`), a clear error or a note, in bounded memory, never a crash or a spin.
final class HostileDumpTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("hostile-dump") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// Writes `parts` one after another into `name`, then compresses it with `compressor`
    /// (`gzip` or `zstd`) when given; returns the path read.
    func dump(_ name: String, _ parts: [String], repeating middle: (String, Int)? = nil, tail: [String] = [], compressor: String? = nil) throws
        -> String
    {
        let path = dir.appendingPathComponent(name).path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil))
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        for p in parts { h.write(Data(p.utf8)) }
        if let (unit, count) = middle {
            // In blocks of about 1 MiB, so that writing is quick and small.
            let per = max(1, (1 << 20) / max(unit.utf8.count, 1))
            let block = Data(String(repeating: unit, count: per).utf8)
            var left = count
            while left >= per {
                h.write(block)
                left -= per
            }
            h.write(Data(String(repeating: unit, count: left).utf8))
        }
        for p in tail { h.write(Data(p.utf8)) }
        try h.close()
        guard let compressor else { return path }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = compressor == "zstd" ? ["zstd", "-q", "-f", "--rm", path] : ["gzip", "-f", path]
        try p.run()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        return path + (compressor == "zstd" ? ".zst" : ".gz")
    }

    /// Imports `path` on another thread and waits at most `seconds`: a spin fails the test
    /// instead of hanging it. Returns the result, the records written, the wall time and how
    /// much the peak resident size grew.
    func run(_ path: String, within seconds: Double) throws -> (DumpImport.Result, [LogRecord.Kind: Int], Double, Int) {
        try "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)  // resets the peak
        let before = Self.residentPeak()
        let done = DispatchSemaphore(value: 0)
        final class Box: @unchecked Sendable {
            var result: DumpImport.Result?
            var kinds: [LogRecord.Kind: Int] = [:]
        }
        let box = Box()
        let start = Date()
        Thread.detachNewThread {
            box.result = DumpImport(path: path).run { r in box.kinds[r.kind, default: 0] += 1 }
            done.signal()
        }
        guard done.wait(timeout: .now() + seconds) == .success else {
            XCTFail("importing \(path) did not end within \(seconds) s")
            throw XCTSkip("the import is still running")
        }
        return (try XCTUnwrap(box.result), box.kinds, Date().timeIntervalSince(start), Self.residentPeak() - before)
    }

    static func residentPeak() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    /// Arrays or objects nested 20,000 deep in a peer connection's member (one the importer
    /// steps over) overflowed the stack; now the read stops at the 65th level with an error
    /// naming the file, line and byte, as deep nesting in a value it keeps always did.
    func testDeepNestingIsAnErrorAtItsPlaceNotACrash() throws {
        for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
            let head = "{\n \"PeerConnections\": {\n  \"1-1\": {\"constraints\": "
            let path = try dump(
                "deep\(open == "[" ? "array" : "object").txt", [head, String(repeating: open, count: 20_000)],
                tail: [String(repeating: close, count: 20_000), "}}}\n"])
            let (result, kinds, seconds, _) = try run(path, within: 10)
            let failure = try XCTUnwrap(result.failure, "\(kinds)")
            XCTAssertEqual(failure.file, path)
            XCTAssertEqual(failure.line, 3)
            // The 65th opening bracket: the byte after the head and 64 levels.
            let byte = head.utf8.count + 64 * open.utf8.count + 1
            XCTAssertEqual(failure.message, "nesting deeper than 64 levels at byte \(byte)")
            XCTAssertLessThan(seconds, 1)
        }
    }

    /// 1,100,000 spaces before a `}` (1 KB gzipped) made the first MiB, which tells the format,
    /// end in spaces, and trimming them took time with the square of their number: every byte
    /// is now stepped over once, as 1,000,000 spaces (all in the first MiB) always were.
    func testMillionsOfSpacesAreReadInLinearTime() throws {
        for spaces in [1_000_000, 1_100_000] {
            let path = try dump(
                "spaces\(spaces).txt", ["{\"PeerConnections\": {"], repeating: (" ", spaces), tail: ["}, \"UserAgent\": \"x\"}\n"],
                compressor: "gzip")
            let (result, _, seconds, _) = try run(path, within: 10)
            XCTAssertEqual(result.failure?.message, "the dump has no peer connection, statistics or getUserMedia call", "\(spaces)")
            XCTAssertEqual(result.format, .webrtcInternals)
            // Well under a second in a release build; a debug build reads the first MiB byte by
            // byte in about 1.5 s. The square took hours.
            XCTAssertLessThan(seconds, 5, "\(spaces) spaces")
        }
    }

    /// A zstd (and a gzip) bomb: a few KB expanding to an `updateLog` of 150,000 entries. The trace's first `maximumTraceEntries` are kept, the rest stepped over and
    /// said, and memory stays far below what holding the whole trace took.
    func testUpdateLogBombIsCutAtTheBound() throws {
        let entry = #"{"timestamp":1700000000000,"type":"iceconnectionstatechange","value":"\"checking\""},"#
        for compressor in ["zstd", "gzip"] {
            let path = try dump(
                "bomb.txt", ["{\"PeerConnections\": {\"5-1\": {\"updateLog\": ["], repeating: (entry, 150_000),
                tail: [#"{"timestamp":1700000000000,"type":"iceconnectionstatechange","value":"\"connected\""}]}}}"#, "\n"], compressor: compressor)
            let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            XCTAssertLessThan(size, 1 << 20)
            let (result, kinds, seconds, growth) = try run(path, within: 30)
            print("\(compressor) updateLog bomb: \(size >> 10) KiB, \(seconds) s, peak resident size grew \(growth >> 20) MiB")
            XCTAssertEqual(result.peerConnections, 1)
            XCTAssertTrue(
                result.notes.contains(
                    "peer connection 5-1: its updateLog is longer than 100000 entries or 64 MiB (the most a dump's trace gives): 50001 later entries left out"),
                "\(result.notes)")
            XCTAssertEqual(kinds[.event], 100_000)
            XCTAssertEqual(kinds[.call], 1)
            // Without the bound every entry is held until the peer connection ends.
            XCTAssertLessThan(growth, 150 << 20, "peak grew \(growth >> 20) MiB")
        }
    }

    /// One series of 10,000,000 values (and its timestamps): its first `maximumSeriesValues`
    /// become snapshots, the rest are left out and said, in bounded memory (the whole series
    /// took 888 MB).
    func testTenMillionValueSeriesIsCut() throws {
        let n = 10_000_000
        let path = try dump(
            "series.txt",
            [
                "{\"PeerConnections\": {\"5-1\": {\"stats\": {",
                "\"P-timestamp\": {\"statsType\": \"peer-connection\", \"values\": \"[",
            ], repeating: ("1,", n - 1),
            tail: [
                "1]\"}, \"P-dataChannelsOpened\": {\"statsType\": \"peer-connection\", \"values\": \"[",
                String(repeating: "1,", count: 10), "1]\"}}}}}\n",
            ], compressor: "zstd")
        let (result, kinds, seconds, growth) = try run(path, within: 30)
        print("10-million-value series: \(seconds) s, peak resident size grew \(growth >> 20) MiB")
        XCTAssertNil(result.failure)
        XCTAssertTrue(
            result.notes.contains("peer connection 5-1: series P-timestamp has more than 100000 values: the later ones left out"), "\(result.notes)")
        // One snapshot per distinct sample time: all share one time, so one grid point.
        XCTAssertLessThanOrEqual(kinds[.stats] ?? 0, ImportBounds.maximumRecordsPerCall)
        XCTAssertLessThan(growth, 400 << 20, "peak grew \(growth >> 20) MiB")
    }
}
