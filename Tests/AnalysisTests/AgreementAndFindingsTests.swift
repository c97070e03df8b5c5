import Analysis
import CallLog
import MaterialScanning
import MaterialTestSupport
import XCTest

final class AgreementAndFindingsTests: XCTestCase {
    let t0: Int64 = 1_795_000_000_000

    /// The legacy report of the same call (values as strings, jitter and RTT in ms) gives the
    /// same loss, jitter and RTT as its W3C report.
    func testW3CAndGoogAgree() throws {
        var w3c: [LogRecord] = [], goog: [LogRecord] = []
        var s = W3CSnapshot(t: Double(t0))
        for k in 0..<7 {
            let ts = t0 + Int64(k) * 10_000
            s.t = Double(ts)
            s.received += 500 - Double(k * 3); s.lost += Double(k * 3); s.sent += 500
            s.jitter = 0.004 + Double(k) / 1000
            s.rtt = 0.08 + Double(k) / 100
            w3c.append(Harness.stats("w", s, ts: ts))
            let recv: JSONValue = [
                "id": "ssrc_1111_recv", "type": "ssrc", "timestamp": .number(s.t),
                "values": .object([
                    "packetsReceived": .string(String(Int(s.received))), "packetsLost": .string(String(Int(s.lost))),
                    "bytesReceived": .string(String(Int(s.received * 80))), "ssrc": "1111", "googCodecName": "opus",
                    "googJitterReceived": .string(String(Int((s.jitter * 1000).rounded()))),
                ]),
            ]
            let send: JSONValue = [
                "id": "ssrc_2222_send", "type": "ssrc", "timestamp": .number(s.t),
                "values": .object([
                    "packetsSent": .string(String(Int(s.sent))), "bytesSent": .string(String(Int(s.sent * 80))), "ssrc": "2222",
                    "googCodecName": "opus", "googRtt": .string(String(Int((s.rtt * 1000).rounded()))), "packetsLost": "0",
                ]),
            ]
            let pair: JSONValue = [
                "id": "Conn-audio-1-0", "type": "googCandidatePair", "timestamp": .number(s.t),
                "values": [
                    "googActiveConnection": "true", "googRtt": "50", "googLocalCandidateType": "stun",
                    "googRemoteCandidateType": "local", "googTransportType": "udp",
                ],
            ]
            goog.append(.stats(call: "g", ts: ts, format: .goog, report: [recv, send, pair], peerConnection: "pc0"))
        }
        let a = try Harness.analyze(w3c), b = try Harness.analyze(goog)
        let ia = a.intervals.filter { $0.streamID.contains("inbound") }, ib = b.intervals.filter { $0.streamID.contains("inbound") }
        XCTAssertEqual(ia.count, 6)
        XCTAssertEqual(ib.count, 6)
        for (x, y) in zip(ia, ib) {
            XCTAssertEqual(x.packets, y.packets)
            XCTAssertEqual(x.packetsLost, y.packetsLost)
            XCTAssertEqual(try XCTUnwrap(x.lossPct), try XCTUnwrap(y.lossPct), accuracy: 1e-9)
            XCTAssertEqual(try XCTUnwrap(x.jitterMs), try XCTUnwrap(y.jitterMs), accuracy: 0.5)
            // W3C RTT is Δtotal/Δcount; the legacy latest value is what we compare it with here.
            XCTAssertEqual(try XCTUnwrap(y.rttMs), (0.08 + Double(ia.firstIndex(of: x)! + 1) / 100) * 1000, accuracy: 0.5)
            XCTAssertEqual(try XCTUnwrap(x.iceRttMs), try XCTUnwrap(y.iceRttMs), accuracy: 1e-9)
        }
        XCTAssertEqual(a.call.lossPct!, b.call.lossPct!, accuracy: 1e-9)
        XCTAssertEqual(a.call.localCandidateType, b.call.localCandidateType)
        XCTAssertEqual(b.call.source, "goog")
        XCTAssertEqual(a.call.source, "w3c")
    }

