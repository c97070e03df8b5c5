@testable import Analysis
import CallLog
import MaterialScanning
import MaterialTestSupport
import Quality
import XCTest

final class IntervalMetricsTests: XCTestCase {
    /// The codec part of a MIME type is what `split(separator: "/").last` gives, however the
    /// slashes fall.
    func testCodecNameIsTheLastNonEmptyPart() {
        for mime in ["audio/opus", "opus", "audio/PCMU/8000", "audio/G722/", "//", "", "/", "a//b", "audio/opus//", "/x"] {
            XCTAssertEqual(Intervals.codecName(mime).map(String.init), mime.split(separator: "/").last.map(String.init), mime)
        }
    }

    let t0: Int64 = 1_795_000_000_000

    /// ITU worked example I1 (quality-models.md §6) through the whole path: RTT 120 ms,
    /// 60 ms jitter buffer, 3 % concealed in runs of 2.5 packets, Opus → R 78.315, MOS 3.959.
    func testWorkedExampleThroughTheAnalyser() throws {
        var a = W3CSnapshot(t: Double(t0))
        a.rttTotal = 1.2; a.rttCount = 10
        var b = a
        b.t += 10_000
        b.received = 500; b.lost = 10
        b.samples = 480_000; b.concealed = 14_400; b.events = 6
        b.jbDelay = 28_800; b.jbEmitted = 480_000
        b.rttTotal = 2.4; b.rttCount = 20; b.rtt = 0.12
        b.sent = 500
        let records = [Harness.stats("c1", a, ts: t0), Harness.stats("c1", b, ts: t0 + 10_000)]
        for deltas in [false, true] {
            let r = try Harness.analyze(records, deltas: deltas)
            let i = try XCTUnwrap(r.intervals.first { $0.streamID == "pc0:inbound:audio:1111" })
            XCTAssertEqual(i.packets, 500)
            XCTAssertEqual(i.packetsLost, 10)
            XCTAssertEqual(try XCTUnwrap(i.lossPct), 10.0 / 510 * 100, accuracy: 1e-9)
            XCTAssertEqual(try XCTUnwrap(i.jitterMs), 5, accuracy: 1e-9)
            XCTAssertEqual(try XCTUnwrap(i.rttMs), 120, accuracy: 1e-9, "ΔtotalRoundTripTime/Δmeasurements")
            XCTAssertEqual(try XCTUnwrap(i.iceRttMs), 50, accuracy: 1e-9, "ICE RTT kept apart from RTCP RTT")
            XCTAssertEqual(try XCTUnwrap(i.concealmentPct), 3, accuracy: 1e-9)
            XCTAssertEqual(try XCTUnwrap(i.jitterBufferMs), 60, accuracy: 1e-9)
            XCTAssertEqual(try XCTUnwrap(i.burstRatio), 2.425, accuracy: 1e-9)
            XCTAssertEqual(try XCTUnwrap(i.rFactor), 78.315, accuracy: 0.001)
            XCTAssertEqual(try XCTUnwrap(i.mosCQ), 3.959, accuracy: 0.001)
            XCTAssertEqual(try XCTUnwrap(i.bitrateKbps), 500 * 80 * 8 / 10 / 1000, accuracy: 1e-9)
            XCTAssertEqual(r.call.localCandidateType, "srflx")
            XCTAssertEqual(r.call.network, "wifi", "without a call record, the local candidate's network type")
            XCTAssertEqual(r.call.audioCodec, "audio/opus")
        }
    }

    /// Counters that go backwards (an SDK restart) never make a negative interval: the one across
    /// the restart counts what the restarted counters say (10 packets), and the stream's total
    /// is the intervals' sum (six of 500, the restart's 10).
    func testCounterResetIsCountedNotSubtracted() throws {
        var records: [LogRecord] = []
        var s = W3CSnapshot(t: Double(t0))
        for k in 0..<8 {
            if k == 4 { s.received = 10; s.lost = 0; s.samples = 0 } else { s.received += 500; s.lost += 2; s.samples += 480_000 }
            s.t = Double(t0 + Int64(k) * 10_000)
            records.append(Harness.stats("c2", s, ts: t0 + Int64(k) * 10_000))
        }
        let r = try Harness.analyze(records)
        let stream = try XCTUnwrap(r.streams.first { $0.direction == .inbound })
        XCTAssertEqual(stream.counterResets, 1)
        XCTAssertTrue(r.intervals.allSatisfy { ($0.packets ?? 0) >= 0 && ($0.packetsLost ?? 0) >= 0 })
        let intervals = r.intervals.filter { $0.streamID == stream.streamID }
        XCTAssertEqual(intervals.compactMap(\.packets), [500, 500, 500, 10, 500, 500, 500])
        XCTAssertEqual(intervals[3].packetsLost, 0, "lost since the restart")
        XCTAssertTrue(r.findings.contains { $0.code == "counter_reset" })
        XCTAssertEqual(stream.packets, 3010, "sum of the intervals")
    }

