import ConsoleOutput
import ArgumentParser
import BenchmarkSupport
import CallLog
import Capture
import Foundation
import Jobs
import Importers
import Simulator
import Store

/// `callstats-bench`: throughput and size figures, next to the tools a user would otherwise use,
/// and the fixed workloads whose instruction counts `check-performance.sh` holds to thresholds.
@main
struct CallstatsBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "callstats-bench",
        abstract: "Measure analysis throughput, log size, collector overhead, capture speed and report time.",
        discussion: """
            Benchmarks print figures, they never pass or fail. Build in release mode first \
            (make build) for meaningful numbers; this machine's other load shows in them, so \
            compare figures printed side by side in one run.
            """,
        subcommands: [
            AnalyzeBench.self, LogSizeBench.self, CaptureBench.self, CollectorBench.self, ReportBench.self,
            WorkloadCommand.self,
        ],
        defaultSubcommand: AnalyzeBench.self)
}

/// Wall times of a body or a shell command.
enum Stopwatch {
    static func time(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// How a shell command ended.
    enum ShellRun {
        case finished(seconds: Double, output: String)
        /// The shell found no such program (status 127), or Python no such module.
        case notInstalled
        /// Any other failure, with its status and the last line it wrote to standard error.
        case failed(String)
    }

    static func shell(_ command: String) -> ShellRun {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", command]
        let pipe = Pipe()
        p.standardOutput = pipe
        // Standard error to a file, not a second pipe: a command that filled that pipe while
        // this read the other would wait forever.
        let errorPath = NSTemporaryDirectory() + "callstats-bench-stderr-\(getpid()).txt"
        defer { try? FileManager.default.removeItem(atPath: errorPath) }
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        let errors = FileHandle(forWritingAtPath: errorPath)
        p.standardError = errors ?? FileHandle.nullDevice
        var output = Data()
        var launched = true
        let seconds = time {
            do { try p.run() } catch { launched = false; return }
            output = pipe.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
        }
        try? errors?.close()
        guard launched else { return .failed("/bin/sh could not be started") }
        guard p.terminationStatus == 0 else {
            let message = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
            if p.terminationStatus == 127 || message.contains("No module named") { return .notInstalled }
            let last = message.split(separator: "\n").last.map(String.init) ?? ""
            return .failed("status \(p.terminationStatus)" + (last.isEmpty ? "" : ": \(last)"))
        }
        return .finished(seconds: seconds, output: String(decoding: output, as: UTF8.self))
    }
}

/// One tool's times over the rounds of a benchmark. A round that fails is reported and the
/// next rounds still measure the tool: one failure (a busy disk, a killed process) does not
/// drop it; only a tool that is not installed is left out of the rounds after.
struct ToolTimes {
    private(set) var best: Double?
    private(set) var rounds = 0, failures = 0
    private(set) var notInstalled = false
    private(set) var lastFailure: String?

    /// Runs `command` once: its seconds, or nil when it did not finish.
    mutating func measure(_ command: String) -> Double? {
        guard !notInstalled else { return nil }
        rounds += 1
        switch Stopwatch.shell(command) {
        case .finished(let seconds, _):
            best = min(best ?? .infinity, seconds)
            return seconds
        case .notInstalled:
            notInstalled = true
        case .failed(let why):
            failures += 1
            lastFailure = why
        }
        return nil
    }

    /// This round's entry for the progress line: the time, or why there is none.
    func roundText(_ name: String, _ seconds: Double?) -> String? {
        if let seconds { return "\(name) \(fmt(seconds)) s" }
        return notInstalled ? nil : "\(name) failed (\(lastFailure ?? "?"))"
    }

    /// The table's last column when there is no time: why.
    var missingText: String {
        notInstalled ? "not installed" : "failed in every round (\(lastFailure ?? "?"))"
    }

