import CallLog
import Foundation
import SQLiteDatabase
import Store
import TestSupport
import XCTest

/// Values in logs are data, never code or paths: SQL is always parameterised, and nothing
/// read from a log names a file.
final class HostileValueTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("faults-hostile") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    static let hostile: [String] = [
        "x'); DROP TABLE calls;--",
        "'); DROP TABLE calls;--",
        "\"; DELETE FROM streams; --",
        "' OR '1'='1",
        "Robert'); DROP TABLE ingested_files; --",
        "a\\'b\\\"c",
        "%s%n%x%d",
        "../../../../tmp/callstats-owned",
        "/etc/passwd",
        "C:\\Windows\\System32\\config",
        "$(touch callstats-owned)`touch callstats-owned`",
        "line\nbreak\r\tand tab",
        "nul\u{0}inside",
        "nul\u{0}other",  // the same as the one above up to the NUL: must stay another call
        "\u{202E}gnp.exe",
        "名前-📞-ü",
        String(repeating: "long-", count: 2_000),
    ]

    /// A complete call named `id`, with the hostile value in every free-text field.
    func records(_ id: String, index: Int) -> [LogRecord] {
        let start = Int64(1_795_300_000_000 + index * 60_000)
        var r: [LogRecord] = [
            .callInfo(
                call: id, ts: start, direction: "outgoing", sdk: id, sdkVersion: id, app: id, appVersion: id,
                platform: id, network: id, media: ["audio"], labels: ["region": .string(id), "tenant": .string(id)],
                extra: ["file": .string(id), "path": .string(id)]),
            .event(call: id, ts: start + 100, action: "callState", type: id, detail: ["note": .string(id)]),
        ]
        for i in 0..<3 {
            let t = start + 1_000 + Int64(i) * 10_000
            let report: [JSONValue] = [
                [
                    "id": .string(id), "timestamp": .number(Double(t)), "type": "inbound-rtp", "kind": "audio", "ssrc": 5,
                    "codecId": .string(id + "-codec"), "packetsReceived": .number(Double(500 * (i + 1))), "packetsLost": 0, "jitter": 0.01,
                ],
                ["id": .string(id + "-codec"), "timestamp": .number(Double(t)), "type": "codec", "mimeType": .string(id), "clockRate": 48000],
            ]
            r.append(.stats(call: id, ts: t, format: .w3c, report: report, peerConnection: id))
        }
        r.append(.end(call: id, ts: start + 30_000, reason: id, statusText: id, sipReason: id, durationMs: 29_000))
        return r
    }

    func testHostileIdsAndLabelsRoundTripIntactAndNameNoFile() throws {
        let logs = dir.appendingPathComponent("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        let all = Self.hostile.enumerated().flatMap { records($0.element, index: $0.offset) }
        try Data(all.map { $0.jsonLine + "\n" }.joined().utf8).write(to: logs.appendingPathComponent("hostile.ndjson"))
        let before = Self.everyPath(under: dir)

        let db = dir.appendingPathComponent("out.sqlite").path
        let r = try Binary.run(["analyze", logs.path, "--db", db, "--quiet"])
        XCTAssertEqual(r.status, 0, r.err)
        let cat = try Binary.run(["cat", logs.path])
        XCTAssertEqual(cat.status, 0, cat.err)
        XCTAssertEqual(cat.out.split(separator: "\n").count, all.count)

        let store = try SQLiteStore(path: db, forWriting: false)
        // Every table is still there, and every call, under exactly its name.
        let tables = try store.db.rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").compactMap { $0[0].string }
        XCTAssertEqual(
            tables,
            [
                "call_conversations", "call_material", "calls", "conference_matrix", "conference_participants", "event_rows", "findings",
                "ingested_files", "interval_rows", "meta",
                "peer_connections", "rollup_pending",
                "rollups", "streams",
            ])
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM ingested_files")?.int64, 1)
        for id in Self.hostile {
            let row = try store.db.rows(
                "SELECT call_id, app, sdk_version, network, labels, end_reason, end_status_text, sip_reason FROM calls WHERE call_id = ?",
                [.text(id)]
            ).first
            XCTAssertEqual(row?[0].string, id, "call \(id.debugDescription) stored under its exact name")
            for (i, column) in ["app", "sdk_version", "network"].enumerated() { XCTAssertEqual(row?[i + 1].string, id, column) }
            for (i, column) in ["end_reason", "end_status_text", "sip_reason"].enumerated() { XCTAssertEqual(row?[i + 5].string, id, column) }
            let labels = try row?[4].string.map { text in try Array(text.utf8).withUnsafeBufferPointer { try JSONValue.parse($0) } }
            XCTAssertEqual(labels?["region"]?.stringValue, id)
            XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM streams WHERE call_id = ?", [.text(id)])?.int64, 1)
            XCTAssertEqual(
                try store.db.scalar("SELECT count(*) FROM events WHERE call_id = ? AND kind = 'event' AND type = ?", [.text(id), .text(id)])?.int64, 1)
        }
        XCTAssertEqual(try store.db.scalar("SELECT count(*) FROM calls")?.int64, Int64(Self.hostile.count))

        // Nothing was created but the database and its companions.
        let created = Self.everyPath(under: dir).subtracting(before).map { URL(fileURLWithPath: $0).lastPathComponent }
        XCTAssertTrue(Set(created).isSubset(of: ["out.sqlite", "out.sqlite-wal", "out.sqlite-shm", "out.sqlite.lock"]), "\(created)")
        XCTAssertTrue(created.contains("out.sqlite"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/tmp/callstats-owned"))
    }

    static func everyPath(under dir: URL) -> Set<String> {
        var out = Set<String>()
        let e = FileManager.default.enumerator(atPath: dir.path)
        while let p = e?.nextObject() as? String { out.insert(dir.path + "/" + p) }
        return out
    }
}
