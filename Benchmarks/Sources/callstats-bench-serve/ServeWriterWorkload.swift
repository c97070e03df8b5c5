import ArgumentParser
import CallLog
import Foundation
import ServeBenchmarkSupport

/// The `serve-writer` workload of `Benchmarks/check-performance.sh`: `callstats serve`'s writer path for posted statistics (`ServeWriterBenchmark`): each stats
/// record of the folder posted as an agent posts it (a delta against the agent's own chain),
/// one per request, each its own group commit (flush and fsync). One thread, the same work on
/// every run, as `callstats-bench workload`'s.
@main
struct ServeWriterWorkload: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "callstats-bench-serve",
        abstract: "Write a folder's stats records as callstats serve writes posted snapshots (the serve-writer workload).")

    @Argument(help: "A folder of *.ndjson.zst logs whose stats records are posted.")
    var folder: String

    @Option(help: "The folder to write serve's logs into (emptied first).")
    var out: String

    @Option(help: "Snapshots posted (the first ones of the folder's logs), one per request.")
    var snapshots = 2_000

    func run() throws {
        // What agents post: each call's snapshots delta-encoded against the agent's own chain.
        var agent = StatsDeltaEncoder()
        var posted: [[UInt8]] = []
        files: for file in try FileManager.default.contentsOfDirectory(atPath: folder).filter({ $0.hasSuffix(".ndjson.zst") }).sorted() {
            for record in LogReader(path: folder + "/" + file).readAll().records where record.kind == .stats {
                var line: [UInt8] = []
                agent.encode(record).write(to: &line)
                line.append(UInt8(ascii: "\n"))
                posted.append(line)
                if posted.count == snapshots { break files }
            }
        }
        try? FileManager.default.removeItem(atPath: out)
        let writer = try ServeWriterBenchmark(directory: out)
        for body in posted { writer.post(body) }
        let outcome = writer.close()
        guard outcome.written == posted.count, outcome.rejected == 0, outcome.failures == 0 else {
            throw ValidationError(
                "\(outcome.written) of \(posted.count) posted snapshots written, \(outcome.rejected) refused, \(outcome.failures) failed commits")
        }
        print("wrote \(outcome.written) posted snapshots")
    }
}