    /// Said beside the best time when some rounds failed.
    var partialText: String { failures > 0 ? " (\(rounds - failures) of \(rounds) rounds)" : "" }
}

struct AnalyzeBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "analyze",
        abstract: "Analysis throughput on a simulated or real-shaped corpus, next to zstd -d and DuckDB.",
        discussion: """
            Generates (once, then reuses) a corpus of full-snapshot logs, runs the whole analysis into \
            a fresh database, and times `zstd -d` (the floor: just decompressing), SQLite alone \
            writing the rows the analysis wrote (copied into another fresh database by INSERT … \
            SELECT: the other floor), and DuckDB's read_json computing a per-call aggregate (mean \
            audio jitter, max packetsLost) over the same files with 2 threads. DuckDB is used when \
            `python3 -c "import duckdb"` works (pip install duckdb).

            The corpus is simulated (about 70 % W3C, 30 % goog), or with --recording made from a \
            real Chromium recording: each call a copy with its own id, its own start and every \
            counter scaled by its own factor between 0.8 and 1.2, so that every report has the \
            object types, members and spacing a browser writes and zstd cannot find one copy in \
            another.

            Examples:
              callstats-bench analyze --runs 3
              callstats-bench analyze --recording ../shared/data/chromium-call-30ms-2pct.jsonl.zst --runs 3
            """)

    @Option(help: "Corpus folder (generated there if empty; default bench-data/corpus, or bench-data/recording-corpus with --recording).")
    var corpus: String?

    @Option(help: "Calls in a generated corpus (default 7,000 simulated, about 165 MB of NDJSON per 1,000; or 700 copies of a recording).")
    var calls: Int?

    @Option(help: "Make the corpus from this Chromium getStats recording (.jsonl[.zst]) instead of simulating it.")
    var recording: String?

    @Option(help: "Rounds of every measurement, one after the other in each round; the best of each is printed.")
    var runs = 2

    func run() throws {
        let corpus = corpus ?? (recording == nil ? "bench-data/corpus" : "bench-data/recording-corpus")
        let files =
            try recording.map { try BenchCorpus.ensure(folder: corpus, recording: $0, calls: calls ?? 700) }
            ?? BenchCorpus.ensure(folder: corpus, calls: calls ?? 7_000)
        let compressed = BenchCorpus.warm(files)
        print("corpus: \(files.count) files, \(String(format: "%.1f", Double(compressed) / 1e6)) MB compressed, read once into the page cache; measuring…")

        let list = files.map { "'\($0)'" }.joined(separator: " ")
        let zstd = "zstd -d -c -T1 \(list) > /dev/null"
        let duck = """
            python3 -c "import duckdb; c = duckdb.connect(); c.execute('SET threads TO 2'); print(c.execute(\\"\\"\\"
            SELECT call, avg(s.jitter) * 1000 AS mean_jitter_ms, max(s.packetsLost) AS max_lost FROM (
              SELECT call, unnest(report) AS s FROM read_json('\(corpus)/**/*.ndjson.zst', format = 'newline_delimited',
                compression = 'zstd', columns = {call: 'VARCHAR', kind: 'VARCHAR',
                report: 'STRUCT(type VARCHAR, kind VARCHAR, jitter DOUBLE, packetsLost BIGINT)[]'})
              WHERE kind = 'stats')
            WHERE s.type = 'inbound-rtp' AND s.kind = 'audio' GROUP BY call\\"\\"\\").fetchall().__len__())"
            """
        // One round is every measurement once, so that the host's load, which drifts within
        // minutes, weighs on all of them alike; the best of each over the rounds is printed.
        var best = Double.infinity, copy = Double.infinity
        var zstdTimes = ToolTimes(), duckTimes = ToolTimes()
        var text = 0, records = 0
        for round in 1...max(1, runs) {
            let db = NSTemporaryDirectory() + "callstats-bench-\(getpid()).sqlite"
            let copied = NSTemporaryDirectory() + "callstats-bench-copy-\(getpid()).sqlite"
            AnalyzeBench.remove(db)
            let run = AnalyzeRun(options: AnalyzeRun.Options(paths: [corpus], database: db))
            let report = try run.run()
            let seconds = report.progress.seconds
            best = min(best, seconds)
            text = report.progress.textBytes
            records = report.progress.records
            let copySeconds = try AnalyzeBench.copyRows(from: db, into: copied)
            copy = min(copy, copySeconds)
            AnalyzeBench.remove(db)
            AnalyzeBench.remove(copied)
            let zSeconds = zstdTimes.measure(zstd), dSeconds = duckTimes.measure(duck)
            let others = [
                zstdTimes.roundText("zstd -d", zSeconds), "SQLite alone \(fmt(copySeconds)) s",
                duckTimes.roundText("DuckDB", dSeconds),
            ].compactMap { $0 }
            print("round \(round) of \(max(1, runs)): callstats analyze \(fmt(seconds)) s, " + others.joined(separator: ", "))
        }
        let mb = Double(text) / 1e6
        var table = Table(header: ["what", "seconds", "MB/s (NDJSON)", "records/s", "analyze ÷ this"])
        table.rows.append(["callstats analyze (all metrics, SQLite writes)", fmt(best), fmt(mb / best, 0), fmt(Double(records) / best, 0), "1.00x"])
        if let z = zstdTimes.best {
            table.rows.append(["zstd -d (decompress only, 1 thread)" + zstdTimes.partialText, fmt(z), fmt(mb / z, 0), "-", fmt(best / z) + "x"])
        } else {
            table.rows.append(["zstd -d", "-", "-", "-", zstdTimes.missingText])
        }
        table.rows.append(["SQLite alone: the result rows copied (INSERT … SELECT)", fmt(copy), fmt(mb / copy, 0), "-", fmt(best / copy) + "x"])
        if let d = duckTimes.best {
            table.rows.append(["DuckDB read_json per-call aggregate (2 threads)" + duckTimes.partialText, fmt(d), fmt(mb / d, 0), "-", fmt(best / d) + "x"])
        } else {
            table.rows.append(["DuckDB", "-", "-", "-", duckTimes.notInstalled ? "not installed (pip install duckdb)" : duckTimes.missingText])
        }
        print(table.render())
        print("NDJSON: \(fmt(mb, 1)) MB, \(records) records; \(ProcessInfo.processInfo.activeProcessorCount) cores")
        print(AnalyzeBench.targets(analyze: best, zstd: zstdTimes.best, duckDB: duckTimes.best))
    }

    /// The speed targets, against this invocation's best times: the analysis in at most half of
    /// DuckDB's time and in at most 1.5 times `zstd -d`'s.
    static func targets(analyze: Double, zstd: Double?, duckDB: Double?) -> String {
        func verdict(_ name: String, _ limit: Double, _ tool: Double?) -> String {
            guard let tool, tool > 0 else { return "\(name) not measured" }
            let ratio = analyze / tool
            return "\(fmt(ratio))× \(name)'s time (at most \(fmt(limit))×: \(ratio <= limit ? "met" : "not met"))"
        }
        return "targets: " + verdict("DuckDB", 0.5, duckDB) + "; " + verdict("zstd -d", 1.5, zstd)
    }

    static func remove(_ db: String) {
        for suffix in ["", "-journal", "-wal", "-shm", ".lock"] { try? FileManager.default.removeItem(atPath: db + suffix) }
    }

    /// Seconds for SQLite alone to write what a run wrote: every row of `source` copied into a
    /// fresh database of the store's schema and settings, in one transaction, by `INSERT …
    /// SELECT` (no binding, no analysis), in the order the run wrote them. Whatever reads and
    /// analyses the logs, writing these rows takes at least about this long.
    static func copyRows(from source: String, into target: String) throws -> Double {
        remove(target)
        let seconds = try Stopwatch.time { try SQLiteStore(path: target).copyRows(from: source) }
        // Checked, not timed: a copy that lost rows would make the floor meaningless.
        for (table, copied, written) in try SQLiteStore(path: target).rowCounts(comparedWith: source) where copied != written {
            Terminal.error("bench: the copy of \(table) has \(copied) rows, the analysis wrote \(written)")
            throw ExitCode(ExitStatus.failure)
        }
        return seconds
    }
}

