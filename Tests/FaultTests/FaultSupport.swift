import CallLog
import Foundation
import Jobs
import Simulator
import SQLiteDatabase
import Store
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How long the fault tests run: CI sizes by default, larger under `make soak`.
///
/// Every loop count comes from an environment variable so that the same tests are the CI check
/// and the soak: `CALLSTATS_SOAK_KILLS=500 swift test --filter FaultTests`.
enum Soak {
    static func count(_ variable: String, ci: Int) -> Int {
        ProcessInfo.processInfo.environment[variable].flatMap(Int.init).map { max(1, $0) } ?? ci
    }

    /// A figure for `make soak` to collect: one line `fault-figure NAME VALUE` on stdout.
    static func figure(_ name: String, _ value: Int) {
        print("fault-figure \(name) \(value)")
    }
}

/// The built `callstats` binary and ways to run it as a real process.
enum Binary {
    static let url = TestPaths.callstatsBinary

    /// Runs `callstats args` to completion: exit status, stdout, stderr.
    @discardableResult
    static func run(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
        let p = try start(args)
        let o = p.stdout.fileHandleForReading.readDataToEndOfFile()
        let e = p.stderr.fileHandleForReading.readDataToEndOfFile()
        p.process.waitUntilExit()
        return (p.process.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    struct Running {
        var process: Process
        var stdout: Pipe
        var stderr: Pipe

        /// SIGKILL: no handler runs, nothing is flushed, as in a crash or an OOM kill.
        func kill() { _ = Glibc.kill(process.processIdentifier, SIGKILL) }

        /// True when the process died of a signal rather than exiting.
        var wasKilled: Bool { process.terminationReason == .uncaughtSignal }
    }

    static func start(_ args: [String]) throws -> Running {
        let p = Process()
        p.executableURL = url
        p.arguments = args
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        return Running(process: p, stdout: out, stderr: err)
    }
}

/// Reads a pipe line by line as a process writes it.
final class PipeLines {
    private let handle: FileHandle
    private var buffer: [UInt8] = []

    init(_ pipe: Pipe) { handle = pipe.fileHandleForReading }

    /// The next complete line, or nil at end of output.
    func next() -> String? {
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<nl], as: UTF8.self)
                buffer.removeSubrange(...nl)
                return line
            }
            let data = handle.availableData
            if data.isEmpty { return nil }
            buffer.append(contentsOf: data)
        }
    }
}

enum Corpus {
    /// Simulated logs (zstd, delta-encoded, as agents write them).
    static func simulate(into dir: URL, calls: Int, files: Int, seed: UInt64) throws -> URL {
        var config = SimulatorConfiguration(calls: calls, seed: seed)
        config.files = files
        _ = try Simulator(config).write(to: dir.path) { _ in }
        return dir
    }

    static func files(in dir: URL) -> [String] { LogFiles.find([dir.path]).files }
}

/// The analysis database as a user sees it, as text: equal text means equal results
/// (`DatabaseComparison`). Intervals as totals per stream, the material as a count. `calls`
/// restricts the call tables to those ids (rollups are then left out: they depend on every call).
func dumpDatabase(_ path: String, calls: Set<String>? = nil) throws -> String {
    try DatabaseComparison.text(of: path, .init(intervals: .totalsPerStream, material: .count, calls: calls))
}

/// `analyze` in-process with small transactions (many commit boundaries).
@discardableResult
func analyzeInProcess(_ paths: [String], db: String, force: Bool = false) throws -> AnalyzeRun.Report {
    var o = AnalyzeRun.Options(paths: paths, database: db)
    o.callsPerTransaction = 5
    o.force = force
    return try AnalyzeRun(options: o).run()
}

extension XCTestCase {
    /// Fails with the first differing line of two dumps (whole dumps are long).
    func assertSameResults(_ actual: String, _ expected: String, _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        guard actual != expected else { return }
        let a = actual.split(separator: "\n", omittingEmptySubsequences: false)
        let e = expected.split(separator: "\n", omittingEmptySubsequences: false)
        let i = (0..<min(a.count, e.count)).first { a[$0] != e[$0] } ?? min(a.count, e.count)
        XCTFail(
            "\(message): results differ at line \(i + 1):\n  got      \(i < a.count ? String(a[i]) : "<end>")\n  expected \(i < e.count ? String(e[i]) : "<end>")",
            file: file, line: line)
    }
}