    /// Records read twice, or out of order, give the same analysis.
    func testDuplicatesAndOrderDoNotChangeTheResult() throws {
        var records: [LogRecord] = [.event(call: "c3", ts: t0 - 500, action: "callMetric", type: "callCreate")]
        var s = W3CSnapshot(t: Double(t0))
        for k in 0..<10 {
            s.t = Double(t0 + Int64(k) * 10_000)
            s.received += 500; s.lost += Double(k % 3); s.samples += 480_000; s.sent += 500
            records.append(Harness.stats("c3", s, ts: t0 + Int64(k) * 10_000))
        }
        records.append(.end(call: "c3", ts: t0 + 100_000, reason: "terminatedLocally"))
        let clean = try Harness.analyze(records, deltas: false)
        var messy = try Harness.material(Array(records.reversed()), deltas: false)
        messy.merge(try Harness.material(records, deltas: false))
        let again = CallAnalyzer.analyze(messy)
        XCTAssertEqual(again.intervals, clean.intervals)
        XCTAssertEqual(again.call, clean.call)
        XCTAssertEqual(again.events, clean.events)
    }

    /// Records of one instant (an SDK's burst of events; two peer connections' snapshots) are
    /// put in one order by their fields and each kept once, however they were read: reversed,
    /// and every one twice.
    func testRecordsOfOneInstantAreOrderedAndKeptOnce() throws {
        var records: [LogRecord] = []
        var s = W3CSnapshot(t: Double(t0))
        for k in 0..<3 {
            s.t = Double(t0 + Int64(k) * 10_000)
            s.received += 500; s.samples += 480_000; s.sent += 500
            for pc in ["pc1", "pc0"] {
                records.append(.stats(call: "c9", ts: t0 + Int64(k) * 10_000, format: .w3c, report: s.report, peerConnection: pc))
            }
        }
        for type in ["restSent", "callCreate", "ringing"] {
            records.append(.event(call: "c9", ts: t0 + 5_000, action: "callMetric", type: type))
        }
        records.append(.event(call: "c9", ts: t0 + 5_000, action: "iceState", type: "checking"))
        var m = try Harness.material(Array(records.reversed()), deltas: false)
        m.merge(try Harness.material(records, deltas: false))
        m.normalize()
        XCTAssertEqual(
            m.snapshots.map { "\($0.ts - t0) \($0.peerConnection)" },
            ["0 pc0", "0 pc1", "10000 pc0", "10000 pc1", "20000 pc0", "20000 pc1"])
        XCTAssertEqual(
            m.events.map { "\($0.action) \($0.type)" },
            ["callMetric callCreate", "callMetric restSent", "callMetric ringing", "iceState checking"])
    }

    /// A delta line written twice (a retried write) is a repeated snapshot: the chain goes on
    /// and the result equals the clean one. Before, the repeat broke the chain and every later
    /// snapshot of the call was skipped as "missing base".
    func testRepeatedDeltaLinesKeepTheChain() throws {
        var records: [LogRecord] = []
        var s = W3CSnapshot(t: Double(t0))
        for k in 0..<8 {
            s.t = Double(t0 + Int64(k) * 10_000)
            s.received += 500; s.lost += Double(k % 2); s.samples += 480_000; s.sent += 500
            records.append(Harness.stats("c6", s, ts: t0 + Int64(k) * 10_000))
        }
        let clean = try Harness.analyze(records, deltas: true)
        var repeated = 0
        let m = try Harness.material(records, deltas: true) { lines in
            lines.flatMap { line -> [String] in
                guard line.contains("\"delta\"") else { return [line] }
                repeated += 1
                return [line, line]
            }
        }
        XCTAssertEqual(repeated, 7, "every snapshot after the first is a delta")
        let again = CallAnalyzer.analyze(m)
        XCTAssertEqual(again.intervals, clean.intervals)
        XCTAssertEqual(again.call, clean.call)
    }

    /// Absurd inputs become "not measured", never stored as measurements.
    func testAbsurdValuesAreNotMeasurements() throws {
        var a = W3CSnapshot(t: Double(t0))
        var b = a
        b.t += 10_000; b.received = 500; b.jitter = 3600  // an hour of jitter
        b.rtt = -1; b.rttTotal = 0; b.rttCount = 0
        a.jitter = 1e308
        let r = try Harness.analyze([Harness.stats("c4", a, ts: t0), Harness.stats("c4", b, ts: t0 + 10_000)])
        let i = try XCTUnwrap(r.intervals.first { $0.streamID.contains("inbound") })
        XCTAssertNil(i.jitterMs)
        XCTAssertNil(i.rttMs)
        XCTAssertEqual(i.packets, 500)
    }
}
