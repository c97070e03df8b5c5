import Analysis
import CallLog
@testable import Collector
import Foundation
import TestSupport
import XCTest

/// The Sinch adapter: the call details are all the SDK shows the app, so the log has the
/// setup timeline and the end, in the columns the other SDKs fill.
final class SinchAdapterTests: XCTestCase {
    func record(_ details: [SinchCallDetails], hungUpLocally: Bool?, id: String, dir: String) throws -> (records: [LogRecord], analysis: CallAnalysis) {
        let clock = ManualClock(start: details[0].startedTime)
        let agent = CallStatsAgent(configuration: Logs.configuration(dir), clock: clock, storage: FileStorage())
        let recorder = agent.attach(callID: id, info: details[0].callInfo(sdkVersion: "5.12.0"))
        let sinch = SinchCallEvents(recorder: recorder)
        for d in details.dropLast() {
            clock.advance(by: max(0, (d.establishedTime ?? d.progressedTime ?? d.startedTime) - clock.now()))
            sinch.update(d)
        }
        let last = details.last!
        clock.advance(by: max(0, (last.endedTime ?? clock.now()) - clock.now()))
        sinch.end(last, hungUpLocally: hungUpLocally)
        sinch.end(last, hungUpLocally: !(hungUpLocally ?? false))  // a second callback changes nothing
        agent.flush()
        let records = Logs.records(dir)
        let analysis = try XCTUnwrap(try Logs.analyze(dir)[id])
        agent.shutdown()
        return (records, analysis)
    }

    func testOutgoingCallSetupAndEndLandInTheSetupColumns() throws {
        let t0: Int64 = 1_795_349_930_000
        var d = SinchCallDetails(direction: .outgoing, startedTime: t0, isVideoOffered: true)
        var steps = [d]
        d.progressedTime = t0 + 1_350
        steps.append(d)
        d.establishedTime = t0 + 7_200
        steps.append(d)
        d.endedTime = t0 + 67_200
        d.endCause = .hungUp
        steps.append(d)
        let (records, analysis) = try record(steps, hungUpLocally: true, id: "sinch-out", dir: Logs.directory())

        XCTAssertEqual(
            records.filter { $0.kind == .event }.map { $0["type"]?.stringValue ?? "" },
            ["callCreate", "callRinging", "callAnswerReceived"], "each once, in order")
        XCTAssertEqual(records.filter { $0.kind == .event }.map(\.ts), [t0, t0 + 1_350, t0 + 7_200], "the SDK's times")
        XCTAssertFalse(records.contains { $0.kind == .stats }, "Sinch gives the app no statistics")
        XCTAssertEqual(records.filter { $0.kind == .end }.count, 1)
        let c = analysis.call
        XCTAssertEqual(c.sdk, "sinch")
        XCTAssertEqual(c.direction, "outgoing")
        XCTAssertEqual(c.media, "audio+video")
        XCTAssertEqual(c.ringingMs, 1_350)
        XCTAssertEqual(c.answerMs, 7_200)
        XCTAssertNil(c.restSentMs, "Sinch does not show when its request left")
        XCTAssertNil(c.mediaMs, "nor when media started")
        XCTAssertEqual(c.endReason, "terminatedLocally")
        XCTAssertEqual(c.endStatusCode, 5)
        XCTAssertEqual(c.endStatusText, "HUNG_UP")
        XCTAssertEqual(records.last?["durationMs"], 60_000)
        XCTAssertNil(c.lossPct)
        XCTAssertNil(c.mosCQ)
        XCTAssertNil(c.rttMs)
    }

    func testIncomingCallDeniedIsUnanswered() throws {
        let t0: Int64 = 1_795_349_930_000
        let d = SinchCallDetails(direction: .incoming, startedTime: t0, endedTime: t0 + 4_000, endCause: .denied)
        let (records, analysis) = try record([d], hungUpLocally: nil, id: "sinch-in", dir: Logs.directory())
        XCTAssertEqual(records.filter { $0.kind == .event }.map { $0["type"]?.stringValue ?? "" }, ["incomingCall"])
        XCTAssertEqual(analysis.call.direction, "incoming")
        XCTAssertEqual(analysis.call.media, "audio")
        XCTAssertEqual(analysis.call.endReason, "rejected")
        XCTAssertNil(analysis.call.answerMs)
        XCTAssertEqual(analysis.call.grade, .unanswered)
        XCTAssertNil(records.last?["durationMs"], "never established: no duration")
    }

    func testIncomingCallAcceptedAndFailedWithTheSDKsError() throws {
        let t0: Int64 = 1_795_349_930_000
        let d = SinchCallDetails(
            direction: .incoming, startedTime: t0, establishedTime: t0 + 3_000, endedTime: t0 + 9_000,
            endCause: .failure, error: .init(code: 2004, message: "Network connection lost"))
        let (records, analysis) = try record([d], hungUpLocally: nil, id: "sinch-fail", dir: Logs.directory())
        XCTAssertEqual(records.filter { $0.kind == .event }.map { $0["type"]?.stringValue ?? "" }, ["incomingCall", "callCreate"])
        XCTAssertEqual(records.filter { $0.kind == .event }.map(\.ts), [t0, t0 + 3_000])
        XCTAssertEqual(analysis.call.endReason, "failed")
        XCTAssertEqual(analysis.call.endStatusCode, 2004)
        XCTAssertEqual(analysis.call.endStatusText, "FAILURE: Network connection lost")
        XCTAssertEqual(records.last?["durationMs"], 6_000)
    }

    func testEveryEndCause() {
        func reason(_ cause: SinchCallDetails.EndCause, _ direction: SinchCallDetails.Direction = .outgoing, local: Bool? = nil) -> CallEnd.Reason {
            SinchCallDetails(direction: direction, startedTime: 0, endCause: cause).callEnd(hungUpLocally: local).reason
        }
        XCTAssertEqual(reason(.none), .undefined)
        XCTAssertEqual(reason(.timeout), .timedOut)
        XCTAssertEqual(reason(.noAnswer), .timedOut)
        XCTAssertEqual(reason(.denied), .rejected)
        XCTAssertEqual(reason(.failure), .failed)
        XCTAssertEqual(reason(.inactive), .failed)
        XCTAssertEqual(reason(.hungUp), .undefined, "who hung up is not in the details")
        XCTAssertEqual(reason(.hungUp, local: true), .terminatedLocally)
        XCTAssertEqual(reason(.hungUp, local: false), .terminatedRemotely)
        XCTAssertEqual(reason(.canceled, .outgoing), .terminatedLocally)
        XCTAssertEqual(reason(.canceled, .incoming), .terminatedRemotely)
        XCTAssertEqual(reason(.otherDeviceAnswered, .incoming), .terminatedRemotely)
        XCTAssertEqual(reason(.transferred), .terminatedRemotely)
        XCTAssertEqual(SinchCallDetails.epochMs(seconds: 1_795_349_930.25), 1_795_349_930_250)
        XCTAssertEqual(Set(SinchCallDetails.EndCause.allCases.map(\.name)).count, SinchCallDetails.EndCause.allCases.count)
    }
}
