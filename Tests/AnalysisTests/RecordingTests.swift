import Analysis
import CallLog
import Foundation
import Importers
import MaterialScanning
import MaterialTestSupport
import Simulator
import TestSupport
import XCTest

/// The real Chromium call (30 ms one-way delay + 0-10 ms jitter each way, 2 % random loss each
/// way), converted to log format v1 and analysed.
final class RecordingTests: XCTestCase {
    func records() throws -> [LogRecord] {
        guard let url = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is absent") }
        return ChromiumImporter().convert(path: url.path).records
    }

    func testRelayImpairmentIsMeasured() throws {
        let r = try Harness.analyze(try records())
        let c = r.call
        // Round trip: 2 × 30 ms + mean extra jitter (2 × 5 ms) = 70 ms.
        XCTAssertEqual(try XCTUnwrap(c.rttMs), 70, accuracy: 5)
        XCTAssertEqual(try XCTUnwrap(c.iceRttMs), 70, accuracy: 5)
        for side in ["a", "b"] {
            let audio = try XCTUnwrap(r.streams.first { $0.streamID.hasPrefix("\(side):inbound:audio") })
            XCTAssertEqual(try XCTUnwrap(audio.lossPct), 2, accuracy: 1, "side \(side) inbound audio loss")
        }
        let video = try XCTUnwrap(r.streams.first { $0.streamID.hasPrefix("b:inbound:video") })
        XCTAssertEqual(try XCTUnwrap(video.lossPct), 2, accuracy: 1)
        XCTAssertEqual(video.widthMax, 640)
        // Opus with ~2 % concealed and ~45 ms one-way: G.107 gives MOS-CQ ≈ 4.15.
        XCTAssertEqual(try XCTUnwrap(c.mosCQ), 4.15, accuracy: 0.1)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(c.mosLQ), try XCTUnwrap(c.mosCQ))
        XCTAssertNotNil(c.videoScore)
        XCTAssertNil(c.clockSkewMs, "the agent and stats clocks agree in the recording")
        // Sustained 2 % loss is a warning, not a poor call.
        XCTAssertEqual(c.grade, .fair)
        XCTAssertTrue(r.findings.contains { $0.code == "high_loss" && $0.severity == .warn && $0.durationMs > 50_000 })
        XCTAssertFalse(r.findings.contains { $0.severity == .poor })
    }

    /// The delta-encoded log gives exactly the analysis of the full snapshots.
    func testDeltasAndFullSnapshotsAgree() throws {
        let recs = try records()
        let full = try Harness.analyze(recs, deltas: false)
        let delta = try Harness.analyze(recs, deltas: true)
        XCTAssertEqual(delta.call, full.call)
        XCTAssertEqual(delta.streams, full.streams)
        XCTAssertEqual(delta.intervals.count, full.intervals.count)
        for (a, b) in zip(delta.intervals, full.intervals) {
            XCTAssertEqual(a.packets, b.packets)
            XCTAssertEqual(a.packetsLost, b.packetsLost)
            XCTAssertEqual(a.mosCQ ?? -1, b.mosCQ ?? -1, accuracy: 1e-9)
            XCTAssertEqual(a.rttMs ?? -1, b.rttMs ?? -1, accuracy: 1e-9)
        }
    }
}

/// The benchmark's real-shaped corpus: calls made from the recording, each with its own id,
/// start and traffic, that still analyse like the recorded call.
final class RecordingFleetTests: XCTestCase {
    func testCopiesDifferInBytesButKeepTheReportsShapeAndTheirLoss() throws {
        guard let url = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is absent") }
        let original = ChromiumImporter().convert(path: url.path).records
        let fleet = RecordingFleet(records: original, seed: 5)
        let first = fleet.call(3, id: "copy-3"), second = fleet.call(4, id: "copy-4")
        XCTAssertEqual(first, fleet.call(3, id: "copy-3"), "one seed, one corpus")
        XCTAssertEqual(first.count, original.count)
        XCTAssertTrue(first.allSatisfy { $0.call == "copy-3" })

        func reports(_ records: [LogRecord]) -> [[JSONValue]] {
            records.filter { $0.kind == .stats }.map { $0["report"]?.arrayValue ?? [] }
        }
        var differing = 0
        for (a, (b, o)) in zip(reports(first), zip(reports(second), reports(original))) {
            // The same objects and members, in the same order; ids and SSRCs untouched.
            XCTAssertEqual(a.map { $0.objectValue?.keys ?? [] }, o.map { $0.objectValue?.keys ?? [] })
            XCTAssertEqual(a.map { $0["id"] }, o.map { $0["id"] })
            XCTAssertEqual(a.map { $0["ssrc"] }, o.map { $0["ssrc"] })
            if a != b { differing += 1 }
        }
        XCTAssertEqual(differing, reports(first).count, "every report differs from the other copy's")

        // Counters still only grow, and loss (a ratio of two scaled counters) stays the recording's.
        let received = reports(first.filter { $0["pc"]?.stringValue == "a" }).compactMap {
            $0.first { $0["type"]?.stringValue == "inbound-rtp" && $0["kind"]?.stringValue == "audio" }?["packetsReceived"]?.doubleValue
        }
        XCTAssertGreaterThan(received.count, 50)
        XCTAssertEqual(received, received.sorted())
        let copy = try Harness.analyze(first), recorded = try Harness.analyze(original)
        XCTAssertEqual(copy.streams.map(\.streamID), recorded.streams.map(\.streamID))
        for (s, r) in zip(copy.streams, recorded.streams) {
            XCTAssertEqual(s.lossPct ?? -1, r.lossPct ?? -1, accuracy: 0.05, s.streamID)
        }
        XCTAssertNotEqual(copy.call.startTs, recorded.call.startTs)
        XCTAssertEqual(copy.call.durationMs, recorded.call.durationMs)
    }
}
