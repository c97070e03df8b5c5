import Analysis
import CallLog
@testable import Collector
import Foundation
import TestSupport
import XCTest

/// The example adapters, fed with what the SDKs hand over: W3C JSON strings built from the
/// real Chromium recording, the Anonymous Call SDK's statistic objects from its guide's
/// Appendix E, the additional-info map, end statuses, AudioCodes termination info and Cisco
/// quality and reconnection callbacks.
final class AdapterTests: XCTestCase {
    static let info = CallInfo(direction: .outgoing, sdk: "kandy-mobile", sdkVersion: "5.14.0", network: "wifi", media: ["audio", "video"])

    /// Hands out prepared values one per fetch, then nil.
    final class Script<T: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [T]
        init(_ items: [T]) { self.items = items }
        func next() -> T? {
            lock.lock(); defer { lock.unlock() }
            return items.isEmpty ? nil : items.removeFirst()
        }
    }

    /// Both sides of the recording as Kandy Mobile calls (one per side), sampled every second
    /// as recorded, through `agent`. Returns the reports as the SDK gave them, per call id.
    static func recordThroughAgent(
        _ rec: ChromiumRecording, configuration: (inout CallStatsAgent.Configuration) -> Void = { _ in },
        mapForm: Bool = false, dir: String
    ) -> [String: [JSONValue]] {
        let first = rec.snapshots.map(\.time).min()!
        let clock = ManualClock(start: first - 1_000)
        var config = Logs.configuration(dir)
        config.interval = 1
        configuration(&config)
        let agent = CallStatsAgent(configuration: config, clock: clock, storage: FileStorage())
        var given = [String: [JSONValue]]()
        var recorders = [CallRecorder]()
        for side in ["a", "b"] {
            let reports = rec.snapshots.filter { $0.side == side }.map(\.stats)
            given["chromium-\(side)"] = reports.map { .array($0) }
            let texts = reports.map { report -> String in
                guard mapForm else { return JSONValue.array(report).serialized() }
                // The RTCStatsReport map form: {id: stats}, ids left out of the values.
                var o = JSONObject()
                for s in report {
                    var stat = s.objectValue!
                    let id = stat["id"]!.stringValue!
                    stat["id"] = nil
                    o[id] = .object(stat)
                }
                return JSONValue.object(o).serialized()
            }
            let script = Script(texts)
            recorders.append(
                agent.attach(
                    callID: "chromium-\(side)", info: info,
                    call: KandyMobileCall { done in done(script.next()) }))
        }
        clock.advance(by: Int64(rec.snapshots.filter { $0.side == "a" }.count) * 1_000)
        for r in recorders { r.end(CallEnd(reason: .terminatedLocally, statusCode: 9901, statusText: "Ended by local user")) }
        agent.flush()
        XCTAssertEqual(agent.counters.droppedTotal, 0)
        agent.shutdown()
        return given
    }

    func testKandyMobileJSONStringsFromTheRecordingAreCarriedUnchanged() throws {
        let rec = try Recording.load()
        for mapForm in [false, true] {
            let dir = Logs.directory()
            let given = Self.recordThroughAgent(rec, mapForm: mapForm, dir: dir)
            let records = Logs.records(dir)
            for (call, reports) in given {
                let written = records.filter { $0.kind == .stats && $0.call == call }.map { $0["report"]! }
                XCTAssertEqual(written.count, reports.count, call)
                for (w, g) in zip(written, reports) {
                    XCTAssertTrue(w.isEquivalent(to: g), "\(call): the report as the SDK gave it (map form: \(mapForm))")
                }
                XCTAssertEqual(records.filter { $0.call == call }.map(\.kind).first, .call)
                XCTAssertEqual(records.filter { $0.call == call }.map(\.kind).last, .end)
            }
        }
    }

    /// The recorded relay added 30 ms each way and dropped 2 %: the analysis of what the
    /// collector wrote sees exactly that.
    func testRecordingThroughTheCollectorIsAnalysedLikeTheRecording() throws {
        let rec = try Recording.load()
        let dir = Logs.directory()
        _ = Self.recordThroughAgent(rec, dir: dir)
        let analyses = try Logs.analyze(dir)
        let a = try XCTUnwrap(analyses["chromium-a"])
        XCTAssertEqual(try XCTUnwrap(a.call.rttMs), 70, accuracy: 5)
        let audio = try XCTUnwrap(a.streams.first { $0.streamID.contains("inbound:audio") })
        XCTAssertEqual(try XCTUnwrap(audio.lossPct), 2, accuracy: 1)
        let b = try XCTUnwrap(analyses["chromium-b"])
        let video = try XCTUnwrap(b.streams.first { $0.streamID.contains("inbound:video") })
        XCTAssertEqual(video.widthMax, 640)
        XCTAssertEqual(a.call.endReason, "terminatedLocally")
        XCTAssertEqual(a.call.endStatusCode, 9901)
    }

    // MARK: - Kandy Anonymous Call SDK

    /// Appendix E of the Anonymous Call SDK guide (audio call, then video call), parsed from
    /// the seed excerpts into the SDK's `SMCallStatistic` shape.
    static func appendixE() throws -> [[LegacyStatistic]] {
        let url = TestPaths.shared.appendingPathComponent("reference/seed-excerpts.md")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { throw XCTSkip("../shared/reference is absent") }
        let lines = text.components(separatedBy: "\n")
        guard let start = lines.firstIndex(where: { $0.hasPrefix("Example (Sample) statistic data for an audio call") }),
            let video = lines.firstIndex(where: { $0.hasPrefix("Example (Sample) statistic data for a video call") }),
            let end = lines.firstIndex(where: { $0.hasPrefix("## 3.") })
        else { throw XCTSkip("Appendix E not found") }
        return [parse(lines[start..<video]), parse(lines[video..<end])]
    }

    static func parse(_ lines: ArraySlice<String>) -> [LegacyStatistic] {
        let body = lines.filter {
            let t = $0.trimmingCharacters(in: .whitespaces)
            return !t.hasPrefix("```") && !t.hasPrefix("//")
        }.joined(separator: " ")
        let object = try! Regex(#"id: ([^,]+), type: ([^,]+), timestamp:\s*([0-9.E+]+),\s*values:\s*\(([^)]*)\)"#)
        let pair = try! Regex(#""([^":]+): ([^"]*)""#)
        return body.matches(of: object).map { m in
            let values = String(m.output[4].substring!).matches(of: pair).map {
                (name: String($0.output[1].substring!), value: String($0.output[2].substring!))
            }
            return LegacyStatistic(
                id: String(m.output[1].substring!), type: String(m.output[2].substring!),
                timestamp: Double(m.output[3].substring!)!, values: values)
        }
    }

    func testKandyAnonymousStatisticObjectsFromAppendixE() throws {
        let samples = try Self.appendixE()
        XCTAssertEqual(samples.map(\.count).min().map { $0 > 15 }, true, "both samples parsed")
        let audio = samples[0]
        let pair = try XCTUnwrap(audio.first { $0.id == "Conn-audio-1-0" })
        XCTAssertEqual(pair.values.first { $0.name == "googLocalAddress" }?.value, "10.254.20.195:61074")

        let dir = Logs.directory()
        let clock = ManualClock(start: 1_445_079_414_000)
        var config = Logs.configuration(dir)
        config.pseudonymizer = Pseudonymizer(method: .keyedHash(SipHashKey(k0: 1, k1: 2)))
        let agent = CallStatsAgent(configuration: config, clock: clock, storage: FileStorage())
        let script = Script(samples)
        let r = agent.attach(
            callID: "anon-1", info: CallInfo(direction: .outgoing, sdk: "kandy-anonymous", sdkVersion: "4.0"),
            call: KandyAnonymousCall { done in done(script.next()) })
        clock.advance(by: 10_000)
        r.end(KandyEndStatus.end(statusCode: "9900", reason: "Reason not provided"))
        agent.flush()
        let records = Logs.records(dir)
        let stats = records.filter { $0.kind == .stats }
        XCTAssertEqual(stats.count, 2, "one sample on the tick, the last one at the end")
        for (written, given) in zip(stats, samples) {
            XCTAssertEqual(written["format"], "goog")
            let report = try XCTUnwrap(written["report"]?.arrayValue)
            XCTAssertEqual(report.count, given.count)
            for (w, g) in zip(report, given) {
                XCTAssertEqual(w["id"]?.stringValue, g.id)
                XCTAssertEqual(w["type"]?.stringValue, g.type)
                XCTAssertEqual(w["timestamp"]?.doubleValue, g.timestamp)
                let values = try XCTUnwrap(w["values"]?.objectValue)
                XCTAssertEqual(values.keys, g.values.map(\.name), "every value, in the SDK's order")
                for v in g.values where !v.name.hasSuffix("Address") && v.name != "ipAddress" {
                    XCTAssertEqual(values[v.name]?.stringValue, v.value, "\(g.id).\(v.name) as a string, unchanged")
                }
            }
        }
        // Addresses pseudonymised, ports kept: "10.254.20.195:61074" → "24x.…:61074".
        let writtenPair = try XCTUnwrap(stats[0]["report"]?.arrayValue?.first { $0["id"] == "Conn-audio-1-0" })
        let local = try XCTUnwrap(writtenPair["values"]?["googLocalAddress"]?.stringValue)
        XCTAssertTrue(local.hasSuffix(":61074"))
        XCTAssertFalse(local.hasPrefix("10.254."))
        XCTAssertFalse(Logs.text(dir).contains("10.254."), "no address of the sample is written")
        let end = try XCTUnwrap(records.last)
        XCTAssertEqual(end["reason"], "terminatedRemotely")
        XCTAssertEqual(end["statusCode"], 9900)
        XCTAssertEqual(end["statusText"], "Reason not provided")
        agent.shutdown()
    }

    func testKandyEndStatuses() {
        XCTAssertEqual(KandyEndStatus.end(statusCode: 9901, reason: "Ended by local user").reason, .terminatedLocally)
        XCTAssertEqual(KandyEndStatus.end(statusCode: 9900, reason: "Reason not provided").reason, .terminatedRemotely)
        XCTAssertEqual(KandyEndStatus.end(statusCode: 9906, reason: nil).reason, .failed)
        let busy = KandyEndStatus.end(statusCode: "486", reason: "Busy Here")
        XCTAssertEqual(busy, CallEnd(reason: .rejected, statusCode: 486, statusText: "Busy Here", sipStatus: 486))
        XCTAssertEqual(KandyEndStatus.end(statusCode: 480, reason: nil).reason, .timedOut)
        XCTAssertEqual(KandyEndStatus.end(statusCode: 9901, reason: nil).sipStatus, nil, "SDK codes are not SIP codes")
        XCTAssertEqual(KandyEndStatus.end(statusCode: "n/a", reason: "odd"), CallEnd(reason: .undefined, statusText: "odd"))
    }

    // MARK: - Additional info, AudioCodes, Cisco

    func testAdditionalInfoMapsOfEveryActionAndType() throws {
        // The guide's example, verbatim.
        let example: [String: Any] = [
            "action": "callMetric", "type": "callRestSent",
            "callId": "7E60066C-C7F3-438A-95B1-DDE8634E1072", "time": "1455701052999",
        ]
        let parsed = try XCTUnwrap(AdditionalInfo.event(from: example))
        XCTAssertEqual(parsed.callID, "7E60066C-C7F3-438A-95B1-DDE8634E1072")
        XCTAssertEqual(parsed.event, SDKEvent(action: "callMetric", type: "callRestSent", time: 1_455_701_052_999))
        XCTAssertNil(AdditionalInfo.event(from: ["type": "iceNormal"]), "no action")

        let dir = Logs.directory()
        let clock = ManualClock(start: 1_455_701_050_000)
        let agent = CallStatsAgent(configuration: Logs.configuration(dir), clock: clock, storage: FileStorage())
        let r = agent.attach(callID: parsed.callID!, info: Self.info)
        var expected = [(String, String)]()
        var t: Int64 = 1_455_701_052_999
        for (action, types) in [
            (EventName.callMetric, EventName.callMetricTypes), (EventName.iceTimeout, EventName.iceTimeoutTypes),
            (EventName.iceState, EventName.iceStateTypes), (EventName.ipChange, EventName.ipChangeTypes),
        ] {
            for type in types {
                t += 10
                let map: [String: Any] = ["action": action, "type": type, "callId": parsed.callID!, "time": t, "extra": 3]
                r.event(try XCTUnwrap(AdditionalInfo.event(from: map)).event)
                expected.append((action, type))
            }
        }
        r.end(CallEnd(reason: .terminatedLocally))
        agent.flush()
        let events = Logs.records(dir).filter { $0.kind == .event }
        XCTAssertEqual(events.map { "\($0["action"]!.stringValue!)/\($0["type"]!.stringValue!)" }, expected.map { "\($0)/\($1)" })
        XCTAssertEqual(events.map(\.ts), (1...expected.count).map { 1_455_701_052_999 + Int64($0) * 10 }, "the SDK's times")
        XCTAssertEqual(events.first?["detail"], ["extra": 3])
        let analysis = try XCTUnwrap(try Logs.analyze(dir)[parsed.callID!])
        XCTAssertEqual(analysis.events.filter { $0.kind == "event" }.count, expected.count, "the analyser reads every event")
        agent.shutdown()
    }

    func testAudioCodesTerminationAndSessionFlags() throws {
        let info = AudioCodesTermination(
            reason: .rejected, sipStatusCode: 486, sipStatusText: "Busy Here",
            sipReasonHeaderValue: "Q.850;cause=17",
            sipMessage: "SIP/2.0 486 Busy Here\r\nVia: SIP/2.0/UDP 192.0.2.44:5060\r\nFrom: <sip:alice@example.com>")
        XCTAssertEqual(
            info.callEnd(duration: 12.5),
            CallEnd(reason: .rejected, statusText: "Busy Here", sipStatus: 486, sipReason: "Q.850;cause=17", durationMs: 12_500))
        XCTAssertEqual(AudioCodesTermination(reason: .undefined).callEnd(), CallEnd(reason: .undefined))

        var flags = AudioCodesSessionFlags()
        var changes = [CallStateChange]()
        for next in [
            AudioCodesSessionFlags(isLocallyHeld: true), AudioCodesSessionFlags(isLocallyHeld: true, isAudioMuted: true),
            AudioCodesSessionFlags(isRemotelyHeld: true, isVideoMuted: true), AudioCodesSessionFlags(),
        ] {
            changes += next.changes(from: flags)
            flags = next
        }
        XCTAssertEqual(changes, [.hold, .mute, .unhold, .remoteHold, .unmute, .videoOff, .remoteUnhold, .videoOn])

        let dir = Logs.directory()
        let agent = CallStatsAgent(configuration: Logs.configuration(dir), clock: ManualClock(), storage: FileStorage())
        let r = agent.attach(callID: "ac-1", info: CallInfo(direction: .incoming, sdk: "audiocodes", sdkVersion: "7.4"))
        for c in changes { r.state(c) }
        r.end(info.callEnd(duration: 12.5))
        agent.flush()
        let records = Logs.records(dir)
        XCTAssertEqual(records.filter { $0.kind == .event }.compactMap { $0["type"]?.stringValue }, changes.map(\.rawValue))
        let end = try XCTUnwrap(records.last)
        XCTAssertEqual(end["reason"], "rejected")
        XCTAssertEqual(end["sipStatus"], 486)
        XCTAssertEqual(end["sipReason"], "Q.850;cause=17")
        XCTAssertEqual(end["durationMs"], 12_500)
        XCTAssertFalse(Logs.text(dir).contains("alice"), "the SIP message is never written")
        let analysis = try XCTUnwrap(try Logs.analyze(dir)["ac-1"])
        XCTAssertEqual(analysis.call.grade, .unanswered, "a rejected call is unanswered, not a bad call")
        agent.shutdown()
    }

    func testCiscoQualityCallbacksAndReconnectionAttempts() throws {
        let dir = Logs.directory()
        let clock = ManualClock()
        let t0 = clock.now()
        let agent = CallStatsAgent(configuration: Logs.configuration(dir), clock: clock, storage: FileStorage())
        let r = agent.attach(callID: "rem-1", info: CallInfo(direction: .outgoing, sdk: "cisco-rem", sdkVersion: "11.6"))
        let cisco = CiscoConnectionEvents(recorder: r)
        clock.advance(by: 5_000)
        cisco.onConnectionQualityChanged(100)  // first callback, about 5 s after remote media
        clock.advance(by: 20_000)
        cisco.onConnectionQualityChanged(72)  // fired only because the value changed
        cisco.onNetworkUnavailable()
        let delays = [0.5, 1, 2, 4, 4, 4]
        for (i, d) in delays.enumerated() {
            cisco.onConnectionRetry(attempt: i + 1, delayUntilNextRetry: d)
            clock.advance(by: Int64(d * 1000))
        }
        cisco.onConnectionLost()
        cisco.onConnectionQualityChanged(140)  // out of range: clamped
        r.end(CallEnd(reason: .failed))
        agent.flush()
        let records = Logs.records(dir)
        let quality = records.filter { $0.kind == .quality }
        XCTAssertEqual(quality.map { $0["score"] }, [100, 72, 100])
        XCTAssertEqual(quality.map(\.ts).prefix(2), [t0 + 5_000, t0 + 25_000])
        XCTAssertTrue(quality.allSatisfy { $0["source"] == "cisco-rem" && $0["direction"] == "inbound" })
        let retries = records.filter { $0["type"] == "reconnecting" }
        XCTAssertEqual(retries.compactMap { $0["detail"]?["attempt"]?.int64Value }, [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(retries.compactMap { $0["detail"]?["delayMs"]?.int64Value }, [500, 1000, 2000, 4000, 4000, 4000])
        XCTAssertEqual(
            records.filter { $0.kind == .event }.compactMap { $0["type"]?.stringValue }.filter { $0 != "reconnecting" },
            ["networkUnavailable", "connectionLost"])
        let analysis = try XCTUnwrap(try Logs.analyze(dir)["rem-1"])
        XCTAssertEqual(analysis.events.filter { $0.kind == "quality" }.map(\.type), ["100", "72", "100"])
        agent.shutdown()
    }
}
