import CallLog
import Foundation

/// A file that several readers share, each taking its share of the calls (see `AnalyzeRun`),
/// decompressed and split into lines once, on a thread of its own, for all of them.
///
/// Before, every reader of a shared file decompressed all of it and kept its own calls: with two
/// readers the file was decompressed twice, and with one large file (the whole input) that was
/// about a fifth more work in all.
///
/// The lines go out in chunks of about `chunkBytes`, copied out of the decompressor's buffer,
/// through a window of `windowChunks` chunks and as many times `chunkBytes` bytes (one chunk
/// of any size always fits: a line may be 64 MiB): the decoder waits while the slowest reader
/// is that far behind, so memory stays bounded. The default, 16 chunks, absorbs a file written
/// call by call, where each reader's lines come in runs of a call's size (about 2 MB): with 4,
/// the reader ahead waited for the other a third of the time. Every reader gets the lines and
/// the damage in the order `LogLineReader` gives them to a reader of the whole file; which
/// reader reports the damage is the caller's rule (`FileReading`: partition 0), as when each
/// decompressed it.
final class SharedLines: @unchecked Sendable {
    let path: String
    private let chunkBytes: Int
    private let windowChunks: Int
    private let maximumLineBytes: Int

    /// Complete lines and the damage found among them, in file order.
    private struct Chunk {
        var bytes: [UInt8] = []
        /// Where each line ends in `bytes` (each starts where the one before ended).
        var ends: [Int] = []
        var lineNumbers: [Int] = []
        /// Each issue with the number of this chunk's lines before it.
        var issues: [(linesBefore: Int, issue: LogIssue)] = []

        mutating func clear() {
            bytes.removeAll(keepingCapacity: true)
            ends.removeAll(keepingCapacity: true)
            lineNumbers.removeAll(keepingCapacity: true)
            issues.removeAll(keepingCapacity: true)
        }
    }

    private let condition = NSCondition()
    /// The chunks some reader still needs; `window[0]` is chunk number `windowStart`.
    private var window: [Chunk] = []
    private var windowStart = 0
    private var windowBytes = 0
    /// The most line bytes the window held at once (for tests of the bound).
    private(set) var mostBytesHeld = 0
    /// Each reader's next chunk number (`Int.max` once it has left).
    private var nextChunk: [Int]
    /// Chunks every reader has passed, kept for their storage.
    private var spares: [Chunk] = []
    private var started = false
    private var decoded = false

    init(path: String, readers: Int, chunkBytes: Int = 1 << 20, windowChunks: Int = 16, maximumLineBytes: Int = 64 << 20) {
        self.path = path
        self.maximumLineBytes = maximumLineBytes
        self.chunkBytes = chunkBytes
        self.windowChunks = windowChunks
        nextChunk = Array(repeating: 0, count: readers)
    }

    /// Calls `line` for every complete line of the file and `issue` for damage, in file order.
    /// Every reader calls this once, or `leave` instead.
    func forEachLine(reader: Int, _ line: (UnsafeBufferPointer<UInt8>, Int) -> Void, issue: (LogIssue) -> Void) {
        condition.lock()
        if !started {
            // Started by the first reader to arrive: decoding ahead while the readers are still
            // on other files would only take a core from them.
            started = true
            Thread.detachNewThread { self.decode() }
        }
        condition.unlock()
        while let chunk = next(reader: reader) {
            var start = 0
            var issues = chunk.issues[...]
            for k in chunk.ends.indices {
                while let first = issues.first, first.linesBefore == k {
                    issue(first.issue)
                    issues = issues.dropFirst()
                }
                chunk.bytes.withUnsafeBufferPointer { b in
                    line(UnsafeBufferPointer(rebasing: b[start..<chunk.ends[k]]), chunk.lineNumbers[k])
                }
                start = chunk.ends[k]
            }
            for rest in issues { issue(rest.issue) }
            passed(reader: reader)
        }
    }

    /// A reader that will not read the file (the run was cancelled first): the decoder no
    /// longer waits for it.
    func leave(reader: Int) {
        condition.lock()
        nextChunk[reader] = .max
        dropPassedChunks()
        condition.broadcast()
        condition.unlock()
    }

    private func next(reader: Int) -> Chunk? {
        condition.lock()
        defer { condition.unlock() }
        while nextChunk[reader] - windowStart >= window.count {
            if decoded { return nil }
            condition.wait()
        }
        return window[nextChunk[reader] - windowStart]
    }

    private func passed(reader: Int) {
        condition.lock()
        nextChunk[reader] += 1
        dropPassedChunks()
        if decoded && window.isEmpty { spares = [] }  // the run holds this until it ends
        condition.broadcast()
        condition.unlock()
    }

    /// With the lock held.
    private func dropPassedChunks() {
        let slowest = nextChunk.min() ?? .max
        while !window.isEmpty, windowStart < slowest {
            let passed = window.removeFirst()
            windowBytes -= passed.bytes.count
            windowStart += 1
            // A chunk that held a huge line gives its storage back rather than keep it.
            spares.append(passed.bytes.capacity > 2 * chunkBytes + (64 << 10) ? Chunk() : passed)
        }
    }

    /// Hands `chunk` to the readers and gives it back empty; false once every reader has left.
    private func publish(_ chunk: inout Chunk) -> Bool {
        condition.lock()
        while !window.isEmpty, window.count >= windowChunks || windowBytes + chunk.bytes.count > windowChunks * chunkBytes,
              (nextChunk.min() ?? .max) != .max {
            condition.wait()
        }
        let wanted = (nextChunk.min() ?? .max) != .max
        if wanted {
            window.append(chunk)
            windowBytes += chunk.bytes.count
            mostBytesHeld = max(mostBytesHeld, windowBytes)
            condition.broadcast()
        }
        var spare = spares.popLast() ?? Chunk()
        condition.unlock()
        spare.clear()
        chunk = spare
        return wanted
    }

    private struct EveryReaderLeft: Error {}

    private func decode() {
        var chunk = Chunk()
        chunk.bytes.reserveCapacity(chunkBytes + (64 << 10))
        do {
            try LogLineReader(path: path, maximumLineBytes: maximumLineBytes).forEachLine({ line, number in
                chunk.bytes.append(contentsOf: line)
                chunk.ends.append(chunk.bytes.count)
                chunk.lineNumbers.append(number)
                if chunk.bytes.count >= chunkBytes, !publish(&chunk) { throw EveryReaderLeft() }
            }, issue: { issue in
                chunk.issues.append((chunk.ends.count, issue))
            })
            if !chunk.ends.isEmpty || !chunk.issues.isEmpty { _ = publish(&chunk) }
        } catch {}
        condition.lock()
        decoded = true
        condition.broadcast()
        condition.unlock()
    }
}
