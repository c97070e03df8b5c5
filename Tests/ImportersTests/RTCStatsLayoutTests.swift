import CallLog
import Foundation
import TestSupport
import XCTest

@testable import Importers

/// The rtcstats layouts and delta rules on small hand-written dumps: what each line says is
/// known exactly, so every record the import writes can be checked.
final class RTCStatsLayoutTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("rtcstats-layouts") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    static let firefox = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:109.0) Gecko/20100101 Firefox/118.0"

    func file(_ name: String, _ lines: [String]) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func importDump(_ path: String) throws -> (DumpImport.Result, [LogRecord]) {
        var records: [LogRecord] = []
        let result = DumpImport(path: path).run { records.append($0) }
        return (result, records)
    }

    /// The ids of each snapshot's objects, and their timestamps.
    func snapshots(_ records: [LogRecord]) -> [[String: Double]] {
        records.filter { $0.kind == .stats }.map { r in
            var out: [String: Double] = [:]
            for o in r["report"]?.arrayValue ?? [] { out[o["id"]!.stringValue!] = o["timestamp"]?.doubleValue ?? -1 }
            return out
        }
    }

    /// A full report of an inbound stream and a candidate pair, then a delta in which the
    /// stream's counter moved and the pair is not listed, then one listing the pair unchanged.
    static let getstats = [
        #"["getstats","PC_0",{"in":{"type":"inbound-rtp","kind":"audio","ssrc":1,"packetsReceived":50,"timestamp":0},"cp":{"type":"candidate-pair","state":"succeeded","timestamp":0},"timestamp":1000},1000,7]"#,
        #"["getstats","PC_0",{"in":{"packetsReceived":100,"timestamp":0},"timestamp":2000},2000,8]"#,
        #"["getstats","PC_0",{"in":{"packetsReceived":150,"timestamp":0},"timestamp":3000},3000,9]"#,
    ]

    /// jitsi's protocol 3 (`clientProtocol` "3.1_STANDARD", here in a connectionInfo line whose
    /// metadata is JSON text): the pair left out of the second delta is gone.
    func testProtocol3RemovesWhatADeltaLeavesOut() throws {
        let meta = #"{\"userAgent\":\"\#(Self.firefox)\",\"clientProtocol\":\"3.1_STANDARD\",\"statsFormat\":\"firefox\"}"#
        let path = try file("p3", [#"["connectionInfo",null,"\#(meta)",1600000000000]"#] + Self.getstats)
        XCTAssertEqual(try DumpImport.detect(path: path), .rtcstats)
        let (result, records) = try importDump(path)
        XCTAssertNil(result.failure)
        XCTAssertEqual(result.skipped, [])
        XCTAssertEqual(snapshots(records), [["in": 1000, "cp": 1000], ["in": 2000], ["in": 3000]])
        XCTAssertEqual(records.filter { $0.kind == .stats }.map(\.ts), [1000, 2000, 3000], "the fourth element, not the fifth")
        let call = try XCTUnwrap(records.first { $0.kind == .call })
        XCTAssertEqual(call["sdk"], "firefox")
        XCTAssertEqual(call["sdkVersion"], "118.0")
        XCTAssertEqual(call.ts, 1000, "the connectionInfo line's time is the server's: it places nothing")
        XCTAssertFalse(records.contains { $0["type"] == "connectionInfo" }, "metadata, not an event")
    }

    /// A connection whose deltas keep adding objects holds at most the bound every reader
    /// applies (`StatsChainBounds`): the objects past it are left out and said with the line,
    /// the ones it holds go on, and each snapshot written stays within the bound.
    func testObjectsPastTheBoundOfAConnectionAreLeftOutAndSaid() throws {
        let bound = StatsChainBounds.maximumObjects
        func objects(_ range: Range<Int>, packets: Int) -> String {
            range.map { #""o\#($0)":{"type":"inbound-rtp","kind":"audio","ssrc":\#($0),"packetsReceived":\#(packets),"timestamp":0}"# }
                .joined(separator: ",")
        }
        let path = try file(
            "growing",
            [
                #"{"userAgent":"\#(Self.firefox)","clientProtocol":"2.0"}"#,
                #"["getstats","PC_0",{\#(objects(0..<(bound - 1), packets: 1)),"timestamp":1000},1000]"#,
                #"["getstats","PC_0",{\#(objects(0..<(bound + 2), packets: 2)),"timestamp":2000},2000]"#,
                #"["getstats","PC_0",{"o0":{"packetsReceived":3,"timestamp":0},"timestamp":3000},3000]"#,
            ])
        let (result, records) = try importDump(path)
        XCTAssertNil(result.failure)
        XCTAssertEqual(
            result.skipped.map(\.description),
            ["\(path):3: 2 new statistics objects of connection PC_0 left out: a peer connection holds at most \(bound) (the line's other objects are used)"])
        let sizes = records.filter { $0.kind == .stats }.map { $0["report"]?.arrayValue?.count ?? 0 }
        XCTAssertEqual(sizes, [bound - 1, bound, bound])
        let last = try XCTUnwrap(records.last { $0.kind == .stats }?["report"]?.arrayValue?.first)
        XCTAssertEqual(last["packetsReceived"]?.doubleValue, 3, "the objects held go on")
    }

    /// Before protocol 3 (`clientProtocol` "2.0", or a metadata object without one) a missing
    /// object is unchanged: the pair stays, with its last timestamp.
    func testOlderProtocolsKeepWhatADeltaLeavesOut() throws {
        for header in [
            #"["connectionInfo",null,{"userAgent":"\#(Self.firefox)","clientProtocol":"2.0"},1]"#,
            #"{"path":"/room","origin":"https://meet.example.test","userAgent":"\#(Self.firefox)","fileFormat":2}"#,
        ] {
            let path = try file("p2", [header] + Self.getstats)
            let (result, records) = try importDump(path)
            XCTAssertEqual(result.skipped, [])
            XCTAssertEqual(snapshots(records), [["in": 1000, "cp": 1000], ["in": 2000, "cp": 1000], ["in": 3000, "cp": 1000]], header)
        }
    }

    /// A headerless stream names no protocol: a delta listing an object with nothing but its
    /// timestamp shows a client that lists every object it has, and from then on a missing one
    /// is gone. Until then a missing object is kept.
    func testHeaderlessStreamsShowTheirRuleByTheirDeltas() throws {
        let gum = #"["navigator.mediaDevices.getUserMedia",null,{"audio":true},900]"#
        let lines = [
            gum, Self.getstats[0],
            #"["getstats","PC_0",{"in":{"packetsReceived":100,"timestamp":0},"cp":{"timestamp":0},"timestamp":2000},2000]"#,
            #"["getstats","PC_0",{"in":{"packetsReceived":150,"timestamp":0},"timestamp":3000},3000]"#,
        ]
        let path = try file("headerless", lines)
        XCTAssertEqual(try DumpImport.detect(path: path), .rtcstats)
        let (result, records) = try importDump(path)
        XCTAssertEqual(result.skipped, [])
        XCTAssertEqual(snapshots(records), [["in": 1000, "cp": 1000], ["in": 2000, "cp": 2000], ["in": 3000]])
        XCTAssertEqual(records.first { $0.kind == .event }?["type"], "getUserMedia", "the first line is an entry")
        XCTAssertNil(records.first { $0.kind == .call }?["sdk"], "no header, no browser")

        let older = try file("headerless-old", [gum] + Self.getstats)
        XCTAssertEqual(snapshots(try importDump(older).1), [["in": 1000, "cp": 1000], ["in": 2000, "cp": 1000], ["in": 3000, "cp": 1000]])
    }

    /// A line without a time happened with the line before it; one with no line before it that
    /// has a time cannot be placed and is skipped, named by its line.
    func testLinesWithoutATime() throws {
        let path = try file(
            "untimed",
            [
                #"["connectionInfo",null,{"clientProtocol":"3.1_STANDARD"},1]"#,
                #"["identity",null,{"displayName":"x"}]"#,
                Self.getstats[0],
                #"["e2eRtt",null,{"rtt":223}]"#,
                #"["dominantSpeaker",null,{"dominantSpeakerEndpoint":"a"},"2020-09-13T12:26:41.000Z"]"#,
            ])
        let (result, records) = try importDump(path)
        XCTAssertEqual(result.skipped, [DumpError(file: path, line: 2, message: "no time, and no line before it has one; line skipped")])
        XCTAssertEqual(records.first { $0["type"] == "e2eRtt" }?.ts, 1000)
        XCTAssertEqual(records.first { $0["type"] == "dominantSpeaker" }?.ts, 1_600_000_001_000, "ISO 8601 times read")
    }

    /// Chrome's own rtcstats dump names the browser only in `userAgentData`: the full version
    /// where `fullVersionList` has it, else the major one from `brands`; GREASE brands and the
    /// engine ("Chromium") beside the branded browser are passed over.
    func testTheBrowserFromUserAgentData() throws {
        let brands = #"[{"brand":"Not)A;Brand","version":"8"},{"brand":"Chromium","version":"138"},{"brand":"Google Chrome","version":"138"}]"#
        let full =
            #"[{"brand":"Not)A;Brand","version":"8.0.0.0"},{"brand":"Chromium","version":"138.0.7204.92"},{"brand":"Google Chrome","version":"138.0.7204.92"}]"#
        let report = #"["getStats","7-1",{"in":{"id":"in","type":"inbound-rtp","kind":"audio","ssrc":1,"packetsReceived":5,"timestamp":1000}},1000]"#
        for (data, version) in [
            (#"{"brands":\#(brands),"fullVersionList":\#(full),"mobile":false,"platform":"Linux"}"#, "138.0.7204.92"),
            (#"{"brands":\#(brands),"mobile":false,"platform":"Linux"}"#, "138"),
        ] {
            let path = try file("rtcstats_dump", ["RTCStatsDump", #"{"fileFormat":3,"userAgentData":\#(data)}"#, report])
            let (result, records) = try importDump(path)
            XCTAssertNil(result.failure)
            let call = try XCTUnwrap(records.first { $0.kind == .call })
            XCTAssertEqual(call["sdk"], "chrome")
            XCTAssertEqual(call["sdkVersion"], .string(version))
            XCTAssertEqual(call["os"], "linux")
        }
        XCTAssertEqual(
            UserAgentData.browser(
                try XCTUnwrap(JSONValue.parse(#"{"brands":[{"brand":"Microsoft Edge","version":"120"},{"brand":"Chromium","version":"120"}]}"#).objectValue))?
                .name,
            "edge")
    }

    func testAnArrayThatIsNoRTCStatsLineIsRefused() throws {
        let path = try file("numbers", ["[1, 2]"])
        XCTAssertThrowsError(try DumpImport.detect(path: path)) { error in
            XCTAssertEqual((error as? DumpError)?.line, 1)
            XCTAssertTrue("\(error)".contains("not an rtcstats line"), "\(error)")
        }
    }
}
