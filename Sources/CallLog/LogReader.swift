#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Something in a log that could not be used, with where it was.
///
/// Lines are counted in the decompressed text (what `zstd -dc FILE | sed -n Np` shows for an
/// undamaged file); after a damaged zstd frame (gzip member) the count continues with the next
/// good one.
public struct LogIssue: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Category: String, Sendable, CaseIterable {
        case unreadableFile = "unreadable file"
        /// A zstd frame or gzip member that could not be decoded.
        case damagedFrame = "damaged compressed frame"
        case truncatedFile = "truncated file"
        case partialLine = "incomplete last line"
        case lineTooLong = "line too long"
        case invalidRecord = "invalid record"
        case missingDeltaBase = "delta without base"
        /// Lines that their checkpoint's length and XXH64 do not vouch for (`LogCheckpoint`).
        case failedCheckpoint = "failed checkpoint"
        /// Records past one of a reader's bounds (`RecordIngestor`): an id too long, too many
        /// records for one call in one file.
        case beyondLimit = "record beyond a limit"
        /// Not a skip: more calls were open at once than a reader holds, so those open were
        /// handed on early, to be merged with their later records (nothing is lost).
        case callsHandedOnEarly = "calls handed on early"
        /// Not a skip: copies of one call (in two files, or in a file and the database) whose
        /// `call` or `end` records have the same time but differ; one was kept.
        case disagreeingCopies = "copies of a call that disagree"

        /// Whether this says what was done rather than what was skipped (it leaves the exit
        /// status and the skipped counts alone).
        public var isNote: Bool { self == .callsHandedOnEarly || self == .disagreeingCopies }

        /// "1 invalid record", "2 invalid records": how a summary counts them.
        public func counted(_ n: Int) -> String {
            guard n != 1 else { return "1 \(rawValue)" }
            let plural =
                switch self {
                case .unreadableFile: "unreadable files"
                case .damagedFrame: "damaged compressed frames"
                case .truncatedFile: "truncated files"
                case .partialLine: "incomplete last lines"
                case .lineTooLong: "lines too long"
                case .invalidRecord: "invalid records"
                case .missingDeltaBase: "deltas without base"
                case .failedCheckpoint: "failed checkpoints"
                case .beyondLimit: "records beyond a limit"
                case .callsHandedOnEarly: "times calls were handed on early"
                case .disagreeingCopies: "copies of calls that disagree"
                }
            return "\(n) \(plural)"
        }
    }

    public var file: String
    public var line: Int?
    public var category: Category
    public var message: String

    public init(file: String, line: Int?, category: Category, message: String) {
        self.file = file
        self.line = line
        self.category = category
        self.message = message
    }

    public var description: String {
        "\(file)\(line.map { ":\($0)" } ?? ""): \(category.rawValue): \(message)"
    }
}

/// Reads the lines of one log file, decompressing `.zst` on the fly, and reports damage
/// without stopping: every complete line that can be decoded is delivered.
///
/// This is the byte-level layer the analyser's fast path uses; `LogReader` builds records on it.
public struct LogLineReader {
    public var path: String
    /// Longer lines are skipped and reported (a log line is a few KiB; 64 MiB is damage).
    public var maximumLineBytes: Int
    public var chunkBytes = 1 << 20
    /// Told the size of each read from disk, as it happens (a progress line's share of a file).
    public var onRead: ((Int) -> Void)?

    public init(path: String, maximumLineBytes: Int = 64 << 20) {
        self.path = path
        self.maximumLineBytes = maximumLineBytes
    }

    /// What a log file holds, told by its first bytes rather than its name, so that a renamed
    /// or rotated log (`calls.ndjson.1`) is read as what it is.
    public enum Content: Equatable, Sendable {
        case zstd, gzip, plain
        /// Another compression, named: refused with a message that says so, rather than
        /// reported as one garbled line.
        case otherCompression(String)
        /// A packet capture (pcap or pcapng) given where logs are read: named, with the command
        /// that reads it, rather than reported line by line as invalid JSON.
        case packetCapture(String)
    }