func fmt(_ x: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", x) }

enum BenchCorpus {
    /// Reads every file through once and returns the bytes read, so that the first tool of the
    /// first round does not read the corpus from disk for all of them (a corpus that the page
    /// cache had dropped took 3.1 s to analyse in that round against 0.9-1.0 s in the next).
    static func warm(_ files: [String]) -> Int {
        var total = 0
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        for file in files {
            let fd = open(file, O_RDONLY)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            while true {
                let n = read(fd, buffer, 1 << 20)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }
                total += n
            }
        }
        return total
    }

    /// The corpus files, made from a recording first when the folder has none: `calls` calls
    /// in seven files.
    static func ensure(folder: String, recording: String, calls: Int) throws -> [String] {
        if case let files = LogFiles.find([folder]).files, !files.isEmpty { return files }
        let imported = ChromiumImporter().convert(path: recording)
        guard !imported.records.isEmpty else { throw ValidationError("\(recording): no recording lines found") }
        print("making \(calls) calls from \(recording) into \(folder) …")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let fleet = RecordingFleet(records: imported.records)
        var options = LogWriter.Options()
        options.deltaStats = false
        options.compressionLevel = 3
        let fileCount = 7
        var made = 0
        for f in 0..<fileCount {
            let writer = try LogWriter(path: "\(folder)/calls-\(f).ndjson.zst", options: options)
            for i in stride(from: f, to: calls, by: fileCount) {
                for r in fleet.call(i, id: String(format: "rec-%06d", i)) { try writer.append(r) }
                made += 1
                Terminal.status("recording copies: \(made)/\(calls) calls")
            }
            try writer.close()
        }
        Terminal.clearStatus()
        return LogFiles.find([folder]).files
    }

    /// The corpus files, generating them first when the folder has none.
    static func ensure(folder: String, calls: Int) throws -> [String] {
        var files = LogFiles.find([folder]).files
        if files.isEmpty {
            print("generating \(calls) calls of full-snapshot logs (about 70 % W3C, 30 % goog) into \(folder) …")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            var config = SimulatorConfiguration(calls: calls, seed: 1)
            config.fullSnapshots = true
            _ = try Simulator(config).write(to: folder) { s in
                Terminal.status("simulate: \(s.calls)/\(calls) calls")
            }
            Terminal.clearStatus()
            files = LogFiles.find([folder]).files
        }
        return files
    }
}

