import Analysis
import CallLog
import Capture
import Foundation
import MaterialScanning
import MaterialTestSupport
import TestSupport
import XCTest

/// Captures built packet by packet, run through the real capture and the analyser as `callstats
/// capture` and `callstats analyze` run them (records written to a log, read back, analysed).
/// Every figure expected is counted by hand from the packets sent.
final class CapturedCallTests: XCTestCase {
    /// Epoch nanoseconds on a 10-s boundary, where capture intervals start.
    static let t0: Int64 = 1_700_000_000_000_000_000
    static let ms: Int64 = 1_000_000

    /// PCMU every 20 ms from `a` to `b`, `count` packets from `t0 + offsetMs`; sequence numbers
    /// in `lost` are never sent.
    static func pcmu(
        _ w: inout PcapWriter, from a: String, to b: String, count: Int, offsetMs: Int64 = 0, lost: (Int) -> Bool, ssrc: UInt32 = 0x1234
    ) {
        for i in 0..<count where !lost(i) {
            w.addUDP(
                from: a, 40000, to: b, 50000, payload: PcapPayloads.rtp(seq: UInt16(i), timestamp: UInt32(i * 160), ssrc: ssrc),
                timestampNanos: t0 + (offsetMs + Int64(i) * 20) * ms)
        }
    }

    /// The capture's records of `w`, analysed call by call.
    static func analyse(_ w: PcapWriter) throws -> [String: CallAnalysis] {
        let box = Collected()
        var session = CaptureSession(configuration: CaptureConfiguration()) { box.records.append($0) }
        try PcapSource.open(bytes: w.bytes).feed(&session)
        session.finish()
        var out: [String: CallAnalysis] = [:]
        for call in Set(box.records.map(\.call)) {
            let material = try Harness.material(box.records.filter { $0.call == call })
            out[call] = CallAnalyzer.analyze(material)
        }
        return out
    }

    final class Collected: @unchecked Sendable { var records: [LogRecord] = [] }

    /// 1.5 s of PCMU (75 sequence numbers), 4 never sent: 4 / 75 = 5.33 % lost. The capture
    /// writes one record, which is the stream's only interval and only window: more than 5 %
    /// lost in every window the call has is `high_loss` at its poor level.
    func testACaptureShorterThanAnIntervalIsGradedByItsLoss() throws {
        var w = PcapWriter()
        Self.pcmu(&w, from: "10.0.0.1", to: "10.0.0.2", count: 75, lost: { [10, 30, 50, 70].contains($0) })
        let calls = try Self.analyse(w)
        XCTAssertEqual(calls.count, 1)
        let a = try XCTUnwrap(calls.values.first)
        XCTAssertEqual(a.intervals.count, 1)
        XCTAssertEqual(a.call.lossPct ?? 0, 400.0 / 75, accuracy: 1e-9)
        XCTAssertEqual(a.streams.first?.startTs, Self.t0 / Self.ms, "a wire stream starts at its first packet")
        XCTAssertNotNil(a.call.mosCQ)
        XCTAssertEqual(a.call.grade, .poor)
        let loss = try XCTUnwrap(a.findings.first { $0.code == "high_loss" }, "\(a.findings)")
        XCTAssertEqual(loss.severity, .poor)
        XCTAssertEqual(loss.value ?? 0, 400.0 / 75, accuracy: 1e-9)
    }

    /// 25 s (1,250 packets); in the first 10 s every 11th from the 6th is lost (45 of 500,
    /// 9.0 %), none after: the stream lost 45 of 1,250 (3.6 %), and so did the call.
    func testAStreamsFirstIntervalCountsInTheCall() throws {
        var w = PcapWriter()
        Self.pcmu(&w, from: "10.0.0.1", to: "10.0.0.2", count: 1250, lost: { $0 < 500 && $0 % 11 == 5 })
        let a = try XCTUnwrap(try Self.analyse(w).values.first)
        let stream = try XCTUnwrap(a.streams.first)
        XCTAssertEqual(stream.packetsLost, 45)
        XCTAssertEqual(stream.lossPct ?? 0, 3.6, accuracy: 1e-9)
        XCTAssertEqual(a.call.lossPct ?? 0, stream.lossPct ?? 0, accuracy: 1e-9)
        XCTAssertEqual(a.intervals.count, 3)
        XCTAssertEqual(a.intervals.first?.startTs, Self.t0 / Self.ms)
        XCTAssertEqual(a.intervals.reduce(0) { $0 + ($1.packetsLost ?? 0) }, 45)
        XCTAssertGreaterThan(a.intervals.first?.lossPct ?? 0, 8.5)
    }

