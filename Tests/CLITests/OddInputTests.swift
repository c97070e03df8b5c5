import CallLog
import Foundation
import TestSupport
import XCTest

/// Inputs that are valid but unusual, or not logs at all, given to the built binary.
final class OddInputTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("cli-odd") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// Runs the built binary; a run still going after 30 s is stopped (and fails the test
    /// through its status), so that a command waiting on its input cannot hang the suite.
    @discardableResult
    func callstats(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
        let p = Process()
        p.executableURL = CommandLineTests.binary
        p.arguments = args
        p.currentDirectoryURL = dir
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let watchdog = DispatchWorkItem { if p.isRunning { p.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: watchdog)
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        watchdog.cancel()
        XCTAssertEqual(p.terminationReason, .exit, "callstats \(args.joined(separator: " ")) did not finish by itself")
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    static let records: [LogRecord] = [
        .callInfo(
            call: "bom-call", ts: 1_000, direction: "outgoing", sdk: "s", sdkVersion: "1", app: "a", appVersion: "1",
            platform: "ios", network: "wifi", media: ["audio"]),
        .event(call: "bom-call", ts: 2_000, action: EventName.callState, type: "mute"),
        .end(call: "bom-call", ts: 3_000, reason: "terminatedLocally"),
    ]

    static var text: [UInt8] { Array(records.map { $0.jsonLine + "\n" }.joined().utf8) }

    /// `callstats cat`'s lines of a file.
    func catLines(_ path: String) throws -> [String] {
        let c = try callstats(["cat", path])
        XCTAssertEqual(c.status, 0, c.err)
        return c.out.split(separator: "\n").map(String.init)
    }

    /// Logs recompressed with gzip (what the collector writes on platforms without zstd) give
    /// `analyze` exactly the rows the zstd logs give, and `cat` the same records.
    func testGzipLogsGiveTheSameDatabaseAsZstdLogs() throws {
        let zstd = dir.appendingPathComponent("zstd").path, gzip = dir.appendingPathComponent("gzip").path
        XCTAssertEqual(try callstats(["simulate", "--calls", "20", "--files", "2", "--seed", "9", "--out", zstd]).status, 0)
        try FileManager.default.createDirectory(atPath: gzip, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: zstd) where name.hasSuffix(".ndjson.zst") {
            let target = gzip + "/" + name.replacingOccurrences(of: ".zst", with: ".gz")
            let r = try runProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", "zstd -dc '\(zstd)/\(name)' | gzip -6 > '\(target)'"])
            XCTAssertEqual(r.status, 0, r.err)
        }
        let a = dir.appendingPathComponent("a.sqlite").path, b = dir.appendingPathComponent("b.sqlite").path
        XCTAssertEqual(try callstats(["analyze", zstd, "--db", a, "--quiet"]).status, 0)
        let fromGzip = try callstats(["analyze", gzip, "--db", b, "--quiet"])
        XCTAssertEqual(fromGzip.status, 0, fromGzip.err)
        // Every table but the ledger, which names the files (and their content) read; the calls'
        // material, which names the files too, compared by what it holds.
        let compared = try callstats(["internal", "compare-databases", "--material-by-content", a, b])
        XCTAssertEqual(compared.status, 1, compared.out + compared.err)
        XCTAssertTrue(compared.out.contains("different: ingested_files\n"), compared.out)
        let ledger = try callstats(["query", "--db", b, "--format", "csv", "SELECT path LIKE '%.ndjson.gz', records > 0 FROM ingested_files"])
        XCTAssertEqual(ledger.out.split(separator: "\n").dropFirst(), ["1,1", "1,1"], ledger.out)
        XCTAssertEqual(try callstats(["cat", gzip]).out, try callstats(["cat", zstd]).out)
    }

    /// A byte-order mark before the first record (editors on Windows write one) is not part of it.
    func testAByteOrderMarkDoesNotCostTheFirstRecord() throws {
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        let plain = dir.appendingPathComponent("bom.ndjson")
        try Data(bom + Self.text).write(to: plain)
        let compressed = dir.appendingPathComponent("bom.ndjson.zst")
        try Data(ZstdCompressor.compressFrame(bom + Self.text)).write(to: compressed)
        // Files joined with `cat`: the second one's mark starts a line in the middle.
        let joined = dir.appendingPathComponent("joined.ndjson")
        try Data(bom + Self.text + bom + Self.text).write(to: joined)
        for file in [plain, compressed] {
            XCTAssertEqual(try catLines(file.path), Self.records.map(\.jsonLine), file.lastPathComponent)
        }
        XCTAssertEqual(try catLines(joined.path), (Self.records + Self.records).map(\.jsonLine))
    }

    /// Empty files (a log just created, a write that failed before its first byte) are passed
    /// over quietly: not read, not "already ingested", not in the ledger; once one has records
    /// it is read like any other.
    func testEmptyFilesArePassedOverQuietlyAndReadOnceWritten() throws {
        let logs = dir.appendingPathComponent("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        for name in ["a.ndjson.zst", "b.ndjson.zst", "c.ndjson"] {
            FileManager.default.createFile(atPath: logs.appendingPathComponent(name).path, contents: Data())
        }
        let db = dir.appendingPathComponent("empty.sqlite").path
        let first = try callstats(["analyze", logs.path, "--db", db])
        XCTAssertEqual(first.status, 0, first.err)
        XCTAssertEqual(first.err, "")
        XCTAssertFalse(first.out.contains("already ingested"), first.out)
        let ledger = try callstats(["query", "--db", db, "--format", "csv", "SELECT count(*) FROM ingested_files"])
        XCTAssertEqual(ledger.out.split(separator: "\n").last, "0")
        try Data(Self.text).write(to: logs.appendingPathComponent("c.ndjson"))
        let second = try callstats(["analyze", logs.path, "--db", db])
        XCTAssertEqual(second.status, 0, second.err)
        let calls = try callstats(["query", "--db", db, "--format", "csv", "SELECT call_id FROM calls"])
        XCTAssertEqual(calls.out.split(separator: "\n").last, "bom-call")
    }

    /// Two copies of one call that disagree (call records and ends at the same times, with
    /// other contents) give the same database whichever file comes first on the command line.
    func testConflictingCopiesOfACallGiveTheSameResultInAnyOrder() throws {
        func copy(_ name: String, sdk: String, reason: String) throws -> String {
            let records: [LogRecord] = [
                .callInfo(
                    call: "twice", ts: 1_000, direction: "outgoing", sdk: sdk, sdkVersion: "1", app: "a", appVersion: "1",
                    platform: "ios", network: "wifi", media: ["audio"]),
                .end(call: "twice", ts: 9_000, reason: reason),
            ]
            let path = dir.appendingPathComponent(name).path
            try Data(records.map { $0.jsonLine + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        let a = try copy("a.ndjson", sdk: "first-sdk", reason: "terminatedLocally")
        let b = try copy("b.ndjson", sdk: "second-sdk", reason: "terminatedRemotely")
        let ab = dir.appendingPathComponent("ab.sqlite").path, ba = dir.appendingPathComponent("ba.sqlite").path
        let abRun = try callstats(["analyze", a, b, "--db", ab, "--threads", "1"])
        let baRun = try callstats(["analyze", b, a, "--db", ba, "--threads", "1"])
        XCTAssertEqual(abRun.status, 0)
        XCTAssertEqual(baRun.status, 0)
        let query = "SELECT sdk, end_reason FROM calls"
        let first = try callstats(["query", "--db", ab, "--format", "csv", query]).out
        XCTAssertEqual(first, try callstats(["query", "--db", ba, "--format", "csv", query]).out)
        XCTAssertEqual(first.split(separator: "\n").last, "first-sdk,terminatedLocally")
        // Each run warns once per record that differs, naming both files and the one kept.
        for run in [abRun, baRun] {
            for record in ["call", "end"] {
                XCTAssertTrue(
                    run.err.contains(
                        "call twice: its \(record) record at ts \(record == "call" ? 1_000 : 9_000) differs between \(a) and \(b); kept the one from \(a)"),
                    run.err)
            }
        }
        // A third copy in a later run is compared with the stored one, whose file is still named.
        let c = try copy("c.ndjson", sdk: "a-third-sdk", reason: "terminatedLocally")
        let later = try callstats(["analyze", c, "--db", ab])
        XCTAssertTrue(later.err.contains("its call record at ts 1000 differs between \(c) and \(a); kept the one from \(c)"), later.err)
        XCTAssertEqual(try callstats(["query", "--db", ab, "--format", "csv", query]).out.split(separator: "\n").last, "a-third-sdk,terminatedLocally")
    }

    /// `zstd --long=31` (a 2 GiB window, declared because the size was not known up front).
    func testAFileCompressedWithTheLargestWindowIsRead() throws {
        let compressor = ZstdCompressor(level: 3, windowLog: 31)
        var bytes = [UInt8]()
        compressor.compress(Self.text, .flush, into: &bytes)
        compressor.compress([], .end, into: &bytes)
        let decoder = ZstdDecoder()
        var decoded = [UInt8](), damage = [ZstdDecoder.Damage]()
        bytes.withUnsafeBytes { decoder.decompress($0, emit: { decoded.append(contentsOf: $0) }, damaged: { damage.append($0) }) }
        XCTAssertEqual(decoder.windowSize, 1 << 31, "the frame declares a 2 GiB window")
        XCTAssertEqual(decoded, Self.text)
        XCTAssertEqual(damage, [])
        let file = dir.appendingPathComponent("long.ndjson.zst")
        try Data(bytes).write(to: file)
        XCTAssertEqual(try catLines(file.path), Self.records.map(\.jsonLine))
    }

    /// A FIFO or a device named as a log is refused at once, named, rather than waited on or
    /// read forever; the other logs given with it are read.
    func testAFIFOOrADeviceIsRefusedWithItsName() throws {
        let fifo = dir.appendingPathComponent("calls.ndjson").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let log = dir.appendingPathComponent("good.ndjson")
        try Data(Self.text).write(to: log)
        for (path, kind) in [(fifo, "a FIFO"), ("/dev/zero", "a character device")] {
            let cat = try callstats(["cat", path, log.path])
            XCTAssertEqual(cat.status, 3, cat.err)
            XCTAssertTrue(cat.err.contains("\(path): unreadable file: not a regular file (\(kind))"), cat.err)
            XCTAssertEqual(cat.out.split(separator: "\n").count, Self.records.count, cat.out)

            let db = dir.appendingPathComponent("calls-\(path.count).sqlite").path
            let analyze = try callstats(["analyze", path, log.path, "--db", db])
            XCTAssertEqual(analyze.status, 3, analyze.err)
            XCTAssertTrue(analyze.err.contains(path) && analyze.err.contains("not a regular file (\(kind))"), analyze.err)
            let calls = try callstats(["query", "--db", db, "--format", "csv", "SELECT call_id FROM calls"])
            XCTAssertEqual(calls.out.split(separator: "\n").dropFirst(), ["bom-call"], calls.err)
        }
    }

    /// A capture file cut inside its header is a file error naming the file (status 1), not a
    /// usage error, and leaves no output behind.
    func testACaptureCutInItsHeaderIsAFileErrorNamingIt() throws {
        var w = PcapWriter()
        w.addUDP(
            from: "10.0.0.1", 4000, to: "10.0.0.2", 5000, payload: PcapPayloads.rtp(seq: 1, timestamp: 160, ssrc: 7),
            timestampNanos: 1_700_000_000_000_000_000)
        let cut = dir.appendingPathComponent("cut.pcap")
        try Data(w.bytes.prefix(10)).write(to: cut)
        let out = dir.appendingPathComponent("out")
        let c = try callstats(["capture", "-r", cut.path, "-o", out.path])
        XCTAssertEqual(c.status, 1, c.err)
        XCTAssertTrue(c.err.contains("cannot open \(cut.path): "), c.err)
        XCTAssertFalse(c.err.contains("USAGE"), c.err)
        XCTAssertFalse(FileManager.default.fileExists(atPath: out.path))
    }
}

extension OddInputTests {
    /// A capture cut inside its last record (tcpdump killed, disk full): a warning naming the
    /// record and its byte offset, the summary, the final `rtp`, `ice` and `end` records, and
    /// status 3 (input skipped), as `analyze` ends for input it skipped.
    func testACaptureCutInItsLastRecordKeepsItsFinalRecords() throws {
        let teams = TestPaths.shared.appendingPathComponent("pcaps/ndpi/teams.pcap")
        guard FileManager.default.fileExists(atPath: teams.path) else { throw XCTSkip("../shared/pcaps is absent") }
        let whole = try Data(contentsOf: teams)
        let cut = dir.appendingPathComponent("teams-cut.pcap")
        try whole.dropLast(7).write(to: cut)
        let out = dir.appendingPathComponent("out")
        let c = try callstats(["capture", "-r", cut.path, "-o", out.path])
        XCTAssertEqual(c.status, 3, c.err)
        let warnings = c.err.split(separator: "\n").filter { $0.hasPrefix("warning: ") }
        XCTAssertEqual(warnings.count, 1, c.err)
        XCTAssertTrue(warnings.first?.contains("\(cut.path): record ") == true, c.err)
        XCTAssertTrue(c.err.contains("the rest of the file was not read"), c.err)
        XCTAssertTrue(c.out.contains("RTP / RTCP / STUN") && c.out.contains("records"), c.out)
        let records = try callstats(["cat", out.path]).out.split(separator: "\n")
        for kind in ["rtp", "ice", "end"] {
            XCTAssertTrue(records.contains { $0.contains("\"kind\":\"\(kind)\"") }, "no \(kind) record in \(records.count)")
        }
        let full = dir.appendingPathComponent("full")
        XCTAssertEqual(try callstats(["capture", "-r", teams.path, "-o", full.path]).status, 0)
        XCTAssertEqual(try callstats(["cat", full.path]).out.split(separator: "\n").count, records.count)
    }

    /// Snaplen 30 cuts every packet inside its IP header: said once, with the snapshot length,
    /// and status 3, since nothing on the wire could be measured though the run looks empty.
    func testASnaplenCuttingHeadersIsSaidOnce() throws {
        var w = PcapWriter()
        for i in 0..<20 {
            w.addUDP(
                from: "10.0.0.1", 4000, to: "10.0.0.2", 5000, payload: PcapPayloads.rtp(seq: UInt16(i), timestamp: UInt32(i * 160), ssrc: 7),
                timestampNanos: 1_700_000_000_000_000_000 + Int64(i) * 20_000_000)
        }
        var bytes = Array(w.bytes[0..<16]) + PcapBytes.le32(30) + Array(w.bytes[20..<24])
        var at = 24
        while at < w.bytes.count {
            let caplen = Int(w.bytes[at + 8]) | Int(w.bytes[at + 9]) << 8
            bytes += Array(w.bytes[at..<(at + 8)]) + PcapBytes.le32(30) + Array(w.bytes[(at + 12)..<(at + 16)])
            bytes += Array(w.bytes[(at + 16)..<(at + 46)])
            at += 16 + caplen
        }
        let file = dir.appendingPathComponent("snap30.pcap")
        try Data(bytes).write(to: file)
        let c = try callstats(["capture", "-r", file.path, "-o", dir.appendingPathComponent("out").path])
        XCTAssertEqual(c.status, 3, c.err)
        XCTAssertEqual(c.err.split(separator: "\n").filter { $0.hasPrefix("warning: ") }.count, 1, c.err)
        XCTAssertTrue(c.err.contains("20 of 20 packets were cut inside their headers") && c.err.contains("length of 30 bytes"), c.err)
        XCTAssertTrue(c.out.contains("streams"), c.out)
    }
}

extension OddInputTests {
    /// A record header claiming 2³¹ bytes after 300 good packets, one of them stamped 0: the
    /// JSON summary counts both, the warnings name the record, its byte offset and the packet,
    /// and the status is 3.
    func testABadRecordHeaderAndAZeroStampAreCountedInTheJSONSummary() throws {
        var w = PcapWriter()
        let t0: Int64 = 1_700_000_000_000_000_000
        for i in 0..<300 {
            w.addUDP(
                from: "10.0.0.1", 4000, to: "10.0.0.2", 5000, payload: PcapPayloads.rtp(seq: UInt16(i), timestamp: UInt32(i * 160), ssrc: 7),
                timestampNanos: i == 150 ? 0 : t0 + Int64(i) * 20_000_000)
        }
        let offset = w.bytes.count
        let bytes = w.bytes + PcapBytes.le32(1_700_000_010) + PcapBytes.le32(0) + PcapBytes.le32(1 << 31) + PcapBytes.le32(1 << 31)
        let file = dir.appendingPathComponent("bad-header.pcap")
        try Data(bytes).write(to: file)
        let c = try callstats(["capture", "-r", file.path, "-o", dir.appendingPathComponent("out").path, "--json"])
        XCTAssertEqual(c.status, 3, c.err)
        XCTAssertTrue(c.err.contains("\(file.path): record 301 at byte \(offset): "), c.err)
        XCTAssertTrue(c.err.contains("1 packet(s) stamped decades away") && c.err.contains("packet 151, 0 s since 1970"), c.err)
        let summary = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(c.out.utf8)) as? [String: Any])
        XCTAssertEqual(summary["packets"] as? Int, 300)
        XCTAssertEqual(summary["rtp_packets"] as? Int, 300)
        XCTAssertEqual(summary["streams"] as? Int, 1)
        XCTAssertEqual(summary["unreadable_records"] as? Int, 1)
        XCTAssertEqual(summary["implausible_timestamps"] as? Int, 1)
        XCTAssertEqual(summary["packets_cut_in_headers"] as? Int, 0)
    }
}
