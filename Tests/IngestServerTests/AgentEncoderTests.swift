import CallLog
import Foundation
import TestSupport
import XCTest

/// The agent's delta encoder (agent.js, run by node) against CallLog's decoder and through the
/// server: every snapshot it encodes comes back out of `callstats cat` as it went in.
final class AgentEncoderTests: XCTestCase {
    static let node: String? = ["/usr/bin/node", "/usr/local/bin/node", "/usr/bin/nodejs"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("agent-encoder") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// Reports that exercise every part of a delta: steady counters (predicted), irregular
    /// ones, fractional timestamps, nested objects, objects added and removed, reordered
    /// objects, members dropped, an object without a common timestamp, and a renegotiation.
    static let script = #"""
        const agent = require(process.argv[2]);
        const enc = new agent.DeltaEncoder();
        let seed = 7;
        function rnd() { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; }
        const full = [], sent = [];
        let base = 1795349931321.24;
        for (let i = 0; i < 60; i++) {
          const t = base + i * 1000.13 + (i % 7 === 3 ? 0.5 : 0);
          const report = [
            {id: "T01", timestamp: t, type: "transport", bytesSent: 1000 * i, dtlsState: i < 2 ? "connecting" : "connected",
             selectedCandidatePairId: i < 30 ? "CP1" : "CP2"},
            {id: "IT01", timestamp: t, type: "inbound-rtp", kind: "audio", ssrc: 3142301049, packetsReceived: 50 * i + Math.floor(rnd() * 3),
             packetsLost: Math.floor(i / 10), jitter: Math.round(rnd() * 1000) / 100000, totalSamplesReceived: 48000 * i,
             totalAudioEnergy: i * 0.123456789, audioLevel: rnd(), codecId: "CIT01_111"},
            {id: "CIT01_111", timestamp: t, type: "codec", mimeType: "audio/opus", clockRate: 48000, payloadType: 111,
             sdpFmtpLine: "minptime=10;useinbandfec=1"},
            {id: "RIA1", timestamp: t - 120.5 * (i % 3), type: "remote-inbound-rtp", roundTripTime: 0.071 + (i % 5) / 1000,
             fractionLost: 0, nested: {a: i % 4, b: {c: "x", d: i > 40 ? 1 : 2}}},
          ];
          if (i >= 10 && i < 50) report.push({id: "OV01", timestamp: t, type: "outbound-rtp", kind: "video", framesEncoded: 30 * (i - 10),
            qualityLimitationDurations: {none: i * 1.0, bandwidth: 0.25 * i, cpu: 0}, encoderImplementation: "libvpx"});
          if (i % 11 === 5) delete report[1].audioLevel;
          if (i === 20) report.reverse();
          if (i >= 45) for (let k = 0; k < 6; k++) report.push({id: "CAND" + k + "-" + Math.floor(i / 5), timestamp: t, type: "local-candidate",
            address: "10.0.0." + k, port: 50000 + k, candidateType: "host"});
          const record = {v: 1, kind: "stats", call: "c-js", ts: Math.floor(t), format: "w3c", pc: "pc-1", report};
          full.push(record);
          sent.push(enc.encode(record));
          if (i === 33) enc.restart(record);
        }
        const fs = require("fs");
        fs.writeFileSync(process.argv[3], full.map(r => JSON.stringify(r)).join("\n") + "\n");
        fs.writeFileSync(process.argv[4], sent.map(r => JSON.stringify(r)).join("\n") + "\n");
        """#

    func encode() throws -> (full: [LogRecord], sent: [String]) {
        guard let node = AgentEncoderTests.node else { throw XCTSkip("node is not installed: the agent's encoder is checked by the Chromium test only") }
        let js = dir.appendingPathComponent("encode.js")
        try AgentEncoderTests.script.write(to: js, atomically: true, encoding: .utf8)
        let agent = TestPaths.repositoryRoot.appendingPathComponent("Sources/IngestServer/Resources/agent.js").path
        let fullPath = dir.appendingPathComponent("full.ndjson"), sentPath = dir.appendingPathComponent("sent.ndjson")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: node)
        p.arguments = [js.path, agent, fullPath.path, sentPath.path]
        try p.run()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        let full = try String(contentsOf: fullPath, encoding: .utf8).split(separator: "\n").map { try LogRecord(parsing: String($0)) }
        let sent = try String(contentsOf: sentPath, encoding: .utf8).split(separator: "\n").map(String.init)
        return (full, sent)
    }

    func testAgentDeltasDecodeToTheSnapshotsTaken() throws {
        let (full, sent) = try encode()
        var decoder = StatsDeltaDecoder()
        var deltas = 0
        for (i, line) in sent.enumerated() {
            let record = try LogRecord(parsing: line)
            if record["delta"] != nil { deltas += 1 }
            let restored = try decoder.decode(record)
            XCTAssertTrue(
                JSONValue.array(restored["report"]?.arrayValue ?? []).isEquivalent(to: full[i]["report"]!),
                "snapshot \(i) restored as taken")
        }
        XCTAssertGreaterThan(deltas, 50, "most snapshots went as deltas")
        let fullBytes = full.reduce(0) { $0 + $1.jsonLine.utf8.count }, sentBytes = sent.reduce(0) { $0 + $1.utf8.count }
        XCTAssertLessThan(sentBytes * 2, fullBytes, "deltas are much smaller than the reports")
    }

    func testAgentDeltasThroughTheServerComeOutWhole() throws {
        let (full, sent) = try encode()
        let logs = dir.appendingPathComponent("logs")
        // Small segments: the server's writer restarts its chains often, whatever the agent sent.
        let server = try ServeProcess(directory: logs, arguments: ["--file-bytes", "1500"])
        for chunk in stride(from: 0, to: sent.count, by: 7) {
            let body = sent[chunk..<min(sent.count, chunk + 7)].joined(separator: "\n")
            let r = try RawHTTP.post(port: server.port, body)
            XCTAssertEqual(r.status, 200, r.body)
            XCTAssertEqual(r.json?["rejected"] as? Int, 0, r.body)
        }
        server.signal(SIGTERM)
        XCTAssertEqual(server.wait(), 0)
        let files = try FileManager.default.contentsOfDirectory(atPath: logs.path)
        XCTAssertGreaterThan(files.count, 1, "the log rotated")
        let back = try Binary.cat(logs).map { try LogRecord(parsing: $0) }.sorted { $0.ts < $1.ts }
        XCTAssertEqual(back.count, full.count)
        for (a, b) in zip(back, full) {
            XCTAssertEqual(a.ts, b.ts)
            XCTAssertTrue(a["report"]!.isEquivalent(to: b["report"]!), "snapshot at \(a.ts) comes back as taken")
        }
    }
}
