import Analysis
import CallLog
import MaterialScanning
import MaterialTestSupport
import XCTest

/// Call setup, ICE and end from hand-built event timelines with known answers.
final class SetupTests: XCTestCase {
    let t0: Int64 = 1_794_700_000_000

    private func event(_ call: String, _ dt: Int64, _ action: String, _ type: String) -> LogRecord {
        .event(call: call, ts: t0 + dt, action: action, type: type)
    }

    /// An outgoing call: setup times from `callCreate`, time to media from the answer, two ICE
    /// disconnections (one never reconnected: it lasts until the call's last record), IP
    /// changes, reconnections, SDK quality callbacks and the end.
    func testOutgoingCallSetupICEAndEnd() throws {
        let c = "setup-out"
        let records: [LogRecord] = [
            event(c, -500, "callMetric", "callRinging"),  // before the call was created: not its ringing
            event(c, 0, "callMetric", "callCreate"),
            event(c, 120, "callMetric", "callRestSent"),
            event(c, 900, "callMetric", "callRinging"),
            event(c, 5_000, "callMetric", "callAnswerReceived"),
            event(c, 5_300, "iceState", "iceConnected"),
            event(c, 6_000, "iceTimeout", "iceNoRelay"),
            event(c, 6_500, "iceTimeout", "iceOneRelay"),  // the last ICE outcome counts
            event(c, 20_000, "iceState", "iceDisconnected"),
            event(c, 21_000, "iceState", "iceDisconnected"),  // still disconnected: counted, not restarted
            event(c, 23_500, "iceState", "iceConnected"),
            event(c, 30_000, "ipChange", "ipChangeStarted"),
            event(c, 30_400, "ipChange", "ipChangeEnded"),
            event(c, 31_000, "callState", "reconnecting"),
            event(c, 35_000, "ipChange", "ipChangeStarted"),
            event(c, 35_500, "callState", "reconnecting"),
            event(c, 36_000, "callState", "reconnected"),
            .quality(call: c, ts: t0 + 10_000, score: 80, source: "sdk"),
            .quality(call: c, ts: t0 + 20_000, score: 60, source: "sdk"),
            event(c, 40_000, "iceState", "iceDisconnected"),
            .end(call: c, ts: t0 + 42_000, reason: "localHangup", statusCode: 200, statusText: "OK", sipStatus: 487, sipReason: "Request Terminated"),
        ]
        let call = try Harness.analyze(records).call
        XCTAssertEqual(call.restSentMs, 120)
        XCTAssertEqual(call.ringingMs, 900)
        XCTAssertEqual(call.answerMs, 5_000)
        XCTAssertEqual(call.mediaMs, 300)
        XCTAssertEqual(call.iceOutcome, "iceOneRelay")
        XCTAssertEqual(call.iceGatheringMs, 6_000, "gathering ends at the first ICE outcome")
        XCTAssertEqual(call.iceDisconnects, 3)
        XCTAssertEqual(call.iceDisconnectedMs, 3_500 + 2_000)
        XCTAssertEqual(call.ipChanges, 2)
        XCTAssertEqual(call.reconnects, 2)
        // 80 held 10 s, then 60 the 22 s to the end: (80 × 10 + 60 × 22) / 32, not (80 + 60) / 2.
        XCTAssertEqual(call.sdkQualityMean, 2_120.0 / 32)
        XCTAssertEqual(call.sdkQualityMin, 60)
        XCTAssertEqual(call.endReason, "localHangup")
        XCTAssertEqual(call.endStatusCode, 200)
        XCTAssertEqual(call.endStatusText, "OK")
        XCTAssertEqual(call.sipStatus, 487)
        XCTAssertEqual(call.sipReason, "Request Terminated")
    }

    /// A browser's gathering ends at its state `complete` (the agent's and the importers' names).
    func testBrowserICEGatheringEndsAtComplete() throws {
        for action in ["iceGatheringState", "iceGathering"] {
            let c = "gathering-\(action)"
            let records: [LogRecord] = [
                event(c, 0, "callMetric", "callCreate"),
                event(c, 40, action, "gathering"),
                event(c, 730, action, "complete"),
                event(c, 2_000, action, "complete"),  // after an ICE restart: not the first gathering
                .end(call: c, ts: t0 + 5_000, reason: "localHangup"),
            ]
            XCTAssertEqual(try Harness.analyze(records).call.iceGatheringMs, 730, action)
        }
    }

    /// An incoming call rings from `incomingCall`; `callCreate` is its accept, from which setup
    /// and time to media count (there is no answer to wait for).
    func testIncomingCallCountsFromItsAccept() throws {
        let c = "setup-in"
        let records: [LogRecord] = [
            event(c, 0, "callMetric", "incomingCall"),
            event(c, 2_000, "callMetric", "callCreate"),
            event(c, 2_150, "callMetric", "callRestSent"),
            event(c, 2_700, "iceState", "iceConnected"),
            event(c, 3_000, "iceTimeout", "iceNormal"),
            .end(call: c, ts: t0 + 9_000, reason: "remoteHangup"),
        ]
        let call = try Harness.analyze(records).call
        XCTAssertEqual(call.restSentMs, 150)
        XCTAssertNil(call.ringingMs)
        XCTAssertNil(call.answerMs)
        XCTAssertEqual(call.mediaMs, 700)
        XCTAssertEqual(call.iceOutcome, "iceNormal")
        XCTAssertEqual(call.iceDisconnects, 0)
        XCTAssertEqual(call.iceDisconnectedMs, 0)
        XCTAssertEqual(call.endReason, "remoteHangup")
        XCTAssertNil(call.sdkQualityMean)
    }

    /// Without `callCreate`, an incoming call's setup counts from `incomingCall`; media that
    /// connected before it (a stray, early event) is not its time to media.
    func testWithoutCreateSetupCountsFromTheIncomingCall() throws {
        let c = "setup-ring"
        let records: [LogRecord] = [
            event(c, -100, "iceState", "iceConnected"),
            event(c, 0, "callMetric", "incomingCall"),
            event(c, 400, "callMetric", "callRinging"),
            .end(call: c, ts: t0 + 5_000, reason: "missed"),
        ]
        let call = try Harness.analyze(records).call
        XCTAssertEqual(call.ringingMs, 400)
        XCTAssertNil(call.mediaMs)
        XCTAssertNil(call.iceOutcome)
    }
}