struct LogSizeBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log-size",
        abstract: "Bytes per peer-connection-minute of a log, written in each of the format's variants.",
        discussion: """
            Reads a v1 log (e.g. the Chromium recording turned into v1 by `callstats import-chromium`), \
            keeps every Nth statistics snapshot of each peer connection (to model 5 s or 10 s polling \
            of a 1 s recording), and writes it again full and delta-encoded, one zstd frame per flush \
            and one long frame flushed per snapshot, at several zstd levels.

            Example:
              callstats import-chromium ../shared/data/chromium-call-30ms-2pct.jsonl.zst --out /tmp/chromium.ndjson.zst
              callstats-bench log-size /tmp/chromium.ndjson.zst --every 5 --every 10
            """)

    @Argument(help: "A v1 log file.")
    var file: String

    @Option(help: "Keep every Nth snapshot per peer connection (repeatable).")
    var every: [Int] = [5, 10]

    @Flag(help: "Only the table of segment sizes and flush points (for any log: a simulation, a serve log).")
    var segmentsOnly = false

    @Option(help: "zstd level of the segment table (9: the collector and serve; 3: the simulator and capture).")
    var level: Int32 = 9

    func run() throws {
        let (records, issues) = LogReader(path: file).readAll()
        if let first = issues.first { throw ValidationError("\(file) has damage: \(first)") }
        defer { printSegmentTable(records) }
        if segmentsOnly { return }
        var table = Table(
            header: ["polling", "encoding", "frames", "zstd", "bytes", "KiB / pc-minute", "after 1st snapshot"],
            textColumns: [1, 2])
        for n in every {
            let kept = LogSizeMeasure.resample(records, every: n)
            let period = LogSizeMeasure.period(kept)
            let pcMinutes = LogSizeMeasure.peerConnectionMinutes(kept, period: period)
            // What a long call costs per minute: the first, full snapshot of each peer connection
            // is paid once, so it is taken out (its bytes and its period).
            let firsts = LogSizeMeasure.firstSnapshots(kept)
            let laterMinutes = pcMinutes - Double(firsts.count) * period / 60_000
            func perMinute(_ bytes: Int, _ firstBytes: Int) -> [String] {
                [fmt(Double(bytes) / 1024 / pcMinutes), fmt(Double(bytes - firstBytes) / 1024 / laterMinutes)]
            }
            let variants: [(String, Bool, Bool, Int32)] = [
                ("full snapshots", false, true, 3), ("full snapshots", false, false, 3),
                ("deltas", true, true, 3), ("deltas", true, false, 3), ("deltas", true, false, 9), ("deltas", true, false, 19),
            ]
            for (name, delta, perFlush, level) in variants {
                let bytes = try LogSizeMeasure.write(kept, delta: delta, framePerFlush: perFlush, level: level)
                let firstBytes = try LogSizeMeasure.write(firsts, delta: delta, framePerFlush: perFlush, level: level)
                table.rows.append(
                    [
                        String(format: "%.0f s", period / 1000), name, perFlush ? "one per flush" : "long, flushed",
                        "\(level)", "\(bytes)",
                    ] + perMinute(bytes, firstBytes))
            }
            // Our deltas with member names replaced by numbers (each new name written once, in
            // the record that first uses it): measured to decide whether the format should do it.
            let numbered = try NumberedNames.bytes(kept, level: 9)
            let numberedFirsts = try NumberedNames.bytes(firsts, level: 9)
            table.rows.append(
                [
                    String(format: "%.0f s", period / 1000), "deltas, numbered names (not written)", "long, flushed",
                    "-9", "\(numbered)",
                ] + perMinute(numbered, numberedFirsts))
            // The collector's opt-in member filters (`statsMembers`): smaller logs, members dropped.
            for (name, filter) in [
                ("deltas, essential members (opt-in)", StatsMemberFilter(keeping: StatsMemberFilter.essential)),
                ("deltas, analysed members (opt-in)", StatsMemberFilter(keeping: StatsMemberFilter.analysed)),
            ] {
                let bytes = try LogSizeMeasure.write(kept.map(filter.apply), delta: true, framePerFlush: false, level: 9)
                let firstBytes = try LogSizeMeasure.write(firsts.map(filter.apply), delta: true, framePerFlush: false, level: 9)
                table.rows.append(
                    [String(format: "%.0f s", period / 1000), name, "long, flushed", "-9", "\(bytes)"]
                        + perMinute(bytes, firstBytes))
            }
            // What is left when names, ids and structure cost nothing: the floor of any delta text.
            let values = ValuesAlone.bytes(kept, level: 9)
            let valuesFirsts = ValuesAlone.bytes(firsts, level: 9)
            table.rows.append(
                [
                    String(format: "%.0f s", period / 1000), "values alone (estimate of the floor)", "long, flushed",
                    "-9", "\(values)",
                ] + perMinute(values, valuesFirsts))
            for level: Int32 in [3, 9] {
                let bytes = RtcstatsV3Method.bytes(kept, level: level)
                let firstBytes = RtcstatsV3Method.bytes(firsts, level: level)
                table.rows.append(
                    [
                        String(format: "%.0f s", period / 1000), "rtcstats v3 method (lossy)", "one, whole file",
                        "\(level)", "\(bytes)",
                    ] + perMinute(bytes, firstBytes))
            }
        }
        print(table.render())
        print("level 9 is what the collector writes; a flush follows every snapshot.")
        print("after 1st snapshot: per minute of a long call (each peer connection's first, full snapshot taken out).")
        print("values alone: first snapshots whole, then per snapshot only each number's exact deviation from its")
        print("prediction, by position, and changed non-numbers: no names, ids or structure (a measurement, not a format).")
        print("rtcstats v3 method: changed members only, certificates and obsolete members dropped, numbered ids and names;")
        print("for comparison on the same data (it cannot restore the snapshots exactly).")
    }
}

