import Foundation
import TestSupport
import XCTest

/// `callstats import` as a user runs it: dumps in, one log per call out, `analyze` scores them,
/// exit status as `analyze`'s.
final class ImportCommandTests: BinaryTestCase {
    override var folderName: String { "cli-import" }

    func write(_ name: String, _ text: String) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A webrtc-internals dump of a call whose ICE failed: no statistics.
    static let failedCall = """
        {
         "getUserMedia": [],
         "PeerConnections": {
          "3-1": {
           "pid": 9,
           "stats": {},
           "updateLog": [
            {"type": "createOffer", "value": "", "timestamp": 1700000000100},
            {"type": "setLocalDescription", "value": "{\\"type\\":\\"offer\\",\\"sdp\\":\\"v=0\\"}", "timestamp": 1700000000120},
            {"type": "setRemoteDescription", "value": "{\\"type\\":\\"answer\\",\\"sdp\\":\\"v=0\\"}", "timestamp": 1700000001000},
            {"type": "iceconnectionstatechange", "value": "\\"failed\\"", "timestamp": 1700000031000}
           ],
           "url": "https://x.example.test/"
          }
         },
         "UserAgent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.85 Safari/537.36"
        }
        """

    func testImportThenAnalyze() throws {
        guard let recording = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is not present") }
        let failed = try write("failed_dump.txt", Self.failedCall)
        let out = dir.appendingPathComponent("imported").path
        let run = try callstats(["import", recording.path, failed, "--out", out, "--label", "tenant=acme"])
        XCTAssertEqual(run.status, 0, run.err)
        XCTAssertTrue(run.out.contains("chromium-test-page, call chromium-moderate"), run.out)
        XCTAssertTrue(run.out.contains("webrtc-internals, call failed_dump"), run.out)
        XCTAssertTrue(run.err.contains("\(failed): note: the call never connected"), run.err)
        let files = try FileManager.default.contentsOfDirectory(atPath: out).sorted()
        XCTAssertEqual(files, ["chromium-moderate.ndjson.zst", "failed_dump.ndjson.zst"])

        let db = dir.appendingPathComponent("calls.sqlite").path
        let analyze = try callstats(["analyze", out, "--db", db, "--quiet"])
        XCTAssertEqual(analyze.status, 0, analyze.err)
        let q = try callstats([
            "query", "--db", db, "--format", "csv",
            "SELECT call_id, grade, sdk, labels FROM calls ORDER BY call_id",
        ])
        XCTAssertEqual(q.status, 0, q.err)
        let rows = q.out.split(separator: "\n").dropFirst().map(String.init)
        XCTAssertEqual(rows.count, 2, q.out)
        XCTAssertTrue(rows[0].hasPrefix("chromium-moderate,fair,chromium,"), rows[0])
        XCTAssertTrue(rows[1].hasPrefix("failed_dump,no_media,chrome,"), rows[1])
        XCTAssertTrue(rows.allSatisfy { $0.contains("acme") }, "--label on every call")
    }

    func testExitStatusAsAnalyzes() throws {
        guard let recording = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is not present") }
        let out = dir.appendingPathComponent("o").path
        // The old command name and a file as --out still work.
        let alias = try callstats(["import-chromium", recording.path, "--out", dir.appendingPathComponent("one.ndjson.zst").path, "--every", "5"])
        XCTAssertEqual(alias.status, 0, alias.err)
        XCTAssertTrue(alias.out.contains("snapshots a: 12, b: 12"), alias.out)

        let garbage = try write("notes.txt", "hello\n")
        let none = try callstats(["import", garbage, "--out", out])
        XCTAssertEqual(none.status, 1)
        XCTAssertTrue(none.err.contains("\(garbage):1: not a webrtc-internals dump"), none.err)

        let cut = try write("cut.txt", String(Self.failedCall.prefix(Self.failedCall.count * 3 / 4)))
        let partial = try callstats(["import", cut, garbage, "--out", out])
        XCTAssertEqual(partial.status, 3, partial.err)
        XCTAssertTrue(partial.err.contains("\(cut):"), partial.err)
        XCTAssertTrue(partial.err.contains("truncated"), partial.err)
        XCTAssertTrue(FileManager.default.fileExists(atPath: out + "/cut.ndjson.zst"), "what came before the cut is kept")

        let bad = try callstats(["import", garbage, "--out", out, "--label", "novalue"])
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.err.contains("key=value"), bad.err)
    }
}