    /// zstd frames (or skippable frames) or a gzip member at the start, else what the name says
    /// (`.zst`, `.gz`: so that damage at the start is skipped to the next frame); xz and bzip2
    /// are named.
    public static func content(firstBytes b: [UInt8], path: String) -> Content {
        func starts(_ magic: [UInt8]) -> Bool { b.count >= magic.count && b.starts(with: magic) }
        if starts([0x28, 0xB5, 0x2F, 0xFD]) || (b.count >= 4 && b[0] & 0xF0 == 0x50 && b[1...3] == [0x2A, 0x4D, 0x18]) { return .zstd }
        if starts([0x1F, 0x8B]) { return .gzip }
        if starts([0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]) { return .otherCompression("xz") }
        if starts([0x42, 0x5A, 0x68]) { return .otherCompression("bzip2") }
        for magic: [UInt8] in [[0xD4, 0xC3, 0xB2, 0xA1], [0xA1, 0xB2, 0xC3, 0xD4], [0x4D, 0x3C, 0xB2, 0xA1], [0xA1, 0xB2, 0x3C, 0x4D]]
        where starts(magic) { return .packetCapture("pcap") }
        if starts([0x0A, 0x0D, 0x0D, 0x0A]) { return .packetCapture("pcapng") }
        switch LogCompression.forPath(path) {
        case .zstd: return .zstd
        case .gzip: return .gzip
        case .none: return .plain
        }
    }

    /// What a file that is not a regular one is, in a user's words.
    static func fileType(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFDIR: "a folder"
        default: "file type \(String(mode & S_IFMT, radix: 8))"
        }
    }

    /// Calls `line` for every complete line (without its newline) and `issue` for damage.
    /// Returns the number of bytes read from disk.
    @discardableResult
    public func forEachLine(
        _ line: (UnsafeBufferPointer<UInt8>, Int) throws -> Void,
        issue: (LogIssue) -> Void
    ) rethrows -> Int {
        try forEachChunk(chunkBytes: 192 << 10) { chunk in
            try chunk.forEachLine(line, issue: issue)
        }
    }

    /// Hands out the file's lines a chunk at a time, in the buffer they were decoded into:
    /// `handOut` gets each chunk once its lines reach `chunkBytes` (or the file ends), and may
    /// keep it, leaving an empty chunk in its place (`SharedLines` publishes its chunks so).
    /// Damage is reported among the lines, at its place. Returns the bytes read from disk.
    @discardableResult
    public func forEachChunk(chunkBytes: Int, _ handOut: (inout LineChunk) throws -> Void) rethrows -> Int {
        var chunker = LineChunker(path: path, chunkBytes: chunkBytes, maximumLineBytes: maximumLineBytes)
        // Opened without blocking, so that a FIFO given as a log is refused rather than waited on.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            chunker.note(.unreadableFile, line: nil, String(cString: strerror(errno)))
            try chunker.finish(handOut)
            return 0
        }
        defer { close(fd) }
        var st = stat()
        let statFailure = fstat(fd, &st) == 0 ? nil : String(cString: strerror(errno))
        if statFailure != nil || (st.st_mode & S_IFMT) != S_IFREG {
            chunker.note(
                .unreadableFile, line: nil,
                statFailure ?? "not a regular file (\(Self.fileType(st.st_mode))); logs are read from regular files")
            try chunker.finish(handOut)
            return 0
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var firstBytes = [UInt8](repeating: 0, count: 6)
        let got = firstBytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        let content = Self.content(firstBytes: Array(firstBytes.prefix(max(got, 0))), path: path)
        if case .otherCompression(let name) = content {
            chunker.note(
                .unreadableFile, line: nil,
                "compressed with \(name); callstats reads zstd (.ndjson.zst), gzip (.ndjson.gz) and plain NDJSON logs (recompress with zstd)")
            try chunker.finish(handOut)
            return 0
        }
        if case .packetCapture(let name) = content {
            chunker.note(
                .unreadableFile, line: nil,
                "a \(name) packet capture, not a log: read it with `callstats capture -r \(path) -o DIR`, then analyse DIR")
            try chunker.finish(handOut)
            return 0
        }
        var total = 0
        let decoder: (any LogDecompressor)?
        switch content {
        case .gzip: decoder = GzipDecoder()
        case .zstd:
            #if canImport(CZstd) && !CALLSTATS_WITHOUT_ZSTD
            decoder = ZstdDecoder()
            #else
            chunker.note(.unreadableFile, line: nil, "compressed with zstd, which this build cannot read (it has no zstd library)")
            try chunker.finish(handOut)
            return 0
            #endif
        default: decoder = nil
        }
        chunker.holdsUnverified = decoder != nil
        // A compressed file is read into a buffer of its own and decoded into the chunk; a plain
        // one is read straight into the chunk.
        let compressed = decoder != nil ? UnsafeMutableRawBufferPointer.allocate(byteCount: self.chunkBytes, alignment: 16) : nil
        defer { compressed?.deallocate() }
        while true {
            let target = try compressed ?? chunker.space(handOut)
            let n = read(fd, target.baseAddress, min(target.count, self.chunkBytes))
            if n < 0 {
                if errno == EINTR { continue }
                chunker.note(.unreadableFile, line: chunker.lineNumber, String(cString: strerror(errno)))
                break
            }
            if n == 0 { break }
            total += n
            onRead?(n)
            if let decoder {
                try chunker.decompress(UnsafeRawBufferPointer(rebasing: target[0..<n]), with: decoder, handOut)
            } else {
                try chunker.wrote(n, handOut)
            }
        }
        if let decoder, decoder.insideFrame {
            chunker.note(
                .truncatedFile, line: chunker.lineNumber + 1,
                "the file ends inside a \(decoder.formatName); every complete line before the cut was read")
        }
        try chunker.finish(handOut)
        return total
    }
}

