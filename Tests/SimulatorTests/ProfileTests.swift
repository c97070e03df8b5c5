import CallLog
import Simulator
import XCTest

/// Each network profile leaves the marks an analyser should find.
final class ProfileTests: XCTestCase {
    let run = SimulatedRun.shared

    /// Loss over the whole call on inbound audio.
    func loss(_ c: SimulatedRun.Call) -> Double {
        var lost = 0.0, total = 0.0
        for id in c.inboundAudioOrder {
            guard let last = c.inboundAudio[id]?.last else { continue }
            lost += last.lost
            total += last.lost + last.received
        }
        return total > 0 ? lost / total : 0
    }

    func testLossyWifiLosesAtLeastOnePercent() {
        let calls = run.calls(.lossyWifi).filter { $0.stats >= 3 }
        XCTAssertGreaterThan(calls.count, 5)
        for c in calls {
            XCTAssertGreaterThanOrEqual(loss(c), 0.01, "\(c.plan.id)")
            XCTAssertLessThan(loss(c), 0.2)
            if c.plan.format == .w3c { XCTAssertGreaterThan(c.concealedFraction, 0.005, "losses show up as concealment") }
        }
    }

    func testGoodCallsBarelyLose() {
        let calls = run.calls(.good).filter { $0.stats >= 3 && $0.plan.script.episodes.allSatisfy { $0.kind != .outage } }
        XCTAssertGreaterThan(calls.count, 20)
        let meanLoss = calls.map(loss).reduce(0, +) / Double(calls.count)
        XCTAssertLessThan(meanLoss, 0.005)
    }

    func testOneWayAudioStopsInboundPacketsWhileOutboundFlows() {
        let calls = run.calls(.oneWayAudio).filter { $0.stats >= 6 }
        XCTAssertFalse(calls.isEmpty)
        for c in calls {
            let inbound = c.inboundAudio[c.inboundAudioOrder[0]]!.map(\.received)
            let tail = inbound.suffix(2)
            XCTAssertEqual(tail.first, tail.last, "inbound audio packetsReceived stops growing")
            XCTAssertGreaterThan(inbound.last!, 0, "it did flow at first")
            let out = c.outboundAudioSent.suffix(2)
            XCTAssertGreaterThan(out.last!, out.first!, "outbound keeps flowing")
            if c.plan.format == .w3c { XCTAssertGreaterThan(c.concealedFraction, 0.2, "the silence is concealment") }
        }
    }

    func testCongestedCellularIsSlowAndLimitsVideo() {
        let calls = run.calls(.congestedCellular).filter { $0.stats >= 3 }
        XCTAssertFalse(calls.isEmpty)
        for c in calls where !c.remoteInboundRtt.isEmpty {
            let median = c.remoteInboundRtt.sorted()[c.remoteInboundRtt.count / 2]
            XCTAssertTrue((0.18...0.8).contains(median), "RTT \(median)")
        }
        let video = calls.filter { !$0.outboundVideoHeights.isEmpty }
        XCTAssertFalse(video.isEmpty)
        for c in video {
            XCTAssertTrue(c.limitationReasons.contains("bandwidth"))
            XCTAssertLessThan(c.outboundVideoHeights.last!, Double(c.plan.camera.height), "lower resolution")
        }
    }

    func testSatelliteRoundTripIsAboutSixHundredMilliseconds() {
        let calls = run.calls(.satellite).filter { !$0.remoteInboundRtt.isEmpty }
        XCTAssertFalse(calls.isEmpty)
        for c in calls {
            let mean = c.remoteInboundRtt.reduce(0, +) / Double(c.remoteInboundRtt.count)
            XCTAssertEqual(mean, 0.62, accuracy: 0.08)
        }
    }

    func testRelayFallbackSelectsARelayAfterALongerSetup() {
        let relay = run.calls(.iceRelayFallback)
        XCTAssertFalse(relay.isEmpty)
        for c in relay where c.stats > 0 {
            XCTAssertEqual(c.selectedLocalCandidateTypes, ["relay"], "\(c.plan.id)")
            XCTAssertTrue(c.eventTypes.contains("iceOneRelay") || c.eventTypes.contains("iceNoRelay"))
        }
        func setup(_ c: SimulatedRun.Call) -> Int64 { c.plan.script.connectMs! - c.plan.script.startMs }
        func answerToConnect(_ calls: [SimulatedRun.Call]) -> Double {
            let v = calls.map { c -> Double in
                let answer = c.plan.script.events.last { $0.type == "callAnswerReceived" || $0.type == "callRestSent" }!.ts
                return Double(c.plan.script.connectMs! - answer)
            }
            return v.reduce(0, +) / Double(v.count)
        }
        XCTAssertGreaterThan(answerToConnect(relay), 1_500)
        XCTAssertLessThan(answerToConnect(run.calls(.good)), 800)
        XCTAssertTrue(run.calls(.good).allSatisfy { !$0.selectedLocalCandidateTypes.contains("relay") })
    }

    func testICEFailureHasNoMediaAndEndsFailed() {
        let failed = run.calls(.iceFailure, connected: false)
        XCTAssertFalse(failed.isEmpty)
        for c in failed {
            XCTAssertNil(c.plan.script.connectMs)
            XCTAssertEqual(c.rtpObjects, 0, "no RTP streams")
            XCTAssertEqual(c.end?["reason"]?.stringValue, "failed")
            XCTAssertTrue(c.eventTypes.contains("iceDisconnected"))
            XCTAssertFalse(c.eventTypes.contains("iceConnected"))
        }
        XCTAssertTrue(failed.contains { $0.stats > 0 }, "snapshots of the failing checks")
    }
}
