import CallLog
import Foundation
import Simulator
import TestSupport
import XCTest

/// A flipped byte and a cut at sampled offsets of files as each writer really writes them (the
/// simulator, `import` of a dump, `capture` of a pcap, `serve`): the loss stays within one
/// segment for a flip and one flush for a cut, and nothing altered is ever used
/// (`DamageSweep`). The collector's files are swept in `CollectorTests.WriterTests`.
///
/// The offsets are a sample (`CALLSTATS_SOAK_DAMAGE_OFFSETS` per file, both ends and zstd's
/// frame header included), so that the sweep stays a few seconds in CI.
final class WriterDamageTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("writer-damage") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// Sweeps `file` with flips and cuts at sampled offsets, held to the default writer's bounds.
    @discardableResult
    func sweep(_ file: String, writer: String, minimumSegments: Int = 1) throws -> DamageSweep.Report {
        let s = try DamageSweep(path: file)
        let count = Soak.count("CALLSTATS_SOAK_DAMAGE_OFFSETS", ci: 18)
        let r = try s.sweep(flips: count, cuts: count / 3, options: LogWriter.Options(), scratch: dir.appendingPathComponent("scratch-\(writer)"))
        XCTAssertGreaterThanOrEqual(r.frames, minimumSegments, "\(writer): \(s.textBytes) bytes of text in \(r.frames) frames")
        XCTAssertEqual(r.failures, [], writer)
        XCTAssertEqual(r.flips, DamageSweep.offsets(count, in: s.clean.count).count)
        Soak.figure("damage-\(writer)-worst-flip-text", r.worstFlipText)
        Soak.figure("damage-\(writer)-worst-cut-text", r.worstCutText)
        return r
    }

    /// The simulator never flushes: its flush points and segments are the writer's own. 40 calls
    /// in one file are about 2 MiB of text, so flips land in several segments.
    func testSimulatorFile() throws {
        var config = SimulatorConfiguration(calls: 40, seed: 11)
        config.files = 1
        _ = try Simulator(config).write(to: dir.path) { _ in }
        let file = try XCTUnwrap(Corpus.files(in: dir).first)
        let r = try sweep(file, writer: "simulator", minimumSegments: 2)
        // A flip that costs anything costs a part of one segment, never the file's rest.
        XCTAssertGreaterThan(r.worstFlipText, 0)
    }

    /// `import` of the Chromium recording (one call at 1 s polling, about 280 KB of text): the
    /// importer never flushes, so its only flush points are the writer's.
    func testImportedDump() throws {
        guard let recording = TestPaths.chromiumRecording else { throw XCTSkip("../shared/data is absent") }
        let out = dir.appendingPathComponent("imported")
        let run = try Binary.run(["import", recording.path, "--out", out.path])
        XCTAssertEqual(run.status, 0, run.err)
        let file = try XCTUnwrap(Corpus.files(in: out).first)
        try sweep(file, writer: "import")
    }

    /// `capture -r` of a pcap from `../shared/pcaps` (SIP, RTP and RTCP).
    func testCapturedPcap() throws {
        let pcap = TestPaths.shared.appendingPathComponent("pcaps/heplify/rtp_rtcp_sip_ipv4_udp.pcap")
        guard FileManager.default.fileExists(atPath: pcap.path) else { throw XCTSkip("../shared/pcaps is absent") }
        let out = dir.appendingPathComponent("captured")
        let run = try Binary.run(["capture", "-r", pcap.path, "-o", out.path, "--interval", "1"])
        XCTAssertEqual(run.status, 0, run.err)
        let file = try XCTUnwrap(Corpus.files(in: out).first)
        try sweep(file, writer: "capture")
    }

    /// `serve` (one writer thread, so one file), given a simulation's records in full as clients
    /// post them, about 200 KB a request. Snapshots every 3 s make the file two segments long.
    func testServeLog() throws {
        var config = SimulatorConfiguration(calls: 20, seed: 5)
        config.files = 1
        config.periodSeconds = 3
        let sim = dir.appendingPathComponent("sim")
        _ = try Simulator(config).write(to: sim.path) { _ in }
        let records = LogReader(path: try XCTUnwrap(Corpus.files(in: sim).first)).readAll().records
        let out = dir.appendingPathComponent("served")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let serve = Process()
        serve.executableURL = Binary.url
        serve.arguments = ["serve", "--listen", "127.0.0.1:0", "--out", out.path, "--writers", "1"]
        let stdout = Pipe()
        serve.standardOutput = stdout
        serve.standardError = FileHandle.nullDevice
        try serve.run()
        var stopped = false
        defer {
            if !stopped {
                kill(serve.processIdentifier, SIGTERM)
                serve.waitUntilExit()
            }
        }
        guard let first = PipeLines(stdout).next(), let match = first.firstMatch(of: /127\.0\.0\.1:(\d+)/), let port = Int(match.1) else {
            return XCTFail("callstats serve did not say where it listens")
        }
        var body = [UInt8]()
        var written = 0
        func post() throws {
            let reply = try PrivacyLeakTests.post(port: port, body: String(decoding: body, as: UTF8.self))
            XCTAssertTrue(reply.hasPrefix("HTTP/1.1 200"), String(reply.prefix(300)))
            if let m = reply.firstMatch(of: /"written":(\d+)/), let n = Int(m.1) { written += n }
            body.removeAll(keepingCapacity: true)
        }
        for var r in records {
            // Posted without the file's numbering: it restarts at every segment, which serve
            // would take for a client's retries.
            r.body["seq"] = nil
            r.body["base"] = nil
            if !body.isEmpty { body.append(0x0A) }
            r.write(to: &body)
            if body.count >= 200_000 { try post() }
        }
        if !body.isEmpty { try post() }
        kill(serve.processIdentifier, SIGTERM)
        serve.waitUntilExit()
        stopped = true
        let files = Corpus.files(in: out)
        XCTAssertEqual(files.count, 1, "one writer, one file under serve's 64 MiB rotation")
        let file = try XCTUnwrap(files.first)
        XCTAssertEqual(written, records.count, "serve wrote every posted record")
        XCTAssertEqual(LogReader(path: file).readAll().records.count, written, "every record serve wrote is in its log")
        try sweep(file, writer: "serve", minimumSegments: 2)
    }
}