/// Complete lines of a log, in the buffer they were decoded into, with the damage found among
/// them (see `LogLineReader.forEachChunk`).
public struct LineChunk {
    /// The bytes; the lines lie at the start, up to `byteCount`.
    var buffer: LineBuffer
    /// Where each line lies in the buffer (without its newline, or a CR before it).
    public fileprivate(set) var lines: [Range<Int>] = []
    public fileprivate(set) var lineNumbers: [Int] = []
    /// Each issue, with the number of this chunk's lines before it.
    public fileprivate(set) var issues: [(linesBefore: Int, issue: LogIssue)] = []
    /// The bytes the lines take, with what separates them.
    public fileprivate(set) var byteCount = 0

    public init(capacity: Int = 0) { buffer = LineBuffer(capacity: max(capacity, 64)) }

    public var capacity: Int { buffer.bytes.count }

    /// Line `k`'s bytes, valid while the chunk is.
    public func line(_ k: Int) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: buffer.start + lines[k].lowerBound, count: lines[k].count)
    }

    /// Every line and issue, in file order.
    public func forEachLine(_ line: (UnsafeBufferPointer<UInt8>, Int) throws -> Void, issue: (LogIssue) -> Void) rethrows {
        var next = 0
        for k in lines.indices {
            while next < issues.count, issues[next].linesBefore == k {
                issue(issues[next].issue)
                next += 1
            }
            try line(self.line(k), lineNumbers[k])
        }
        while next < issues.count {
            issue(issues[next].issue)
            next += 1
        }
    }

    /// Empty, keeping the buffer.
    public mutating func removeAll() {
        lines.removeAll(keepingCapacity: true)
        lineNumbers.removeAll(keepingCapacity: true)
        issues.removeAll(keepingCapacity: true)
        byteCount = 0
    }
}

/// Memory that stays where it is while chunks holding it are passed around.
final class LineBuffer: @unchecked Sendable {
    let bytes: UnsafeMutableRawBufferPointer
    let start: UnsafePointer<UInt8>
    init(capacity: Int) {
        bytes = .allocate(byteCount: capacity, alignment: 16)
        start = UnsafePointer(bytes.bindMemory(to: UInt8.self).baseAddress!)
    }
    deinit { bytes.deallocate() }
}

/// Splits text into lines inside the chunk it is decoded into: the decoder writes into `space`,
/// `wrote` finds the lines that completes, and the incomplete line at a chunk's end moves to
/// the next chunk. Lines longer than `maximumLineBytes` are skipped and reported, and so are a
/// damaged frame's incomplete line and an incomplete last line.
///
/// zstd reads back into what it decoded (`ZstdDecoder.outputMayMove`), so while a frame is
/// being decoded the chunker never writes over decoded bytes: a skipped line's bytes stay in
/// the buffer until it is full, a chunk is handed out only once the decoder may move on, the
/// buffer before the current one (`behind`) is kept until the next move, and a new buffer has
/// room for a whole window after the incomplete line it starts with.
///
/// Verification (`LogCheckpoint`, `Data/FORMAT.md`): complete lines are held, not handed out,
/// until something vouches for their bytes: a checkpoint whose length and XXH64 match the text
/// since the previous one, or the end of a zstd frame or gzip member (its checksum checked). Held lines are
/// dropped and reported when a checkpoint does not match, when zstd finds damage, and at the
/// end of a compressed file that has checkpoints (an unflushed tail). In a file with no checkpoint so far,
/// held lines are also released at its end and whenever they pass `unverifiedHoldBytes`: such
/// files (older writers, the `zstd` tool) are read as they always were. Plain text (not
/// `holdsUnverified`) is held only once a checkpoint was seen: a flipped bit there alters one
/// byte, not what zstd decodes after it. Checkpoint lines themselves are never handed out.
///
/// Inside a frame whose own checksum is checked at its end (zstd's is an XXH64 of the same
/// decoded text), checkpoints are recorded rather than hashed (`deferred`): the frame's end
/// vouches for every line in it at once. They are hashed only when the frame is damaged or cut,
/// or holds more than `deferredHoldBytes`, and then release or drop lines as they would have.
/// Hashing each text twice cost a twentieth of `analyze`.
struct LineChunker {
    let path: String
    let chunkBytes: Int
    let maximumLineBytes: Int
    private(set) var lineNumber = 0
    private var chunk: LineChunk
    /// Bytes written into the chunk; the incomplete line is `lineStart..<filled`.
    private var filled = 0
    private var lineStart = 0
    private var skippingLongLine = false
    private var skippedBytes = 0
    /// Until the first line's first bytes are known: a UTF-8 byte-order mark there is not part
    /// of the record.
    private var atFileStart = true
    /// The buffer written before the current one: zstd may still read it, so it stays alive
    /// until the next move; then, if no one else holds it, the one after next reuses it.
    private var behind: LineBuffer?

