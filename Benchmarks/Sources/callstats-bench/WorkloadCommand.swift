import Analysis
import MaterialScanning
import ArgumentParser
import BenchmarkSupport
import CallLog
import Capture
import Collector
import ConsoleOutput
import Foundation
import Jobs
import Simulator

/// `callstats-bench workload`: fixed pieces of work whose instruction counts
/// `Benchmarks/check-performance.sh` runs under callgrind and holds to the thresholds in
/// `Benchmarks/Thresholds/instructions.json`. Each is deterministic for a given input: one
/// thread, no clocks, no timers, so the count moves only when the code (or the compiler, zstd
/// or SQLite) does.
struct WorkloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "workload",
        abstract: "Fixed workloads for the instruction-count checks (check-performance.sh).",
        subcommands: [
            CorpusWorkload.self, CapturePcapWorkload.self, GrowingChainWorkload.self, ConferenceWorkload.self,
            ScannerWorkload.self, AnalyzeWorkload.self, CaptureWorkload.self, CollectorWriterWorkload.self,
        ])
}

/// Writes the simulated corpus the scanner, analysis and writer workloads read (not measured).
struct CorpusWorkload: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "corpus", abstract: "Write the fixed simulated corpus.")

    @Option(help: "Calls in the corpus.")
    var calls = 100

    @Argument(help: "The folder to write.")
    var folder: String

    func run() throws {
        var config = SimulatorConfiguration(calls: calls, seed: 1)
        config.files = 2
        config.workers = 1
        let summary = try Simulator(config).write(to: folder)
        print("\(summary.calls) calls, \(summary.records) records in \(folder)")
    }
}

/// Writes a simulated conference through a media server, one log per participant (not
/// measured; `analyze` of its folder is, and within it the attribution of its poor streams).
struct ConferenceWorkload: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "conference", abstract: "Write a simulated conference's logs.")

    @Option(help: "Participants.")
    var participants = 12

    @Option(help: "Seconds of the call.")
    var seconds = 300

    @Argument(help: "The folder to write.")
    var folder: String

    func run() throws {
        var config = ConferenceSimulation.Configuration(participants: participants)
        config.seconds = seconds
        let summary = try ConferenceSimulation(config).write(to: folder)
        print("\(summary.files.count) participants, \(summary.records) records in \(folder)")
    }
}

/// Writes a log of one call whose one statistics chain grows: a full report of `objects` inbound
/// streams, then deltas that each put `objects` new ones (not measured; `analyze` of its folder
/// is). Past the bound a chain holds (`StatsChainBounds`), reading it must cost in proportion to
/// its records: the check compares the counts of two lengths.
struct GrowingChainWorkload: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "growing-chain", abstract: "Write a log whose one chain keeps adding objects.")

    @Option(help: "Statistics records of the chain.")
    var records = 26

    @Option(help: "New objects each record puts.")
    var objects = 2_000

    @Argument(help: "The folder to write (growing.ndjson in it).")
    var folder: String

    func run() throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let t0: Int64 = 1_795_349_932_000
        var text = #"{"v":1,"kind":"call","call":"grow","ts":\#(t0),"direction":"outgoing","media":["audio"]}"# + "\n"
        var next = 0
        for k in 0..<records {
            let ts = t0 + Int64(k) * 1_000
            let made = (next..<(next + objects)).map { i in
                #"{"id":"IT\#(i)","timestamp":\#(ts),"type":"inbound-rtp","kind":"audio","ssrc":\#(1_000 + i),"packetsReceived":\#(50 * k),"packetsLost":0,"jitter":0.003}"#
            }.joined(separator: ",")
            next += objects
            let body = k == 0 ? #""seq":0,"report":[\#(made)]"# : #""seq":\#(k),"base":\#(k - 1),"delta":{"put":[\#(made)]}"#
            text += #"{"v":1,"kind":"stats","call":"grow","ts":\#(ts),"format":"w3c","pc":"a",\#(body)}"# + "\n"
        }
        text += #"{"v":1,"kind":"end","call":"grow","ts":\#(t0 + Int64(records) * 1_000),"reason":"terminatedLocally"}"# + "\n"
        try text.write(toFile: folder + "/growing.ndjson", atomically: true, encoding: .utf8)
        print("\(records) records of \(objects) new objects in \(folder)/growing.ndjson")
    }
}

