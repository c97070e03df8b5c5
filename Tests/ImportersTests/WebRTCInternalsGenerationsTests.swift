import Analysis
import CallLog
import Foundation
import MaterialScanning
import TestSupport
import XCTest

@testable import Importers

/// webrtc-internals dumps of several Chrome generations and of Firefox and Safari statistics,
/// from real calls (`Fixtures/webrtc-internals/README.md` says where each comes from), imported
/// and analysed: every figure must be what `oracle.py`, a reader that shares nothing with ours,
/// computes from the same dump (`expected.json`).
final class WebRTCInternalsGenerationsTests: XCTestCase {
    static let fixtures = TestPaths.repositoryRoot.appendingPathComponent("Tests/ImportersTests/Fixtures/webrtc-internals")
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("webrtc-generations") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    struct Imported {
        var result: DumpImport.Result
        var records: [LogRecord]
        var analysis: CallAnalysis
    }

    func importAndAnalyze(_ name: String) throws -> Imported {
        let path = Self.fixtures.appendingPathComponent(name).path
        let out = dir.appendingPathComponent(UUID().uuidString + ".ndjson.zst").path
        let writer = try LogWriter(path: out)
        let result = DumpImport(path: path).run { try writer.append($0) }
        try writer.close()
        XCTAssertNil(result.failure, name)
        XCTAssertEqual(result.skipped, [], name)
        let (records, issues) = LogReader(path: out).readAll()
        XCTAssertEqual(issues, [], name)
        var ingestor = RecordIngestor()
        var failures: [String] = []
        LogLineReader(path: out).forEachLine(
            { line, n in
                if case .skipped(_, let message) = ingestor.ingest(line) { failures.append("line \(n): \(message)") }
            }, issue: { failures.append($0.description) })
        XCTAssertEqual(failures, [], name)
        var all = ingestor.takeAll()
        var m = try XCTUnwrap(all.popLast(), name)
        for other in all { m.merge(other) }
        return Imported(result: result, records: records, analysis: CallAnalyzer.analyze(m, config: AnalysisConfig()))
    }

    static func expected() throws -> JSONValue {
        let text = try String(contentsOf: fixtures.appendingPathComponent("expected.json"), encoding: .utf8)
        return try JSONValue.parse(text)
    }

    /// Per dump, per peer connection and per stream: the oracle's figures, counters exactly,
    /// the round-trip time within 10 %, the statistics' span to the millisecond.
    func testEveryFigureIsTheIndependentReadersFigure() throws {
        guard case .object(let dumps) = try Self.expected() else { return XCTFail("expected.json is not an object") }
        XCTAssertGreaterThanOrEqual(dumps.count, 4)
        var compared = 0
        for (name, pcs) in dumps.entries {
            let imported = try importAndAnalyze(name)
            guard case .object(let byPC) = pcs else { continue }
            XCTAssertEqual(Set(imported.result.snapshots.keys), Set(byPC.keys), "\(name): the same peer connections")
            for (pc, expected) in byPC.entries {
                let stats = imported.records.filter { $0.kind == .stats && $0["pc"]?.stringValue == pc }
                if let first = expected["firstMs"]?.doubleValue, let last = expected["lastMs"]?.doubleValue {
                    XCTAssertEqual(Double(try XCTUnwrap(stats.first, "\(name) \(pc)").ts), first, accuracy: 1, "\(name) \(pc) first statistics")
                    XCTAssertEqual(Double(try XCTUnwrap(stats.last, "\(name) \(pc)").ts), last, accuracy: 1, "\(name) \(pc) last statistics")
                    compared += 2
                }
                guard case .object(let streams)? = expected["streams"] else { continue }
                for (key, figures) in streams.entries {
                    let parts = key.split(separator: ":").map(String.init)
                    let label = "\(name) \(pc) \(key)"
                    guard parts.count == 3, let ssrc = UInt32(parts[2]) else { XCTFail("stream key \(label)"); continue }
                    let found = imported.analysis.streams.first {
                        $0.streamID.hasPrefix(pc + ":") && $0.direction.rawValue == parts[0] && $0.kind.rawValue == parts[1]
                            && $0.ssrc == ssrc
                    }
                    let packets = figures["packets"]?.doubleValue ?? 0
                    guard let s = found else {
                        // A stream that carried nothing has no interval to analyse.
                        XCTAssertEqual(packets, 0, "\(label) is missing: \(imported.analysis.streams.map(\.streamID))")
                        continue
                    }
                    XCTAssertEqual(Double(s.packets), packets, "\(label) packets")
                    XCTAssertEqual(Double(s.bytes), figures["bytes"]?.doubleValue, "\(label) bytes")
                    compared += 2
                    if let lost = figures["packetsLost"]?.doubleValue {
                        XCTAssertEqual(Double(s.packetsLost), lost, "\(label) packets lost")
                        compared += 1
                    }
                    if let rtt = figures["rttMs"]?.doubleValue {
                        let got = try XCTUnwrap(s.rttMeanMs, "\(label) RTT")
                        XCTAssertEqual(got, rtt, accuracy: rtt * 0.1, "\(label) RTT")
                        compared += 1
                    }
                }
            }
        }
        XCTAssertGreaterThan(compared, 100)
    }