extension LogSizeBench {
    /// The file's records as they come, written again at `level` with each
    /// segment size, with the writer's own flush points only (as the simulator and the importers
    /// write) and with a flush after every record as well (as the collector and `serve` write at
    /// low rates), each against 8 MiB segments with no flush points of the writer's own.
    func printSegmentTable(_ records: [LogRecord]) {
        var table = Table(
            header: ["segment", "writer flush points", "caller flushes", "bytes", "vs 8 MiB, none"], textColumns: [1, 2])
        let mib = 1 << 20
        for callerFlushes in [false, true] {
            let base = try? LogSizeMeasure.writeAll(records, segmentBytes: 8 * mib, writerFlushes: false, callerFlushes: callerFlushes, level: level)
            for (segment, writerFlushes) in [(8 * mib, false), (8 * mib, true), (4 * mib, true), (2 * mib, true), (mib, true), (mib / 2, true)] {
                guard let base,
                    let bytes = try? LogSizeMeasure.writeAll(
                        records, segmentBytes: segment, writerFlushes: writerFlushes, callerFlushes: callerFlushes, level: level)
                else { continue }
                table.rows.append(
                    [
                        segment >= mib ? "\(segment / mib) MiB" : "\(segment >> 10) KiB",
                        writerFlushes ? "end, 1 MiB" : "none", callerFlushes ? "every record" : "none", "\(bytes)",
                        String(format: "%+.1f %%", (Double(bytes) / Double(base) - 1) * 100),
                    ])
            }
        }
        print(table.render())
        print("segment: text per zstd frame, the most one damaged byte costs; each segment restates its chains in full.")
        print("writer flush points: after each end record and each 1 MiB of unflushed text (LogWriter.Options).")
    }
}

