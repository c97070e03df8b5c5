import CallLog
@testable import MaterialScanning
import XCTest

/// What a stats record becomes as stream readings: each figure under the name of what it is.
final class ReadingsTests: XCTestCase {
    func readings(_ format: String, _ objects: [String]) throws -> [StreamReading] {
        let text =
            #"{"v":1,"kind":"stats","call":"c","ts":1700000000000,"format":""# + format + #"","pc":"a","report":["#
            + objects.joined(separator: ",") + "]}"
        var ingestor = RecordIngestor()
        let outcome = Array(text.utf8).withUnsafeBufferPointer { ingestor.ingest($0) }
        guard case .used = outcome else {
            XCTFail("record not used: \(outcome)")
            return []
        }
        return try XCTUnwrap(ingestor.take("c")?.snapshots.first?.streams)
    }

    /// An inbound stream's jitter is what this end measured; an outbound stream's is what the far
    /// end reported about it (W3C remote-inbound-rtp); neither is taken for the other.
    func testW3CJitterIsNamedByWhoMeasuredIt() throws {
        let streams = try readings(
            "w3c",
            [
                #"{"id":"IN","timestamp":1,"type":"inbound-rtp","kind":"audio","ssrc":5,"packetsReceived":100,"jitter":0.012}"#,
                #"{"id":"OUT","timestamp":1,"type":"outbound-rtp","kind":"audio","ssrc":6,"packetsSent":100}"#,
                #"{"id":"RI","timestamp":1,"type":"remote-inbound-rtp","kind":"audio","ssrc":6,"packetsLost":1,"jitter":0.034}"#,
            ])
        let inbound = try XCTUnwrap(streams.first { $0.direction == .inbound })
        let outbound = try XCTUnwrap(streams.first { $0.direction == .outbound })
        XCTAssertEqual(inbound.inboundJitterMs, 12, accuracy: 1e-9)
        XCTAssertTrue(inbound.remoteReportedJitterMs.isNaN)
        XCTAssertEqual(outbound.remoteReportedJitterMs, 34, accuracy: 1e-9)
        XCTAssertTrue(outbound.inboundJitterMs.isNaN)
    }

    /// goog's `googJitterReceived` is the receiving end's measurement: this end's on `_recv`
    /// objects, the far end's report on `_send` ones.
    func testGoogJitterIsNamedByWhoMeasuredIt() throws {
        let streams = try readings(
            "goog",
            [
                #"{"id":"ssrc_5_recv","type":"ssrc","timestamp":1,"values":{"ssrc":"5","packetsReceived":"100","googJitterReceived":"12"}}"#,
                #"{"id":"ssrc_6_send","type":"ssrc","timestamp":1,"values":{"ssrc":"6","packetsSent":"100","googJitterReceived":"34"}}"#,
            ])
        let inbound = try XCTUnwrap(streams.first { $0.direction == .inbound })
        let outbound = try XCTUnwrap(streams.first { $0.direction == .outbound })
        XCTAssertEqual(inbound.inboundJitterMs, 12)
        XCTAssertTrue(inbound.remoteReportedJitterMs.isNaN)
        XCTAssertEqual(outbound.remoteReportedJitterMs, 34)
        XCTAssertTrue(outbound.inboundJitterMs.isNaN)
    }