    /// Loss per 10 s interval: one bad interval raises nothing; three in a row do, with their span.
    func testFindingsNeedPersistence() throws {
        func call(_ lossy: Set<Int>) throws -> CallAnalysis { try Harness.lossyCall(lossy, id: "p", t0: t0) }
        let blip = try call([5])
        XCTAssertFalse(blip.findings.contains { $0.code == "high_loss" })
        XCTAssertEqual(blip.call.grade, .good)

        let sustained = try call([5, 6, 7])
        let f = try XCTUnwrap(sustained.findings.first { $0.code == "high_loss" })
        XCTAssertEqual(f.severity, .poor)
        XCTAssertEqual(f.startTs, t0 + 40_000, "the first lossy interval ends at snapshot 5")
        XCTAssertEqual(f.durationMs, 30_000)
        XCTAssertEqual(try XCTUnwrap(f.value), 40.0 / 500 * 100, accuracy: 1e-9)
        XCTAssertEqual(sustained.call.grade, .poor)
    }

    /// The call's worst MOS is its worst sustained run (three windows), not its worst sample:
    /// one lossy interval moves it a third as far as three in a row.
    func testWorstMOSIsTheWorstRunOfThreeWindows() throws {
        func call(_ lossy: Set<Int>) throws -> CallAnalysis { try Harness.lossyCall(lossy, id: "w", t0: t0) }
        for lossy in [Set([5]), Set([5, 6, 7])] {
            let r = try call(lossy)
            // Snapshots 10 s apart: each interval is one window.
            let mos = r.intervals.filter { $0.streamID.contains(":inbound:audio:") }.sorted { $0.startTs < $1.startTs }.compactMap(\.mosCQ)
            XCTAssertEqual(mos.count, 11)
            let runs = (0...(mos.count - 3)).map { mos[$0..<($0 + 3)].reduce(0, +) / 3 }
            let worst = try XCTUnwrap(r.call.mosWorst, "\(lossy)")
            XCTAssertEqual(worst, runs.min()!, accuracy: 1e-12, "\(lossy)")
            XCTAssertLessThan(worst, try XCTUnwrap(r.call.mosCQ), "\(lossy)")
            if lossy.count == 1 {
                XCTAssertGreaterThan(worst, mos.min()! + 0.01, "a run of three, not the one lossy sample")
            } else {
                XCTAssertEqual(worst, mos.min()!, accuracy: 1e-9, "three lossy samples in a row")
            }
        }
    }

    /// Severity counts each window once: one very lossy window inside a mildly lossy episode
    /// does not make the episode poor.
    func testOnePoorWindowDoesNotMakeAnEpisodePoor() throws {
        var s = W3CSnapshot(t: Double(t0))
        var records: [LogRecord] = []
        // Of 500 packets: 3 % in windows 3-8, except 8 % in window 4.
        let lossByInterval: [Int: Double] = [3: 15, 4: 40, 5: 15, 6: 15, 7: 15, 8: 15]
        for k in 0..<12 {
            let ts = t0 + Int64(k) * 10_000
            s.t = Double(ts)
            let lost = lossByInterval[k] ?? 0
            s.received += 500 - lost; s.lost += lost; s.sent += 500
            records.append(Harness.stats("m", s, ts: ts))
        }
        let r = try Harness.analyze(records)
        let f = try XCTUnwrap(r.findings.first { $0.code == "high_loss" })
        XCTAssertEqual(f.severity, .warn)
        XCTAssertEqual(try XCTUnwrap(f.value), 8, accuracy: 1e-9)
        XCTAssertEqual(r.call.grade, .fair)
    }

    /// One-way audio: we keep sending, nothing arrives.
    func testOneWayAudio() throws {
        var s = W3CSnapshot(t: Double(t0))
        var records: [LogRecord] = []
        for k in 0..<10 {
            let ts = t0 + Int64(k) * 10_000
            s.t = Double(ts)
            if k < 3 { s.received += 500 }
            s.sent += 500
            records.append(Harness.stats("o", s, ts: ts))
        }
        let r = try Harness.analyze(records)
        let f = try XCTUnwrap(r.findings.first { $0.code == "one_way_audio" })
        XCTAssertEqual(f.startTs, t0 + 20_000, "the interval from snapshot 2 to 3 is the first with nothing received")
        XCTAssertEqual(r.call.grade, .poor)
    }
}