    /// `expected.json` is what the oracle prints today, when Python is there to run it.
    func testExpectedFiguresAreTheOraclesOutput() throws {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/python3" }
        guard let python = (path + ["/usr/bin/python3"]).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("python3 is not installed")
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.fixtures.path).filter { $0.hasSuffix(".txt") }.sorted()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python)
        p.arguments = [Self.fixtures.appendingPathComponent("oracle.py").path] + names.map { Self.fixtures.appendingPathComponent($0).path }
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        let printed = try JSONValue.parse(String(decoding: data, as: UTF8.self))
        XCTAssertTrue(printed.isEquivalent(to: try Self.expected()), "expected.json differs from what oracle.py prints")
    }

    /// Chrome M80–M106 named a statistic's type only in its id: the streams are there, typed.
    func testTypesFromIDsOfADumpWithoutStatsType() throws {
        let text = try String(contentsOf: Self.fixtures.appendingPathComponent("chrome-type-in-id-m101.txt"), encoding: .utf8)
        XCTAssertFalse(text.contains("\"statsType\""), "the dump says no type")
        let imported = try importAndAnalyze("chrome-type-in-id-m101.txt")
        var types = Set<String>()
        for r in imported.records where r.kind == .stats {
            for o in r["report"]?.arrayValue ?? [] { types.insert(o["type"]?.stringValue ?? "unknown") }
        }
        for t in [
            "inbound-rtp", "outbound-rtp", "remote-inbound-rtp", "candidate-pair", "local-candidate", "remote-candidate",
            "transport", "codec", "track", "media-source", "peer-connection",
        ] {
            XCTAssertTrue(types.contains(t), "\(t) in \(types.sorted())")
        }
        XCTAssertFalse(types.contains("unknown"), "\(types.sorted())")
        XCTAssertTrue(imported.analysis.streams.contains { $0.direction == .inbound && $0.kind == .video && $0.packets > 0 })
        XCTAssertNotEqual(imported.analysis.call.grade, .unmeasured)
        XCTAssertTrue(imported.result.connected)
    }

    /// Trace times in the page's local clock with no day over 12 (`12/05/2022`): the reading
    /// that puts the trace beside the statistics, day first here and month first in the
    /// legacy dump, each in its own time zone.
    func testAmbiguousLocaleDatesAreSettledByTheStatistics() throws {
        guard case .object(let dumps) = try Self.expected() else { return XCTFail("expected.json is not an object") }
        for (name, zone) in [("chrome-type-in-id-m101.txt", "UTC+01:00"), ("chrome-legacy-goog-m86.txt", "UTC-05:00")] {
            let imported = try importAndAnalyze(name)
            XCTAssertTrue(imported.result.notes.contains { $0.contains(zone) }, "\(name): \(imported.result.notes)")
            guard case .object(let byPC)? = dumps[name] else { return XCTFail(name) }
            for (pc, expected) in byPC.entries {
                let first = try XCTUnwrap(expected["firstMs"]?.doubleValue), last = try XCTUnwrap(expected["lastMs"]?.doubleValue)
                let events = imported.records.filter { $0.kind == .event && $0["detail"]?["pc"]?.stringValue == pc }
                XCTAssertFalse(events.isEmpty, "\(name) \(pc)")
                for e in events {
                    // The trace starts before the first statistics (setup) and ends by the last.
                    XCTAssertGreaterThan(Double(e.ts), first - 60_000, "\(name) \(pc) \(e["type"] ?? .null)")
                    XCTAssertLessThan(Double(e.ts), last + 60_000, "\(name) \(pc) \(e["type"] ?? .null)")
                }
            }
            XCTAssertTrue(imported.result.connected, name)
        }
    }

    /// Older traces name ICE states by Chrome's enumerators; `completed` is connected.
    func testLegacyICEStateNames() {
        XCTAssertEqual(CallTimeline.state(.string("ICEConnectionStateCompleted")), "completed")
        XCTAssertEqual(CallTimeline.state(.string("kICEConnectionStateChecking")), "checking")
        XCTAssertEqual(CallTimeline.state(.string("SignalingStateHaveLocalOffer")), "have-local-offer")
        XCTAssertEqual(CallTimeline.state(.string("\"connected\"")), "connected")
        XCTAssertEqual(CallTimeline.state(.string("completed")), "completed")
        var timeline = CallTimeline(callID: "c")
        let checking = timeline.events(pc: "1-1", ts: 1000, api: "iceConnectionStateChange", value: .string("ICEConnectionStateChecking"))
        XCTAssertEqual(checking.map { $0["type"] }, ["checking"])
        XCTAssertNil(timeline.connectedTs)
        let completed = timeline.events(pc: "1-1", ts: 2000, api: "iceConnectionStateChange", value: .string("ICEConnectionStateCompleted"))
        XCTAssertEqual(completed.map { $0["type"] }, ["iceConnected"])
        XCTAssertEqual(timeline.connectedTs, 2000)
    }

    /// Firefox and Safari statistics in the dump: typed by `statsType`, their own ids.
    func testFirefoxAndSafariStatistics() throws {
        for (name, sdk) in [("firefox-standard.txt", "firefox"), ("safari-standard.txt", "safari")] {
            let imported = try importAndAnalyze(name)
            XCTAssertEqual(imported.records.first { $0.kind == .call }?["sdk"]?.stringValue, sdk)
            XCTAssertTrue(imported.analysis.streams.contains { $0.direction == .inbound && $0.packets > 0 }, name)
            XCTAssertTrue(imported.analysis.streams.contains { $0.direction == .outbound && $0.packets > 0 }, name)
        }
    }
}