/// The collector's delta records with every member name (not ids, not values) replaced by a
/// number, and the name table written as it grows: what numbering names would save.
enum NumberedNames {
    static func bytes(_ records: [LogRecord], level: Int32) throws -> Int {
        var encoder = StatsDeltaEncoder()
        var names: [String: Int] = [:]
        var transformed: [LogRecord] = []
        for r in records where r.kind == .stats {
            var fresh: [JSONValue] = []
            func number(_ name: String) -> String {
                if let n = names[name] { return String(n) }
                names[name] = names.count
                fresh.append(.string(name))
                return String(names.count - 1)
            }
            func renamed(_ o: JSONObject) -> JSONObject {
                var out = JSONObject()
                for e in o.entries {
                    let value: JSONValue = if case .object(let inner) = e.value { .object(renamed(inner)) } else { e.value }
                    out.entries.append((key: e.key == "id" ? "id" : number(e.key), value: value))
                }
                return out
            }
            /// `{id: {name: value}}` sections: ids stay, names become numbers.
            func renamedByID(_ v: JSONValue?) -> JSONValue? {
                guard case .object(let byID)? = v else { return v }
                var out = JSONObject()
                for e in byID.entries {
                    switch e.value {
                    case .object(let o): out.entries.append((key: e.key, value: .object(renamed(o))))
                    case .array(let a): out.entries.append((key: e.key, value: .array(a.map { $0.stringValue.map { .string(number($0)) } ?? $0 })))
                    default: out.entries.append(e)
                    }
                }
                return .object(out)
            }
            var out = encoder.encode(r)
            if case .array(let report)? = out["report"] {
                out.body["report"] = .array(report.map { $0.objectValue.map { .object(renamed($0)) } ?? $0 })
            }
            if case .object(var d)? = out["delta"] {
                for section in ["set", "inc", "unset"] { if let v = d[section] { d[section] = renamedByID(v) } }
                if case .array(let put)? = d["put"] { d["put"] = .array(put.map { $0.objectValue.map { .object(renamed($0)) } ?? $0 }) }
                out.body["delta"] = .object(d)
            }
            if !fresh.isEmpty { out.body["names"] = .array(fresh) }
            transformed.append(out)
        }
        return try LogSizeMeasure.write(transformed, delta: false, framePerFlush: false, level: level)
    }
}

/// An estimate of the floor of any lossless delta text: each chain's first snapshot whole, then
/// per snapshot a bare array of every number's deviation from the format's prediction (last
/// value plus last change), in the order of the previous snapshot's objects and members, zero
/// when predicted, computed in exact decimal arithmetic so nothing is rounded away; changed
/// non-numbers, new objects and removed ids follow as plain JSON. Names, ids and structure cost
/// nothing here, so what remains is the information in the values themselves.
enum ValuesAlone {
    static func bytes(_ records: [LogRecord], level: Int32) -> Int {
        struct Chain {
            var objects: [String: JSONObject] = [:]
            var order: [String] = []
            var changes: [String: Decimal] = [:]
        }
        var chains: [StatsChainKey: Chain] = [:]
        var out: [UInt8] = []
        let compressor = ZstdCompressor(level: level)
        var compressed: [UInt8] = []
        func flush() {  // after every snapshot, as the collector flushes
            compressor.compress(out, .flush, into: &compressed)
            out.removeAll(keepingCapacity: true)
        }
        func decimal(_ d: Double) -> Decimal? {
            var text: [UInt8] = []
            JSONValue.number(d).write(to: &text)
            return Decimal(string: String(decoding: text, as: UTF8.self), locale: Locale(identifier: "en_US_POSIX"))
        }
        for r in records where r.kind == .stats {
            guard let key = StatsChainKey(record: r), case .array(let report)? = r["report"] else { continue }
            var objects: [String: JSONObject] = [:]
            var order: [String] = []
            for case .object(let o) in report { if let id = o["id"]?.stringValue { objects[id] = o; order.append(id) } }
            guard let previous = chains[key] else {
                JSONValue.array(report).write(to: &out)
                out.append(0x0A)
                chains[key] = Chain(objects: objects, order: order)
                flush()
                continue
            }
            var residuals: [String] = [], others = JSONObject(), put: [JSONValue] = []
            var changes: [String: Decimal] = [:]
            for id in previous.order {
                guard let old = previous.objects[id], let new = objects[id] else { continue }
                var changed = JSONObject()
                for (name, before) in old.entries where name != "id" {
                    let slot = id + "\u{0}" + name
                    if case .number(let a) = before, case .number(let b)? = new[name], let da = decimal(a), let db = decimal(b) {
                        let predicted = da + (previous.changes[slot] ?? 0)
                        let deviation = db - predicted
                        residuals.append(deviation == 0 ? "0" : deviation.description)
                        if db != da { changes[slot] = db - da }
                    } else if new[name] != before {
                        changed[name] = new[name] ?? .null
                    }
                }
                for (name, value) in new.entries where old[name] == nil { changed[name] = value }
                if !changed.isEmpty { others[id] = .object(changed) }
            }
            for id in order where previous.objects[id] == nil { put.append(.object(objects[id]!)) }
            let removed = previous.order.filter { objects[$0] == nil }.map { JSONValue.string($0) }
            out.append(contentsOf: Array("[[\(residuals.joined(separator: ","))],".utf8))
            JSONValue.array([.object(others), .array(put), .array(removed)]).write(to: &out)
            out.append(contentsOf: Array("]\n".utf8))
            chains[key] = Chain(objects: objects, order: order, changes: changes)
            flush()
        }
        compressor.compress([], .end, into: &compressed)
        return compressed.count
    }
}