    /// IPv6, 6 s (300 packets), every 20th from the 11th lost: 15 of 300, 5 %: `high_loss` at
    /// its warn level (poor is above 5 %) in the call's only window.
    func testAnIPv6CallWithFivePercentLossIsNotGood() throws {
        var w = PcapWriter()
        Self.pcmu(&w, from: "2001:db8::1", to: "2001:db8::2", count: 300, lost: { $0 % 20 == 10 })
        let a = try XCTUnwrap(try Self.analyse(w).values.first)
        XCTAssertTrue(a.call.callID.contains("[2001:db8::1]"), a.call.callID)
        XCTAssertEqual(a.call.lossPct ?? 0, 5, accuracy: 1e-9)
        XCTAssertEqual(a.findings.first { $0.code == "high_loss" }?.severity, .warn)
        XCTAssertEqual(a.call.grade, .fair)
    }

    /// RTCP XR on a captured call. 10.0.0.2 (SSRC 0x5678) receives 3 s of PCMU and reports at
    /// 1.000 s: an RR, an RRTR with NTP time 0xE8D4_A510_8000_0000 (middle 32 bits 0xA510_8000)
    /// and VoIP metrics on the stream (loss 13/256, discard 3/256, R 85, MOS-LQ 4.1, MOS-CQ 4.0,
    /// nominal jitter buffer 40 ms). 10.0.0.1 answers at 1.180 s with a DLRR naming that RRTR
    /// and 8,192/65,536 s (125 ms) held: the XR round trip is 180 − 125 = 55 ms (RFC 3611 §4.5,
    /// as RR's LSR/DLSR), the only round trip of the call.
    func testXRRoundTripAndVoIPMetrics() throws {
        var w = PcapWriter()
        Self.pcmu(&w, from: "10.0.0.1", to: "10.0.0.2", count: 150, lost: { _ in false })
        let block = PcapPayloads.ReportBlock(ssrc: 0x1234, fractionLost: 0, cumulativeLost: 0, highestSeq: 50, jitter: 0, lsr: 0, dlsr: 0)
        var report = PcapPayloads.receiverReport(ssrc: 0x5678, reports: [block])
        report += PcapPayloads.xrReceiverReference(ssrc: 0x5678, ntp: 0xE8D4_A510_8000_0000)
        report += PcapPayloads.xrVoIPMetrics(
            ssrc: 0x5678, sourceSSRC: 0x1234, lossRate: 13, discardRate: 3, roundTripDelay: 98, rFactor: 85, mosLQ: 41, mosCQ: 40)
        w.addUDP(from: "10.0.0.2", 50001, to: "10.0.0.1", 40001, payload: report, timestampNanos: Self.t0 + 1_000 * Self.ms)
        let reply = PcapPayloads.xrDelaySinceReceiverReference(ssrc: 0x1234, replies: [(0x5678, 0xA510_8000, 8192)])
        w.addUDP(from: "10.0.0.1", 40001, to: "10.0.0.2", 50001, payload: reply, timestampNanos: Self.t0 + 1_180 * Self.ms)

        let box = Collected()
        var session = CaptureSession(configuration: CaptureConfiguration()) { box.records.append($0) }
        try PcapSource.open(bytes: w.bytes).feed(&session)
        session.finish()
        let rtcp = box.records.filter { $0.kind == .rtcp }
        XCTAssertEqual(rtcp.count, 2)
        XCTAssertEqual(rtcp[0]["rrtr"]?["ntpTimestamp"]?.doubleValue ?? 0, Double(0xE8D4_A510) + 0.5, accuracy: 1e-6)
        let dlrr = try XCTUnwrap(rtcp[1]["dlrr"]?.arrayValue?.first)
        XCTAssertEqual(dlrr["ssrc"]?.doubleValue, Double(0x5678))
        XCTAssertEqual(dlrr["dlrrMs"]?.doubleValue, 125)
        XCTAssertEqual(dlrr["roundTripTimeMs"]?.doubleValue ?? 0, 55, accuracy: 1e-6)

        let a = try XCTUnwrap(try Self.analyse(w).values.first)
        let stream = try XCTUnwrap(a.streams.first)
        XCTAssertEqual(a.call.rttMs ?? 0, 55, accuracy: 1e-6)
        XCTAssertEqual(stream.xrLossPct ?? 0, 100 * 13.0 / 256, accuracy: 1e-4)
        XCTAssertEqual(stream.xrDiscardPct ?? 0, 100 * 3.0 / 256, accuracy: 1e-4)
        XCTAssertEqual(stream.xrRFactor, 85)
        XCTAssertEqual(stream.xrMosLQ, 4.1)
        XCTAssertEqual(stream.xrMosCQ, 4.0)
        XCTAssertEqual(stream.xrJitterBufferMs, 40)
    }

