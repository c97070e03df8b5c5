import CallLog
import Simulator
import XCTest

/// What a 200-call run contains: every record kind, every event type, both statistics
/// dialects, every profile, realistic dimensions and end reasons.
final class CoverageTests: XCTestCase {
    let run = SimulatedRun.shared

    func testEveryRecordKindAppears() {
        XCTAssertEqual(run.kinds, ["call", "stats", "event", "quality", "end"])
        XCTAssertEqual(run.formats, ["w3c", "goog"])
        XCTAssertEqual(run.calls.count, 200)
        XCTAssertTrue(run.calls.allSatisfy { $0.end != nil }, "every call ends")
    }

    func testEveryEventTypeAppears() {
        var expected = Set<String>()
        for t in EventName.callMetricTypes { expected.insert("callMetric/\(t)") }
        for t in EventName.iceTimeoutTypes { expected.insert("iceTimeout/\(t)") }
        for t in EventName.iceStateTypes { expected.insert("iceState/\(t)") }
        for t in EventName.ipChangeTypes { expected.insert("ipChange/\(t)") }
        for t in EventName.callStateTypes { expected.insert("callState/\(t)") }
        XCTAssertEqual(expected.subtracting(run.events), [], "event types never generated")
        XCTAssertEqual(run.events.subtracting(expected), [], "event types outside the format")
    }

    func testDimensionsAreRealisticAndVaried() {
        let plans = run.calls.map(\.plan)
        XCTAssertEqual(Set(plans.map(\.platform)), ["ios", "android", "web", "macos"])
        XCTAssertEqual(Set(plans.map(\.network)), ["wifi", "cellular", "ethernet"])
        XCTAssertEqual(Set(plans.map(\.direction)), ["outgoing", "incoming"])
        XCTAssertEqual(Set(plans.map(\.profile)), Set(NetworkProfile.allCases))
        let video = plans.filter(\.hasVideo).count
        XCTAssertGreaterThan(video, 30)
        XCTAssertLessThan(video, 120)
        let goog = plans.filter { $0.format == .goog }.count
        XCTAssertEqual(Double(goog) / 200, 0.3, accuracy: 0.1, "about 30 % legacy statistics")
        // Durations: 20 s to 20 min, most of them a few minutes.
        let seconds = plans.compactMap { $0.script.connectMs != nil ? $0.script.mediaSeconds : nil }.sorted()
        XCTAssertGreaterThanOrEqual(seconds.first!, 16)  // a lost connection can cut a call short
        XCTAssertLessThanOrEqual(seconds.last!, 1_200)
        XCTAssertTrue((60...400).contains(seconds[seconds.count / 2]), "median \(seconds[seconds.count / 2]) s")
        // Calls spread over the 7 days before the default end.
        let starts = plans.map(\.startMs)
        let end = SimulatorConfiguration.defaultEndMs
        XCTAssertGreaterThanOrEqual(starts.min()!, end - 7 * 86_400_000)
        XCTAssertLessThan(starts.max()!, end)
        XCTAssertGreaterThan(starts.max()! - starts.min()!, 5 * 86_400_000)
        // The profile is in the labels of the call record.
        let first = run.simulator.records(forCall: 0)[0]
        XCTAssertEqual(first.kind, .call)
        XCTAssertEqual(first["labels"]?["profile"]?.stringValue, run.simulator.plan(0).profile.rawValue)
    }

    func testEndRecordsCarryTheSDKsReasonsAndCodes() {
        let ends = run.calls.compactMap(\.end)
        let reasons = Set(ends.compactMap { $0["reason"]?.stringValue })
        XCTAssertTrue(reasons.isSuperset(of: ["terminatedLocally", "terminatedRemotely", "failed", "rejected", "timedOut"]))
        let kandy = Set(ends.compactMap { $0["statusCode"]?.int64Value })
        XCTAssertTrue(kandy.isSuperset(of: [9900, 9901, 9906]), "\(kandy)")
        let sip = Set(ends.compactMap { $0["statusCode"]?.int64Value ?? $0["sipStatus"]?.int64Value }.filter { $0 < 1_000 })
        XCTAssertFalse(sip.isDisjoint(with: [480, 486, 503]), "\(sip)")
        XCTAssertTrue(ends.contains { $0["sipReason"]?.stringValue?.hasPrefix("Q.850") == true })
        for e in ends {
            XCTAssertNotNil(e["durationMs"]?.int64Value)
        }
        // Never-answered calls have no media and a zero duration.
        for c in run.calls where c.plan.script.connectMs == nil {
            XCTAssertEqual(c.end?["durationMs"]?.int64Value, 0)
        }
    }

    func testQualityCallbacksOnlyOnChangeEveryFiveSeconds() {
        let withQuality = run.calls.filter { !$0.qualityScores.isEmpty }
        XCTAssertGreaterThan(withQuality.count, 10)
        XCTAssertTrue(withQuality.allSatisfy { $0.plan.sdk == .ciscoREM })
        for c in withQuality {
            let connect = c.plan.script.connectMs!
            XCTAssertEqual((c.qualityScores[0].ts - connect) % 5_000, 3, "first callback 5 s after media")
            for (a, b) in zip(c.qualityScores, c.qualityScores.dropFirst()) {
                XCTAssertNotEqual(a.score, b.score, "a callback only when the value changes")
                XCTAssertEqual((b.ts - a.ts) % 5_000, 0)
            }
            XCTAssertTrue(c.qualityScores.allSatisfy { (0...100).contains($0.score) })
        }
        // A clean call says 100 once and then stays quiet.
        XCTAssertTrue(withQuality.contains { $0.plan.profile == .good && $0.qualityScores.map(\.score) == [100] })
    }

    func testStatisticsEveryPeriod() {
        let c = run.calls.first { $0.plan.script.connectMs != nil && $0.plan.profile == .good }!
        XCTAssertEqual(c.stats, c.plan.script.mediaSeconds / 10)
    }
}
