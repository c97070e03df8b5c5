#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes records to one log file: NDJSON, zstd-compressed when the name ends in `.zst`,
/// gzip-compressed when it ends in `.gz` (`LogCompression`).
///
/// Synchronous and single-threaded by design; the in-app collector runs it on its own queue
/// and handles rotation, disk caps and back-pressure around it.
///
/// Crash safety: records are durable at `flush(sync: true)`. zstd output is one frame per segment
/// with a `ZSTD_e_flush` at every flush point, gzip output one member per flush point, so a file
/// cut anywhere still decodes up to its last flush point. A segment ends after `segmentBytes` of
/// text; each segment begins with full statistics snapshots, so damage inside one never spreads
/// to the next.
///
/// Damage is bounded by the writer, whatever its caller does: besides the caller's `flush()`, a
/// flush point is written after every `end` record and once `flushTextBytes` of text are
/// unflushed, and segments are `segmentBytes` long. One damaged byte then costs the text from
/// the flush point before it to the end of its segment, at most about `segmentBytes`; a cut costs
/// at most the text since the last flush point. Such flush points only write (no fsync): what
/// the caller makes durable, and when, is still its own `flush(sync: true)`.
///
/// Integrity: every flush, segment end and close first writes a checkpoint line
/// (`LogCheckpoint`) holding the length and XXH64 of the text written since the previous one,
/// so that readers use no line before its bytes are verified (`Data/FORMAT.md`).
public final class LogWriter {
    public struct Options: Sendable {
        /// zstd level. Logs are written once (a few KiB every few seconds per call) and kept:
        /// level 9 writes them 22 % smaller than level 3 at negligible cost at that rate
        /// (`callstats bench log-size`). Bulk writers (the simulator) choose 3 for speed.
        public var compressionLevel: Int32 = 9
        /// Write statistics as deltas against the previous snapshot of the same chain.
        public var deltaStats = true
        /// Uncompressed bytes per zstd frame (segment): the most one damaged byte can cost, as
        /// a reader resumes only at the next frame. Against 8 MiB, 1 MiB costs 2-3 % in size
        /// where few calls are live at once, 12 % in a `serve` log with 23 live and 41 % with 67
        /// (each segment restates its live chains in full): DECISIONS.md ("The log format").
        public var segmentBytes = 1 << 20
        /// A flush point (checkpoint and `ZSTD_e_flush`) once this much text is unflushed, so a
        /// cut or a damaged byte never costs more than this much before it, even from a writer
        /// that never calls `flush()` (the simulator, the importers).
        public var flushTextBytes = 1 << 20
        /// A flush point after every `end` record: a finished call is readable whatever
        /// happens to the file afterwards.
        public var flushAtCallEnd = true
        /// One independent frame per flush instead of flushing inside a long frame
        /// (larger files; kept for measurement and for readers that cannot stream).
        public var framePerFlush = false

        public init() {}
    }

    public let path: String
    public let options: Options
    private let fd: Int32
    private let compressor: (any LogCompressor)?
    private var encoder = StatsDeltaEncoder()
    private var text: [UInt8] = []
    private var compressed: [UInt8] = []
    private var segmentText = 0
    /// Text appended since the last flush point (checkpoint lines included).
    private var unflushedText = 0
    /// The text since the last checkpoint: hashed up to `hashedUpTo` in `text`, the rest not yet.
    private var sinceCheckpoint = XXH64()
    private var hashedUpTo = 0
    /// The `ts` a checkpoint carries: the last record's.
    private var lastTs: Int64 = 0
    private var frameOpen = false
    /// Bytes written to the file so far (compressed size for `.zst`).
    public private(set) var bytesWritten = 0
    /// Uncompressed NDJSON bytes written so far.
    public private(set) var textBytes = 0
    public private(set) var records = 0

    public enum OpenError: Error, CustomStringConvertible {
        case cannotOpen(path: String, reason: String)
        public var description: String {
            switch self {
            case .cannotOpen(let p, let r): "cannot open \(p) for writing: \(r)"
            }
        }
    }

