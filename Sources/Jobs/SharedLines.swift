import CallLog
import Foundation
import MaterialScanning

/// A file that several readers share (see `AnalyzeRun`), decompressed and split into lines once,
/// on a thread of its own, and dealt out to them a call at a time: the first reader to meet a
/// call's first line claims the call, and gets all its lines; the others skip them.
///
/// Claims, not a fixed split, because the readers reach a shared file at different times and go
/// at different speeds (one shares its core with the writer). With each reader taking the calls
/// whose id hashed to it, the reader that came first took its half of the first chunks and then
/// waited for the other at the window's end: on the 700 real-shaped calls, one core idled for
/// about 0.1 s of a 1.2 s run (`perf record -e cpu-clock`, samples per thread and 100 ms; wall
/// medians of 12 alternating runs 1.105 s before, 1.065 s after). Now a reader that arrives
/// late starts where the readers already reading are (the calls of every line before there are
/// claimed already) and takes the calls it meets first from there on; the faster reader takes
/// more.
///
/// The lines go out in chunks of about `chunkBytes`, in the memory zstd decompressed them into
/// (not copied line by line into chunks of this type's own, as they were), through a window of
/// `windowChunks` chunks and as many times `chunkBytes` bytes (one chunk of any size always
/// fits: a line may be 64 MiB): the decoder waits while the slowest reader that
/// is reading is that far behind, so memory stays bounded. Each reader gets its lines in file
/// order, and the damage found in a chunk, with the chunk's lines of no call, goes to the first
/// reader that reads the chunk, at its place among that reader's lines: every line and every
/// issue reaches exactly one reader.
final class SharedLines: @unchecked Sendable {
    let path: String
    private let chunkBytes: Int
    private let windowChunks: Int
    private let maximumLineBytes: Int
    /// What a line's owner is decided by: its call, or nil for a line of no call (which goes
    /// with its chunk's damage to the chunk's first reader). Equal keys go to one reader, so a
    /// collision between two calls' keys only makes one reader read both.
    private let ownerKey: @Sendable (UnsafeBufferPointer<UInt8>) -> UInt64?

    /// Complete lines and the damage found among them, in file order.
    private struct Chunk {
        var lines: LineChunk
        /// A reader has taken the issues (the first to read the chunk reports them).
        var issuesTaken = false
    }

    private enum ReaderState { case notArrived, reading, done }

    private let condition = NSCondition()
    /// The chunks some reader still needs; `window[0]` is chunk number `windowStart`.
    private var window: [Chunk] = []
    private var windowStart = 0
    private var windowBytes = 0
    /// The most line bytes the window held at once (for tests of the bound).
    private(set) var mostBytesHeld = 0
    /// Each reader's next chunk number, while it reads.
    private var nextChunk: [Int]
    private var readerState: [ReaderState]
    /// The furthest chunk any reader has reached: a reader arriving now starts there.
    private var frontier = 0
    /// Each call's reader, by `ownerKey`. Lines of no call are not claimed one by one (a table
    /// of them would grow with a file of nothing else): they go to their chunk's first reader.
    private var owners: [UInt64: Int] = [:]
    /// Chunks every reader has passed, kept for their storage.
    private var spares: [LineChunk] = []
    private var started = false
    private var decoded = false

    /// Told the bytes the decoder reads from disk.
    private let progress: ReadProgress?

    init(
        path: String, readers: Int, chunkBytes: Int = 1 << 20, windowChunks: Int = 16, maximumLineBytes: Int = 64 << 20,
        progress: ReadProgress? = nil,
        ownerKey: @escaping @Sendable (UnsafeBufferPointer<UInt8>) -> UInt64? = SharedLines.callKey
    ) {
        self.progress = progress
        self.path = path
        self.maximumLineBytes = maximumLineBytes
        self.chunkBytes = chunkBytes
        self.windowChunks = windowChunks
        self.ownerKey = ownerKey
        nextChunk = Array(repeating: 0, count: readers)
        readerState = Array(repeating: .notArrived, count: readers)
    }

    /// A record's call id, hashed (FNV-1a): lines of one call have the same key.
    static func callKey(_ line: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard let call = RecordIngestor.callID(line) else { return nil }
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for b in call { h = (h ^ UInt64(b)) &* 0x0100_0000_01B3 }
        return h
    }