    /// `chunk.lines[released...]` are held; their bytes (and those of lines skipped among them)
    /// lie in `heldStart..<lineStart`. The text since the last checkpoint is hashed into
    /// `sinceCheckpoint` up to `hashedUpTo` (the rest of `hashedUpTo..<lineStart` is not yet).
    private var released = 0
    private var heldStart = 0
    private var hashedUpTo = 0
    private var sinceCheckpoint = XXH64()
    /// The first line number among the held ones.
    private var firstHeldLine = 1
    private(set) var sawCheckpoint = false
    /// Set from the decoder before each write: the frame being decoded is checked at its end.
    private var frameIsChecked = false
    /// Checkpoints not yet compared, in order: where each line starts (`end`) and the byte after
    /// it, the lines before it (`lines`: `chunk.lines` indices) and its line number.
    private struct DeferredCheckpoint {
        var checkpoint: LogCheckpoint
        var end: Int
        var after: Int
        var lines: Int
        var line: Int
    }
    private var deferred: [DeferredCheckpoint] = []
    /// Held text past this is verified by its checkpoints without waiting for the frame's end.
    static let deferredHoldBytes = 4 << 20
    /// Whether lines are held before any checkpoint is seen (zstd input).
    var holdsUnverified: Bool
    /// In a file without checkpoints, held text past this is released unverified.
    static let unverifiedHoldBytes = 16 << 20

    init(path: String, chunkBytes: Int, maximumLineBytes: Int, holdsUnverified: Bool = false) {
        self.path = path
        self.holdsUnverified = holdsUnverified
        self.chunkBytes = max(chunkBytes, 1)
        self.maximumLineBytes = maximumLineBytes
        chunk = LineChunk(capacity: Self.capacity(for: self.chunkBytes))
    }

    /// Room for a chunk's lines and the write that completes them.
    private static func capacity(for chunkBytes: Int) -> Int { chunkBytes + max(chunkBytes / 4, 64) }

    mutating func note(_ category: LogIssue.Category, line: Int?, _ message: String) {
        chunk.issues.append((chunk.lines.count, LogIssue(file: path, line: line, category: category, message: message)))
    }

    /// Free memory after the bytes written, at least `minimum` bytes; when there is not that
    /// much, the released lines are handed out and the held and incomplete ones move to a
    /// buffer with room for them, `minimum` and `reserve` bytes (`ZstdDecoder.outputReserve`).
    mutating func space(atLeast minimum: Int = 1, reserve: Int = 0, _ handOut: (inout LineChunk) throws -> Void) rethrows -> UnsafeMutableRawBufferPointer {
        if chunk.capacity - filled < minimum { try handOutLines(handOut, room: minimum, reserve: reserve) }
        return UnsafeMutableRawBufferPointer(rebasing: chunk.buffer.bytes[filled...])
    }

