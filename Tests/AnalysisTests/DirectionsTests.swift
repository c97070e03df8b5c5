@testable import Analysis
import CallLog
import Foundation
import Importers
import MaterialScanning
import MaterialTestSupport
import Quality
import TestSupport
import XCTest

/// Both directions of a call scored, and delay blamed on what caused it, on the real Chromium
/// recording (30 ms each way plus 0-10 ms, 2 % random loss each way).
final class DirectionsTests: XCTestCase {
    func records() throws -> [LogRecord] {
        guard let url = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is absent") }
        return ChromiumImporter().convert(path: url.path).records
    }

    /// Each side's sent audio is scored from what the other side reported receiving
    /// (`remote-inbound-rtp`): the E-model computed here from the recording's own values, interval
    /// by interval (remote loss against packets sent, round trip from its totals, the far end's
    /// jitter buffer taken as the 40 ms default, packet time 20 ms, device allowance 20 ms), then
    /// weighted by time, equals the stream's and the call's stored figures.
    func testSentAudioIsScoredFromTheFarEndsReports() throws {
        guard let url = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is absent") }
        let recording = try ChromiumRecording(url: url)
        let analysis = try Harness.analyze(try records())
        let config = AnalysisConfig()
        var allSum = 0.0, allWeight = 0.0, allLost = 0.0, allSent = 0.0
        for side in ["a", "b"] {
            // (time, packetsSent, remote packetsLost, totalRoundTripTime, measurements, the last
            // roundTripTime, else the selected candidate pair's: Chromium measures audio's RTCP
            // round trip every 5 s or so, and not before the first sender report came back)
            var points: [(t: Int64, sent: Double, lost: Double, total: Double, count: Double, rtt: Double)] = []
            for s in recording.snapshots where s.side == side {
                func object(_ type: String, _ match: (JSONValue) -> Bool = { _ in true }) -> JSONValue? {
                    s.stats.first { $0["type"]?.stringValue == type && match($0) }
                }
                guard let out = object("outbound-rtp", { $0["kind"]?.stringValue == "audio" }), let ssrc = out["ssrc"]?.doubleValue,
                    let ri = object("remote-inbound-rtp", { $0["ssrc"]?.doubleValue == ssrc }),
                    let sent = out["packetsSent"]?.doubleValue, let lost = ri["packetsLost"]?.doubleValue
                else { continue }
                let pairID = object("transport")?["selectedCandidatePairId"]?.stringValue
                let pairRTT = object("candidate-pair", { $0["id"]?.stringValue == pairID })?["currentRoundTripTime"]?.doubleValue
                points.append(
                    (
                        s.time, sent, lost, ri["totalRoundTripTime"]?.doubleValue ?? .nan,
                        ri["roundTripTimeMeasurements"]?.doubleValue ?? .nan, ri["roundTripTime"]?.doubleValue ?? pairRTT ?? 0
                    ))
            }
            XCTAssertGreaterThan(points.count, 50, "side \(side) has remote reports about its audio")
            var sum = 0.0, weight = 0.0, lowest = Double.infinity
            for (p, q) in zip(points, points.dropFirst()) {
                let dp = q.sent - p.sent, lost = max(0, q.lost - p.lost)
                guard dp > 0 else { continue }
                let loss = min(100, 100 * lost / dp)  // lost ÷ sent: packetsSent counts the lost ones
                let rttMs = q.count > p.count && q.total >= p.total ? 1000 * (q.total - p.total) / (q.count - p.count) : 1000 * q.rtt
                let ta = rttMs / 2 + 40 + 20 + 20
                let mos = EModel.voip(oneWayDelayMs: ta, packetLossPercent: loss, burstRatio: 1, codec: .opus).conversationalMOS
                let dt = Double(q.t - p.t)
                sum += mos * dt
                weight += dt
                lowest = min(lowest, mos)
                allLost += lost
                allSent += dp
            }
            allSum += sum
            allWeight += weight
            let stream = try XCTUnwrap(analysis.streams.first { $0.streamID.hasPrefix("\(side):outbound:audio") })
            XCTAssertEqual(stream.scoreSource, "remote_report")
            XCTAssertEqual(try XCTUnwrap(stream.mosMean, "side \(side)"), sum / weight, accuracy: 1e-9)
            XCTAssertEqual(try XCTUnwrap(stream.mosMin), lowest, accuracy: 1e-9)
            // 2 % loss and a 70 ms round trip: about 4.1, as the received direction.
            XCTAssertEqual(sum / weight, 4.1, accuracy: 0.15)
            let inbound = try XCTUnwrap(analysis.streams.first { $0.streamID.hasPrefix("\(side):inbound:audio") })
            XCTAssertEqual(inbound.scoreSource, "local")
        }
        XCTAssertEqual(config.farEndJitterBufferMs, 40)
        let c = analysis.call
        XCTAssertEqual(try XCTUnwrap(c.mosCQSent), allSum / allWeight, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(c.lossPctSent), 100 * allLost / allSent, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(c.lossPctSent), 2, accuracy: 1)
        XCTAssertNotNil(c.mosWorstSent)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(c.mosLQSent), try XCTUnwrap(c.mosCQSent))
        XCTAssertNotNil(c.jitterMsSent)
    }

    /// A sent direction that is bad while the received one is fine makes the call poor, and the
    /// reason says it is the sent direction: the far end reports 20 % loss of what this end sent.
    func testABadSentDirectionGradesTheCallAndIsNamed() throws {
        var s = W3CSnapshot(t: 1_795_000_000_000)
        var records: [LogRecord] = []
        for k in 0..<12 {
            let ts: Int64 = 1_795_000_000_000 + Int64(k) * 10_000
            s.t = Double(ts)
            s.received += 500; s.samples += 480_000
            s.sent += 500; s.remoteLost += 100
            s.rttTotal += 0.1; s.rttCount += 2; s.rtt = 0.05
            records.append(Harness.stats("sent-bad", s, ts: ts))
        }
        let r = try Harness.analyze(records)
        let c = r.call
        // Received: no loss, 50 ms round trip. Sent: 20 % loss, by hand.
        let sent = EModel.voip(oneWayDelayMs: 25 + 40 + 20 + 20, packetLossPercent: 20, burstRatio: 1, codec: .opus)
        XCTAssertEqual(try XCTUnwrap(c.mosCQSent), sent.conversationalMOS, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(c.mosWorstSent), sent.conversationalMOS, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(c.lossPctSent), 20, accuracy: 1e-9)
        XCTAssertGreaterThan(try XCTUnwrap(c.mosWorst), 4)
        XCTAssertEqual(c.grade, .poor)
        XCTAssertTrue(
            c.gradeReason.hasPrefix("sent audio MOS \(FixedText.decimal(sent.conversationalMOS, places: 2)) sustained (far end's reports)"),
            c.gradeReason)
        XCTAssertFalse(c.gradeReason.contains("received"), c.gradeReason)
    }

    /// The case of a real Chromium call over a symmetric 200 ms path: the side that receives
    /// video raised its audio jitter buffer from 46 to 326 ms for lip sync, so it hears later and
    /// worse, while the round trip (416 ms) is the same for both. Reproduced on the recording:
    /// every round trip set to 416 ms, side b's audio jitter buffer to 326 ms and side a's to
    /// 46 ms, each side its own leg.
    func testPlayoutDelayIsNamedWhereItDominatesTheDelay() throws {
        var all = try records()
        RecordingLegs.editReports(&all) { o in
            switch o["type"]?.stringValue {
            case "remote-inbound-rtp":
                o["roundTripTime"] = 0.416
                if let n = o["roundTripTimeMeasurements"]?.doubleValue { o["totalRoundTripTime"] = .number(0.416 * n) }
            case "candidate-pair":
                if o["currentRoundTripTime"] != nil { o["currentRoundTripTime"] = 0.416 }
            default: break
            }
        }
        for (side, jb) in [("a", 0.046), ("b", 0.326)] {
            RecordingLegs.editReports(&all, side: side) { o in
                guard o["type"]?.stringValue == "inbound-rtp", o["kind"]?.stringValue == "audio",
                    let n = o["jitterBufferEmittedCount"]?.doubleValue
                else { return }
                o["jitterBufferDelay"] = .number(jb * n)
            }
        }
        let legs = RecordingLegs.split(all, a: "leg-a", b: "leg-b")
        let a = try Harness.analyze(legs.a), b = try Harness.analyze(legs.b)
        for leg in [a, b] { XCTAssertEqual(try XCTUnwrap(leg.call.rttMs), 416, accuracy: 0.5) }
        XCTAssertEqual(try XCTUnwrap(a.call.jitterBufferMs), 46, accuracy: 0.5)
        XCTAssertEqual(try XCTUnwrap(b.call.jitterBufferMs), 326, accuracy: 0.5)

        // Mouth-to-ear: 208 ms network + the buffer + 40 ms packetisation.
        for (leg, ta) in [(a, 208.0 + 46 + 40), (b, 208.0 + 326 + 40)] {
            let expected = EModel.voip(
                oneWayDelayMs: ta, packetLossPercent: try XCTUnwrap(leg.call.concealmentPct), burstRatio: 1, codec: .opus)
            XCTAssertEqual(try XCTUnwrap(leg.call.mosCQ), expected.conversationalMOS, accuracy: 0.05, leg.call.callID)
        }
        XCTAssertLessThan(try XCTUnwrap(b.call.mosCQ), 3.1)
        XCTAssertGreaterThan(try XCTUnwrap(a.call.mosCQ), try XCTUnwrap(b.call.mosCQ) + 0.8)

        let playout = b.findings.filter { $0.code == "playout_delay" }
        XCTAssertEqual(playout.count, 1, "\(b.findings.map(\.code))")
        XCTAssertEqual(try XCTUnwrap(playout.first?.value), 326, accuracy: 1)
        XCTAssertEqual(playout.first?.severity, .warn)
        XCTAssertGreaterThan(try XCTUnwrap(playout.first?.durationMs), 50_000)
        XCTAssertFalse(a.findings.contains { $0.code == "playout_delay" }, "46 ms is less than the network's 208")

        XCTAssertEqual(b.call.grade, .poor)
        XCTAssertTrue(
            b.call.gradeReason.hasPrefix("received audio MOS \(FixedText.decimal(try XCTUnwrap(b.call.mosWorst), places: 2)) sustained, delay ")
                && b.call.gradeReason.contains(" ms mostly jitter buffer (326 ms)"), b.call.gradeReason)
        // The other side's delay is mostly the network's: the same round trip, a small buffer.
        XCTAssertTrue(a.call.gradeReason.contains(" sustained, delay 294 ms mostly network one-way (208 ms)"), a.call.gradeReason)
        XCTAssertFalse(a.call.gradeReason.contains("jitter buffer"), a.call.gradeReason)
    }

    /// When the network is the larger part of a bad call's delay, the reason says so.
    func testTheNetworkIsNamedWhenItIsTheLargestDelay() throws {
        var all = try records()
        RecordingLegs.editReports(&all) { o in
            if o["type"]?.stringValue == "remote-inbound-rtp" {
                o["roundTripTime"] = 0.9
                if let n = o["roundTripTimeMeasurements"]?.doubleValue { o["totalRoundTripTime"] = .number(0.9 * n) }
            }
        }
        let a = try Harness.analyze(RecordingLegs.split(all, a: "far-a", b: "far-b").a)
        XCTAssertEqual(a.call.grade, .poor)
        XCTAssertTrue(a.call.gradeReason.contains(" ms mostly network one-way (450 ms)"), a.call.gradeReason)
        XCTAssertFalse(a.findings.contains { $0.code == "playout_delay" })
    }
}