    /// Creates (or appends to) `path`. Appending to a `.zst` file starts a new frame, which
    /// readers handle like any multi-frame file.
    public init(path: String, options: Options = Options()) throws {
        self.path = path
        self.options = options
        let compression = LogCompression.forPath(path)
        guard compression.isAvailable else {
            throw OpenError.cannotOpen(
                path: path, reason: "this build has no \(compression.rawValue) library; write \(LogCompression.platformDefault.fileSuffix) files")
        }
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw OpenError.cannotOpen(path: path, reason: String(cString: strerror(errno))) }
        compressor = compression.makeCompressor(level: options.compressionLevel)
    }

    deinit {
        try? close()
    }

    /// Encodes and buffers a record. Nothing reaches the file before `flush()` (or a full buffer).
    public func append(_ record: LogRecord) throws {
        try append(record, restored: nil)
    }

    /// `append(record)` for a record `StatsDeltaDecoder.restore` returned with `restored` (the
    /// record unchanged since): the same text is written, with less work to delta-encode it.
    public func append(_ record: LogRecord, restored: RestoredSnapshot?) throws {
        let toWrite = options.deltaStats ? encoder.encode(record, restored: restored) : record
        if record.kind == .end { encoder.forget(call: record.call) }
        let before = text.count
        lastTs = record.ts
        toWrite.write(to: &text)
        text.append(0x0A)
        segmentText += text.count - before
        unflushedText += text.count - before
        records += 1
        if segmentText >= options.segmentBytes {
            try endSegment()
        } else if unflushedText >= options.flushTextBytes || (options.flushAtCallEnd && record.kind == .end) {
            try flush()
        } else if text.count >= 1 << 20 {
            try drain(.continue)
        }
    }

    /// Makes everything appended so far decodable from the file; `sync` also fsyncs it.
    /// Nothing is written when nothing was appended since the last flush point (the writer's
    /// own, after an `end` record, leaves the caller's next one nothing to do).
    public func flush(sync: Bool = false) throws {
        if unflushedText > 0 {
            writeCheckpoint()
            try drain(options.framePerFlush ? .end : .flush)
            if options.framePerFlush { startSegment() }
            unflushedText = 0
        }
        if sync { fsync(fd) }
    }

    /// Ends the current segment (closing its zstd frame) and starts a new one.
    public func endSegment() throws {
        writeCheckpoint()
        try drain(.end)
        startSegment()
        unflushedText = 0
    }

    private func startSegment() {
        segmentText = 0
        frameOpen = false
        encoder.reset()
    }

    public func close() throws {
        guard fd >= 0, !closed else { return }
        // The descriptor is released even when the last write fails (a full disk): a caller that
        // retries must not leak one per attempt.
        defer {
            Glibc_close(fd)
            closed = true
        }
        writeCheckpoint()
        try drain(.end)
        fsync(fd)
    }

    /// Ends the text since the last checkpoint with a checkpoint covering it (none when there
    /// is no such text).
    private func writeCheckpoint() {
        guard !closed else { return }
        hashPendingText()
        guard sinceCheckpoint.count > 0 else { return }
        let before = text.count
        LogCheckpoint(bytes: sinceCheckpoint.count, xxh64: sinceCheckpoint.digest, ts: lastTs).write(to: &text)
        segmentText += text.count - before
        sinceCheckpoint = XXH64()
        hashedUpTo = text.count
    }

    private func hashPendingText() {
        guard hashedUpTo < text.count else { return }
        text.withUnsafeBytes { sinceCheckpoint.update(UnsafeRawBufferPointer(rebasing: $0[hashedUpTo...])) }
        hashedUpTo = text.count
    }

    private var closed = false

    private func drain(_ directive: CompressionDirective) throws {
        guard !closed else { return }
        if let compressor {
            if text.isEmpty && !frameOpen && directive != .continue { return }
            text.withUnsafeBytes { compressor.compress($0, directive, into: &compressed) }
            frameOpen = directive == .continue || (directive == .flush && !compressor.flushClosesFrame)
            try writeAll(compressed)
            compressed.removeAll(keepingCapacity: true)
        } else {
            try writeAll(text)
        }
        hashPendingText()
        textBytes += text.count
        text.removeAll(keepingCapacity: true)
        hashedUpTo = 0
    }

    private func writeAll(_ bytes: [UInt8]) throws {
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + off, bytes.count - off) }
            if n < 0 {
                if errno == EINTR { continue }
                throw WriteError(path: path, errno: errno)
            }
            off += n
        }
        bytesWritten += bytes.count
    }

    public struct WriteError: Error, CustomStringConvertible {
        public var path: String
        public var errno: Int32
        public var description: String { "cannot write \(path): \(String(cString: strerror(errno)))" }
    }
}

@inline(__always) private func Glibc_close(_ fd: Int32) {
    #if canImport(Glibc)
    _ = Glibc.close(fd)
    #elseif canImport(Darwin)
    _ = Darwin.close(fd)
    #endif
}
