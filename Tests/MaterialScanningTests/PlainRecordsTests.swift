@testable import MaterialScanning
import CallLog
import XCTest

/// Plain events and quality callbacks are read straight from their bytes; every line must give
/// the same call material (or the same rejection) as the complete parser, and the common shapes
/// must take the fast path.
final class PlainRecordsTests: XCTestCase {
    /// What the complete parser makes of a line: the call's material, or nil when it rejects it.
    func generic(_ line: String) -> CallMaterial? {
        guard let record = try? LogRecord(parsing: line) else { return nil }
        var m = CallMaterial(callID: record.call)
        m.add(record)
        return m
    }

    /// What the ingestor makes of it.
    func ingested(_ line: String) -> CallMaterial? {
        var ingestor = RecordIngestor()
        let bytes = Array(line.utf8)
        let outcome = bytes.withUnsafeBufferPointer { ingestor.ingest($0) }
        guard case .used(let call, _) = outcome else { return nil }
        return ingestor.take(call)
    }

    func fast(_ line: String) -> PlainEvent? {
        Array(line.utf8).withUnsafeBufferPointer { PlainEvent($0) }
    }

    func fastQuality(_ line: String) -> PlainQuality? {
        Array(line.utf8).withUnsafeBufferPointer { PlainQuality($0) }
    }

    func testTheCommonShapeIsReadFastAndAsTheParserReadsIt() throws {
        let lines = [
            #"{"v":1,"kind":"event","call":"7F07DF8C-9387","ts":1795302366069,"action":"callMetric","type":"callCreate"}"#,
            #"{"v":1,"kind":"event","call":"c","ts":1795302366069,"action":"iceTimeout","type":"iceNormal"}"#,
            #"{ "v" : 1 , "kind" : "event" , "call" : "c" , "ts" : 1 , "action" : "" , "type" : "x" } "#,
            #"{"v":1,"kind":"event","call":"c","type":"t","action":"a","ts":999999999999999}"#,
        ]
        for line in lines {
            let e = try XCTUnwrap(fast(line), line)
            XCTAssertFalse(e.call.isEmpty)
            let expected = try XCTUnwrap(generic(line), line)
            XCTAssertEqual(ingested(line), expected, line)
            XCTAssertEqual(expected.events.count, 1)
        }
    }

    func testAnythingElseIsLeftToTheParserWithTheSameResult() {
        let lines = [
            #"{"v":1,"kind":"event","call":"c","ts":1795302366069,"action":"iceTimeout","type":"iceNormal","durationMs":1200}"#,
            #"{"v":1,"kind":"event","call":"c","ts":1795302366069,"action":"a\"b","type":"t"}"#,
            #"{"v":1,"kind":"event","call":"c","ts":1795302366069,"action":"a\u0041","type":"t"}"#,
            #"{"v":1,"kind":"event","call":"ç","ts":1795302366069,"action":"a","type":"t"}"#,
            #"{"v":1,"kind":"event","call":"c","ts":"1795302366069","action":"a","type":"t"}"#,
            #"{"v":1,"kind":"event","call":"c","ts":01795302366069,"action":"a","type":"t"}"#,
            #"{"v":1,"kind":"event","call":"c","ts":1795302366069.4,"action":"a","type":"t"}"#,
            #"{"v":1,"kind":"event","call":"c","ts":1.795302366069e12,"action":"a","type":"t"}"#,
            #"{"v":1,"kind":"event","call":"c","ts":17953023660690000,"action":"a","type":"t"}"#,
            #"{"v":1,"kind":"event","call":"c","ts":-1,"action":"a","type":"t"}"#,
            #"{"v":1,"kind":"event","call":"c","ts":1,"action":"a","type":"t","type":"u"}"#,
            #"{"v":1,"kind":"event","call":"","ts":1,"action":"a","type":"t"}"#,
            #"{"v":1,"kind":"event","call":"c","ts":1,"action":"a","type":"t"} x"#,
            #"{"v":1,"kind":"event","call":"c","ts":1,"action":"a","type":"t""#,
            #"{"v":1,"kind":"event","call":"c","ts":1,"action":"a"}"#,
            #"{"v":1,"kind":"event","call":"c","ts":1,"action":3,"type":"t"}"#,
            #"{"v":1,"kind":"event","call":"c","ts":1,"action":null,"type":"t"}"#,
            #"{"v":1,"kind":"event","call":"c","ts":1,"action":"a","type":"t","v":2}"#,
            #"{"v":1,"kind":"event","call":"c","ts":1,"action":"a\t","type":"t"}"#,
            #"{"v":1,"kind":"events","call":"c","ts":1,"action":"a","type":"t"}"#,
        ]
        for line in lines {
            XCTAssertNil(fast(line), line)
            XCTAssertEqual(ingested(line), generic(line), line)
        }
    }

    func testQualityCallbacksAreReadFastAndAsTheParserReadsThem() throws {
        let lines = [
            #"{"v":1,"kind":"quality","call":"DA269281-48C9","ts":1794700975860,"score":100,"direction":"inbound","source":"cisco-rem"}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1794700975860,"direction":"outbound","score":0}"#,
            #"{ "v" : 1 , "kind" : "quality" , "call" : "c" , "ts" : 1 , "score" : 97 , "source" : "a/b" } "#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"score":"high","n":123456789012345}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1}"#,
        ]
        for line in lines {
            XCTAssertNotNil(fastQuality(line), line)
            let expected = try XCTUnwrap(generic(line), line)
            XCTAssertEqual(ingested(line), expected, line)
            XCTAssertEqual(expected.events.count, 1)
        }
        let first = try XCTUnwrap(ingested(lines[0])?.events.first)
        XCTAssertEqual(first.type, "100")
        XCTAssertEqual(first.detailJSON, #"{"score":100,"direction":"inbound","source":"cisco-rem"}"#)
    }

    func testOtherQualityShapesAreLeftToTheParserWithTheSameResult() {
        let lines = [
            #"{"v":1,"kind":"quality","call":"c","ts":1,"score":97.5}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"score":-1}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"score":1e2}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"score":1234567890123456}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"score":007}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"score":0.5}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"score":100,"score":50}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"score":100,"ts":2}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"source":"a\"b"}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"source":"é"}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"sco\u0072e":100}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"detail":{"a":1}}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"flags":[1]}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"ok":true}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"ok":null}"#,
            #"{"v":1,"kind":"quality","call":"","ts":1,"score":1}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":"1","score":1}"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"score":1} x"#,
            #"{"v":1,"kind":"quality","call":"c","ts":1,"score":1"#,
            #"{"v":1,"kind":"quality","call":"c","score":1}"#,
        ]
        for line in lines {
            XCTAssertNil(fastQuality(line), line)
            XCTAssertEqual(ingested(line), generic(line), line)
        }
    }
}