    /// `n` bytes were written into the last `space`: records the lines they complete, and
    /// hands out a chunk's worth of released lines when the output `mayMove` to another buffer.
    mutating func wrote(_ n: Int, mayMove: Bool = true, reserve: Int = 0, _ handOut: (inout LineChunk) throws -> Void) rethrows {
        let base = UnsafeRawPointer(chunk.buffer.bytes.baseAddress!)
        var from = filled
        filled += n
        if atFileStart { skipByteOrderMark(from: &from, base: base) }
        while from < filled {
            // Blank lines are no records: passed over a run at a time, with nothing kept for
            // them (a few kilobytes of zstd can decode to gigabytes of newlines).
            if from == lineStart && !skippingLongLine && base.load(fromByteOffset: from, as: UInt8.self) == 0x0A {
                var p = from + 1
                while p < filled && base.load(fromByteOffset: p, as: UInt8.self) == 0x0A { p += 1 }
                lineNumber += p - from
                lineStart = p
                from = p
                continue
            }
            guard let nl = memchr(base + from, 0x0A, filled - from) else { break }
            let end = base.distance(to: UnsafeRawPointer(nl))
            lineNumber += 1
            if skippingLongLine {
                skippingLongLine = false
                note(.lineTooLong, line: lineNumber, "\(skippedBytes + end - lineStart) bytes (limit \(maximumLineBytes)); skipped")
            } else if end - lineStart > maximumLineBytes {
                note(.lineTooLong, line: lineNumber, "\(end - lineStart) bytes (limit \(maximumLineBytes)); skipped")
            } else {
                let trimmed = end > lineStart && base.load(fromByteOffset: end - 1, as: UInt8.self) == 0x0D ? end - 1 : end
                let line = UnsafeRawBufferPointer(start: base + lineStart, count: trimmed - lineStart)
                if LogCheckpoint.mayBe(line), let checkpoint = LogCheckpoint(line: line) {
                    sawCheckpoint = true
                    if frameIsChecked && end + 1 - heldStart <= Self.deferredHoldBytes {
                        deferred.append(DeferredCheckpoint(checkpoint: checkpoint, end: lineStart, after: end + 1, lines: chunk.lines.count, line: lineNumber))
                    } else {
                        verifyDeferred(base: base)
                        check(checkpoint, at: lineStart, base: base)
                        hashedUpTo = end + 1
                        heldStart = end + 1
                    }
                    lineStart = end + 1
                    from = end + 1
                    continue
                }
                // A file saved by an editor may start with a byte-order mark: no part of the record.
                let recordStart =
                    trimmed - lineStart >= 3 && base.load(fromByteOffset: lineStart, as: UInt8.self) == 0xEF
                        && base.load(fromByteOffset: lineStart + 1, as: UInt8.self) == 0xBB
                        && base.load(fromByteOffset: lineStart + 2, as: UInt8.self) == 0xBF
                    ? lineStart + 3 : lineStart
                if trimmed == recordStart {  // a blank line ended by CR LF: no record either
                    lineStart = end + 1
                    from = end + 1
                    continue
                }
                if released == chunk.lines.count { firstHeldLine = lineNumber }
                chunk.lines.append(recordStart..<trimmed)
                chunk.lineNumbers.append(lineNumber)
            }
            lineStart = end + 1
            from = end + 1
        }
        // An incomplete line past the limit is dropped as it comes: its bytes are passed over,
        // not written over (zstd may read them back).
        if skippingLongLine {
            skippedBytes += filled - lineStart
            lineStart = filled
        } else if filled - lineStart > maximumLineBytes {
            skippingLongLine = true
            skippedBytes = filled - lineStart
            lineStart = filled
        }
        if !sawCheckpoint && (!holdsUnverified || lineStart - heldStart > Self.unverifiedHoldBytes) { releaseHeld() }
        if heldStart >= chunkBytes && mayMove && !(released == 0 && chunk.issues.isEmpty) {
            try handOutLines(handOut, room: 1, reserve: reserve)
        }
    }

    /// Compares a checkpoint with the text since the previous one: releases the held lines
    /// before it (`chunk.lines[released..<lines]`, all held lines when nil) when it matches,
    /// drops and reports them when it does not.
    private mutating func check(
        _ checkpoint: LogCheckpoint, at checkpointStart: Int, base: UnsafeRawPointer, lines upTo: Int? = nil, line: Int? = nil
    ) {
        if hashedUpTo < checkpointStart {
            sinceCheckpoint.update(UnsafeRawBufferPointer(start: base + hashedUpTo, count: checkpointStart - hashedUpTo))
        }
        let upTo = upTo ?? chunk.lines.count
        if sinceCheckpoint.count == checkpoint.bytes && sinceCheckpoint.digest == checkpoint.xxh64 {
            released = upTo
        } else {
            let held = upTo - released
            let first = held > 0 ? chunk.lineNumbers[released] : 0
            let lines = held == 0 ? "no line" : held == 1 ? "line \(first)" : "\(held) lines (\(first)–\(chunk.lineNumbers[upTo - 1]))"
            drop(released..<upTo)
            note(
                .failedCheckpoint, line: line ?? lineNumber,
                "the \(sinceCheckpoint.count) bytes before it do not match its \(checkpoint.bytes) bytes and XXH64 \(String(checkpoint.xxh64, radix: 16)): damaged; \(lines) skipped"
            )
        }
        sinceCheckpoint = XXH64()
    }

