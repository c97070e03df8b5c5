import CallLog
import Simulator
import XCTest

/// Counters grow like real ones: never down within an SSRC, and the derived quantities the
/// analyser computes (loss, concealment, jitter-buffer delay) stay coherent.
final class CounterTests: XCTestCase {
    let run = SimulatedRun.shared

    func testCountersNeverDecreaseExceptAtTheIPChangeReset() {
        XCTAssertGreaterThan(run.counterChecks, 100_000)
        XCTAssertEqual(run.counterViolations.prefix(10).map { $0 }, [])
        XCTAssertGreaterThan(run.resetsAtIPChange, 0, "the IP change restarts the transport's counters")
    }

    func testAnIPChangeStartsNewSSRCsFromZero() {
        let changed = run.calls(.ipChange).filter { $0.eventTypes.contains("ipChangeEnded") }
        XCTAssertFalse(changed.isEmpty)
        for c in changed {
            guard c.inboundAudioOrder.count == 2 else {
                XCTFail("\(c.plan.id): \(c.inboundAudioOrder.count) inbound SSRCs, expected a new one after the change")
                continue
            }
            let second = c.inboundAudio[c.inboundAudioOrder[1]]!
            let first = c.inboundAudio[c.inboundAudioOrder[0]]!
            XCTAssertLessThan(second[0].received, first.last!.received, "counters restart")
            XCTAssertEqual(c.networks, ["wifi", "cellular"], "a second call record names the new network")
        }
    }

    func testW3CCountersAreCoherent() throws {
        // One clean W3C audio+video call, checked in detail.
        let sim = run.simulator
        let index = try XCTUnwrap(
            run.calls.firstIndex {
                $0.plan.profile == .good && $0.plan.format == .w3c && $0.plan.hasVideo && $0.plan.script.connectMs != nil
                    && $0.plan.script.episodes.isEmpty && $0.plan.audioCodec == .opus
            })
        let stats = sim.records(forCall: index).filter { $0.kind == .stats }
        let last = try XCTUnwrap(stats.last?["report"]?.arrayValue)
        func object(_ type: String, _ kind: String? = nil) -> JSONValue? {
            last.first { $0["type"]?.stringValue == type && (kind == nil || $0["kind"]?.stringValue == kind) }
        }
        let ai = try XCTUnwrap(object("inbound-rtp", "audio"))
        let seconds = Double(stats.count * 10)
        // 50 packets a second, Opus at 48 kHz.
        let received = ai["packetsReceived"]!.doubleValue!, lost = ai["packetsLost"]!.doubleValue!
        XCTAssertEqual(received + lost, 50 * seconds, accuracy: 1)
        XCTAssertEqual(ai["totalSamplesReceived"]!.doubleValue!, 48_000 * seconds)
        let concealed = ai["concealedSamples"]!.doubleValue!, emitted = ai["jitterBufferEmittedCount"]!.doubleValue!
        XCTAssertEqual(concealed + emitted, 48_000 * seconds, "emitted + concealed = received samples")
        XCTAssertLessThanOrEqual(ai["silentConcealedSamples"]!.doubleValue!, concealed)
        let jbMs = ai["jitterBufferDelay"]!.doubleValue! / emitted * 1000
        XCTAssertTrue((15...80).contains(jbMs), "jitter buffer \(jbMs) ms")
        let jitter = ai["jitter"]!.doubleValue!
        XCTAssertTrue((0.001...0.02).contains(jitter), "jitter in seconds: \(jitter)")
        // Video: frames, inter-frame delay sums about the elapsed time.
        let vi = try XCTUnwrap(object("inbound-rtp", "video"))
        let decoded = vi["framesDecoded"]!.doubleValue!
        XCTAssertEqual(decoded / seconds, 29, accuracy: 2.5)
        XCTAssertEqual(vi["totalInterFrameDelay"]!.doubleValue!, seconds, accuracy: seconds * 0.1)
        XCTAssertLessThanOrEqual(vi["framesDropped"]!.doubleValue!, vi["framesReceived"]!.doubleValue! * 0.05)
        // RTT in seconds, from RTCP and from STUN.
        let rtt = object("remote-inbound-rtp")!["roundTripTime"]!.doubleValue!
        let pairRtt = last.first { $0["type"]?.stringValue == "candidate-pair" && $0["availableOutgoingBitrate"] != nil }!
        XCTAssertEqual(rtt, pairRtt["currentRoundTripTime"]!.doubleValue!, accuracy: 0.06)
        XCTAssertTrue((0.01...0.2).contains(rtt))
        // The transport names the selected pair, and the pair exists.
        let transport = object("transport")!
        XCTAssertEqual(transport["selectedCandidatePairId"]?.stringValue, pairRtt["id"]?.stringValue)
        XCTAssertEqual(transport["iceState"]?.stringValue, "connected")
        // Objects sorted by id, as Chromium lists them.
        let ids = last.map { $0["id"]!.stringValue! }
        XCTAssertEqual(ids, ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    }
}
