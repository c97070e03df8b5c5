import CallLog
import Foundation
@testable import IngestServer
import Logging
import TestSupport
import XCTest

/// With a pseudonymisation key the writer pseudonymises a posted delta, not the report it
/// restores to: the log must read back as the pseudonymised full snapshots all the same.
final class DeltaPseudonymisationTests: XCTestCase {
    private let privacy = RecordPrivacy(key: SipHashKey(hex: "000102030405060708090a0b0c0d0e0f")!)
    private let call = "c-secret-4711"

    /// One snapshot: object ids holding addresses (as they are pseudonymised in a full report),
    /// strings holding addresses, the call's id and an e-mail address, a member whose name
    /// looks like an e-mail address (names are never pseudonymised), nested objects.
    private func report(_ k: Int) -> [JSONValue] {
        var objects: [JSONValue] = [
            [
                "id": "CL_192.0.2.10", "timestamp": .number(Double(1000 * k)), "type": "local-candidate",
                "address": .string(k < 2 ? "192.0.2.10" : "192.0.2.11"), "port": .number(Double(50_000 + k)),
            ],
            [
                "id": "CP_192.0.2.10_198.51.100.20", "timestamp": .number(Double(1000 * k)), "type": "candidate-pair",
                "bytesSent": .number(Double(1200 * k)), "packetsSent": .number(Double(10 * k + k % 2)),
                "note": .string("call \(call) via turn:203.0.113.7:3478, owner bob@example.com"),
                "nested": ["state": .string(k % 2 == 0 ? "ok" : "to 198.51.100.\(k)"), "n": .number(Double(k))],
            ],
            [
                "id": "IT01", "timestamp": .number(Double(1000 * k)), "type": "inbound-rtp", "packetsReceived": .number(Double(50 * k)),
                "jitter": .number(0.001 * Double(k % 3)),
            ],
        ]
        if k < 3 {
            // Removed at the fourth snapshot (`unset` of a name that looks like an address).
            objects[2] = objects[2].objectValue!.adding("alice@example.com", .string("x"))
        }
        if k >= 2 {
            objects.append(["id": .string("CR_198.51.100.\(k)"), "timestamp": .number(Double(1000 * k)), "type": "remote-candidate"])
        }
        return objects
    }

    func testDeltasPseudonymisedAsPostedReadBackAsPseudonymisedSnapshots() throws {
        let folder = TestPaths.temporaryDirectory("delta-pseudonyms")
        defer { try? FileManager.default.removeItem(at: folder) }
        var settings = IngestLog.Settings(directory: folder.path)
        settings.privacy = privacy
        let log = try IngestLog(
            settings: settings, metrics: ServerMetrics(), logger: Logger(label: "test"), startsWriterThread: false)

        var encoder = StatsDeltaEncoder()
        var expected: [LogRecord] = []
        var deltas = 0
        let outcomes = Locked<[IngestLog.Outcome]>([])
        for k in 0..<6 {
            let snapshot = LogRecord(
                kind: .stats, call: call, ts: 1_795_349_930_000 + Int64(k) * 1000,
                body: ["format": "w3c", "pc": "pc-1", "report": .array(report(k))])
            let posted = encoder.encode(snapshot)
            if posted["delta"] != nil { deltas += 1 }
            expected.append(privacy.apply(to: snapshot))
            let line = RecordBatch.Line(number: 1, record: posted, bytes: 0)
            log.commit([
                IngestLog.Submission(lines: [line], bytes: 0, client: "c") { result in
                    if case .success(let o) = result { outcomes.withLock { $0.append(o) } }
                }
            ])
        }
        log.close()
        XCTAssertEqual(deltas, 5, "every snapshot after the first is posted as a delta")
        XCTAssertEqual(outcomes.withLock { $0.map(\.written) }, [1, 1, 1, 1, 1, 1])
        XCTAssertEqual(outcomes.withLock { $0.flatMap(\.rejections) }, [])

        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".zst") }
        XCTAssertEqual(files.count, 1)
        let read = LogReader(path: folder.appendingPathComponent(files[0]).path).readAll()
        XCTAssertEqual(read.issues, [])
        let written = read.records.filter { $0.kind == .stats }
        XCTAssertEqual(written.count, expected.count)
        for (got, want) in zip(written, expected) {
            XCTAssertEqual(got.call, want.call)
            XCTAssertNotEqual(got.call, call)
            XCTAssertEqual(got["pc"], want["pc"])
            let report = try XCTUnwrap(got["report"])
            XCTAssertTrue(report.isEquivalent(to: want["report"]!), "\(report.serialized())\n!=\n\(want["report"]!.serialized())")
            XCTAssertFalse(report.serialized().contains("192.0.2.10"), "no address is left in a restored report")
            XCTAssertFalse(report.serialized().contains(call), "nor the call's id")
        }
    }
}

extension JSONObject {
    fileprivate func adding(_ key: String, _ value: JSONValue) -> JSONValue {
        var o = self
        o[key] = value
        return .object(o)
    }
}