    /// Compares the deferred checkpoints, in order, as `check` does when they are read: the
    /// frame they lie in was damaged or cut, or holds too much to wait for its end.
    private mutating func verifyDeferred(base: UnsafeRawPointer) {
        var removed = 0
        for var d in deferred {
            d.lines -= removed
            let before = chunk.lines.count
            check(d.checkpoint, at: d.end, base: base, lines: d.lines, line: d.line)
            removed += before - chunk.lines.count
            hashedUpTo = d.after
            heldStart = d.after
        }
        deferred.removeAll()
    }

    /// Removes held lines in the middle (a checkpoint that failed among deferred ones); the
    /// problems noted after them keep their place.
    private mutating func drop(_ range: Range<Int>) {
        guard !range.isEmpty else { return }
        if range.upperBound == chunk.lines.count { return dropHeld() }
        chunk.lines.removeSubrange(range)
        chunk.lineNumbers.removeSubrange(range)
        for i in chunk.issues.indices where chunk.issues[i].linesBefore > range.lowerBound {
            chunk.issues[i].linesBefore = max(range.lowerBound, chunk.issues[i].linesBefore - range.count)
        }
    }

    /// Hands the held lines on as they are (verified by a frame's checksum, or in a file
    /// without checkpoints so far, whose first checkpoint, if one comes, still covers them).
    private mutating func releaseHeld() {
        released = chunk.lines.count
        heldStart = lineStart
    }

    /// The text since the last checkpoint starts at the incomplete line (a frame ended, or
    /// damage broke the text).
    private mutating func restartRange() {
        hashedUpTo = lineStart
        sinceCheckpoint = XXH64()
    }

    /// Forgets the held lines (their bytes stay where they are, unreferenced).
    private mutating func dropHeld() {
        chunk.lines.removeSubrange(released...)
        chunk.lineNumbers.removeSubrange(released...)
    }

    /// Steps over a UTF-8 byte-order mark (EF BB BF) starting the file, once its first three
    /// bytes (or its first line, if shorter) are there.
    private mutating func skipByteOrderMark(from: inout Int, base: UnsafeRawPointer) {
        let pending = filled - lineStart
        if pending >= 3 {
            atFileStart = false
            let b = base + lineStart
            if b.load(as: UInt8.self) == 0xEF, b.load(fromByteOffset: 1, as: UInt8.self) == 0xBB, b.load(fromByteOffset: 2, as: UInt8.self) == 0xBF {
                lineStart += 3
                heldStart = lineStart
                hashedUpTo = lineStart
                from = max(from, lineStart)
            }
        } else if memchr(base + lineStart, 0x0A, pending) != nil {
            atFileStart = false
        }
    }

    /// Decompresses `input` into the chunk.
    mutating func decompress(
        _ input: UnsafeRawBufferPointer, with decoder: some LogDecompressor,
        _ handOut: (inout LineChunk) throws -> Void
    ) rethrows {
        try decoder.decompress(
            input, into: { try space(atLeast: $0, reserve: decoder.outputReserve, handOut) },
            wrote: {
                frameIsChecked = decoder.insideFrame && decoder.frameIsChecked
                try wrote($0, mayMove: decoder.outputMayMove, reserve: decoder.outputReserve, handOut)
            },
            damaged: { d in
                // The frame's checksum will not vouch for its lines: its checkpoints do, as read.
                verifyDeferred(base: UnsafeRawPointer(chunk.buffer.bytes.baseAddress!))
                // Text decoded so far from the damaged frame may end mid-line: drop that tail. (The
                // frame is over, so zstd reads none of it back.) Lines not yet vouched for go too:
                // zstd decoded them before it found the damage, so they may be altered.
                let held = chunk.lines.count - released
                dropHeld()
                filled = lineStart
                skippingLongLine = false
                releaseHeld()
                restartRange()
                let resumed = d.skipped.map { "skipped \($0) bytes to the next frame" } ?? "skipping to the next frame, if one follows"
                let lost =
                    held == 0
                    ? ""
                    : held == 1
                        ? "; the line before it in the frame (\(lineNumber)) skipped, unverified"
                        : "; the \(held) lines before it in the frame since the last checkpoint (\(lineNumber - held + 1)–\(lineNumber)) skipped, unverified"
                note(.damagedFrame, line: lineNumber + 1, "\(d.message) at compressed byte \(d.offset)\(lost); \(resumed)")
            },
            frameEnded: {
                // The frame's checksum (when it has one) matched: what it holds is as written.
                if lineStart == filled {
                    deferred.removeAll()
                    releaseHeld()
                    restartRange()
                } else {
                    verifyDeferred(base: UnsafeRawPointer(chunk.buffer.bytes.baseAddress!))
                }
            })
    }