    /// The sent direction of a capture, from the receivers' RTCP reports. Captured at A
    /// (10.0.0.1), both 25-s PCMU streams pass the capture point whole (1,250 packets each, none
    /// missing), so the capture measures no loss. B's receiver reports about A's stream (SSRC
    /// 0x1234) say what the network lost beyond: 20 by 10 s, 40 by 20 s, 50 at the end (4 % of
    /// what B expected); A's about B's stream report none. Both say jitter 80 (10 ms at 8 kHz).
    /// A's reports also carry a block about A's own SSRC (lost 999), which is ignored.
    /// Each stream gets an `outbound` row as its receiver heard it (`remote_report`): the call's
    /// sent direction is scored from them, as a browser's is from `remote-inbound-rtp`, with loss
    /// as remote reports against packets sent (which counts the lost ones): 50 / 2,500 over both
    /// streams, 50 / 1,250 on A's. The received direction stays what the capture measured: no loss.
    func testACapturesSentDirectionComesFromTheReceiversReports() throws {
        let a = "10.0.0.1", b = "10.0.0.2"
        var w = PcapWriter()
        // Reports are sent just after the 500th, 1,000th and last packet of each stream.
        let reports: [(ms: Int64, aLost: Int32, seq: UInt32)] = [(9_995, 20, 499), (19_995, 40, 999), (24_995, 50, 1_249)]
        var next = 0
        for i in 0..<1_250 {
            let t = Int64(i) * 20
            w.addUDP(
                from: a, 40000, to: b, 50000, payload: PcapPayloads.rtp(seq: UInt16(i), timestamp: UInt32(i * 160), ssrc: 0x1234),
                timestampNanos: Self.t0 + t * Self.ms)
            w.addUDP(
                from: b, 50000, to: a, 40000, payload: PcapPayloads.rtp(seq: UInt16(i), timestamp: UInt32(i * 160), ssrc: 0x5678),
                timestampNanos: Self.t0 + (t + 10) * Self.ms)
            while next < reports.count, reports[next].ms < t + 20 {
                let r = reports[next]
                let aboutA = PcapPayloads.ReportBlock(
                    ssrc: 0x1234, fractionLost: 10, cumulativeLost: r.aLost, highestSeq: r.seq, jitter: 80, lsr: 0, dlsr: 0)
                w.addUDP(
                    from: b, 50001, to: a, 40001, payload: PcapPayloads.receiverReport(ssrc: 0x5678, reports: [aboutA]),
                    timestampNanos: Self.t0 + r.ms * Self.ms)
                let aboutB = PcapPayloads.ReportBlock(
                    ssrc: 0x5678, fractionLost: 0, cumulativeLost: 0, highestSeq: r.seq, jitter: 80, lsr: 0, dlsr: 0)
                // A block about the sender's own SSRC, as some clients write: no receiver's view.
                let aboutItself = PcapPayloads.ReportBlock(
                    ssrc: 0x1234, fractionLost: 255, cumulativeLost: 999, highestSeq: r.seq, jitter: 8000, lsr: 0, dlsr: 0)
                w.addUDP(
                    from: a, 40001, to: b, 50001, payload: PcapPayloads.receiverReport(ssrc: 0x1234, reports: [aboutB, aboutItself]),
                    timestampNanos: Self.t0 + (r.ms + 1) * Self.ms)
                next += 1
            }
        }
        let calls = try Self.analyse(w)
        XCTAssertEqual(calls.count, 1, "\(calls.keys)")
        let call = try XCTUnwrap(calls.values.first)
        let c = call.call

        // What passed the capture point: nothing lost.
        XCTAssertEqual(c.lossPct ?? -1, 0, accuracy: 1e-9)
        XCTAssertEqual(call.streams.filter { $0.direction == .inbound }.map(\.packetsLost), [0, 0])
        // What the receivers heard: the sent direction.
        XCTAssertEqual(c.lossPctSent ?? -1, 100 * 50.0 / 2_500, accuracy: 1e-9, "lost ÷ the packets that passed")
        XCTAssertEqual(c.jitterMsSent ?? -1, 10, accuracy: 1e-9)
        let sentMOS = try XCTUnwrap(c.mosCQSent), worstSent = try XCTUnwrap(c.mosWorstSent), heard = try XCTUnwrap(c.mosWorst)
        XCTAssertLessThan(worstSent, heard - 0.2, "4 % lost on the way to B: the sent direction is worse")
        XCTAssertLessThan(sentMOS, heard)
        let reported = call.streams.filter { $0.direction == .outbound }.sorted { $0.ssrc < $1.ssrc }
        XCTAssertEqual(reported.map(\.ssrc), [0x1234, 0x5678])
        XCTAssertEqual(reported.map(\.scoreSource), ["remote_report", "remote_report"])
        XCTAssertEqual(reported.map(\.source), ["wire", "wire"])
        XCTAssertEqual(reported.map(\.packetsLost), [50, 0])
        XCTAssertEqual(reported[0].lossPct ?? -1, 100 * 50.0 / 1_250, accuracy: 1e-9)
        XCTAssertEqual(reported[0].streamID, "wire:10.0.0.1:40000>10.0.0.2:50000:receiver-report:audio:4660")
        XCTAssertEqual(reported[0].startTs, Self.t0 / Self.ms, "counted from the stream's first packet, as the receiver counts")
        let first = try XCTUnwrap(call.intervals.first { $0.streamID == reported[0].streamID })
        XCTAssertEqual(first.packetsLost, 20)
        XCTAssertEqual(first.lossPct ?? -1, 100 * 20.0 / 500, accuracy: 1e-9)
        XCTAssertNotNil(first.mosCQ)
    }

