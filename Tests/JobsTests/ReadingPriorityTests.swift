import CallLog
import Foundation
@testable import Jobs
import TestSupport
import XCTest

#if os(Linux)
/// The readers run below the writer's priority (`ReadingPriority`), and the writer, the thread
/// that called `run`, keeps its own.
final class ReadingPriorityTests: XCTestCase {
    func testReadersRunBelowTheWriter() throws {
        let dir = TestPaths.temporaryDirectory("priority")
        defer { try? FileManager.default.removeItem(at: dir) }
        let logs = dir.appendingPathComponent("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        // More calls than the hand-off queue and the writer's first batch hold together (2,048
        // each): while the writer is held in its first progress call, a reader cannot finish.
        for file in 0..<2 {
            let lines = (0..<2_500).map { n in
                LogRecord(
                    kind: .event, call: "call-\(file)-\(n)", ts: 1_700_000_000_000 + Int64(n),
                    body: ["action": "callMetric", "type": "callCreate"]
                ).jsonLine
            }
            try (lines.joined(separator: "\n") + "\n").write(
                to: logs.appendingPathComponent("part-\(file).ndjson"),
                atomically: true, encoding: .utf8)
        }
        var o = AnalyzeRun.Options(paths: [logs.path], database: dir.appendingPathComponent("p.sqlite").path)
        o.readers = 2
        o.shareFiles = false
        o.progressInterval = 0
        let run = AnalyzeRun(options: o)
        let seen = NiceValues()
        let before = try XCTUnwrap(Self.currentThreadID().flatMap { Self.niceValues()[$0] })
        run.onProgress = { _ in  // on the writer: the thread that called `run`
            guard seen.writer == nil else { return }
            seen.writer = Self.currentThreadID()
            let writerNice = seen.writer.flatMap { Self.niceValues()[$0] } ?? 0
            // A reader that has not been scheduled yet lowers its priority once it runs.
            let deadline = Date().addingTimeInterval(10)
            repeat {
                seen.all = Self.niceValues()
                if seen.all.values.contains(writerNice + ReadingPriority.niceSteps) { break }
                usleep(10_000)
            } while Date() < deadline
        }
        let report = try run.run()
        XCTAssertEqual(report.callsInRun, 5_000)
        let writerNice = try XCTUnwrap(seen.writer.flatMap { seen.all[$0] })
        XCTAssertEqual(writerNice, before)
        XCTAssertTrue(
            seen.all.values.contains(writerNice + ReadingPriority.niceSteps),
            "no thread runs \(ReadingPriority.niceSteps) below the writer: \(seen.all)")
    }

    /// Each thread's nice value, by thread id (`/proc/self/task/*/stat`, field 19).
    static func niceValues() -> [Int: Int32] {
        var values: [Int: Int32] = [:]
        for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? [] {
            guard let id = Int(task), let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // After the command name: state is field 3, so nice (19) is the 17th.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 16, let nice = Int32(fields[16]) { values[id] = nice }
        }
        return values
    }

    /// The calling thread's id (`/proc/thread-self` links to `<pid>/task/<tid>`).
    static func currentThreadID() -> Int? {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"))
            .flatMap { Int($0.split(separator: "/").last ?? "") }
    }
}

private final class NiceValues: @unchecked Sendable {
    var all: [Int: Int32] = [:]
    var writer: Int?
}
#endif
