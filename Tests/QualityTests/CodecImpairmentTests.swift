import XCTest
@testable import Quality

final class CodecImpairmentTests: XCTestCase {
    func testTableValues() {
        let expected: [(CodecImpairment, Double, Double)] = [
            (.g711WithPLC, 0, 25.1), (.g711WithoutPLC, 0, 4.3), (.g729A, 11, 19.0), (.g729, 10, 19.0),
            (.g723_1, 15, 16.1), (.gsmFullRate, 20, 10), (.opus, 0, 25.1), (.g722, 0, 25.1), (.iLBC, 11, 19.0),
        ]
        for (codec, ie, bpl) in expected {
            XCTAssertEqual(codec.equipmentImpairment, ie, codec.name)
            XCTAssertEqual(codec.packetLossRobustness, bpl, codec.name)
        }
        XCTAssertEqual(CodecImpairment.all.count, expected.count)
        XCTAssertEqual(CodecImpairment.opus.source, .convention)
        XCTAssertEqual(CodecImpairment.g711WithPLC.source, .g113)
    }

    func testLookupByMimeTypeRtpmapAndName() {
        let cases: [(String, CodecImpairment?)] = [
            ("audio/opus", .opus), ("opus", .opus), ("OPUS/48000/2", .opus), ("audio/OPUS", .opus),
            ("PCMU", .g711WithPLC), ("audio/PCMA", .g711WithPLC), ("pcmu/8000", .g711WithPLC),
            ("G.711", .g711WithPLC), ("G729", .g729A), ("g729a", .g729A), ("G.729", .g729A),
            ("audio/G722", .g722), ("G.722", .g722), ("iLBC", .iLBC), ("audio/ILBC", .iLBC),
            ("GSM", .gsmFullRate), ("G723", .g723_1), ("G.723.1", .g723_1),
            ("G.722.1", nil), ("audio/telephone-event", nil), ("audio/CN", nil), ("audio/red", nil),
            ("video/VP8", nil), ("audio", nil), ("", nil), ("speex", nil),
        ]
        for (name, codec) in cases {
            XCTAssertEqual(CodecImpairment.lookup(name), codec, name)
        }
    }

    func testModelVersionIsRecorded() {
        XCTAssertTrue(QualityModel.modelVersion.hasPrefix("callstats-quality-1"))
    }
}
