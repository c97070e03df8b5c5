import CallLog
import Foundation
@testable import Ingest
import TestSupport
import XCTest

/// A shared file's lines, decompressed once, reach every reader as `LogLineReader` gives them to
/// a reader of the whole file: every line with its number, and the damage at its place among
/// them. (That only partition 0 reports the damage is `FileReading`'s rule, checked by
/// `IngestTests.testFileSharedByReadersEqualsOneReader`.)
final class SharedLinesTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("shared-lines") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// A compressed file with damage inside and at its end: a garbage frame between two good
    /// ones, and a cut in the last frame.
    func damagedFile() throws -> String {
        func frame(_ lines: [String]) -> [UInt8] {
            var out: [UInt8] = []
            ZstdCompressor(level: 1).compress(Array(lines.map { $0 + "\n" }.joined().utf8), .end, into: &out)
            return out
        }
        var bytes = frame((0..<300).map { "{\"n\":\($0),\"pad\":\"\(String(repeating: "x", count: $0 % 37))\"}" })
        bytes += [0x28, 0xB5, 0x2F, 0xFD] + [UInt8](repeating: 0x41, count: 64)
        bytes += frame(["{\"after\":\"garbage\"}", "{\"n\":\"last whole\"}"])
        let last = frame((0..<200).map { "{\"tail\":\($0)}" })
        bytes += last[..<(last.count - 9)]
        let path = dir.appendingPathComponent("damaged.ndjson.zst").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// What one reader of the whole file sees: lines and issues in order.
    func events(readingWhole path: String, maximumLineBytes: Int) -> [String] {
        var seen: [String] = []
        LogLineReader(path: path, maximumLineBytes: maximumLineBytes).forEachLine({ line, n in
            seen.append("\(n): " + String(decoding: line, as: UTF8.self))
        }, issue: { seen.append("issue: \($0)") })
        return seen
    }

    func testEveryReaderGetsEveryLineAndTheIssuesInPlace() throws {
        let path = try damagedFile()
        let whole = events(readingWhole: path, maximumLineBytes: 4_096)
        XCTAssertEqual(whole.filter { $0.hasPrefix("issue: ") }.count, 2, whole.filter { $0.hasPrefix("issue: ") }.description)
        XCTAssertEqual(whole.count, 304)

        // Small chunks and a small window: the decoder waits for the readers again and again.
        let readers = 3
        let shared = SharedLines(path: path, readers: readers, chunkBytes: 200, windowChunks: 2, maximumLineBytes: 4_096)
        final class Seen: @unchecked Sendable {
            let lock = NSLock()
            var byReader: [[String]]
            init(_ n: Int) { byReader = Array(repeating: [], count: n) }
        }
        let results = Seen(readers)
        // A thread each, as `AnalyzeRun` gives its readers: every reader must be reading for the
        // window to move (a pool narrower than the readers would wait for ever).
        let group = DispatchGroup()
        for r in 0..<readers {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                var mine: [String] = []
                shared.forEachLine(reader: r, { line, n in
                    mine.append("\(n): " + String(decoding: line, as: UTF8.self))
                    if r == 1 && n % 50 == 0 { usleep(1_000) }  // one slow reader
                }, issue: { mine.append("issue: \($0)") })
                results.lock.lock()
                results.byReader[r] = mine
                results.lock.unlock()
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success, "the readers did not finish")
        let seen = results.byReader
        XCTAssertEqual(seen[0], whole)
        XCTAssertEqual(seen[1], whole)
        XCTAssertEqual(seen[2], whole)
    }

    /// Long lines (a line may be 64 MiB) do not let the window hold more than its bytes, or one
    /// chunk when a single chunk is larger.
    func testTheWindowHoldsItsBytesWhateverTheLines() throws {
        var text = ""
        for k in 0..<60 { text += "{\"k\":\(k),\"pad\":\"\(String(repeating: "z", count: k % 3 == 0 ? 5_000 : 40))\"}\n" }
        var bytes: [UInt8] = []
        ZstdCompressor(level: 1).compress(Array(text.utf8), .end, into: &bytes)
        let path = dir.appendingPathComponent("long.ndjson.zst").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let lines = events(readingWhole: path, maximumLineBytes: 64 << 20)
        let shared = SharedLines(path: path, readers: 2, chunkBytes: 1_000, windowChunks: 3)
        let other = DispatchGroup()
        other.enter()
        Thread.detachNewThread {
            shared.forEachLine(reader: 1, { _, _ in usleep(200) }, issue: { _ in })
            other.leave()
        }
        var seen: [String] = []
        shared.forEachLine(reader: 0, { line, n in seen.append("\(n): " + String(decoding: line, as: UTF8.self)) },
                           issue: { seen.append("issue: \($0)") })
        XCTAssertEqual(other.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(seen, lines)
        XCTAssertGreaterThan(shared.mostBytesHeld, 5_000)
        XCTAssertLessThanOrEqual(shared.mostBytesHeld, 6_100)  // 3,000, or one chunk: under 1,000 bytes and a line of about 5,020
    }

    /// A reader that leaves (the run was cancelled) does not hold the others back.
    func testAReaderThatLeavesDoesNotStopTheOthers() throws {
        let path = try damagedFile()
        let whole = events(readingWhole: path, maximumLineBytes: 4_096)
        let shared = SharedLines(path: path, readers: 2, chunkBytes: 100, windowChunks: 1, maximumLineBytes: 4_096)
        shared.leave(reader: 0)
        var seen: [String] = []
        shared.forEachLine(reader: 1, { line, n in seen.append("\(n): " + String(decoding: line, as: UTF8.self)) },
                           issue: { seen.append("issue: \($0)") })
        XCTAssertEqual(seen, whole)
    }
}