/// The whole analysis of a folder into a new database, as `callstats analyze --threads 1`
/// runs it, with one transaction (the time-based commits would make the count depend on
/// how fast the machine, or valgrind, is).
struct AnalyzeWorkload: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "analyze", abstract: "Analyse a folder into a new database.")

    @Argument(help: "A folder of logs.")
    var folder: String

    @Option(help: "The database to create (removed first).")
    var db: String

    @Option(help: "Calls the reader may hand over before it waits for the writer (1: a peak that thread scheduling cannot move).")
    var handOff = AnalyzeRun.Options(paths: [], database: "").handOffCapacity

    func run() throws {
        for suffix in ["", "-journal", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: db + suffix) }
        var options = AnalyzeRun.Options(paths: [folder], database: db)
        options.readers = 1
        options.handOffCapacity = handOff
        options.secondsPerTransaction = .infinity
        let report = try AnalyzeRun(options: options).run()
        print("\(report.callsInRun) calls analysed")
    }
}

/// A pcap through the whole capture path (libpcap, decoding, statistics, records), in memory.
struct CaptureWorkload: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "capture", abstract: "Capture a pcap file's streams.")

    @Argument(help: "The pcap file (capture-pcap writes one).")
    var path: String

    func run() throws {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let r = try CaptureBenchmark.run(capture: bytes)
        print("\(r.packets) packets")
    }
}

/// Every line of a folder's logs through the scanner (`RecordIngestor`): what `analyze`'s
/// readers do before a call is analysed.
struct ScannerWorkload: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "scanner", abstract: "Scan every line of a folder's logs into call material.")

    @Argument(help: "A folder of *.ndjson.zst logs (callstats simulate writes one).")
    var folder: String

    func run() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".ndjson.zst") }.sorted()
        var ingestor = RecordIngestor()
        var lines = 0, calls = 0
        for file in files {
            LogLineReader(path: folder + "/" + file).forEachLine(
                { line, _ in
                    _ = ingestor.ingest(line)
                    lines += 1
                }, issue: { _ in })
            calls += ingestor.takeAll().count
        }
        print("scanned \(lines) lines of \(files.count) files into \(calls) calls")
    }
}

/// The collector's writer path (`CollectorWriterBenchmark`): each stats record of the folder
/// given to the agent's queue as an SDK hands over a snapshot (W3C reports as JSON text, which
/// the writer parses; legacy ones as values), then drained by the collector's own writer into
/// rotating logs, one snapshot per drain.
struct CollectorWriterWorkload: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "collector-writer", abstract: "Write a folder's stats records as the collector writes snapshots.")

    @Argument(help: "A folder of *.ndjson.zst logs whose stats records are written again.")
    var folder: String

    @Option(help: "The folder to write the collector's logs into (emptied first).")
    var out: String

    @Option(help: "Snapshots written (the first ones of the folder's logs).")
    var snapshots = 2_000

    func run() throws {
        var taken: [(snapshot: StatsSnapshot, call: String, ts: Int64)] = []
        files: for file in try FileManager.default.contentsOfDirectory(atPath: folder).filter({ $0.hasSuffix(".ndjson.zst") }).sorted() {
            for record in LogReader(path: folder + "/" + file).readAll().records where record.kind == .stats {
                let report = record["report"]?.arrayValue ?? []
                let peerConnection = record["pc"]?.stringValue
                let snapshot: StatsSnapshot
                if record["format"]?.stringValue == StatsFormat.goog.rawValue {
                    snapshot = .report(report, format: .goog, peerConnection: peerConnection)
                } else {
                    var text: [UInt8] = []
                    JSONValue.array(report).write(to: &text)
                    snapshot = .w3c(json: String(decoding: text, as: UTF8.self), peerConnection: peerConnection)
                }
                taken.append((snapshot, record.call, record.ts))
                if taken.count == snapshots { break files }
            }
        }
        try? FileManager.default.removeItem(atPath: out)
        let writer = CollectorWriterBenchmark(directory: out)
        for (snapshot, call, ts) in taken { writer.write(snapshot, call: call, ts: ts) }
        let counters = writer.close()
        guard counters.snapshotsWritten == taken.count, counters.droppedTotal == 0 else {
            throw ValidationError("\(counters.snapshotsWritten) of \(taken.count) snapshots written, \(counters.droppedTotal) dropped")
        }
        print("wrote \(counters.snapshotsWritten) snapshots in \(counters.filesCreated) files")
    }
}

/// Writes the synthetic G.711 capture that `callstats capture -r` reads in the capture check.
struct CapturePcapWorkload: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "capture-pcap", abstract: "Write a synthetic G.711 pcap for the capture check.")

    @Option(help: "Packets in the capture.")
    var packets = 200_000

    @Option(help: "RTP streams the packets are spread over.")
    var streams = 100

    @Argument(help: "The pcap file to write.")
    var path: String

    func run() throws {
        let bytes = CaptureBenchmark.syntheticCapture(packets: packets, streams: streams)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
}
