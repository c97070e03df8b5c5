import Analysis
import CallLog
import Foundation
@testable import Jobs
import TestSupport
import XCTest

/// A reader tells what it has read in parts while it reads a file, not only at its end, so that
/// the progress line moves during a run over one large file.
final class ReadProgressTests: XCTestCase {
    func testAReaderTellsItsProgressInParts() throws {
        let dir = TestPaths.temporaryDirectory("read-progress")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("events.ndjson").path
        let lines = (0..<10_000).map { n in
            LogRecord(
                kind: .event, call: "call-\(n % 10)", ts: 1_700_000_000_000 + Int64(n),
                body: ["action": "callMetric", "type": "callCreate"]
            ).jsonLine
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)

        let progress = ReadProgress()
        let queue = HandOffQueue(capacity: 2_048)
        FileReading.read(
            path: path, fingerprint: try XCTUnwrap(FileFingerprint.of(path: path)), config: AnalysisConfig(),
            pseudonymizer: nil, progress: progress, into: queue)
        // `batchBytes` of text at a time (the lines are of one length), and the rest at the end.
        let line = lines[0].utf8.count + 1
        let perBatch = (ReadProgress.batchBytes + line - 1) / line
        XCTAssertGreaterThan(lines.count / perBatch, 1)
        XCTAssertEqual(progress.batches, lines.count / perBatch + 1)
        let totals = progress.totals
        XCTAssertEqual(totals.records, lines.count)
        XCTAssertEqual(totals.textBytes, size)
        XCTAssertEqual(totals.bytesRead, size)
    }
}