    /// Audio levels: a received stream's own (Chromium 88 on), else its track's (`trackId`); a
    /// sent stream's from its media source (`mediaSourceId`), else (none there) its track's. Video streams
    /// take none. A peer connection's data channels are summed, open ones counted.
    func testAudioLevelsAndDataChannelsAreReadWhereTheyLie() throws {
        let text =
            #"{"v":1,"kind":"stats","call":"c","ts":1700000000000,"format":"w3c","pc":"a","report":["#
            + [
                #"{"id":"IN1","timestamp":1,"type":"inbound-rtp","kind":"audio","ssrc":1,"packetsReceived":9,"audioLevel":0.25,"totalAudioEnergy":1.5,"trackId":"T1"}"#,
                #"{"id":"IN2","timestamp":1,"type":"inbound-rtp","kind":"audio","ssrc":2,"packetsReceived":9,"trackId":"T2"}"#,
                #"{"id":"T1","timestamp":1,"type":"track","kind":"audio","audioLevel":0.5,"totalAudioEnergy":9}"#,
                #"{"id":"T2","timestamp":1,"type":"track","kind":"audio","audioLevel":0,"totalAudioEnergy":0.125}"#,
                #"{"id":"OUT","timestamp":1,"type":"outbound-rtp","kind":"audio","ssrc":3,"packetsSent":9,"mediaSourceId":"MS","trackId":"T3"}"#,
                #"{"id":"MS","timestamp":1,"type":"media-source","kind":"audio","audioLevel":0.0625,"totalAudioEnergy":2}"#,
                #"{"id":"T3","timestamp":1,"type":"track","kind":"audio","audioLevel":0.75}"#,
                #"{"id":"VID","timestamp":1,"type":"inbound-rtp","kind":"video","ssrc":4,"packetsReceived":9,"trackId":"T1"}"#,
                #"{"id":"OUT2","timestamp":1,"type":"outbound-rtp","kind":"audio","ssrc":5,"packetsSent":9,"mediaSourceId":"MS2","trackId":"T3"}"#,
                #"{"id":"MS2","timestamp":1,"type":"media-source","kind":"audio"}"#,
                #"{"id":"D1","timestamp":1,"type":"data-channel","state":"open","messagesSent":3,"messagesReceived":5}"#,
                #"{"id":"D2","timestamp":1,"type":"data-channel","state":"closed","messagesSent":4}"#,
            ].joined(separator: ",") + "]}"
        var ingestor = RecordIngestor()
        let outcome = Array(text.utf8).withUnsafeBufferPointer { ingestor.ingest($0) }
        guard case .used = outcome else { return XCTFail("record not used: \(outcome)") }
        let snapshot = try XCTUnwrap(ingestor.take("c")?.snapshots.first)
        func stream(_ ssrc: UInt32) throws -> StreamReading { try XCTUnwrap(snapshot.streams.first { $0.ssrc == ssrc }) }
        XCTAssertEqual(try stream(1).audioLevel, 0.25)
        XCTAssertEqual(try stream(1).audioEnergy, 1.5)
        XCTAssertEqual(try stream(2).audioLevel, 0)
        XCTAssertEqual(try stream(2).audioEnergy, 0.125)
        XCTAssertEqual(try stream(3).audioLevel, 0.0625)
        XCTAssertEqual(try stream(3).audioEnergy, 2)
        XCTAssertTrue(try stream(4).audioLevel.isNaN)
        XCTAssertEqual(try stream(5).audioLevel, 0.75, "a media source without levels: the track's")
        XCTAssertTrue(try stream(5).audioEnergy.isNaN)
        let d = try XCTUnwrap(snapshot.dataChannels)
        XCTAssertEqual([d.channels, d.open], [2, 1])
        XCTAssertEqual(d.messagesSent, 7)
        XCTAssertEqual(d.messagesReceived, 5)
    }

    /// Legacy audio levels are 0-32767 integers in strings: played on `_recv`, captured on `_send`.
    func testGoogAudioLevelsAreReadAsFractions() throws {
        let streams = try readings(
            "goog",
            [
                #"{"id":"ssrc_5_recv","type":"ssrc","timestamp":1,"values":{"ssrc":"5","mediaType":"audio","packetsReceived":"100","audioOutputLevel":"32767","totalAudioEnergy":"0.5"}}"#,
                #"{"id":"ssrc_6_send","type":"ssrc","timestamp":1,"values":{"ssrc":"6","mediaType":"audio","packetsSent":"100","audioInputLevel":"0"}}"#,
            ])
        let inbound = try XCTUnwrap(streams.first { $0.direction == .inbound })
        let outbound = try XCTUnwrap(streams.first { $0.direction == .outbound })
        XCTAssertEqual(inbound.audioLevel, 1)
        XCTAssertEqual(inbound.audioEnergy, 0.5)
        XCTAssertEqual(outbound.audioLevel, 0)
        XCTAssertTrue(outbound.audioEnergy.isNaN)
    }

    /// Every field is found in the field table under its JSON name, and no two fields share one.
    func testEachFieldIsReadUnderItsJSONName() {
        let quality: Set<NumField> = [.qlBandwidth, .qlCPU, .qlOther]  // inside qualityLimitationDurations
        for f in NumField.allCases where !quality.contains(f) {
            let entry = Array(f.jsonName.utf8).withUnsafeBufferPointer { FieldTable.shared.lookup($0) }
            XCTAssertEqual(entry, .num(f), f.jsonName)
        }
        for f in quality {
            XCTAssertEqual(Array(f.jsonName.utf8).withUnsafeBufferPointer { FieldTable.qualityLimitationField($0) }, f)
        }
        for f in StrField.allCases {
            let entry = Array(f.jsonName.utf8).withUnsafeBufferPointer { FieldTable.shared.lookup($0) }
            XCTAssertEqual(entry, .str(f), f.jsonName)
        }
        let names = NumField.allCases.map(\.jsonName) + StrField.allCases.map(\.jsonName)
        XCTAssertEqual(Set(names).count, names.count)
    }
}
