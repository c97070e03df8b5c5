import Analysis
import MaterialScanning
import CallLog
@testable import IngestServer
import NIOCore
import XCTest

/// The pieces a request passes through before the writer: body decoding, line splitting and
/// validation, pseudonymisation.
final class BatchParsingTests: XCTestCase {
    func testLinesAreNumberedFromOneAndBlankLinesSkipped() {
        let text = "\n" + #"{"v":1,"kind":"call","call":"a","ts":1}"# + "\r\n  \n" + #"{"v":1,"kind":"end","call":"a","ts":"2"}"#
        let batch = RecordBatch(parsing: Array(text.utf8), maxLineBytes: 1000)
        XCTAssertEqual(batch.records.map(\.number), [2, 4])
        XCTAssertEqual(batch.records.map(\.record.ts), [1, 2])
        XCTAssertEqual(batch.lines, 2)
        XCTAssertTrue(batch.rejections.isEmpty)
    }

    func testInvalidUTF8IsFoundWhereverItIs() {
        let cases: [[UInt8]] = [
            [0xC0, 0x80],  // overlong NUL
            [0xED, 0xA0, 0x80],  // a UTF-16 surrogate
            [0xF4, 0x90, 0x80, 0x80],  // past U+10FFFF
            [0xE2, 0x82],  // cut short
            [0x80],  // a lone continuation byte
        ]
        for bad in cases {
            let line = Array(#"{"v":1,"kind":"call","call":"x"#.utf8) + bad + Array(#"","ts":1}"#.utf8)
            let batch = RecordBatch(parsing: line, maxLineBytes: 1000)
            XCTAssertEqual(batch.rejections.first?.code, LineRejection.Code.invalidUTF8, "\(bad)")
            XCTAssertEqual(batch.rejections.first?.reason, "invalid UTF-8 at byte 31")
        }
        let good = Array(#"{"v":1,"kind":"call","call":"é€𝄞","ts":1}"#.utf8)
        XCTAssertEqual(RecordBatch(parsing: good, maxLineBytes: 1000).records.first?.record.call, "é€𝄞")
    }

    func testGzipMembersAndZstdFramesDecodeUnderTheCap() throws {
        let text = Array(String(repeating: #"{"v":1,"kind":"call","call":"a","ts":1}"# + "\n", count: 1000).utf8)
        let frame = ZstdCompressor.compressFrame(text)
        XCTAssertEqual(try BodyDecoding.decode(frame + frame, encoding: .zstd, limit: 1 << 20), text + text)
        XCTAssertThrowsError(try BodyDecoding.decode(frame, encoding: .zstd, limit: text.count - 1)) { e in
            XCTAssertEqual(e as? BodyDecodingError, .tooLarge(limit: text.count - 1))
        }
        XCTAssertThrowsError(try BodyDecoding.decode(Array(frame.dropLast(3)), encoding: .zstd, limit: 1 << 20)) { e in
            guard case .truncated? = e as? BodyDecodingError else { return XCTFail("\(e)") }
        }
        XCTAssertThrowsError(try BodyDecoding.decode([1, 2, 3, 4, 5], encoding: .gzip, limit: 1 << 20)) { e in
            guard case .corrupt? = e as? BodyDecodingError else { return XCTFail("\(e)") }
        }
        XCTAssertEqual(ContentEncoding(header: " GZIP "), .gzip)
        XCTAssertNil(ContentEncoding(header: "br"))
    }

    func testPseudonymsAtTheDoorAreTheOnesAnalyzeGives() throws {
        let key = try XCTUnwrap(SipHashKey(hex: "000102030405060708090a0b0c0d0e0f"))
        let door = RecordPrivacy(key: key)
        let analysis = CallPseudonymizer(key: key)
        for id in ["c-1", "7E60066C-C7F3-438A-95B1-DDE8634E1072", "alice@example.com"] {
            XCTAssertEqual(door.identifier(id), analysis.identifier(id))
        }
        let call = try LogRecord(
            parsing: #"{"v":1,"kind":"call","call":"c-1","ts":1,"phone":"+4412345","labels":{"user":"bob","room":"r"},"sdkVersion":"10.1.2.3"}"#)
        let out = door.apply(to: call)
        XCTAssertEqual(out.call, analysis.identifier("c-1"))
        XCTAssertEqual(out["phone"]?.stringValue, analysis.identifier("+4412345"))
        XCTAssertEqual(out["labels"]?["user"]?.stringValue, analysis.identifier("bob"))
        XCTAssertEqual(out["labels"]?["room"]?.stringValue, "r")
        XCTAssertEqual(out["sdkVersion"]?.stringValue, "10.1.2.3", "a four-part version is not an address")
        let agent = LogRecord(kind: .agent, call: "-", ts: 1)
        XCTAssertEqual(door.apply(to: agent).call, "-", "the agent record's no-call stays")
    }

    func testListenAddressesAndLoopback() {
        XCTAssertEqual(ServeConfiguration.parseListen("127.0.0.1:8471")?.port, 8471)
        XCTAssertEqual(ServeConfiguration.parseListen("[::1]:0")?.host, "::1")
        XCTAssertNil(ServeConfiguration.parseListen("8471"))
        XCTAssertNil(ServeConfiguration.parseListen("host:99999"))
        XCTAssertTrue(ServeConfiguration.isLoopback("127.0.0.2"))
        XCTAssertTrue(ServeConfiguration.isLoopback("::1"))
        XCTAssertTrue(ServeConfiguration.isLoopback("localhost"))
        XCTAssertFalse(ServeConfiguration.isLoopback("0.0.0.0"))
        XCTAssertFalse(ServeConfiguration.isLoopback("192.0.2.1"))
    }

    /// A client is counted by its IPv4 address, or by its IPv6 /64 (one host is given a whole
    /// /64 and could otherwise take a fresh address for every connection).
    func testClientsAreCountedByAddressAndIPv6ByItsSlash64() throws {
        func key(_ ip: String) throws -> String { ConnectionLimit.addressKey(try SocketAddress(ipAddress: ip, port: 443)) }
        XCTAssertEqual(try key("192.0.2.7"), "192.0.2.7")
        XCTAssertNotEqual(try key("192.0.2.7"), try key("192.0.2.8"))
        XCTAssertEqual(try key("::ffff:192.0.2.7"), "192.0.2.7", "IPv4-mapped: the IPv4 address")
        XCTAssertEqual(try key("2001:db8:1:2::1"), try key("2001:db8:1:2:ffff:ffff:ffff:fffe"))
        XCTAssertNotEqual(try key("2001:db8:1:2::1"), try key("2001:db8:1:3::1"))
        XCTAssertNotEqual(try key("::1"), try key("::ffff:0.0.0.1"))

        XCTAssertEqual(ConnectionLimit.defaultPerAddressLimit(limit: 3), 3, "never above the limit")
        XCTAssertEqual(ConnectionLimit.defaultPerAddressLimit(limit: 20), 8)
        XCTAssertEqual(ConnectionLimit.defaultPerAddressLimit(limit: 400), 100)
        XCTAssertEqual(ConnectionLimit.defaultPerAddressLimit(limit: 10_000), 256)
        XCTAssertEqual(ConnectionLimit(limit: 10, perAddressLimit: 50).perAddressLimit, 10)
    }
}