/// The rtcstats v3 dump method, re-implemented to compare sizes on the same recording: per
/// peer connection, each object keeps only the members whose value changed (absolute values),
/// the common timestamp moves to the top, certificate objects and a few obsolete members are
/// dropped, object ids and member names become numbers, and the whole dump is compressed once.
enum RtcstatsV3Method {
    static func bytes(_ records: [LogRecord], level: Int32) -> Int {
        var previous: [String: [String: JSONObject]] = [:]
        var ids: [String: [String: Int]] = [:]
        var names: [String: Int] = [:]
        var out: [UInt8] = []
        func number(_ name: String) -> String {
            if let n = names[name] { return String(n) }
            names[name] = names.count
            return String(names.count - 1)
        }
        for r in records where r.kind == .stats {
            guard case .array(let report)? = r["report"] else { continue }
            let pc = r["pc"]?.stringValue ?? ""
            let old = previous[pc] ?? [:]
            var current: [String: JSONObject] = [:]
            var delta = JSONObject()
            var changed: [(String, JSONObject)] = []
            for case .object(let o) in report {
                guard let id = o["id"]?.stringValue else { continue }
                current[id] = o
                if o["type"]?.stringValue == "certificate" { continue }
                var d = JSONObject()
                for (k, v) in o.entries where k != "id" {
                    if ["isRemote", "ip", "mediaType", "writable", "localCertificateId", "remoteCertificateId"].contains(k) { continue }
                    if let before = old[id]?[k], before == v { continue }
                    d[k] = v
                }
                changed.append((id, d))
            }
            let t = changed.compactMap { $0.1["timestamp"]?.doubleValue }.max()
            for (id, var d) in changed {
                if let t, d["timestamp"]?.doubleValue == t { d["timestamp"] = nil }
                if d.isEmpty { continue }
                var n = JSONObject()
                for (k, v) in d.entries {
                    if k.hasSuffix("Id"), let ref = v.stringValue, let r = ids[pc]?[ref] { n[number(k)] = .string(String(r)); continue }
                    n[number(k)] = v
                }
                let idNumber =
                    ids[pc, default: [:]][id]
                    ?? {
                        let next = ids[pc, default: [:]].count
                        ids[pc, default: [:]][id] = next
                        return next
                    }()
                delta[String(idNumber)] = .object(n)
            }
            for id in old.keys where current[id] == nil { if let n = ids[pc]?[id] { delta[String(n)] = .null } }
            if let t { delta["timestamp"] = .number(t) }
            previous[pc] = current
            JSONValue.array([.string("getstats"), .string(pc), .object(delta), .number(Double(r.ts))]).write(to: &out)
            out.append(0x0A)
        }
        return ZstdCompressor.compressFrame(out, level: level).count
    }
}

enum LogSizeMeasure {
    /// Every nth stats record of each chain; other records kept.
    static func resample(_ records: [LogRecord], every n: Int) -> [LogRecord] {
        var seen: [StatsChainKey: Int] = [:]
        return records.filter { r in
            guard var key = StatsChainKey(record: r) else { return true }
            key.format = ""
            let i = seen[key, default: 0]
            seen[key] = i + 1
            return i % max(1, n) == 0
        }.map { r in
            var r = r
            r.body["seq"] = nil
            return r
        }
    }

    /// The first stats record of each chain, alone.
    static func firstSnapshots(_ records: [LogRecord]) -> [LogRecord] {
        var seen = Set<StatsChainKey>()
        return records.filter { r in
            guard let key = StatsChainKey(record: r) else { return false }
            return seen.insert(key).inserted
        }
    }

    /// Median gap between consecutive snapshots of a chain, in ms.
    static func period(_ records: [LogRecord]) -> Double {
        var last: [StatsChainKey: Int64] = [:], gaps: [Int64] = []
        for r in records {
            guard let k = StatsChainKey(record: r) else { continue }
            if let p = last[k] { gaps.append(r.ts - p) }
            last[k] = r.ts
        }
        gaps.sort()
        return gaps.isEmpty ? 1000 : Double(gaps[gaps.count / 2])
    }