    /// ICE checks answered 40 ms after the request, then 3 s of media on the pair: the call's ICE
    /// round-trip time is 40 ms. A STUN exchange alone (a 25 ms answer, no media) is a call with
    /// nothing measured: graded `unmeasured`, with its ICE round trip.
    func testICERoundTripsOfACapture() throws {
        var w = PcapWriter()
        let a = "192.0.2.10", b = "198.51.100.20"
        func tx(_ n: UInt8) -> [UInt8] { [UInt8](repeating: n, count: 12) }
        w.addUDP(
            from: a, 40000, to: b, 50000, payload: PcapPayloads.stunBinding(request: true, transaction: tx(1), useCandidate: true, controlling: true),
            timestampNanos: Self.t0)
        w.addUDP(from: b, 50000, to: a, 40000, payload: PcapPayloads.stunBinding(request: false, transaction: tx(1)), timestampNanos: Self.t0 + 40 * Self.ms)
        Self.pcmu(&w, from: a, to: b, count: 150, offsetMs: 100, lost: { _ in false })
        w.addUDP(from: a, 5555, to: "203.0.113.9", 3478, payload: PcapPayloads.stunBinding(request: true, transaction: tx(2)), timestampNanos: Self.t0)
        w.addUDP(
            from: "203.0.113.9", 3478, to: a, 5555, payload: PcapPayloads.stunBinding(request: false, transaction: tx(2)),
            timestampNanos: Self.t0 + 25 * Self.ms)
        let calls = try Self.analyse(w)
        XCTAssertEqual(calls.count, 2)
        let media = try XCTUnwrap(calls.values.first { !$0.streams.isEmpty })
        XCTAssertEqual(media.call.iceRttMs ?? 0, 40, accuracy: 1e-6)
        XCTAssertEqual(media.call.grade, .good)
        XCTAssertFalse(media.call.relayUsed)
        let stun = try XCTUnwrap(calls.values.first { $0.streams.isEmpty })
        XCTAssertEqual(stun.call.iceRttMs ?? 0, 25, accuracy: 1e-6)
        XCTAssertEqual(stun.call.grade, .unmeasured)
        XCTAssertEqual(stun.call.gradeReason, "no media statistics")
    }
}

/// Calls with no media statistics, and the SDK's own score over time.
final class UnmeasuredCallTests: XCTestCase {
    static let t0: Int64 = 1_795_000_000_000

    static func cisco(_ id: String) -> LogRecord {
        .callInfo(
            call: id, ts: t0, direction: "outgoing", sdk: "cisco-rem", sdkVersion: "1", app: "a", appVersion: "1", platform: "ios",
            network: "wifi", media: ["audio"])
    }

