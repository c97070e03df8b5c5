import Analysis
import CallLog
import Foundation
import MaterialScanning
import MaterialTestSupport
import TestSupport
import XCTest

@testable import Importers

/// Dumps laid out from the real Chromium recording (see `DumpLayouts`) imported and analysed:
/// they must give the per-stream figures of the recording imported directly.
final class DumpImportTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("dump-import") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    func recording() throws -> ChromiumRecording {
        guard let url = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is not present") }
        return try ChromiumRecording(url: url)
    }

    func file(_ name: String, _ text: String) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func gzip(_ path: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/gzip")
        p.arguments = ["-k", "-f", path]
        try p.run()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        return path + ".gz"
    }

    /// Imports `path` into a log file; returns the result and the records read back.
    func importDump(_ path: String, callID: String? = nil, labels: [String: String] = [:]) throws -> (DumpImport.Result, [LogRecord], String) {
        let out = dir.appendingPathComponent(UUID().uuidString + ".ndjson.zst").path
        let writer = try LogWriter(path: out)
        let result = DumpImport(path: path, callID: callID, labels: labels).run { try writer.append($0) }
        try writer.close()
        let (records, issues) = LogReader(path: out).readAll()
        XCTAssertEqual(issues, [])
        return (result, records, out)
    }

    /// The analysis of a log file as `callstats analyze` reads it.
    func analyze(_ path: String) throws -> CallAnalysis {
        CallAnalyzer.analyze(try Harness.material(ofLog: path), config: AnalysisConfig())
    }

    func direct() throws -> CallAnalysis {
        guard let url = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is not present") }
        let path = dir.appendingPathComponent("direct.ndjson.zst").path
        let w = try LogWriter(path: path)
        for r in ChromiumImporter().convert(path: url.path).records { try w.append(r) }
        try w.close()
        return try analyze(path)
    }

    /// Per stream (named by side, direction, kind and SSRC) and per call: the same figures.
    func assertSameFigures(
        _ imported: CallAnalysis, _ recorded: CallAnalysis, sides: [String: String],
        file: StaticString = #filePath, line: UInt = #line
    ) {
        func key(_ s: StreamSummary, renaming: [String: String]) -> String {
            var id = s.streamID
            for (from, to) in renaming where id.hasPrefix(from + ":") { id = to + id.dropFirst(from.count) }
            return id
        }
        let byKey = Dictionary(imported.streams.map { (key($0, renaming: sides), $0) }, uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(Set(byKey.keys), Set(recorded.streams.map(\.streamID)), "the same streams", file: file, line: line)
        XCTAssertGreaterThanOrEqual(recorded.streams.count, 4, file: file, line: line)
        for r in recorded.streams {
            guard let s = byKey[r.streamID] else { continue }
            XCTAssertEqual(s.packets, r.packets, r.streamID, file: file, line: line)
            XCTAssertEqual(s.packetsLost, r.packetsLost, r.streamID, file: file, line: line)
            XCTAssertEqual(s.lossPct ?? -1, r.lossPct ?? -1, accuracy: 0.01, "loss \(r.streamID)", file: file, line: line)
            XCTAssertEqual(s.jitterMeanMs ?? -1, r.jitterMeanMs ?? -1, accuracy: 0.05, "jitter \(r.streamID)", file: file, line: line)
            XCTAssertEqual(s.rttMeanMs ?? -1, r.rttMeanMs ?? -1, accuracy: 0.5, "RTT \(r.streamID)", file: file, line: line)
            XCTAssertEqual(s.mosMean ?? -1, r.mosMean ?? -1, accuracy: 0.01, "MOS \(r.streamID)", file: file, line: line)
            XCTAssertEqual(s.widthMax, r.widthMax, r.streamID, file: file, line: line)
        }
        XCTAssertEqual(imported.call.lossPct ?? -1, recorded.call.lossPct ?? -1, accuracy: 0.01, file: file, line: line)
        XCTAssertEqual(imported.call.rttMs ?? -1, recorded.call.rttMs ?? -1, accuracy: 0.5, file: file, line: line)
        XCTAssertEqual(imported.call.jitterMs ?? -1, recorded.call.jitterMs ?? -1, accuracy: 0.05, file: file, line: line)
        XCTAssertEqual(imported.call.mosCQ ?? -1, recorded.call.mosCQ ?? -1, accuracy: 0.01, file: file, line: line)
        XCTAssertEqual(imported.call.grade, recorded.call.grade, file: file, line: line)
    }

    func testWebRTCInternalsDumpGivesTheRecordingsFigures() throws {
        let rec = try recording()
        let plain = try file("webrtc_internals_dump.txt", DumpLayouts.webrtcInternals(rec))
        for path in [plain, try gzip(plain)] {
            XCTAssertEqual(try DumpImport.detect(path: path), .webrtcInternals)
            let (result, records, out) = try importDump(path)
            XCTAssertNil(result.failure)
            XCTAssertEqual(result.skipped, [])
            XCTAssertEqual(result.callID, "webrtc_internals_dump")
            XCTAssertEqual(result.snapshots, ["7-1": 60, "7-2": 60])
            XCTAssertTrue(result.notes.contains { $0.contains("series the page computes") }, "\(result.notes)")
            XCTAssertTrue(result.connected)

            // Every object of every recorded snapshot, with its own timestamp (remote ones too).
            // Objects come in the order the dump first lists them (its series' order), which is
            // all a dump says of a report's order.
            let stats = records.filter { $0.kind == .stats && $0["pc"]?.stringValue == "7-1" }
            let recorded = rec.snapshots.filter { $0.side == "a" }
            XCTAssertEqual(stats.count, recorded.count)
            func times(_ report: [JSONValue]) -> [String: JSONValue] {
                Dictionary(report.map { ($0["id"]!.stringValue!, $0["timestamp"]!) }, uniquingKeysWith: { a, _ in a })
            }
            for (s, r) in zip(stats, recorded) {
                let report = try XCTUnwrap(s["report"]?.arrayValue)
                XCTAssertEqual(report.count, r.stats.count)
                XCTAssertEqual(times(report), times(r.stats))
                XCTAssertFalse(report.contains { $0.objectValue!.keys.contains { $0.hasPrefix("[") } }, "no computed series")
                for ro in r.stats where ["inbound-rtp", "remote-inbound-rtp"].contains(ro["type"]?.stringValue ?? "") {
                    let o = try XCTUnwrap(report.first { $0["id"] == ro["id"] })
                    XCTAssertTrue(o.isEquivalent(to: ro), "carried whole: \(o.serialized())")
                }
            }
            let call = try XCTUnwrap(records.first { $0.kind == .call })
            XCTAssertEqual(call["sdk"], "chrome")
            XCTAssertEqual(call["sdkVersion"], "156.0.7444.59")
            XCTAssertEqual(call["direction"], "outgoing")
            XCTAssertNil(call["labels"], "no labels the dump does not have")
            XCTAssertEqual(records.last?.kind, .end)

            let imported = try analyze(out)
            assertSameFigures(imported, try direct(), sides: ["7-1": "a", "7-2": "b"])
            // The setup timeline from the API trace: created at the offer, answered at the answer.
            let events = rec.events
            let create = events.first { $0.type == "callCreate" }!.time
            XCTAssertEqual(imported.call.answerMs, events.first { $0.type == "callAnswerReceived" }!.time - create)
            XCTAssertEqual(imported.call.restSentMs, 3)
            XCTAssertNotNil(imported.call.mediaMs)
            XCTAssertEqual(imported.call.endReason, "undefined", "a closed peer connection does not say who hung up")
        }
    }

    func testLocalClockTraceTimesArePlacedByTheStatistics() throws {
        let rec = try recording()
        let zone = try XCTUnwrap(TimeZone(identifier: "America/New_York"))
        let path = try file("old.txt", DumpLayouts.webrtcInternals(rec, legacyTimes: zone))
        let (result, records, _) = try importDump(path)
        XCTAssertNil(result.failure)
        XCTAssertTrue(result.notes.contains { $0.contains("UTC-05:00") }, "\(result.notes)")
        let create = try XCTUnwrap(records.first { $0["type"] == "callCreate" })
        let recorded = rec.events.first { $0.type == "callCreate" }!.time
        XCTAssertEqual(Double(create.ts), Double(recorded), accuracy: 1000, "second-precise local time placed in UTC")
    }

    func testRTCStatsDumpGivesTheRecordingsFigures() throws {
        let rec = try recording()
        let plain = try file("rtcstats-client", DumpLayouts.rtcstats(rec))
        for path in [plain, try gzip(plain)] {
            XCTAssertEqual(try DumpImport.detect(path: path), .rtcstats)
            let (result, records, out) = try importDump(path, labels: ["tenant": "acme"])
            XCTAssertNil(result.failure)
            XCTAssertEqual(result.skipped, [])
            XCTAssertEqual(result.snapshots, ["PC_0": 60, "PC_1": 60])
            // Deltas undone: every snapshot holds the recorded report, object for object, member
            // for member. The delta cannot say that a member went away (the recording's
            // remote-outbound-rtp `roundTripTime` comes and goes): such a member keeps its last
            // value, as rtcstats-server's decompression keeps it.
            let stats = records.filter { $0.kind == .stats && $0["pc"]?.stringValue == "PC_1" }
            var stale = 0
            for (s, r) in zip(stats, rec.snapshots.filter { $0.side == "b" }) {
                let report = try XCTUnwrap(s["report"]?.arrayValue)
                // Nor that an object went away (a candidate pair no longer reported): it stays.
                XCTAssertTrue(Set(report.map { $0["id"]!.stringValue! }).isSuperset(of: r.stats.map { $0["id"]!.stringValue! }))
                let byID = Dictionary(report.map { ($0["id"]!.stringValue!, $0) }, uniquingKeysWith: { a, _ in a })
                for o in r.stats {
                    let id = o["id"]!.stringValue!
                    let expected = try XCTUnwrap(o.objectValue)
                    let got = try XCTUnwrap(byID[id]?.objectValue, id)
                    // An object whose only change is its timestamp is not sent: it keeps the last one.
                    for e in expected.entries where e.key != "timestamp" {
                        XCTAssertEqual(got[e.key], e.value, "\(id).\(e.key) at \(s.ts)")
                    }
                    stale += got.count - expected.count
                }
            }
            XCTAssertGreaterThan(stale, 0)
            let call = try XCTUnwrap(records.first { $0.kind == .call })
            XCTAssertEqual(call["labels"], ["tenant": "acme"])
            XCTAssertEqual(call["sdkVersion"], "156.0.7444.59")
            assertSameFigures(try analyze(out), try direct(), sides: ["PC_0": "a", "PC_1": "b"])
        }
    }

    /// Chrome's own rtcstats dump: relative times, whole reports.
    func testChromesRTCStatsDump() throws {
        let rec = try recording()
        let text = DumpLayouts.chromeRTCStats(rec)
        let path = try file("rtcstats_dump.gz.txt", text)
        XCTAssertEqual(try DumpImport.detect(path: path), .rtcstats)
        let (result, records, out) = try importDump(path)
        XCTAssertNil(result.failure)
        XCTAssertEqual(result.snapshots, ["7-1": 60, "7-2": 60])
        XCTAssertEqual(result.skipped, [])
        let stats = records.filter { $0.kind == .stats }
        XCTAssertEqual(stats.map(\.ts), rec.snapshots.map(\.time).sorted(), "times rebuilt from the differences")
        for (s, r) in zip(stats.filter { $0["pc"] == "7-2" }, rec.snapshots.filter { $0.side == "b" }) {
            XCTAssertTrue(try XCTUnwrap(s["report"]).isEquivalent(to: .array(r.stats)), "whole reports carried unchanged")
        }
        assertSameFigures(try analyze(out), try direct(), sides: ["7-1": "a", "7-2": "b"])
    }

    /// An rtcstats-js 3 client's dump (table-compressed statistics, numbered methods, relative
    /// times): every snapshot holds the recorded report's members under their names, and the
    /// figures are the recording's.
    func testRTCStatsV3TableCompressedDump() throws {
        let rec = try recording()
        let plain = try file("rtcstats-v3", DumpLayouts.rtcstatsV3(rec))
        for path in [plain, try gzip(plain)] {
            XCTAssertEqual(try DumpImport.detect(path: path), .rtcstats)
            let (result, records, out) = try importDump(path)
            XCTAssertNil(result.failure)
            XCTAssertEqual(result.skipped, [])
            XCTAssertEqual(result.snapshots, ["PC_0": 60, "PC_1": 60])
            // Numbered ids, but the recorded members and types by name, values unchanged.
            let stats = records.filter { $0.kind == .stats && $0["pc"]?.stringValue == "PC_1" }
            for (s, r) in zip(stats, rec.snapshots.filter { $0.side == "b" }) {
                let report = try XCTUnwrap(s["report"]?.arrayValue)
                let inbound = r.stats.filter { $0["type"] == "inbound-rtp" }
                for o in inbound {
                    let got = try XCTUnwrap(report.first { $0["type"] == "inbound-rtp" && $0["ssrc"] == o["ssrc"] }, "inbound \(o["ssrc"]!) at \(s.ts)")
                    for member in ["packetsReceived", "packetsLost", "jitter", "kind", "jitterBufferDelay"] where o[member] != nil {
                        XCTAssertEqual(got[member], o[member], "\(member) at \(s.ts)")
                    }
                    XCTAssertEqual(got["timestamp"], o["timestamp"], "timestamp at \(s.ts)")
                }
                XCTAssertFalse(report.contains { $0["type"] == "certificate" }, "certificates are not sent")
            }
            assertSameFigures(try analyze(out), try direct(), sides: ["PC_0": "a", "PC_1": "b"])
        }
        // A few numbers of the protocol's tables, as rtcstats-shared publishes them.
        XCTAssertEqual(
            ["15", "16", "47", "75", "t"].map(RTCStatsTables.memberName), ["packetsLost", "jitter", "jitterBufferDelay", "roundTripTime", "timestamp"])
        XCTAssertEqual(RTCStatsTables.typeName(3), "remote-inbound-rtp")
    }

    /// A dump of an older Chrome that used the legacy getStats API: no `statsType`, no timestamp
    /// series, values as the page kept them; it becomes `goog` records with text values.
    func testLegacyGoogDump() throws {
        let t0 = 1_445_079_500_000.0
        func series(_ values: [JSONValue]) -> JSONValue {
            [
                "startTime": .string(DumpLayouts.isoDate(t0)), "endTime": .string(DumpLayouts.isoDate(t0 + 1000 * Double(values.count - 1))),
                "values": .string(JSONValue.array(values).serialized()),
            ]
        }
        let n = 12
        func counter(_ step: Double) -> [JSONValue] { (0..<n).map { JSONValue.number(step * Double($0 + 1)) } }
        func same(_ v: JSONValue) -> [JSONValue] { Array(repeating: v, count: n) }
        let lost = (0..<n).map { JSONValue.number(Double(2 * $0)) }
        // As the page kept the legacy API's text: numbers became numbers, the rest stayed text.
        let dump: JSONValue = [
            "getUserMedia": [],
            "PeerConnections": [
                "1234-1": [
                    "constraints": "", "rtcConfiguration": "{ iceServers: [] }",
                    "stats": [
                        "ssrc_2707401590_recv-audioOutputLevel": series(same(2000)),
                        "ssrc_2707401590_recv-bytesReceived": series(counter(8000)),
                        "ssrc_2707401590_recv-packetsLost": series(lost),
                        "ssrc_2707401590_recv-packetsReceived": series(counter(100)),
                        "ssrc_2707401590_recv-ssrc": series(same(2_707_401_590)),
                        "ssrc_2707401590_recv-googCodecName": series(same("opus")),
                        "ssrc_2707401590_recv-googJitterReceived": series(same(31)),
                        "ssrc_2707401590_recv-googJitterBufferMs": series(same(60)),
                        "ssrc_2707401590_recv-mediaType": series(same("audio")),
                        "ssrc_2707401590_recv-bitsReceivedPerSecond": series(same(64000)),
                        "ssrc_3551301520_send-audioInputLevel": series(same(1500)),
                        "ssrc_3551301520_send-bytesSent": series(counter(8000)),
                        "ssrc_3551301520_send-packetsLost": series(same(0)),
                        "ssrc_3551301520_send-packetsSent": series(counter(100)),
                        "ssrc_3551301520_send-ssrc": series(same(3_551_301_520)),
                        "ssrc_3551301520_send-googCodecName": series(same("opus")),
                        "ssrc_3551301520_send-googRtt": series(same(38)),
                        "ssrc_3551301520_send-mediaType": series(same("audio")),
                        "Conn-audio-1-0-googRtt": series(same(40)),
                        "Conn-audio-1-0-googActiveConnection": series(same("true")),
                        "Conn-audio-1-0-googLocalCandidateType": series(same("local")),
                    ],
                    "updateLog": [
                        ["time": "10/17/2015, 10:58:19 AM", "type": "createOffer", "value": ""],
                        ["time": "10/17/2015, 10:58:19 AM", "type": "setLocalDescription", "value": "type: offer, sdp: v=0\r\n"],
                        ["time": "10/17/2015, 10:58:20 AM", "type": "setRemoteDescription", "value": "type: answer, sdp: v=0\r\n"],
                        ["time": "10/17/2015, 10:58:20 AM", "type": "iceConnectionStateChange", "value": "connected"],
                    ],
                    "url": "https://legacy.example.test/",
                ]
            ],
            "UserAgent": "Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/46.0.2490.71 Safari/537.36",
        ]
        let path = try file("legacy.txt", dump.serialized())
        XCTAssertEqual(try DumpImport.detect(path: path), .webrtcInternals)
        let (result, records, out) = try importDump(path)
        XCTAssertNil(result.failure)
        XCTAssertEqual(result.snapshots, ["1234-1": n])
        let stats = records.filter { $0.kind == .stats }
        XCTAssertTrue(stats.allSatisfy { $0["format"] == "goog" })
        let ssrc = try XCTUnwrap(stats[3]["report"]?.arrayValue?.first { $0["id"] == "ssrc_2707401590_recv" })
        XCTAssertEqual(ssrc["type"], "ssrc")
        XCTAssertEqual(ssrc["timestamp"], .number(t0 + 3000))
        XCTAssertEqual(
            ssrc["values"],
            [
                "audioOutputLevel": "2000", "bytesReceived": "32000", "packetsLost": "6", "packetsReceived": "400",
                "ssrc": "2707401590", "googCodecName": "opus", "googJitterReceived": "31",
                "googJitterBufferMs": "60", "mediaType": "audio",
            ],
            "values as text, the page's per-second conversion left out")
        XCTAssertEqual(stats[3]["report"]?.arrayValue?.first { $0["id"] == "Conn-audio-1-0" }?["type"], "googCandidatePair")
        XCTAssertEqual(records.first { $0.kind == .call }?["sdkVersion"], "46.0.2490.71")
        let analysis = try analyze(out)
        let stream = try XCTUnwrap(analysis.streams.first { $0.direction == .inbound && $0.kind == .audio }, "\(analysis.streams)")
        XCTAssertEqual(stream.packetsLost, 22)
        XCTAssertEqual(try XCTUnwrap(stream.lossPct), 100 * 22.0 / (22 + 1200 - 100), accuracy: 0.5)
        XCTAssertEqual(try XCTUnwrap(analysis.call.rttMs), 38, accuracy: 1)
    }

    /// rtcstats.js on an older Chrome sent the legacy API's reports flattened (`mangleChromeStats`:
    /// `{id, timestamp, type, name: "text"…}`), delta-compressed: they become `goog` records.
    func testRTCStatsDumpOfLegacyReports() throws {
        let t0 = 1_445_079_500_000.0
        var previous: [String: JSONObject] = [:]
        var lines = [
            #"{"path":"/","origin":"https://legacy.example.test","url":"https://legacy.example.test/","userAgent":"Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/46.0.2490.71 Safari/537.36","time":1445079499000,"fileFormat":2}"#
        ]
        lines.append(#"["create","PC_0",{"iceServers":[],"browserType":"webkit"},1445079499100]"#)
        lines.append(#"["createOffer","PC_0",null,1445079499200]"#)
        lines.append(#"["setLocalDescription","PC_0",{"type":"offer","sdp":"v=0"},1445079499210]"#)
        lines.append(#"["setRemoteDescription","PC_0",{"type":"answer","sdp":"v=0"},1445079499700]"#)
        lines.append(#"["oniceconnectionstatechange","PC_0","connected",1445079499800]"#)
        for k in 0..<10 {
            let t = t0 + 1000 * Double(k)
            let recv: JSONObject = [
                "id": "ssrc_2707401590_recv", "timestamp": .number(t), "type": "ssrc", "ssrc": "2707401590",
                "packetsReceived": .string("\(50 * (k + 1))"), "packetsLost": .string("\(k)"),
                "bytesReceived": .string("\(4000 * (k + 1))"), "googCodecName": "opus", "mediaType": "audio",
                "audioOutputLevel": "1200", "googJitterReceived": "12",
            ]
            let send: JSONObject = [
                "id": "ssrc_3551301520_send", "timestamp": .number(t), "type": "ssrc", "ssrc": "3551301520",
                "packetsSent": .string("\(50 * (k + 1))"), "bytesSent": .string("\(4000 * (k + 1))"),
                "packetsLost": "0", "googRtt": "45", "googCodecName": "opus", "mediaType": "audio", "audioInputLevel": "900",
            ]
            let report = [(id: "ssrc_2707401590_recv", stats: recv), (id: "ssrc_3551301520_send", stats: send)]
            lines.append(JSONValue.array(["getstats", "PC_0", .object(DumpLayouts.deltaCompression(previous, report)), .number(t + 5)]).serialized())
            previous = Dictionary(report.map { ($0.id, $0.stats) }, uniquingKeysWith: { $1 })
        }
        let path = try file("legacy-rtcstats", lines.joined(separator: "\n") + "\n")
        let (result, records, out) = try importDump(path)
        XCTAssertNil(result.failure)
        XCTAssertEqual(result.skipped, [])
        let stats = records.filter { $0.kind == .stats }
        XCTAssertEqual(stats.count, 10)
        XCTAssertTrue(stats.allSatisfy { $0["format"] == "goog" })
        let recv = try XCTUnwrap(stats[6]["report"]?.arrayValue?.first { $0["id"] == "ssrc_2707401590_recv" })
        XCTAssertEqual(recv["timestamp"], .number(t0 + 6000))
        XCTAssertEqual(recv["values"]?["packetsReceived"], "350")
        XCTAssertEqual(recv["values"]?["googCodecName"], "opus", "unchanged members carried from the previous report")
        let analysis = try analyze(out)
        let stream = try XCTUnwrap(analysis.streams.first { $0.direction == .inbound && $0.kind == .audio }, "\(analysis.streams)")
        XCTAssertEqual(stream.packetsLost, 9)
        XCTAssertEqual(try XCTUnwrap(analysis.call.rttMs), 45, accuracy: 1)
        XCTAssertEqual(analysis.call.answerMs, 500)
    }

    // MARK: - Bad input

    func testTruncatedDumpKeepsWhatCameBeforeTheCutAndSaysWhere() throws {
        let rec = try recording()
        let text = DumpLayouts.webrtcInternals(rec)
        // Cut inside the second peer connection's statistics.
        let cut = text.range(of: "\"7-2\"")!.upperBound
        let path = try file("cut.txt", String(text[..<cut]) + ": {\n  \"pid\": 4242,\n  \"stats\": {\n   \"P-dataChannelsOpened\": {\"startTime\": \"2026")
        let (result, records, _) = try importDump(path)
        XCTAssertNil(result.failure)
        XCTAssertEqual(result.skipped.count, 1)
        let message = result.skipped[0].description
        XCTAssertTrue(message.hasPrefix("\(path):"), message)
        XCTAssertNotNil(result.skipped[0].line)
        XCTAssertTrue(message.contains("truncated"), message)
        XCTAssertEqual(result.snapshots["7-1"], 60, "the first peer connection is whole")
        XCTAssertEqual(records.filter { $0.kind == .stats }.count, 60)

        // Cut in the middle of the first: nothing whole but its complete series are used.
        let early = try file("early.txt", String(text.prefix(text.count / 4)))
        let (r2, _, _) = try importDump(early)
        XCTAssertEqual(r2.skipped.count + (r2.failure == nil ? 0 : 1), 1)
    }

    func testACallThatNeverConnectedAndADumpWithoutStatistics() throws {
        let dump: JSONValue = [
            "getUserMedia": [["rid": 1, "pid": 2, "request_type": "getUserMedia", "audio": "", "timestamp": 1_700_000_000_000]],
            "PeerConnections": [
                "1-1": [
                    "stats": [:],
                    "updateLog": [
                        ["type": "createOffer", "value": "", "timestamp": 1_700_000_000_100],
                        ["type": "setLocalDescription", "value": "{\"type\":\"offer\",\"sdp\":\"v=0\"}", "timestamp": 1_700_000_000_120],
                        ["type": "setRemoteDescription", "value": "{\"type\":\"answer\",\"sdp\":\"v=0\"}", "timestamp": 1_700_000_001_000],
                        ["type": "iceconnectionstatechange", "value": "\"checking\"", "timestamp": 1_700_000_001_100],
                        ["type": "icecandidateerror", "value": "url: turn:turn.example.test:3478, errorCode: 701", "timestamp": 1_700_000_002_000],
                        ["type": "iceconnectionstatechange", "value": "\"failed\"", "timestamp": 1_700_000_031_000],
                        ["type": "connectionstatechange", "value": "\"failed\"", "timestamp": 1_700_000_031_001],
                    ],
                    "url": "https://x.example.test/",
                ]
            ],
        ]
        let path = try file("failed.txt", DumpLayouts.pretty(dump, indent: 0))
        let (result, records, out) = try importDump(path)
        XCTAssertNil(result.failure)
        XCTAssertFalse(result.connected)
        XCTAssertTrue(result.notes.contains("the call never connected (no ICE connected state in its trace)"), "\(result.notes)")
        XCTAssertTrue(result.notes.contains { $0.contains("no statistics") }, "\(result.notes)")
        XCTAssertEqual(records.filter { $0["type"] == "icecandidateerror" }.count, 1, "every trace entry is kept")
        XCTAssertEqual(records.filter { $0["action"] == "getUserMedia" }.count, 1)
        let end = try XCTUnwrap(records.last)
        XCTAssertEqual(end.kind, .end)
        XCTAssertEqual(end["reason"], "failed")
        let analysis = try analyze(out)
        XCTAssertEqual(analysis.call.grade, .noMedia)
        XCTAssertEqual(analysis.call.answerMs, 900)
        XCTAssertEqual(analysis.call.restSentMs, 20)
    }

    func testInputThatIsNoDumpIsRefusedNamingTheFile() throws {
        let empty = try file("empty.txt", "")
        XCTAssertEqual(DumpImport(path: empty).run { _ in }.failure?.description, "\(empty): the file is empty")
        let csv = try file("calls.csv", "id,loss\n1,2\n")
        let failure = try XCTUnwrap(DumpImport(path: csv).run { _ in }.failure)
        XCTAssertTrue(failure.description.hasPrefix("\(csv):1: not a webrtc-internals dump"), failure.description)
        let missing = dir.appendingPathComponent("missing.txt").path
        XCTAssertTrue(DumpImport(path: missing).run { _ in }.failure!.description.hasPrefix("\(missing): cannot open"))
        // An rtcstats dump with a broken line: the line is named and skipped, the rest kept.
        let rec = try recording()
        var lines = DumpLayouts.rtcstats(rec).components(separatedBy: "\n")
        lines[40] = String(lines[40].prefix(30))
        let broken = try file("broken-rtcstats", lines.joined(separator: "\n"))
        let (result, records, _) = try importDump(broken)
        XCTAssertEqual(result.skipped.map(\.line), [41])
        XCTAssertTrue(result.skipped[0].description.hasPrefix("\(broken):41: not JSON"), result.skipped[0].description)
        XCTAssertGreaterThan(records.filter { $0.kind == .stats }.count, 100)
    }

    /// A large dump is read with memory for one peer connection, not the file: 30 peer
    /// connections of the recording's size; the peak resident size grows by far less than the
    /// file holds.
    func testLargeDumpIsReadInBoundedMemory() throws {
        let rec = try recording()
        let one = DumpLayouts.webrtcInternals(rec)
        // The first peer connection's text, repeated under new ids.
        let start = one.range(of: "\"7-1\": ")!.upperBound
        let end = one.range(of: ",\n  \"7-2\"")!.lowerBound
        let pcText = String(one[start..<end])
        let path = dir.appendingPathComponent("large.txt").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil))
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        h.write("{\n \"getUserMedia\": [],\n \"PeerConnections\": {\n".data(using: .utf8)!)
        let count = 30
        for i in 0..<count {
            h.write("  \"9-\(i)\": \(pcText)\(i + 1 < count ? "," : "")\n".data(using: .utf8)!)
        }
        h.write(" },\n \"UserAgent\": \"\(DumpLayouts.userAgent)\"\n}\n".data(using: .utf8)!)
        try h.close()
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        XCTAssertGreaterThan(size, 12 << 20)

        try "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)  // resets the peak
        let before = Self.residentPeak()
        var records = 0
        let result = DumpImport(path: path).run { _ in records += 1 }
        let growth = Self.residentPeak() - before
        print("large dump: \(size >> 20) MiB read, peak resident size grew \(growth >> 10) KiB")
        XCTAssertNil(result.failure)
        XCTAssertEqual(result.snapshots.count, count)
        XCTAssertEqual(result.snapshots.values.reduce(0, +), 60 * count)
        XCTAssertLessThan(growth, size / 4, "peak grew \(growth >> 20) MiB reading \(size >> 20) MiB")
    }

    static func residentPeak() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }
}
