import ConsoleOutput
import ArgumentParser
import CallLog
import Collector
import Foundation
import Importers
import Simulator

/// `callstats-bench collector`: what the in-app collector costs the app, per snapshot, and
/// what it writes, per call-minute.
struct CollectorBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "collector",
        abstract: "Collector overhead: caller-thread and writer cost per snapshot, snapshots/s, bytes per call-minute.",
        discussion: """
            Snapshots are the real Chromium recording's W3C reports handed over as JSON strings (as \
            the Kandy Mobile SDK does) when the recording exists, else simulated reports (W3C and goog). \
            Two runs per mode: a load run samples --calls calls every --interval seconds for \
            --seconds (each call replaying a recorded or simulated sequence), a size run writes each \
            sequence once at its 10 s cadence (the recording resampled to every 10th snapshot).

            caller: time in the SDK's completion handler (queueing one snapshot), on the sampling thread.
            writer: the background writer's time (parse, pseudonymise, delta-encode, compress, write)
            divided by the snapshots written; snapshots/s is one writer thread's capacity at that cost.
            """)

    @Option(help: "The Chromium recording; simulated snapshots are used when it is absent.")
    var recording = "../shared/data/chromium-call-30ms-2pct.jsonl.zst"

    @Option(help: "Calls sampled at once in the load run.")
    var calls = 100

    @Option(help: "Seconds between two samples of a call in the load run.")
    var interval = 0.1

    @Option(help: "Length of the load run, in seconds.")
    var seconds = 5.0

    /// One peer connection's snapshots in order, as the SDK would hand them over.
    struct Sequence {
        var snapshots: [@Sendable () -> StatsSnapshot]
        var periodSeconds: Double
    }

    func run() throws {
        let (load, size, origin) = sources()
        print("snapshots: \(origin)")
        var table = Table(header: [
            "mode", "snapshots", "caller µs/snapshot", "writer µs/snapshot", "writer snapshots/s",
            "KiB per call-minute", "dropped",
        ])
        let modes: [(String, Pseudonymizer?, StatsMemberFilter?)] = [
            ("deltas, zstd 9", nil, nil),
            ("deltas, zstd 9, IPs pseudonymised", Pseudonymizer(method: .keyedHash(SipHashKey(k0: 0x5EED, k1: 0xC0FFEE))), nil),
            ("deltas, zstd 9, essential members", nil, StatsMemberFilter(keeping: StatsMemberFilter.essential)),
        ]
        for (name, pseudonymizer, members) in modes {
            let l = try measure(load, calls: calls, interval: interval, seconds: seconds, cycle: true, pseudonymizer: pseudonymizer, members: members)
            let s = try measure(size, calls: size.count, interval: 0.02, seconds: nil, cycle: false, pseudonymizer: pseudonymizer, members: members)
            let callMinutes = size.reduce(0.0) { $0 + Double($1.snapshots.count) * $1.periodSeconds / 60 }
            table.rows.append([
                name, "\(l.counters.snapshotsWritten)", fmt(l.callerMicros), fmt(l.writerMicros),
                fmt(1e6 / l.writerMicros, 0), fmt(Double(s.counters.bytesWritten) / 1024 / callMinutes),
                "\(l.counters.droppedTotal)",
            ])
        }
        print(table.render())
        print(
            "load run: \(calls) calls sampled every \(fmt(interval, 3)) s for \(fmt(seconds, 1)) s (\(fmt(Double(calls) / interval, 0)) snapshots/s offered); "
                + "\(ProcessInfo.processInfo.activeProcessorCount) cores")
    }

    /// Load and size sequences, from the recording or the simulator.
    func sources() -> (load: [Sequence], size: [Sequence], origin: String) {
        if FileManager.default.fileExists(atPath: recording) {
            let records = ChromiumImporter().convert(path: recording).records
            var bySide: [String: [String]] = [:]
            for r in records where r.kind == .stats {
                guard let report = r["report"], let pc = r["pc"]?.stringValue else { continue }
                bySide[pc, default: []].append(report.serialized())
            }
            func sequence(_ texts: [String], period: Double) -> Sequence {
                Sequence(snapshots: texts.map { t in { StatsSnapshot.w3c(json: t) } }, periodSeconds: period)
            }
            let sides = bySide.keys.sorted()
            let load = sides.map { sequence(bySide[$0]!, period: 1) }
            let size = sides.map { side in sequence(bySide[side]!.enumerated().filter { ($0.offset + 1) % 10 == 0 }.map(\.element), period: 10) }
            let n = bySide.values.reduce(0) { $0 + $1.count }
            return (load, size, "Chromium recording \(recording) (\(n) W3C reports as JSON strings, \(sides.count) peer connections)")
        }
        let sim = Simulator(SimulatorConfiguration(calls: 40, seed: 1))
        var sequences = [Sequence]()
        for i in 0..<40 {
            var byPC: [String: [StatsSnapshot]] = [:]
            for r in sim.records(forCall: i) where r.kind == .stats {
                guard let report = r["report"]?.arrayValue, let format = r["format"]?.stringValue.flatMap(StatsFormat.init) else { continue }
                byPC[r["pc"]?.stringValue ?? "", default: []].append(.report(report, format: format))
            }
            for (_, snaps) in byPC.sorted(by: { $0.key < $1.key }) where !snaps.isEmpty {
                sequences.append(Sequence(snapshots: snaps.map { s in { s } }, periodSeconds: 10))
            }
        }
        return (sequences, sequences, "simulator (40 calls, W3C and goog reports; \(recording) not found)")
    }

    struct Result {
        var counters: CollectorCounters
        var callerMicros: Double
        var writerMicros: Double
    }

    /// Runs an agent over `sequences` and returns its counters and per-snapshot costs.
    func measure(
        _ sequences: [Sequence], calls: Int, interval: Double, seconds: Double?, cycle: Bool,
        pseudonymizer: Pseudonymizer?, members: StatsMemberFilter?
    ) throws -> Result {
        let dir = NSTemporaryDirectory() + "callstats-bench-collector-\(getpid())-\(UUID().uuidString.prefix(6))"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var config = CallStatsAgent.Configuration(directory: dir, app: "bench", appVersion: "1")
        config.interval = interval
        config.queueBytes = 256 << 20
        config.queueRecords = 1 << 20
        config.diskCap = 4 << 30
        config.fileBytes = 64 << 20
        config.pseudonymizer = pseudonymizer
        config.statsMembers = members
        let agent = CallStatsAgent(configuration: config)
        let meter = CallerMeter()
        var recorders = [CallRecorder]()
        var feeds = [Feed]()
        for i in 0..<calls {
            let feed = Feed(sequence: sequences[i % sequences.count], cycle: cycle)
            feeds.append(feed)
            let adapter = KandyStyleCall(feed: feed, meter: meter)
            recorders.append(agent.attach(callID: "bench-\(i)", info: CallInfo(direction: .outgoing, sdk: "bench", sdkVersion: "1"), call: adapter))
        }
        if let seconds {
            Thread.sleep(forTimeInterval: seconds)
        } else {
            while feeds.contains(where: { !$0.exhausted }) { Thread.sleep(forTimeInterval: 0.01) }
        }
        for r in recorders { r.end(CallEnd(reason: .terminatedLocally)) }
        agent.flush()
        agent.shutdown()
        let c = agent.counters
        return Result(
            counters: c, callerMicros: meter.micros,
            writerMicros: c.writerSeconds * 1e6 / Double(max(1, c.snapshotsWritten)))
    }
}

