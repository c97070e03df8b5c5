import Analysis
import CallLog
import Foundation
import TestSupport
import XCTest

@testable import Collector

/// The collector where the platform has no zstd (iOS): gzip logs, forced here on Linux by the
/// configuration, must be as safe and give the same analysis as zstd logs.
final class GzipCollectorTests: XCTestCase {
    /// The shared Chromium recording through the agent, once per compression: the same calls,
    /// streams, intervals and findings.
    func testGzipLogsAnalyseLikeZstdLogs() throws {
        let rec = try Recording.load()
        var analyses: [LogCompression: [String: CallAnalysis]] = [:]
        for compression in [LogCompression.zstd, .gzip] {
            let dir = Logs.directory("collector-\(compression)")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            _ = AdapterTests.recordThroughAgent(rec, configuration: { $0.compression = compression }, dir: dir)
            let names = try FileManager.default.contentsOfDirectory(atPath: dir)
            XCTAssertFalse(names.isEmpty)
            for name in names { XCTAssertTrue(name.hasSuffix(compression.fileSuffix), "\(name) written with \(compression)") }
            analyses[compression] = try Logs.analyze(dir)
        }
        let zstd = try XCTUnwrap(analyses[.zstd]), gzip = try XCTUnwrap(analyses[.gzip])
        XCTAssertEqual(Set(zstd.keys), ["chromium-a", "chromium-b"])
        XCTAssertEqual(Set(gzip.keys), Set(zstd.keys))
        for (id, z) in zstd {
            let g = try XCTUnwrap(gzip[id])
            XCTAssertEqual(g.call, z.call, id)
            XCTAssertEqual(g.streams, z.streams, id)
            XCTAssertEqual(g.intervals, z.intervals, id)
            XCTAssertEqual(g.findings.map(\.code), z.findings.map(\.code), id)
            XCTAssertNotNil(g.call.mosCQ, "\(id) was scored")
        }
    }

    /// A gzip log cut at any byte (the app killed mid-write) yields a prefix of its records that
    /// holds at least every member completed before the cut, and nothing altered.
    func testCutGzipLogYieldsEveryCompletedMember() throws {
        let rec = try Recording.load()
        let dir = Logs.directory("collector-gzip-cut")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = AdapterTests.recordThroughAgent(rec, configuration: { $0.compression = .gzip }, dir: dir)
        let file = try XCTUnwrap(Logs.files(dir).first)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        /// The lines a reader hands out (records as written, deltas unresolved), and its issues.
        func lines(_ path: String) -> (lines: [[UInt8]], issues: [LogIssue]) {
            var lines: [[UInt8]] = [], issues: [LogIssue] = []
            LogLineReader(path: path).forEachLine({ line, _ in lines.append(Array(line)) }, issue: { issues.append($0) })
            return (lines, issues)
        }
        let (whole, wholeIssues) = lines(file)
        XCTAssertEqual(wholeIssues, [])
        // Where each member ends, and how many records the members up to it hold.
        var memberEnds: [Int] = []
        _ = GzipDecoder.decompressAll(bytes, memberEnded: { memberEnds.append($0) })
        XCTAssertGreaterThan(memberEnds.count, 10, "one member per flush")
        XCTAssertEqual(memberEnds.last, bytes.count)
        /// The records in the members that end at or before `cut`.
        func recordsInMembers(before cut: Int) throws -> Int {
            guard let end = memberEnds.last(where: { $0 <= cut }) else { return 0 }
            let prefix = dir + "/prefix.ndjson.gz"
            try Data(bytes.prefix(end)).write(to: URL(fileURLWithPath: prefix))
            return lines(prefix).lines.count
        }
        let cutPath = dir + "/cut.ndjson.gz"
        var previous = 0
        for cut in stride(from: 0, to: bytes.count, by: max(1, bytes.count / 60)) {
            try Data(bytes.prefix(cut)).write(to: URL(fileURLWithPath: cutPath))
            let (read, issues) = lines(cutPath)
            let complete = try recordsInMembers(before: cut)
            XCTAssertGreaterThanOrEqual(read.count, complete, "cut at \(cut)")
            XCTAssertGreaterThanOrEqual(read.count, previous, "cut at \(cut)")
            XCTAssertTrue(read == Array(whole.prefix(read.count)), "cut at \(cut): not a prefix of the file's lines")
            XCTAssertFalse(issues.contains { $0.category == .invalidRecord || $0.category == .damagedFrame }, "cut at \(cut): \(issues)")
            previous = read.count
        }
    }
}
