import CallLog
import Foundation
@testable import Jobs
import TestSupport
import XCTest

/// A shared file's lines, decompressed once, are dealt out to its readers: every line and every
/// issue reaches exactly one reader, each reader gets its own in file order, all of a call's lines
/// go to one reader, and a reader that arrives late starts where the others are instead of
/// holding them back. (That the database is the one a single reader makes is checked by
/// `AnalyzeRunTests.testFileSharedByReadersEqualsOneReader`.)
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

    /// A line or an issue as a reader saw it. An issue is numbered with the line after it, and
    /// sorts before that line.
    struct Event: Comparable, CustomStringConvertible {
        var line: Int
        var isLine: Bool
        var text: String
        static func < (a: Event, b: Event) -> Bool { (a.line, a.isLine ? 1 : 0) < (b.line, b.isLine ? 1 : 0) }
        var description: String { isLine ? "\(line): \(text)" : "issue: \(text)" }
    }

    /// What one reader of the whole file sees: lines and issues in order.
    func events(readingWhole path: String, maximumLineBytes: Int) -> [Event] {
        var seen: [Event] = []
        LogLineReader(path: path, maximumLineBytes: maximumLineBytes).forEachLine(
            { line, n in
                seen.append(Event(line: n, isLine: true, text: String(decoding: line, as: UTF8.self)))
            }, issue: { seen.append(Event(line: $0.line ?? .max, isLine: false, text: "\($0)")) })
        return seen
    }

    /// One reader's events, read on the calling thread; `pause` runs after each of its lines.
    static func events(of shared: SharedLines, reader: Int, pause: (_ line: Int) -> Void = { _ in }) -> [Event] {
        var mine: [Event] = []
        shared.forEachLine(
            reader: reader,
            { line, n in
                mine.append(Event(line: n, isLine: true, text: String(decoding: line, as: UTF8.self)))
                pause(n)
            }, issue: { mine.append(Event(line: $0.line ?? .max, isLine: false, text: "\($0)")) })
        return mine
    }

    /// Each reader's events when `readers` threads read `shared` together; `pause` runs after each
    /// of a reader's lines (to make one slow).
    func read(_ shared: SharedLines, readers: Int, pause: @escaping @Sendable (_ reader: Int, _ line: Int) -> Void = { _, _ in })
        -> [[Event]]
    {
        final class Seen: @unchecked Sendable {
            let lock = NSLock()
            var byReader: [[Event]]
            init(_ n: Int) { byReader = Array(repeating: [], count: n) }
        }
        let results = Seen(readers)
        // A thread each, as `AnalyzeRun` gives its readers.
        let group = DispatchGroup()
        for r in 0..<readers {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let mine = Self.events(of: shared, reader: r) { pause(r, $0) }
                results.lock.lock()
                results.byReader[r] = mine
                results.lock.unlock()
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success, "the readers did not finish")
        return results.byReader
    }

    /// Every event once, each reader's in file order.
    func assertDealtOut(_ byReader: [[Event]], equal whole: [Event], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(whole, whole.sorted(), "the whole file's events are not in line order", file: file, line: line)
        for (r, events) in byReader.enumerated() {
            XCTAssertEqual(events, events.sorted(), "reader \(r)'s events are out of order", file: file, line: line)
        }
        XCTAssertEqual(byReader.flatMap { $0 }.sorted().map(\.description), whole.map(\.description), file: file, line: line)
    }

    /// Lines without a call are dealt out one by one; the damage goes to the first reader of its chunk.
    func testEveryLineAndIssueReachesExactlyOneReaderInOrder() throws {
        let path = try damagedFile()
        let whole = events(readingWhole: path, maximumLineBytes: 4_096)
        XCTAssertEqual(whole.filter { !$0.isLine }.count, 2, whole.filter { !$0.isLine }.description)
        XCTAssertEqual(whole.count, 304)
        // Small chunks and a small window: the decoder waits for the readers again and again.
        let shared = SharedLines(path: path, readers: 3, chunkBytes: 200, windowChunks: 2, maximumLineBytes: 4_096)
        let byReader = read(shared, readers: 3) { r, n in if r == 1 && n % 50 == 0 { usleep(1_000) } }  // one slow reader
        assertDealtOut(byReader, equal: whole)
    }

    /// Calls whose lines are interleaved: each call's lines all go to one reader, and the readers share the calls.
    func testAllOfACallsLinesGoToOneReader() throws {
        var text = ""
        for k in 0..<1_200 {
            text += k % 97 == 0 ? "{\"kind\":\"agent\",\"k\":\(k)}\n" : "{\"v\":1,\"call\":\"call-\(k % 40)\",\"k\":\(k)}\n"
        }
        var bytes: [UInt8] = []
        ZstdCompressor(level: 1).compress(Array(text.utf8), .end, into: &bytes)
        let path = dir.appendingPathComponent("calls.ndjson.zst").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let whole = events(readingWhole: path, maximumLineBytes: 4_096)
        let shared = SharedLines(path: path, readers: 2, chunkBytes: 300, windowChunks: 2)
        let byReader = read(shared, readers: 2) { r, n in if r == 0 && n % 20 == 0 { usleep(500) } }
        assertDealtOut(byReader, equal: whole)
        var readerOfCall: [String: Int] = [:]
        for (r, events) in byReader.enumerated() {
            for e in events {
                guard let call = e.text.split(separator: "\"").dropFirst(5).first, e.text.contains("\"call\"") else { continue }
                XCTAssertEqual(readerOfCall.updateValue(r, forKey: String(call)) ?? r, r, "call \(call) went to two readers")
            }
        }
        XCTAssertEqual(readerOfCall.count, 40)
    }

    /// A reader that reaches the file after another has read it all starts at its end: the first
    /// reader neither waited for it (with a window of two chunks it would have waited for ever)
    /// nor left it anything.
    func testAReaderArrivingLateStartsWhereTheOthersAre() throws {
        let path = try damagedFile()
        let whole = events(readingWhole: path, maximumLineBytes: 4_096)
        let shared = SharedLines(path: path, readers: 2, chunkBytes: 200, windowChunks: 2, maximumLineBytes: 4_096)
        let first = DispatchGroup()
        first.enter()
        final class Box: @unchecked Sendable { var events: [Event] = [] }
        let box = Box()
        Thread.detachNewThread {
            box.events = Self.events(of: shared, reader: 0)
            first.leave()
        }
        guard first.wait(timeout: .now() + 20) == .success else {
            XCTFail("the first reader waited for the one not yet there")
            shared.leave(reader: 1)  // lets it finish
            _ = first.wait(timeout: .now() + 20)
            return
        }
        let late = Self.events(of: shared, reader: 1)
        XCTAssertEqual(late, [])
        assertDealtOut([box.events, late], equal: whole)
    }

    /// Long lines (a line may be 64 MiB) do not let the window hold more than its bytes, or one
    /// chunk when a single chunk is larger.
    func testTheWindowHoldsItsBytesWhateverTheLines() throws {
        var text = ""
        for k in 0..<60 { text += "{\"k\":\(k),\"pad\":\"\(String(repeating: "z", count: k % 3 == 0 ? 5_000 : 40))\"}\n" }
        // A frame per line: inside a frame, a chunk is at least zstd's window (the whole text
        // for one frame), since the decoder reads back into it (`LineChunker`).
        var bytes: [UInt8] = []
        for line in text.split(separator: "\n") { bytes += ZstdCompressor.compressFrame(Array((line + "\n").utf8), level: 1) }
        let path = dir.appendingPathComponent("long.ndjson.zst").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let lines = events(readingWhole: path, maximumLineBytes: 64 << 20)
        let shared = SharedLines(path: path, readers: 2, chunkBytes: 1_000, windowChunks: 3)
        let byReader = read(shared, readers: 2) { r, _ in if r == 1 { usleep(2_000) } }
        assertDealtOut(byReader, equal: lines)
        XCTAssertGreaterThan(shared.mostBytesHeld, 5_000)
        XCTAssertLessThanOrEqual(shared.mostBytesHeld, 6_100)  // 3,000, or one chunk: under 1,000 bytes and a line of about 5,020
    }

    /// A reader that leaves (the run was cancelled) does not hold the others back.
    func testAReaderThatLeavesDoesNotStopTheOthers() throws {
        let path = try damagedFile()
        let whole = events(readingWhole: path, maximumLineBytes: 4_096)
        let shared = SharedLines(path: path, readers: 2, chunkBytes: 100, windowChunks: 1, maximumLineBytes: 4_096)
        shared.leave(reader: 0)
        assertDealtOut([Self.events(of: shared, reader: 1)], equal: whole)
    }
}