    /// Calls `line` for every line this reader claims, in file order, and `issue` for the damage
    /// it is first to meet. Every reader calls this once, or `leave` instead.
    func forEachLine(reader: Int, _ line: (UnsafeBufferPointer<UInt8>, Int) -> Void, issue: (LogIssue) -> Void) {
        condition.lock()
        if !started {
            // Started by the first reader to arrive: decoding ahead while the readers are still
            // on other files would only take a core from them.
            started = true
            Thread.detachNewThread {
                ReadingPriority.lowerCurrentThread()
                self.decode()
            }
        }
        readerState[reader] = .reading
        nextChunk[reader] = frontier
        condition.unlock()
        // The owners this reader has learnt, so that only a call's first line takes the lock.
        var mine: [UInt64: Bool] = [:]
        while let (chunk, firstReader) = next(reader: reader) {
            var issues = chunk.issues[...]
            for k in chunk.lines.indices {
                while let first = issues.first, first.linesBefore == k {
                    if firstReader { issue(first.issue) }
                    issues = issues.dropFirst()
                }
                let text = chunk.line(k)
                let owned: Bool
                if let key = ownerKey(text) {
                    if let known = mine[key] {
                        owned = known
                    } else {
                        owned = claim(key, reader: reader)
                        mine[key] = owned
                    }
                } else {
                    owned = firstReader
                }
                if owned { line(text, chunk.lineNumbers[k]) }
            }
            if firstReader { for rest in issues { issue(rest.issue) } }
            passed(reader: reader)
        }
    }

    /// A reader that will not read the file (the run was cancelled first): the decoder no
    /// longer waits for it.
    func leave(reader: Int) {
        condition.lock()
        readerState[reader] = .done
        dropPassedChunks()
        condition.broadcast()
        condition.unlock()
    }

    /// Whether `reader` owns the call with this key: it does if no reader had claimed it before.
    private func claim(_ key: UInt64, reader: Int) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if let owner = owners[key] { return owner == reader }
        owners[key] = reader
        return true
    }

    /// The reader's next chunk, and whether it is the first to read it (and so reports its
    /// issues and takes its lines of no call); nil at the file's end.
    private func next(reader: Int) -> (LineChunk, Bool)? {
        condition.lock()
        defer { condition.unlock() }
        while nextChunk[reader] - windowStart >= window.count {
            if decoded {
                readerState[reader] = .done
                dropPassedChunks()
                condition.broadcast()
                return nil
            }
            condition.wait()
        }
        let i = nextChunk[reader] - windowStart
        let first = !window[i].issuesTaken
        window[i].issuesTaken = true
        return (window[i].lines, first)
    }

    private func passed(reader: Int) {
        condition.lock()
        nextChunk[reader] += 1
        frontier = max(frontier, nextChunk[reader])
        dropPassedChunks()
        condition.broadcast()
        condition.unlock()
    }

    /// With the lock held: drops the chunks that every reading reader has passed. A reader that
    /// has not arrived needs none of them (it will start at the frontier).
    private func dropPassedChunks() {
        var slowest = frontier
        for r in readerState.indices where readerState[r] == .reading { slowest = min(slowest, nextChunk[r]) }
        while !window.isEmpty, windowStart < slowest {
            let passed = window.removeFirst()
            windowBytes -= passed.lines.byteCount
            windowStart += 1
            // A chunk that grew for a long line (up to 64 MiB) gives its memory back now rather
            // than wait among the spares until the line reader replaces it.
            spares.append(passed.lines.capacity > 2 * chunkBytes + (64 << 10) ? LineChunk() : passed.lines)
        }
        if decoded && window.isEmpty { spares = [] }  // the run holds this until it ends
    }

    /// With the lock held: whether any reader is reading or may still come.
    private var wanted: Bool { readerState.contains { $0 != .done } }

    /// Hands `chunk` to the readers and gives it back empty; false once every reader has left.
    private func publish(_ chunk: inout LineChunk) -> Bool {
        condition.lock()
        while !window.isEmpty, window.count >= windowChunks || windowBytes + chunk.byteCount > windowChunks * chunkBytes, wanted {
            condition.wait()
        }
        let wanted = wanted
        if wanted {
            window.append(Chunk(lines: chunk))
            windowBytes += chunk.byteCount
            mostBytesHeld = max(mostBytesHeld, windowBytes)
            condition.broadcast()
        }
        var spare = spares.popLast() ?? LineChunk()
        condition.unlock()
        spare.removeAll()
        chunk = spare
        return wanted
    }

    private struct EveryReaderLeft: Error {}

    private func decode() {
        do {
            var reader = LogLineReader(path: path, maximumLineBytes: maximumLineBytes)
            if let progress { reader.onRead = { progress.add(bytesRead: $0) } }
            try reader.forEachChunk(chunkBytes: chunkBytes) { chunk in
                if !publish(&chunk) { throw EveryReaderLeft() }
            }
        } catch {}
        condition.lock()
        decoded = true
        dropPassedChunks()
        condition.broadcast()
        condition.unlock()
    }
}