    /// The issue's Cisco call: 100 for 585 s, then 30, 40, 35 in its last 10 s, ended at 595 s.
    /// Each value holds until the next: (100 × 585 + 30 × 3 + 40 × 4 + 35 × 3) / 595 = 58,855 / 595.
    func testTheSDKScoreIsAMeanOverTime() throws {
        let id = "cisco-1"
        let records: [LogRecord] = [
            Self.cisco(id),
            .quality(call: id, ts: Self.t0, score: 100, source: "cisco-rem"),
            .quality(call: id, ts: Self.t0 + 585_000, score: 30, source: "cisco-rem"),
            .quality(call: id, ts: Self.t0 + 588_000, score: 40, source: "cisco-rem"),
            .quality(call: id, ts: Self.t0 + 592_000, score: 35, source: "cisco-rem"),
            .end(call: id, ts: Self.t0 + 595_000, reason: "terminatedLocally"),
        ]
        let a = try Harness.analyze(records)
        XCTAssertEqual(a.call.sdkQualityMean ?? 0, 58_855.0 / 595, accuracy: 1e-9)
        XCTAssertEqual(a.call.sdkQualityMean ?? 0, 98.92, accuracy: 0.01)
        XCTAssertEqual(a.call.sdkQualityMin, 30)
        // Scored callbacks mean media flowed: answered, but nothing measured it.
        XCTAssertEqual(a.call.grade, .unmeasured)
        XCTAssertEqual(a.call.gradeReason, "no media statistics; the SDK's own score 99 (lowest 30)")
    }

    /// Quality callbacks and nothing else, no end record: not good, since nothing measured the media.
    func testACallWithOnlyQualityCallbacksIsUnmeasured() throws {
        let id = "cisco-2"
        let a = try Harness.analyze([
            Self.cisco(id), .quality(call: id, ts: Self.t0 + 5_000, score: 90, source: "cisco-rem"),
            .quality(call: id, ts: Self.t0 + 65_000, score: 80, source: "cisco-rem"),
        ])
        XCTAssertEqual(a.call.grade, .unmeasured)
        XCTAssertTrue(a.findings.isEmpty, "\(a.findings)")
        // The score held 60 s at 90; the last one holds until the last record, itself.
        XCTAssertEqual(a.call.sdkQualityMean, 90)
    }

    /// Every statistics record of the call rejected (here: none reach the material), with the
    /// call answered and connected: unmeasured, not good.
    func testACallWhoseStatisticsWereAllRejectedIsUnmeasured() throws {
        let id = "rejected"
        let lines: ([String]) -> [String] = { $0.map { $0.contains(#""kind":"stats""#) ? #"{"v":1,"kind":"stats","call":"rejected"}"# : $0 } }
        var s = W3CSnapshot(t: Double(Self.t0))
        var records: [LogRecord] = [
            Self.cisco(id), .event(call: id, ts: Self.t0, action: "callMetric", type: "callCreate"),
            .event(call: id, ts: Self.t0 + 2_000, action: "callMetric", type: "callAnswerReceived"),
            .event(call: id, ts: Self.t0 + 2_500, action: "iceState", type: "iceConnected"),
        ]
        for k in 1...3 {
            s.t = Double(Self.t0 + Int64(k) * 10_000)
            s.received += 500
            records.append(Harness.stats(id, s, ts: Self.t0 + Int64(k) * 10_000))
        }
        XCTAssertEqual(try Harness.analyze(records).call.grade, .good, "with its statistics the call is good")
        var ingestor = RecordIngestor()
        let path = NSTemporaryDirectory() + "rejected-\(UUID().uuidString).ndjson"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let w = try LogWriter(path: path)
        for r in records { try w.append(r) }
        try w.close()
        let text = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
            .filter { !$0.contains(#""event":"checkpoint""#) }
        var rejected = 0
        for line in lines(text) {
            var bytes = Array(line.utf8)
            let outcome = bytes.withUnsafeMutableBufferPointer { ingestor.ingest(UnsafeBufferPointer($0)) }
            if case .skipped = outcome { rejected += 1 }
        }
        XCTAssertEqual(rejected, 3)
        let material = try XCTUnwrap(ingestor.take(id))
        let a = CallAnalyzer.analyze(material)
        XCTAssertEqual(a.call.grade, .unmeasured)
    }
}