/// Hands out one sequence's snapshots in order (round and round when cycling).
final class Feed: @unchecked Sendable {
    private let lock = NSLock()
    private let sequence: CollectorBench.Sequence
    private let cycle: Bool
    private var next = 0

    init(sequence: CollectorBench.Sequence, cycle: Bool) {
        self.sequence = sequence
        self.cycle = cycle
    }

    func take() -> StatsSnapshot? {
        lock.lock(); defer { lock.unlock() }
        guard cycle || next < sequence.snapshots.count else { return nil }
        let s = sequence.snapshots[next % sequence.snapshots.count]()
        next += 1
        return s
    }

    var exhausted: Bool {
        lock.lock(); defer { lock.unlock() }
        return !cycle && next >= sequence.snapshots.count
    }
}

/// Total time spent handing snapshots to the agent (the SDK's completion-handler cost).
final class CallerMeter: @unchecked Sendable {
    private let lock = NSLock()
    private var nanoseconds: UInt64 = 0
    private var count = 0

    func add(_ ns: UInt64) {
        lock.lock()
        nanoseconds += ns
        count += 1
        lock.unlock()
    }

    var micros: Double {
        lock.lock(); defer { lock.unlock() }
        return Double(nanoseconds) / 1e3 / Double(max(1, count))
    }
}

/// An SDK call whose statistics are ready when asked; times the completion handler.
struct KandyStyleCall: MonitoredCall {
    let feed: Feed
    let meter: CallerMeter

    func fetchStats(_ completion: @escaping @Sendable (StatsSnapshot?) -> Void) {
        guard let s = feed.take() else { return completion(nil) }
        let t0 = DispatchTime.now().uptimeNanoseconds
        completion(s)
        meter.add(DispatchTime.now().uptimeNanoseconds - t0)
    }
}