    /// Reports an incomplete last line and hands out what is left: in a compressed file with
    /// checkpoints, lines after the last one are an unflushed tail, reported and dropped (zstd
    /// decoded them, but nothing vouches for them); in plain text they are used as they are.
    mutating func finish(_ handOut: (inout LineChunk) throws -> Void) rethrows {
        // A frame cut before its end: its checkpoints vouch for what they cover.
        verifyDeferred(base: UnsafeRawPointer(chunk.buffer.bytes.baseAddress!))
        if skippingLongLine || filled > lineStart {
            note(
                .partialLine, line: lineNumber + 1,
                "\(skippingLongLine ? skippedBytes : filled - lineStart) bytes after the last newline; skipped")
            filled = lineStart
        }
        let held = chunk.lines.count - released
        if sawCheckpoint && holdsUnverified && held > 0 {
            let first = firstHeldLine
            dropHeld()
            note(
                .truncatedFile, line: first,
                "\(held == 1 ? "line \(first) follows" : "\(held) lines (\(first)–\(lineNumber)) follow") the last checkpoint: written but never flushed (the file was cut); skipped"
            )
        }
        releaseHeld()
        chunk.byteCount = heldStart
        if !chunk.lines.isEmpty || !chunk.issues.isEmpty { try handOut(&chunk) }
    }

    /// Hands out the released lines (if any) and moves the held and incomplete ones to the
    /// start of a buffer with room for `room` and `reserve` more bytes.
    private mutating func handOutLines(_ handOut: (inout LineChunk) throws -> Void, room: Int, reserve: Int) rethrows {
        let previous = chunk.buffer
        let rest = filled - heldStart
        // What moves is hashed first where it lies (all of it complete lines or bytes passed over);
        // with checkpoints deferred, only what lies before the held text (it does not move).
        let hashTo = deferred.isEmpty ? lineStart : heldStart
        if hashedUpTo < hashTo {
            sinceCheckpoint.update(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(previous.bytes)[hashedUpTo..<hashTo]))
            hashedUpTo = hashTo
        }
        let linesHandedOut = released
        let heldLines = chunk.lines[released...].map { ($0.lowerBound - heldStart)..<($0.upperBound - heldStart) }
        let heldNumbers = Array(chunk.lineNumbers[released...])
        dropHeld()
        chunk.byteCount = heldStart
        if !chunk.lines.isEmpty || !chunk.issues.isEmpty {
            // Issues noted among held lines come after the lines handed out.
            for i in chunk.issues.indices where chunk.issues[i].linesBefore > chunk.lines.count {
                chunk.issues[i].linesBefore = chunk.lines.count
            }
            try handOut(&chunk)
            chunk.removeAll()
        }
        // What the buffer must hold, and what a new one gets: room for a long line to double
        // (geometric growth), and an eighth more so that buffers passed back fit again.
        let required = rest + reserve + room
        let allocated = max(Self.capacity(for: chunkBytes), (2 * rest + reserve + room) * 9 / 8)
        // A buffer grown for a long line goes back to the usual size once the line is out.
        func fits(_ buffer: LineBuffer) -> Bool { buffer.bytes.count >= required && buffer.bytes.count <= 2 * allocated }
        // A consumer that read the lines where they lay gives the buffer back: the next one is
        // then the buffer behind, while zstd reads back into this one.
        if chunk.buffer === previous {
            var reused = behind
            behind = nil
            chunk.buffer = reused != nil && isKnownUniquelyReferenced(&reused!) && fits(reused!) ? reused! : LineBuffer(capacity: allocated)
        } else if !fits(chunk.buffer) {
            chunk.buffer = LineBuffer(capacity: allocated)
        }
        behind = previous
        if rest > 0 { memmove(chunk.buffer.bytes.baseAddress!, previous.bytes.baseAddress! + heldStart, rest) }
        chunk.lines.removeAll(keepingCapacity: true)
        chunk.lines.append(contentsOf: heldLines)
        chunk.lineNumbers.removeAll(keepingCapacity: true)
        chunk.lineNumbers.append(contentsOf: heldNumbers)
        released = 0
        filled = rest
        lineStart -= heldStart
        hashedUpTo = deferred.isEmpty ? lineStart : hashedUpTo - heldStart
        for i in deferred.indices {
            deferred[i].end -= heldStart
            deferred[i].after -= heldStart
            deferred[i].lines -= linesHandedOut
        }
        heldStart = 0
        chunk.byteCount = 0
    }
}

