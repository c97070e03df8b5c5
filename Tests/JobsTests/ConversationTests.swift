import CallLog
import Foundation
import Importers
import Jobs
import MaterialScanning
import MaterialTestSupport
import SQLiteDatabase
import Store
import TestSupport
import XCTest

/// The legs of one conversation, logged by two agents as two calls, linked in the database:
/// by the recording's SSRCs, by an explicit label, by a shared SDK call id; across runs, and
/// the same after a rerun.
final class ConversationTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("conversations") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    func write(_ records: [LogRecord], _ name: String) throws -> String {
        let path = dir.appendingPathComponent(name).path
        let w = try LogWriter(path: path)
        for r in records { try w.append(r) }
        try w.close()
        return path
    }

    @discardableResult
    func analyze(_ paths: [String], db: String, force: Bool = false) throws -> AnalyzeRun.Report {
        var o = AnalyzeRun.Options(paths: paths, database: db)
        o.force = force
        return try AnalyzeRun(options: o).run()
    }

    func rows(_ db: String, _ sql: String) throws -> [[SQLValue]] { try SQLiteReader(path: db).connection.rows(sql) }

    /// The recording's two peers as two legs, each in its own file and run: the second run links
    /// them by SSRC (a's sent audio is b's received audio), and the conversation shows what each
    /// leg heard (measured) beside what it sent (from the far end's reports).
    func testTheRecordingsTwoSidesAreLinkedWithBothDirectionsScored() throws {
        guard let url = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is absent") }
        let legs = RecordingLegs.split(ChromiumImporter().convert(path: url.path).records, a: "peer-a", b: "peer-b")
        let db = dir.appendingPathComponent("legs.sqlite").path
        try analyze([try write(legs.a, "a.ndjson")], db: db)
        XCTAssertEqual(try rows(db, "SELECT count(*) FROM conversations")[0][0].int64, 0, "one leg, no label: no conversation yet")
        try analyze([try write(legs.b, "b.ndjson")], db: db)

        let conversations = try rows(db, "SELECT conversation_id, linked_by, legs, call_ids, mos_min, mos_max, worst_leg, grade FROM conversations")
        XCTAssertEqual(conversations.count, 1)
        let c = try XCTUnwrap(conversations.first)
        XCTAssertEqual(c[0].string, "peer-a", "no explicit id: the first leg's call id")
        XCTAssertEqual(c[1].string, "ssrc")
        XCTAssertEqual(c[2].int64, 2)
        XCTAssertEqual(c[3].string, "peer-a peer-b")
        XCTAssertEqual(c[7].string, "fair", "2 % loss each way")

        let legRows = try rows(
            db, "SELECT call_id, mos_cq, mos_cq_sent, loss_pct, loss_pct_sent FROM conversation_legs ORDER BY call_id")
        XCTAssertEqual(legRows.map { $0[0].string }, ["peer-a", "peer-b"])
        var heard: [Double] = []
        for row in legRows {
            let id = row[0].string ?? "?"
            let mos = try XCTUnwrap(row[1].double, id), sent = try XCTUnwrap(row[2].double, id)
            heard.append(mos)
            // Both directions of one path with 2 % loss and a 70 ms round trip: about 4.1 each way.
            XCTAssertEqual(mos, 4.1, accuracy: 0.2, id)
            XCTAssertEqual(sent, 4.1, accuracy: 0.2, id)
            XCTAssertEqual(try XCTUnwrap(row[3].double, id), 2, accuracy: 1, id)
            XCTAssertEqual(try XCTUnwrap(row[4].double, id), 2, accuracy: 1, id)
        }
        XCTAssertEqual(try XCTUnwrap(c[4].double), heard.min()!, accuracy: 1e-12)
        XCTAssertEqual(try XCTUnwrap(c[5].double), heard.max()!, accuracy: 1e-12)
        XCTAssertEqual(c[6].string, heard[0] <= heard[1] ? "peer-a" : "peer-b")
        // What a's far end reported receiving is what b measured: the same packets.
        let lossA = try rows(db, "SELECT loss_pct_sent FROM calls WHERE call_id = 'peer-a'")[0][0].double
        let lossB = try rows(db, "SELECT loss_pct FROM calls WHERE call_id = 'peer-b'")[0][0].double
        XCTAssertEqual(try XCTUnwrap(lossA), try XCTUnwrap(lossB), accuracy: 0.5)

        // A rerun of both files changes no link.
        let before = try rows(db, "SELECT * FROM call_conversations ORDER BY call_id").map { $0.map(\.description) }
        try analyze([dir.appendingPathComponent("a.ndjson").path, dir.appendingPathComponent("b.ndjson").path], db: db, force: true)
        XCTAssertEqual(try rows(db, "SELECT * FROM call_conversations ORDER BY call_id").map { $0.map(\.description) }, before)
    }

    /// A database of schema version 3 (no sent direction, no conversations) is upgraded in place
    /// by `regrade`, which scores its calls' sent direction from their stored material and links
    /// their legs, as a fresh analysis would.
    func testRegradeGivesAVersion3DatabaseBothDirectionsAndItsConversations() throws {
        guard let url = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is absent") }
        let legs = RecordingLegs.split(ChromiumImporter().convert(path: url.path).records, a: "peer-a", b: "peer-b")
        let log = try write(legs.a + legs.b, "legs.ndjson")
        let fresh = dir.appendingPathComponent("fresh.sqlite").path, old = dir.appendingPathComponent("v3.sqlite").path
        try analyze([log], db: fresh)
        try FileManager.default.copyItem(atPath: fresh, toPath: old)
        let oldDB = try Database(path: old)
        try oldDB.execute("PRAGMA journal_mode = DELETE")
        try OlderSchemas.makeVersion3(oldDB)
        XCTAssertTrue(Schema.upgradeSummary(from: 3).contains("adds calls.mos_cq_sent, "), Schema.upgradeSummary(from: 3))
        XCTAssertTrue(Schema.upgradeSummary(from: 3).contains("links the legs of one conversation"), Schema.upgradeSummary(from: 3))

        _ = try RegradeRun(options: .init(database: old)).run()
        XCTAssertEqual(try rows(old, "SELECT value FROM meta WHERE key = 'schema_version'")[0][0].string, String(Schema.version))
        XCTAssertEqual(try rows(old, "SELECT count(*) FROM calls WHERE mos_cq_sent IS NULL")[0][0].int64, 0)
        XCTAssertEqual(try rows(old, "SELECT count(*) FROM streams WHERE score_source IS NULL")[0][0].int64, 0)
        XCTAssertEqual(try rows(old, "SELECT conversation_id, legs FROM conversations").map { $0.map(\.description) }, [["peer-a", "2"]])
        let compared = "SELECT call_id, mos_cq_sent, mos_worst_sent, loss_pct_sent, grade, grade_reason FROM calls ORDER BY call_id"
        XCTAssertEqual(try rows(old, compared).map { $0.map(\.description) }, try rows(fresh, compared).map { $0.map(\.description) })
    }

    /// A 30-s call with one audio stream each way (SSRCs `inbound`, `outbound`).
    func call(_ id: String, inbound: Double, outbound: Double, labels: JSONObject = [:], sdkCallID: String? = nil) -> [LogRecord] {
        let t0: Int64 = 1_795_000_000_000
        var records: [LogRecord] = [
            .callInfo(
                call: id, ts: t0, direction: "outgoing", sdk: "test", sdkVersion: "1", app: "a", appVersion: "1",
                platform: "web", network: "wifi", media: ["audio"], labels: labels,
                extra: sdkCallID.map { ["callId": .string($0)] } ?? [:])
        ]
        var s = W3CSnapshot(t: Double(t0))
        s.inboundSSRC = inbound
        s.outboundSSRC = outbound
        for k in 0..<4 {
            let ts = t0 + Int64(k) * 10_000
            s.t = Double(ts)
            s.received += 500; s.sent += 500
            records.append(Harness.stats(id, s, ts: ts))
        }
        records.append(.end(call: id, ts: t0 + 31_000, reason: "terminatedLocally"))
        return records
    }

    /// A capture of an app's call links to it by SSRC: the app sends 52, which the capture heard.
    /// The capture's own `outbound` row of 52 (the stream as its receiver reported it in RTCP)
    /// is not a second sender of 52, which would make 52 link nothing.
    func testACaptureOfAnAppsCallIsLinkedThoughItHasReportRows() throws {
        let t0: Int64 = 1_795_000_000_000
        let wire = "wire:10.0.0.1:40000-10.0.0.2:50000"
        func rtp(_ ssrc: Double, from: String, to: String) -> LogRecord {
            LogRecord(
                kind: .rtpStream, call: wire, ts: t0 + 10_000,
                body: [
                    "ssrc": .number(ssrc), "src": .string(from), "dst": .string(to), "pt": 0, "codec": "PCMU", "clockRate": 8000,
                    "final": true, "firstTs": .number(Double(t0 + 100)), "packetsReceived": 495, "bytesReceived": 79_200,
                    "packetsExpected": 495, "packetsLost": 0, "jitterMs": 1,
                ])
        }
        let report: JSONValue = ["ssrc": 52, "fractionLost": 0, "packetsLost": 5, "highestSeq": 499, "jitter": 8, "jitterMs": 1]
        let capture: [LogRecord] = [
            .callInfo(
                call: wire, ts: t0 + 100, direction: "both", sdk: "wire", sdkVersion: "1", app: "callstats-capture", appVersion: "1",
                platform: "capture", network: "unknown", media: []),
            LogRecord(
                kind: .rtcp, call: wire, ts: t0 + 9_000,
                body: ["src": "10.0.0.2:50001", "dst": "10.0.0.1:40001", "types": [201], "ssrc": 51, "reports": [report]]),
            rtp(52, from: "10.0.0.1:40000", to: "10.0.0.2:50000"), rtp(51, from: "10.0.0.2:50000", to: "10.0.0.1:40000"),
            .end(call: wire, ts: t0 + 10_000, reason: "captureEnd"),
        ]
        let db = dir.appendingPathComponent("capture.sqlite").path
        try analyze([try write(call("app-1", inbound: 51, outbound: 52) + capture, "both.ndjson")], db: db)
        XCTAssertEqual(
            try rows(db, "SELECT direction, score_source FROM streams WHERE call_id = '\(wire)' ORDER BY direction, ssrc").map {
                $0.map(\.description)
            },
            [["inbound", "local"], ["inbound", "local"], ["outbound", "remote_report"]])
        XCTAssertEqual(
            try rows(db, "SELECT linked_by, call_ids FROM conversations").map { $0.map(\.description) },
            [["ssrc", "app-1 \(wire)"]])
    }

    /// Pseudonymised, the SDK call id is a keyed pseudonym like the call ids: not stored in
    /// clear, and the same for both legs, which stay linked.
    func testAPseudonymisedSDKCallIDStillLinksTheLegs() throws {
        let key = try XCTUnwrap(SipHashKey(hex: "000102030405060708090a0b0c0d0e0f"))
        let pseudonymizer = CallPseudonymizer(key: key)
        let db = dir.appendingPathComponent("private.sqlite").path
        var o = AnalyzeRun.Options(
            paths: [
                try write(
                    call("leg-1", inbound: 31, outbound: 32, sdkCallID: "a84b4c76e66710@pbx.example.com")
                        + call("leg-2", inbound: 33, outbound: 34, sdkCallID: "a84b4c76e66710@pbx.example.com"), "private.ndjson")
            ], database: db)
        o.pseudonymizer = pseudonymizer
        _ = try AnalyzeRun(options: o).run()
        let pseudonym = pseudonymizer.identifier("a84b4c76e66710@pbx.example.com")
        XCTAssertEqual(try rows(db, "SELECT DISTINCT sdk_call_id FROM calls").map { $0[0].description }, [pseudonym])
        XCTAssertEqual(
            try rows(db, "SELECT conversation_id, linked_by, call_ids FROM conversations").map { $0.map(\.description) },
            [[pseudonym, "sdk_call_id", [pseudonymizer.identifier("leg-1"), pseudonymizer.identifier("leg-2")].sorted().joined(separator: " ")]])
    }

    /// Hand-built calls: two with the label `conversation` (in two runs), two whose SSRCs cross,
    /// two with one SDK call id, and two strangers. Three conversations, the strangers in none.
    func testLabelsSSRCsAndSDKCallIDsLinkLegs() throws {
        let db = dir.appendingPathComponent("pairs.sqlite").path
        try analyze(
            [
                try write(
                    call("label-1", inbound: 11, outbound: 12, labels: ["conversation": "conv-7", "region": "eu"])
                        + call("ssrc-1", inbound: 21, outbound: 22) + call("sdk-1", inbound: 31, outbound: 32, sdkCallID: "sip-abc")
                        + call("stranger-1", inbound: 41, outbound: 42), "first.ndjson")
            ], db: db)
        try analyze(
            [
                try write(
                    call("label-2", inbound: 13, outbound: 14, labels: ["conversation": "conv-7"])
                        + call("ssrc-2", inbound: 22, outbound: 21) + call("sdk-2", inbound: 33, outbound: 34, sdkCallID: "sip-abc")
                        + call("stranger-2", inbound: 43, outbound: 44), "second.ndjson")
            ], db: db)
        let links = try rows(db, "SELECT conversation_id, linked_by, legs, call_ids FROM conversations ORDER BY conversation_id")
            .map { $0.map(\.description) }
        XCTAssertEqual(
            links,
            [
                ["conv-7", "label", "2", "label-1 label-2"],
                ["sip-abc", "sdk_call_id", "2", "sdk-1 sdk-2"],
                ["ssrc-1", "ssrc", "2", "ssrc-1 ssrc-2"],
            ])
        XCTAssertEqual(
            try rows(db, "SELECT sdk_call_id FROM calls WHERE call_id = 'sdk-2'")[0][0].string, "sip-abc")

        // An SSRC that two calls send links nothing (a collision is not a conversation): with
        // both of the pair's SSRCs sent again by others, the pair is no longer linked.
        try analyze(
            [try write(call("ssrc-3", inbound: 77, outbound: 22) + call("ssrc-4", inbound: 78, outbound: 21), "third.ndjson")], db: db)
        XCTAssertEqual(
            try rows(db, "SELECT conversation_id FROM conversations ORDER BY conversation_id").map { $0[0].description },
            ["conv-7", "sip-abc"])
    }
}
