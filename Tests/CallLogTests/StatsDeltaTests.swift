import CallLog
import TestSupport
import XCTest

final class StatsDeltaTests: XCTestCase {
    /// Every snapshot of the real recording, written as deltas and read back, equals the original.
    func testRealRecordingRestoresExactly() throws {
        guard let url = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is absent") }
        let rec = try ChromiumRecording(url: url)
        XCTAssertEqual(rec.snapshots.count, 120)
        var encoder = StatsDeltaEncoder()
        var decoder = StatsDeltaDecoder()
        var deltas = 0
        for s in rec.snapshots {
            let original = LogRecord.stats(call: rec.callID, ts: s.time, format: .w3c, report: s.stats, peerConnection: s.side)
            let written = encoder.encode(original)
            if written["delta"] != nil { deltas += 1 }
            // Through text, as a file would carry it.
            let reparsed = try LogRecord(parsing: written.jsonLine)
            let restored = try decoder.decode(reparsed)
            let got = restored["report"]?.arrayValue ?? []
            XCTAssertEqual(got.count, s.stats.count, "object count at \(s.time) side \(s.side)")
            XCTAssertTrue(JSONValue.array(got).isEquivalent(to: .array(s.stats)))
            for (g, w) in zip(got, s.stats) where !g.isEquivalent(to: w) {
                XCTFail("side \(s.side) at \(s.time): restored \(g.serialized()) != original \(w.serialized())")
                break
            }
        }
        XCTAssertEqual(deltas, 118, "all but the first snapshot of each side are deltas")
    }

    /// The latest delta read twice restores the same snapshot twice, and the chain goes on.
    func testRepeatedLatestDeltaRestoresTheSameSnapshot() throws {
        guard let url = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is absent") }
        let rec = try ChromiumRecording(url: url)
        var encoder = StatsDeltaEncoder()
        var decoder = StatsDeltaDecoder()
        for s in rec.snapshots.prefix(20) {
            let original = LogRecord.stats(call: rec.callID, ts: s.time, format: .w3c, report: s.stats, peerConnection: s.side)
            let written = try LogRecord(parsing: encoder.encode(original).jsonLine)
            let first = try decoder.decode(written)
            let second = try decoder.decode(written)
            XCTAssertTrue((first["report"] ?? .null).isEquivalent(to: .array(s.stats)))
            XCTAssertTrue((second["report"] ?? .null).isEquivalent(to: .array(s.stats)), "repeat at \(s.time) side \(s.side)")
        }
    }
}

final class ForgetCallTests: XCTestCase {
    func stats(_ call: String, _ pc: String, _ packets: Int) -> LogRecord {
        let report: [JSONValue] = [
            .object(
                JSONObject([
                    ("id", .string("IN")), ("type", .string("inbound-rtp")),
                    ("timestamp", .number(Double(packets))), ("packetsReceived", .number(Double(packets))),
                ]))
        ]
        return LogRecord.stats(call: call, ts: 1_700_000_000_000 + Int64(packets), format: .w3c, report: report, peerConnection: pc)
    }

    /// Forgetting a call drops each of its chains and no other call's: its next snapshot is
    /// written in full, and a delta for it no longer applies; the other calls go on as deltas.
    func testForgettingACallDropsExactlyItsChains() throws {
        var encoder = StatsDeltaEncoder()
        var decoder = StatsDeltaDecoder()
        let chains = [("a", "pc1"), ("a", "pc2"), ("b", "pc1"), ("c", "pc1")]
        for n in 1...2 {
            for (call, pc) in chains { _ = try decoder.decode(try LogRecord(parsing: encoder.encode(stats(call, pc, n)).jsonLine)) }
        }
        encoder.forget(call: "a")
        var deltas: [String: LogRecord] = [:]
        for (call, pc) in chains {
            let written = encoder.encode(stats(call, pc, 3))
            XCTAssertEqual(written["delta"] == nil, call == "a", "\(call) \(pc): full only for the forgotten call")
            if call != "a" { deltas[call + pc] = written }
        }
        decoder.forget(call: "b")
        XCTAssertThrowsError(try decoder.decode(try LogRecord(parsing: deltas["bpc1"]!.jsonLine)), "b's chain is gone")
        let c = try decoder.decode(try LogRecord(parsing: deltas["cpc1"]!.jsonLine))
        XCTAssertEqual(c["report"]?.arrayValue?.first?["packetsReceived"], .number(3))
    }
}

extension StatsDeltaTests {
    /// A renegotiation replaces most objects, so the encoder writes that snapshot full; the
    /// delta after it must restore from the full record alone, as a reader starts there with
    /// no rates of its own.
    func testADeltaAfterAFullRecordMidChainRestoresExactly() throws {
        func report(_ t: Double, counter: Double, objects: [String]) -> [JSONValue] {
            [.object(["id": .string("IT01"), "timestamp": .number(t), "type": .string("inbound-rtp"), "packetsReceived": .number(counter)])]
                + objects.map {
                    .object(["id": .string($0), "timestamp": .number(t), "type": .string("codec"), "mimeType": .string("video/VP8 \($0) with a long name")])
                }
        }
        let renegotiated = (0..<12).map { "C\($0)" }
        let snapshots: [(Double, Double, [String])] = [
            (1000, 0, ["A"]), (2000, 10, ["A"]), (3000, 25, renegotiated), (4000, 40, renegotiated), (5000, 70, renegotiated),
        ]
        var encoder = StatsDeltaEncoder()
        var decoder = StatsDeltaDecoder()
        var fullMidChain = false
        for (n, (t, counter, objects)) in snapshots.enumerated() {
            let original = LogRecord.stats(call: "c", ts: Int64(t), format: .w3c, report: report(t, counter: counter, objects: objects), peerConnection: "a")
            let written = try LogRecord(parsing: encoder.encode(original).jsonLine)
            if n == 2 { fullMidChain = written["delta"] == nil }
            let restored = try decoder.decode(written)
            XCTAssertTrue(
                JSONValue.array(restored["report"]?.arrayValue ?? []).isEquivalent(to: original["report"]!),
                "snapshot \(n) (counter \(counter)) restored as \(restored["report"]?.serialized() ?? "nothing")")
        }
        XCTAssertTrue(fullMidChain, "the renegotiated snapshot is written full (the case under test)")
    }
}
