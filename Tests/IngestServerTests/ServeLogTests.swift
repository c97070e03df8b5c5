import CallLog
import Foundation
import Logging
import TestSupport
import XCTest

@testable import IngestServer

/// `ServeLogHandler`: the lines `callstats serve` writes, where, and how many.
final class ServeLogTests: XCTestCase {
    /// Lines written by a handler, by stream, on a clock the test moves.
    private final class Capture: Sendable {
        let written = Locked<[(ServeLogHandler.Stream, String)]>([])
        let second = Locked<Int64>(100)

        func logger() -> Logger {
            let handler = ServeLogHandler(
                now: { [second] in second.withLock { $0 } },
                write: { [written] stream, text in written.withLock { $0.append((stream, text)) } })
            return Logger(label: "test", factory: { _ in handler })
        }

        func text(_ stream: ServeLogHandler.Stream) -> [String] {
            written.withLock { $0.filter { $0.0 == stream }.map(\.1) }
        }
    }

    func testLinesNameTheRequestAndGoToTheirStream() {
        let capture = Capture()
        let log = capture.logger()
        log.info("listening on http://127.0.0.1:8471/")
        log.warning("from 127.0.0.1: 415 Content-Encoding br is not supported", metadata: ["request": "r-7"])
        log.error("records not written: disk full", metadata: ["shard": "1"])
        log.debug("not written: below the handler's level")
        XCTAssertEqual(capture.text(.standardOutput), ["callstats serve: listening on http://127.0.0.1:8471/\n"])
        XCTAssertEqual(
            capture.text(.standardError),
            [
                "callstats serve: r-7 from 127.0.0.1: 415 Content-Encoding br is not supported\n",
                "callstats serve: records not written: disk full shard=1\n",
            ])
    }

    /// Ten lines a second at `.warning` and above; the rest counted and said with the first line of
    /// a later second. The operator's lines (`.info`) are never dropped.
    func testErrorsAreRateLimitedAndTheDroppedCounted() {
        let capture = Capture()
        let log = capture.logger()
        for i in 1...25 { log.warning("from 127.0.0.1: 401 no bearer token", metadata: ["request": .string("r-\(i)")]) }
        log.info("reloaded 1 tokens from tokens.txt")
        XCTAssertEqual(capture.text(.standardError).count, 10)
        XCTAssertEqual(capture.text(.standardError).last, "callstats serve: r-10 from 127.0.0.1: 401 no bearer token\n")
        XCTAssertEqual(capture.text(.standardOutput), ["callstats serve: reloaded 1 tokens from tokens.txt\n"])

        capture.second.withLock { $0 += 1 }
        log.error("from 127.0.0.1: 503 the writer is behind", metadata: ["request": "r-26"])
        XCTAssertEqual(
            capture.text(.standardError).last,
            "callstats serve: (15 similar lines suppressed)\ncallstats serve: r-26 from 127.0.0.1: 503 the writer is behind\n")
        // The count starts again: nothing was dropped in this second before that line.
        capture.second.withLock { $0 += 1 }
        log.warning("from 127.0.0.1: 403 origin https://evil.example is not allowed", metadata: ["request": "r-27"])
        XCTAssertEqual(
            capture.text(.standardError).last, "callstats serve: r-27 from 127.0.0.1: 403 origin https://evil.example is not allowed\n")
        XCTAssertEqual(capture.text(.standardError).count, 12)
    }

    /// Through the binary: an error names its request on standard error; log files and the stop
    /// are said on standard output.
    func testServeWritesItsLinesThroughTheHandler() throws {
        let work = TestPaths.temporaryDirectory("serve-log")
        defer { try? FileManager.default.removeItem(at: work) }
        let logs = work.appendingPathComponent("logs")
        let server = try ServeProcess(directory: logs)
        let refused = try RawHTTP.post(port: server.port, Records.call("c-log"), headers: ["Content-Encoding": "br"])
        XCTAssertEqual(refused.status, 415)
        let id = try XCTUnwrap(refused.json?["request"] as? String)
        XCTAssertTrue(
            server.waitFor { server.stderr.contains("callstats serve: \(id) from 127.0.0.1: 415 Content-Encoding br is not supported") },
            server.stderr)
        XCTAssertEqual(try RawHTTP.post(port: server.port, Records.call("c-log")).status, 200)
        server.signal(SIGTERM)
        XCTAssertTrue(server.waitFor { server.stdout.contains("records written") }, server.stdout)
        XCTAssertEqual(server.wait(), 0)
        // The first line, the address, is read by `ServeProcess` as the server starts.
        let lines = server.stdout.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains { $0.hasPrefix("callstats serve: writing \(logs.path)/ingest-") }, server.stdout)
        XCTAssertTrue(lines.contains { $0.hasPrefix("callstats serve: closed \(logs.path)/ingest-") }, server.stdout)
        XCTAssertEqual(lines.last, "callstats serve: stopped; 1 records written", server.stdout)
    }

    /// A supervisor that reads the address line and closes the pipe: the lines written after it
    /// are lost (`EPIPE`), and the server goes on serving and stops cleanly.
    func testAClosedStandardOutputDoesNotStopTheServer() throws {
        let work = TestPaths.temporaryDirectory("serve-log-closed")
        defer { try? FileManager.default.removeItem(at: work) }
        let serve = Process()
        serve.executableURL = Binary.callstats
        serve.arguments = ["serve", "--listen", "127.0.0.1:0", "--out", work.appendingPathComponent("logs").path]
        let output = Pipe()
        serve.standardOutput = output
        serve.standardError = FileHandle.nullDevice
        try serve.run()
        defer { if serve.isRunning { kill(serve.processIdentifier, SIGKILL) } }
        var first = ""
        while !first.contains("\n") {
            let d = output.fileHandleForReading.availableData
            if d.isEmpty { break }
            first += String(decoding: d, as: UTF8.self)
        }
        let port = try XCTUnwrap(first.firstMatch(of: /127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) }, first)
        try output.fileHandleForReading.close()
        // The first record opens a log file, which is said on the closed standard output.
        for i in 1...3 { XCTAssertEqual(try RawHTTP.post(port: port, Records.call("c-closed-\(i)")).status, 200) }
        kill(serve.processIdentifier, SIGTERM)
        serve.waitUntilExit()
        XCTAssertEqual(serve.terminationReason, .exit)
        XCTAssertEqual(serve.terminationStatus, 0)
    }
}
