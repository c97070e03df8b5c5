import Analysis
import CallLog
@testable import Collector
import Foundation
import TestSupport
import XCTest

/// IP pseudonymisation: SipHash-2-4 against the reference vectors, the format-preserving
/// mapping, truncation, the allow-list, every place a report names an address, and the real
/// recording written through the collector: no address left, analysis unchanged.
final class PseudonymizerTests: XCTestCase {
    static let key = SipHashKey(k0: 0x0706_0504_0302_0100, k1: 0x0F0E_0D0C_0B0A_0908)
    static let keyed = Pseudonymizer(method: .keyedHash(SipHashKey(hex: "5f3c9a0e1d2b4c6a8e7f90a1b2c3d4e5")!))

    /// The reference implementation's `vectors_sip64` (Aumasson and Bernstein): key
    /// 00 01 … 0f, message 00 01 … (i-1) for i = 0…63, output bytes little-endian.
    static let vectors = [
        "310e0edd47db6f72", "fd67dc93c539f874", "5a4fa9d909806c0d", "2d7efbd796666785",
        "b7877127e09427cf", "8da699cd64557618", "cee3fe586e46c9cb", "37d1018bf50002ab",
        "6224939a79f5f593", "b0e4a90bdf82009e", "f3b9dd94c5bb5d7a", "a7ad6b22462fb3f4",
        "fbe50e86bc8f1e75", "903d84c02756ea14", "eef27a8e90ca23f7", "e545be4961ca29a1",
        "db9bc2577fcc2a3f", "9447be2cf5e99a69", "9cd38d96f0b3c14b", "bd6179a71dc96dbb",
        "98eea21af25cd6be", "c7673b2eb0cbf2d0", "883ea3e395675393", "c8ce5ccd8c030ca8",
        "94af49f6c650adb8", "eab8858ade92e1bc", "f315bb5bb835d817", "adcf6b0763612e2f",
        "a5c91da7acaa4dde", "716595876650a2a6", "28ef495c53a387ad", "42c341d8fa92d832",
        "ce7cf2722f512771", "e37859f94623f3a7", "381205bb1ab0e012", "ae97a10fd434e015",
        "b4a31508beff4d31", "81396229f0907902", "4d0cf49ee5d4dcca", "5c73336a76d8bf9a",
        "d0a704536ba93e0e", "925958fcd6420cad", "a915c29bc8067318", "952b79f3bc0aa6d4",
        "f21df2e41d4535f9", "87577519048f53a9", "10a56cf5dfcd9adb", "eb75095ccd986cd0",
        "51a9cb9ecba312e6", "96afadfc2ce666c7", "72fe52975a4364ee", "5a1645b276d592a1",
        "b274cb8ebf87870a", "6f9bb4203de7b381", "eaecb2a30b22a87f", "9924a43cc1315724",
        "bd838d3aafbf8db7", "0b1a2a3265d51aea", "135079a3231ce660", "932b2846e4d70666",
        "e1915f5cb1eca46c", "f325965ca16d629f", "575ff28e60381be5", "724506eb4c328a95",
    ]

