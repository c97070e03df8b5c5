import CallLog
import XCTest

final class JSONValueTests: XCTestCase {
    func testRoundTripKeepsOrderAndValues() throws {
        let text = #"{"b":1,"a":[true,false,null,-0.5,1e-7,12345678901234],"s":"q\"\\\n\u00e9\ud83d\ude00","o":{}}"#
        let v = try JSONValue.parse(text)
        XCTAssertEqual(v.objectValue?.keys, ["b", "a", "s", "o"])
        XCTAssertEqual(v["s"]?.stringValue, "q\"\\\né😀")
        XCTAssertEqual(v["a"]?.arrayValue?[5], .number(12345678901234))
        XCTAssertEqual(try JSONValue.parse(v.serialized()), v)
        XCTAssertEqual(JSONValue.number(3).serialized(), "3")
        XCTAssertEqual(JSONValue.number(0.1).serialized(), "0.1")
    }

    /// Only integers that Int64 holds convert: 2^63 (what Int64.max becomes as a Double) does
    /// not, and asking must not trap.
    func testInt64ValueOnlyForIntegersInRange() {
        // A log's -9007199254740993 is read as the nearest Double, -2^53.
        XCTAssertEqual(JSONValue.number(Double("-9007199254740993")!).int64Value, -9_007_199_254_740_992)
        XCTAssertEqual(JSONValue.number(9.2e18).int64Value, 9_200_000_000_000_000_000)
        XCTAssertEqual(JSONValue.number(-0.0).int64Value, 0)
        XCTAssertNil(JSONValue.number(Double(Int64.max)).int64Value)
        XCTAssertNil(JSONValue.number(-9.3e18).int64Value)
        XCTAssertNil(JSONValue.number(1.5).int64Value)
        XCTAssertNil(JSONValue.number(.nan).int64Value)
        XCTAssertNil(JSONValue.string("1").int64Value)
    }

    func testStringsAreEscapedExactly() {
        XCTAssertEqual(JSONValue.string("").serialized(), #""""#)
        XCTAssertEqual(JSONValue.string("plain é😀").serialized(), "\"plain é😀\"")
        XCTAssertEqual(JSONValue.string("\"a\\b\"\n\r\t\u{01}\u{1f}z").serialized(), #""\"a\\b\"\n\r\t\u0001\u001fz""#)
        for s in ["\\", "x\"", "\u{7f}\u{0}", "line\nline"] {
            XCTAssertEqual(try JSONValue.parse(JSONValue.string(s).serialized()), .string(s))
        }
    }

    func testRejectsMalformedInputWithPosition() {
        for bad in ["", "{", "{\"a\":}", "[1,]", "tru", "\"abc", "{\"a\":1}x", "01x", "\"\u{01}\"", "nul"] {
            XCTAssertThrowsError(try JSONValue.parse(bad), "accepted \(bad)")
        }
        do {
            _ = try JSONValue.parse("{\"a\": [1, 2,, 3]}")
            XCTFail("accepted a double comma")
        } catch {
            XCTAssertEqual(error.offset, 12)
        }
    }

    func testDeepNestingIsRefusedNotCrashing() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        XCTAssertThrowsError(try JSONValue.parse(deep))
        let ok = String(repeating: "[", count: 60) + String(repeating: "]", count: 60)
        XCTAssertNoThrow(try JSONValue.parse(ok))
    }
}

final class LogRecordTests: XCTestCase {
    func testEnvelopeAndUnknownFieldsSurvive() throws {
        let line = #"{"v":1,"kind":"hologram","call":"c1","ts":1700000000000,"future":{"x":[1,2]},"z":"last"}"#
        let r = try LogRecord(parsing: line)
        XCTAssertEqual(r.kind, .other("hologram"))
        XCTAssertEqual(r.call, "c1")
        XCTAssertEqual(r.ts, 1_700_000_000_000)
        XCTAssertEqual(r.body.keys, ["future", "z"])
        XCTAssertEqual(r.jsonLine, line)
    }

    func testStringTimestampIsAccepted() throws {
        let r = try LogRecord(parsing: #"{"kind":"event","call":"c","ts":"1455701052999","action":"callMetric","type":"callRestSent"}"#)
        XCTAssertEqual(r.ts, 1_455_701_052_999)
    }

    func testErrorsNameTheField() {
        func error(_ s: String) -> RecordError? {
            do { _ = try LogRecord(parsing: s); return nil } catch { return error }
        }
        XCTAssertEqual(error(#"{"kind":"stats","ts":1}"#), .missingField("call"))
        XCTAssertEqual(error(#"{"kind":"stats","call":"c"}"#), .missingField("ts"))
        XCTAssertEqual(error(#"{"call":"c","ts":1}"#), .missingField("kind"))
        XCTAssertEqual(error(#"{"kind":"stats","call":7,"ts":1}"#), .wrongType(field: "call", expected: "a non-empty string"))
        XCTAssertEqual(error(#"{"kind":"stats","call":"c","ts":"soon"}"#), .wrongType(field: "ts", expected: "epoch milliseconds"))
        XCTAssertEqual(error(#"{"v":2,"kind":"stats","call":"c","ts":1}"#), .unsupportedVersion(2))
        XCTAssertEqual(error("[1,2]"), .notAnObject)
        if case .invalidJSON? = error("{oops") {} else { XCTFail("expected invalidJSON") }
    }
}
