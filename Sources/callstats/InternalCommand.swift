import ConsoleOutput
import ArgumentParser
import CallLog
import Foundation
import Simulator
import Store

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `callstats internal …`: helpers for the fault tests and for checking changes, hidden from help.
///
/// They live in the real binary so that the tests exercise the real writer in a real process
/// that can be killed with SIGKILL: no test double can show what a kill leaves on disk.
struct InternalCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "internal",
        abstract: "Helpers for the fault tests and for checking changes (not for users).",
        shouldDisplay: false,
        subcommands: [WriteForeverCommand.self, CompareDatabasesCommand.self, RebuildRollupsCommand.self]
    )
}

/// Rebuilds every rollup bucket of a database from its calls, and says how long that took: the
/// rebuild that ends each `analyze` run, measured alone.
struct RebuildRollupsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebuild-rollups",
        abstract: "Rebuild every rollup bucket from the calls table and print the time taken.")

    @Argument(help: "The database.")
    var database: String

    @Option(help: "Rebuild this many times (the time of each is printed).")
    var runs = 1

    func validate() throws {
        // Opening a path that does not exist would create an empty database and time nothing.
        guard FileManager.default.fileExists(atPath: database) else { throw ValidationError("\(database): no such database") }
    }

    func run() throws {
        let store = try SQLiteStore(path: database)
        for _ in 0..<max(1, runs) {
            let started = ContinuousClock.now
            let rows = try store.inTransaction {
                try store.rebuildAllRollups()
                return try store.rollupRowCount()
            }
            print("rebuilt \(rows) rollup rows in \(started.duration(to: .now).formatted(.units(allowed: [.milliseconds])))")
        }
    }
}

/// Writes call records without end, as an agent does, and says on stdout what is durable.
///
/// After every flush it prints `flushed N`: every record numbered 0…N of this run has reached
/// the file (the kernel has it; a killed process loses nothing the kernel has). The fault test
/// kills it at random moments and checks that each such record is read back.
///
/// Records are those of an agent: three calls open at a time, each a `call` record, statistics
/// snapshots (delta-encoded in long zstd frames, as the collector writes them) and an `end`.
/// Every record carries its number `n`, and every snapshot's `packetsReceived` is `50 × n`, so
/// a reader can check that each restored snapshot is the one written.
struct WriteForeverCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write-forever",
        abstract: "Write records until killed, printing `flushed N` after each flush.")

    @Option(help: "Folder for the log files (created if needed).")
    var out: String

    @Option(name: .customLong("run"), help: "Run number: names this process's calls and files, so a restart after a kill starts new ones.")
    var runNumber = 0

    @Option(help: "Records per file before rotating to the next file.")
    var recordsPerFile = 500

    @Option(help: "Uncompressed bytes per zstd frame (small: many frame boundaries to be killed at).")
    var segmentBytes = 16 << 10

    @Option(help: "Stop after this many records (a helper whose test died stops on its own).")
    var maxRecords = 1_000_000

    @Option(help: "Seed for the flush points.")
    var seed: UInt64 = 1

    /// Calls per generation, and records per call (call record, snapshots, end).
    static let openCalls = 3
    static let recordsPerCall = 20

    func run() throws {
        mkdir(out, 0o755)
        let parent = getppid()
        var rng = SplitMix64(seed: seed &+ UInt64(runNumber))
        var options = LogWriter.Options()
        options.segmentBytes = segmentBytes
        var fileIndex = 0
        var writer = try LogWriter(path: "\(out)/run\(runNumber)-\(fileIndex).ndjson.zst", options: options)
        var sinceFlush = 0
        var flushAfter = 1 + Int(rng.next() % 8)
        for n in 0..<maxRecords {
            try writer.append(WriteForeverCommand.record(n, run: runNumber))
            sinceFlush += 1
            if sinceFlush >= flushAfter || (n + 1) % recordsPerFile == 0 {
                try writer.flush()
                Self.say("flushed \(n)\n")
                sinceFlush = 0
                flushAfter = 1 + Int(rng.next() % 8)
                if getppid() != parent { return }  // the test that started us is gone
            }
            if (n + 1) % recordsPerFile == 0 {
                try writer.close()
                fileIndex += 1
                writer = try LogWriter(path: "\(out)/run\(runNumber)-\(fileIndex).ndjson.zst", options: options)
            }
        }
        try writer.close()
    }

    /// Record `n` of a run: calls `r<run>-<generation>-<slot>` interleaved three at a time.
    static func record(_ n: Int, run: Int) -> LogRecord {
        let slot = n % openCalls
        let position = (n / openCalls) % recordsPerCall
        let generation = n / (openCalls * recordsPerCall)
        let call = "r\(run)-\(generation)-\(slot)"
        let ts = Int64(1_800_000_000_000 + n * 1_000)
        var r: LogRecord
        switch position {
        case 0:
            r = .callInfo(
                call: call, ts: ts, direction: "outgoing", sdk: "fault-test", sdkVersion: "1",
                app: "fault-test", appVersion: "1", platform: "linux", network: "wifi", media: ["audio"])
        case recordsPerCall - 1:
            r = .end(call: call, ts: ts, reason: "terminatedLocally")
        default:
            let report: [JSONValue] = [
                [
                    "id": "IT01", "timestamp": .number(Double(ts)), "type": "inbound-rtp", "kind": "audio", "ssrc": 1,
                    "packetsReceived": .number(Double(50 * n)), "packetsLost": .number(Double(n / 10)), "jitter": 0.004,
                ],
                ["id": "CF01", "timestamp": .number(Double(ts)), "type": "certificate", "fingerprint": "AB:CD"],
            ]
            r = .stats(call: call, ts: ts, format: .w3c, report: report)
        }
        r["n"] = .number(Double(n))
        return r
    }

    private static func say(_ s: String) {
        let bytes = Array(s.utf8)
        bytes.withUnsafeBytes { _ = write(1, $0.baseAddress, $0.count) }
    }
}