/// Reads a log file as records, with statistics deltas restored to full snapshots.
///
/// Malformed lines are reported (file and line) and skipped; the rest of the file is read.
/// Unknown kinds and fields are kept.
public struct LogReader {
    public var lines: LogLineReader

    public init(path: String) { lines = LogLineReader(path: path) }

    /// Calls `record` for every valid record in file order, `issue` for everything skipped.
    public func forEachRecord(
        _ record: (LogRecord, Int) throws -> Void,
        issue: (LogIssue) -> Void
    ) rethrows {
        var deltas = StatsDeltaDecoder()
        let path = lines.path
        try lines.forEachLine(
            { bytes, n in
                let parsed: LogRecord
                do throws(RecordError) { parsed = try LogRecord(parsing: bytes) } catch {
                    issue(LogIssue(file: path, line: n, category: .invalidRecord, message: error.description))
                    return
                }
                let full: LogRecord
                do throws(StatsDeltaError) { full = try deltas.decode(parsed) } catch {
                    issue(LogIssue(file: path, line: n, category: .missingDeltaBase, message: error.description))
                    return
                }
                if full.kind == .end { deltas.forget(call: full.call) }
                try record(full, n)
            }, issue: issue)
    }

    /// All records and issues of a file (tests and small files).
    public func readAll() -> (records: [LogRecord], issues: [LogIssue]) {
        var records = [LogRecord](), issues = [LogIssue]()
        forEachRecord({ r, _ in records.append(r) }, issue: { issues.append($0) })
        return (records, issues)
    }
}

/// Finds log files under paths given by a user: files as they are, folders searched
/// recursively for `*.ndjson`, `*.ndjson.zst` and `*.ndjson.gz` (also `*.jsonl[.zst|.gz]`),
/// sorted by path.
///
/// Symbolic links inside folders are followed, as a user who links logs into a folder expects;
/// a folder reached twice (a link back up the tree) is searched once. A file reached by two
/// paths is listed under both: the run's ledger reads content once, whatever its name.
public enum LogFiles {
    public static func isLogFile(_ name: String) -> Bool {
        [".ndjson", ".ndjson.zst", ".ndjson.gz", ".jsonl", ".jsonl.zst", ".jsonl.gz"].contains { name.hasSuffix($0) }
    }

    public struct Found: Sendable {
        public var files: [String] = []
        /// Paths given that do not exist (or links that lead nowhere).
        public var missing: [String] = []
        /// Folders given that hold no log file at any depth: named so that a mistyped or
        /// still-empty folder is not taken for a run that read everything.
        public var foldersWithoutLogs: [String] = []
    }

    public static func find(_ paths: [String]) -> Found {
        var found = Found()
        var visited = Set<FileIdentity>()
        for p in paths {
            var st = stat()
            guard stat(p, &st) == 0 else { found.missing.append(p); continue }
            if (st.st_mode & S_IFMT) == S_IFDIR {
                // A folder inside one given before was searched with it (and not again).
                guard !visited.contains(FileIdentity(st)) else { continue }
                let before = found.files.count
                walk(p, identity: FileIdentity(st), visited: &visited, into: &found)
                if found.files.count == before { found.foldersWithoutLogs.append(p) }
            } else {
                found.files.append(p)
            }
        }
        found.files.sort()
        return found
    }

    private struct FileIdentity: Hashable {
        var device: UInt64
        var inode: UInt64
        init(_ st: stat) { device = UInt64(st.st_dev); inode = UInt64(st.st_ino) }
    }

    private static func walk(_ dir: String, identity: FileIdentity, visited: inout Set<FileIdentity>, into found: inout Found) {
        guard visited.insert(identity).inserted, let d = opendir(dir) else { return }
        var names = [String]()
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name == "." || name == ".." || name.hasPrefix(".") { continue }
            names.append(name)
        }
        closedir(d)
        // In name order, so that a folder reached by two paths is listed under the same one
        // every run (readdir's order is the file system's).
        for name in names.sorted() {
            let path = dir.hasSuffix("/") ? dir + name : dir + "/" + name
            var st = stat()
            guard lstat(path, &st) == 0 else { continue }
            if (st.st_mode & S_IFMT) == S_IFLNK {
                guard stat(path, &st) == 0 else {
                    if isLogFile(name) { found.missing.append(path) }  // a link to a log that is gone
                    continue
                }
            }
            if (st.st_mode & S_IFMT) == S_IFDIR {
                walk(path, identity: FileIdentity(st), visited: &visited, into: &found)
            } else if (st.st_mode & S_IFMT) == S_IFREG, isLogFile(name) {
                found.files.append(path)
            }
        }
    }
}