    /// Sum over peer connections of (last − first snapshot + one period), in minutes.
    static func peerConnectionMinutes(_ records: [LogRecord], period: Double) -> Double {
        var span: [StatsChainKey: (Int64, Int64)] = [:]
        for r in records {
            guard let k = StatsChainKey(record: r) else { continue }
            let s = span[k] ?? (r.ts, r.ts)
            span[k] = (min(s.0, r.ts), max(s.1, r.ts))
        }
        return span.values.reduce(0) { $0 + (Double($1.1 - $1.0) + period) / 60_000 }
    }

    /// Every record of `records`, in order, delta-encoded at `level`.
    static func writeAll(_ records: [LogRecord], segmentBytes: Int, writerFlushes: Bool, callerFlushes: Bool, level: Int32) throws -> Int {
        let path = NSTemporaryDirectory() + "callstats-logsize-\(getpid()).ndjson.zst"
        try? FileManager.default.removeItem(atPath: path)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var o = LogWriter.Options()
        o.segmentBytes = segmentBytes
        o.compressionLevel = level
        if !writerFlushes {
            o.flushTextBytes = .max
            o.flushAtCallEnd = false
        }
        let w = try LogWriter(path: path, options: o)
        for r in records {
            try w.append(r)
            if callerFlushes { try w.flush() }
        }
        try w.close()
        return w.bytesWritten
    }

    static func write(_ records: [LogRecord], delta: Bool, framePerFlush: Bool, level: Int32) throws -> Int {
        let path = NSTemporaryDirectory() + "callstats-logsize-\(getpid()).ndjson.zst"
        try? FileManager.default.removeItem(atPath: path)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var o = LogWriter.Options()
        o.deltaStats = delta
        o.framePerFlush = framePerFlush
        o.compressionLevel = level
        let w = try LogWriter(path: path, options: o)
        for r in records where r.kind == .stats {
            try w.append(r)
            try w.flush()
        }
        try w.close()
        return w.bytesWritten
    }
}

struct CaptureBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "capture",
        abstract: "Packets per second through the capture pipeline, next to tshark -z rtp,streams.",
        discussion: """
            Writes a synthetic pcap of G.711 streams (made here, deterministic), times our full path \
            (libpcap read, decode, RTP statistics, records) and, when tshark is installed, \
            `tshark -q -z rtp,streams` on the same file (tshark is given a tenth of the packets and its \
            rate is reported per packet, since it is much slower).
            """)

    @Option(help: "Packets in the synthetic capture.")
    var packets = 2_000_000

    @Option(help: "Concurrent RTP streams in it.")
    var streams = 100

    @Option(help: "Also save the synthetic capture here (e.g. to replay it with tcpreplay onto an interface).")
    var save: String?

    func run() throws {
        let bytes = CaptureBenchmark.syntheticCapture(packets: packets, streams: streams)
        if let save, !FileManager.default.createFile(atPath: save, contents: Data(bytes)) { throw ValidationError("--save: cannot write \(save)") }
        var best = Double.infinity
        for _ in 0..<3 {
            let r = try CaptureBenchmark.run(capture: bytes)
            best = min(best, r.seconds)
        }
        var table = Table(header: ["what", "packets", "seconds", "packets/s", "vs tshark"])
        let ours = Double(packets) / best
        let small = CaptureBenchmark.syntheticCapture(packets: packets / 10, streams: streams)
        let path = NSTemporaryDirectory() + "callstats-bench-\(getpid()).pcap"
        defer { try? FileManager.default.removeItem(atPath: path) }
        guard FileManager.default.createFile(atPath: path, contents: Data(small)) else { throw ValidationError("cannot write \(path) for tshark") }
        var tshark = ToolTimes()
        let tsharkRate = tshark.measure("tshark -n -q --enable-heuristic rtp_udp -z rtp,streams -r '\(path)' > /dev/null")
            .map { Double(packets / 10) / $0 }
        table.rows.append([
            "callstats capture pipeline", "\(packets)", fmt(best), fmt(ours, 0),
            tsharkRate.map { fmt(ours / $0, 1) + "x" } ?? "-",
        ])
        if let tsharkRate {
            table.rows.append([
                "tshark -z rtp,streams (heuristic RTP)", "\(packets / 10)", fmt(Double(packets / 10) / tsharkRate),
                fmt(tsharkRate, 0), "1.0x",
            ])
        } else {
            table.rows.append(["tshark", "-", "-", "-", tshark.missingText])
        }
        print(table.render())
        print("\(streams) concurrent G.711 streams (50 packets/s each); one core.")
    }
}