    func testSipHash24ReferenceVectors() throws {
        XCTAssertEqual(SipHashKey(bytes: Array(0...15)), Self.key)
        XCTAssertEqual(SipHashKey(hex: "000102030405060708090a0b0c0d0e0f"), Self.key)
        for (i, hex) in Self.vectors.enumerated() {
            let bytes = stride(from: 0, to: 16, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! }
            let expected = bytes.enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << UInt64(8 * $1.offset) }
            XCTAssertEqual(SipHash24.hash(Array(0..<UInt8(i)), key: Self.key), expected, "message of \(i) bytes")
        }
        // The worked example of the paper's appendix: 15 bytes → a129ca6149be45e5.
        XCTAssertEqual(SipHash24.hash(Array(0..<15), key: Self.key), 0xA129_CA61_49BE_45E5)
    }

    func testKeyedHashIsFormatPreservingAndStable() throws {
        var rng = SplitMix(seed: 7)
        var seen = Set<IPAddress>(), inputs = Set<IPAddress>()
        let other = Pseudonymizer(method: .keyedHash(SipHashKey(k0: 1, k1: 1)))
        for _ in 0..<2_000 {
            let a = IPAddress.v4(UInt32(truncatingIfNeeded: rng.next()) | 0x0100_0000)
            guard !a.isLoopback else { continue }
            inputs.insert(a)
            let p = Self.keyed.pseudonym(for: a)
            guard case .v4(let v) = p else { return XCTFail("IPv4 stays IPv4") }
            XCTAssertEqual(v >> 28, 0xF, "\(p) is in 240.0.0.0/4")
            XCTAssertEqual(Self.keyed.pseudonym(for: a), p, "same address and key, same pseudonym")
            XCTAssertNotEqual(other.pseudonym(for: a), p, "another key, another pseudonym")
            seen.insert(p)
        }
        XCTAssertGreaterThanOrEqual(seen.count, inputs.count - 2, "28 bits: collisions are rare")
        for text in ["2001:db8::1", "2a00:1450:4007:80e::200e", "fe80::1c2b:3cff:fe4d:5e6f"] {
            let p = Self.keyed.pseudonym(for: IPAddress(text)!)
            guard case .v6(let hi, _) = p else { return XCTFail("IPv6 stays IPv6") }
            XCTAssertEqual(hi >> 56, 0xFD, "\(p) is in fd00::/8")
            XCTAssertEqual(IPAddress(p.description), p, "printed in a form that parses back")
        }
        // One address, written two ways, is one address.
        XCTAssertEqual(Self.keyed.scrub("2001:DB8:0:0::1"), Self.keyed.scrub("2001:db8::1"))
    }

    func testTruncationAllowListAndAddressesThatNameNobody() {
        let truncate = Pseudonymizer(method: .truncate())
        XCTAssertEqual(truncate.scrub("203.0.113.77"), "203.0.113.0")
        XCTAssertEqual(truncate.scrub("2001:db8:abcd:1234::5"), "2001:db8:abcd::")
        XCTAssertEqual(Pseudonymizer(method: .truncate(ipv4PrefixLength: 16, ipv6PrefixLength: 32)).scrub("203.0.113.77"), "203.0.0.0")

        let allow = Pseudonymizer(method: Self.keyed.method, allowList: [IPPrefix("198.51.100.0/24")!, IPPrefix("2001:db8:5::7")!])
        XCTAssertEqual(allow.scrub("turn:198.51.100.9:3478?transport=udp"), "turn:198.51.100.9:3478?transport=udp", "our own relay")
        XCTAssertEqual(allow.scrub("2001:db8:5::7"), "2001:db8:5::7")
        XCTAssertNotEqual(allow.scrub("198.51.101.9"), "198.51.101.9")
        XCTAssertNotEqual(allow.scrub("2001:db8:5::8"), "2001:db8:5::8")
        for kept in ["0.0.0.0", "127.0.0.1", "::", "::1"] { XCTAssertEqual(Self.keyed.scrub(kept), kept) }
    }

    func testEveryPlaceAReportNamesAnAddress() throws {
        let p = Self.keyed
        func pseudo(_ a: String) -> String { p.pseudonym(for: IPAddress(a)!).description }
        let candidate: JSONValue = [
            "id": "I3u7ue0dH", "type": "local-candidate", "address": "203.0.113.5", "ip": "203.0.113.5",
            "relatedAddress": "192.168.1.20", "port": 54321, "relatedPort": 40000, "candidateType": "srflx",
            "url": "turn:[2001:db8::7]:3478?transport=udp", "networkType": "wifi", "foundation": "1263274799",
        ]
        var v = candidate
        p.scrub(&v)
        XCTAssertEqual(v["address"]?.stringValue, pseudo("203.0.113.5"))
        XCTAssertEqual(v["ip"], v["address"], "the same address twice, the same pseudonym")
        XCTAssertEqual(v["relatedAddress"]?.stringValue, pseudo("192.168.1.20"))
        XCTAssertEqual(v["url"]?.stringValue, "turn:[\(pseudo("2001:db8::7"))]:3478?transport=udp")
        for k in ["id", "type", "port", "relatedPort", "candidateType", "networkType", "foundation"] { XCTAssertEqual(v[k], candidate[k], k) }

        let sdp = "candidate:842163049 1 udp 1677729535 203.0.113.5 54321 typ srflx raddr 192.168.1.20 rport 40000 generation 0 ufrag EsAw network-cost 999"
        XCTAssertEqual(
            p.scrub(sdp),
            "candidate:842163049 1 udp 1677729535 \(pseudo("203.0.113.5")) 54321 typ srflx raddr \(pseudo("192.168.1.20")) rport 40000 generation 0 ufrag EsAw network-cost 999"
        )
        XCTAssertEqual(
            p.scrub("a=candidate:1 1 UDP 2122260223 2001:db8::9 5000 typ host"), "a=candidate:1 1 UDP 2122260223 \(pseudo("2001:db8::9")) 5000 typ host")
        XCTAssertEqual(p.scrub("10.254.20.195:61074"), "\(pseudo("10.254.20.195")):61074", "legacy googLocalAddress")
        XCTAssertEqual(p.scrub("[2001:db8::9]:5000"), "[\(pseudo("2001:db8::9"))]:5000")

        let untouched = [
            "0F:8E:C3:61:33:36:2E:79:E8:64:05:3F:C2:6C:5A:51:DF:C3:F0:61:8C:CA:82:51:35:9A:4A:7A:B2:50:E0:17",
            "6adfc0a7-8ad6-47a0-b523-f62a59edf961", "abcd1234-5678.local", "turn:turn.example.com:3478", "12:30:45",
            "1795349931321.24", "audio/opus",
        ]
        for s in untouched { XCTAssertEqual(p.scrub(s), s) }
        let call = LogRecord.callInfo(
            call: "c", ts: 1, direction: "outgoing", sdk: "kandy-mobile", sdkVersion: "5.14.0.1", app: "a",
            appVersion: "3.2.1.4", platform: "ios", network: "wifi", media: ["audio"])
        XCTAssertEqual(p.scrub(call), call, "four-part versions are not addresses")
    }

    // MARK: - The recording, through the collector

    /// Every IP address in the raw recording, found by pattern in its text.
    static func recordedAddresses() throws -> Set<String> {
        guard let url = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is absent") }
        let raw = String(decoding: ZstdDecoder.decompressAll(Array(try Data(contentsOf: url))).output, as: UTF8.self)
        var found = Set<String>()
        for m in raw.matches(of: try Regex(#"(?:^|[^0-9.])((?:[0-9]{1,3}\.){3}[0-9]{1,3})(?![0-9.])"#)) { found.insert(String(m.output[1].substring!)) }
        for m in raw.matches(of: try Regex(#"(?:^|[^0-9A-Fa-f:])([0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7})(?![0-9A-Fa-f:])"#)) {
            let s = String(m.output[1].substring!)
            if let a = IPAddress(s), !a.isUnspecified, !a.isLoopback { found.insert(s) }
        }
        return found.filter { IPAddress($0).map { !$0.isUnspecified && !$0.isLoopback } ?? false }
    }

    static func contains(_ text: String, address: String) -> Bool {
        let escaped = address.replacingOccurrences(of: ".", with: "\\.")
        return text.contains(try! Regex("(?:^|[^0-9A-Fa-f.:])" + escaped + "(?![0-9A-Fa-f.])"))
    }

    func testRecordingWrittenWithoutAnyOfItsAddresses() throws {
        let rec = try Recording.load()
        let addresses = try Self.recordedAddresses()
        XCTAssertFalse(addresses.isEmpty)
        let plainDir = Logs.directory("plain")
        _ = AdapterTests.recordThroughAgent(rec, dir: plainDir)
        let plainText = Logs.text(plainDir)
        for a in addresses { XCTAssertTrue(Self.contains(plainText, address: a), "\(a) is in the unprotected log") }

        let dir = Logs.directory("pseudonymised")
        _ = AdapterTests.recordThroughAgent(rec, configuration: { $0.pseudonymizer = Self.keyed }, dir: dir)
        let text = Logs.text(dir)
        for a in addresses { XCTAssertFalse(Self.contains(text, address: a), "\(a) was written") }
        for a in addresses { XCTAssertTrue(Self.contains(text, address: Self.keyed.scrub(a)), "\(a)'s pseudonym is there instead") }

        // Analysis of the pseudonymised log: the same numbers.
        try Logs.assertSameAnalysis(dir, as: plainDir, calls: ["chromium-a", "chromium-b"])
    }

    func testAllowListedRelayStaysInTheRecording() throws {
        let rec = try Recording.load()
        let addresses = try Self.recordedAddresses().sorted()
        let kept = try XCTUnwrap(addresses.last), hidden = addresses.dropLast()
        XCTAssertFalse(hidden.isEmpty)
        let dir = Logs.directory("allow")
        let p = Pseudonymizer(method: Self.keyed.method, allowList: [IPPrefix(kept)!])
        _ = AdapterTests.recordThroughAgent(rec, configuration: { $0.pseudonymizer = p }, dir: dir)
        let text = Logs.text(dir)
        XCTAssertTrue(Self.contains(text, address: kept), "allow-listed \(kept) stays")
        for a in hidden { XCTAssertFalse(Self.contains(text, address: a), "\(a) was written") }
    }
}
