#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Something in a log that could not be used, with where it was.
///
/// Lines are counted in the decompressed text (what `zstd -dc FILE | sed -n Np` shows for an
/// undamaged file); after a damaged zstd frame the count continues with the next good one.
public struct LogIssue: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Category: String, Sendable, CaseIterable {
        case unreadableFile = "unreadable file"
        case damagedFrame = "damaged zstd frame"
        case truncatedFile = "truncated file"
        case partialLine = "incomplete last line"
        case lineTooLong = "line too long"
        case invalidRecord = "invalid record"
        case missingDeltaBase = "delta without base"
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

    public init(path: String, maximumLineBytes: Int = 64 << 20) {
        self.path = path
        self.maximumLineBytes = maximumLineBytes
    }

    public var isCompressed: Bool { path.hasSuffix(".zst") }

    /// Calls `line` for every complete line (without its newline) and `issue` for damage.
    /// Returns the number of bytes read from disk.
    @discardableResult
    public func forEachLine(
        _ line: (UnsafeBufferPointer<UInt8>, Int) throws -> Void,
        issue: (LogIssue) -> Void
    ) rethrows -> Int {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else {
            issue(LogIssue(file: path, line: nil, category: .unreadableFile, message: String(cString: strerror(errno))))
            return 0
        }
        defer { close(fd) }
        var splitter = LineSplitter(maximumLineBytes: maximumLineBytes)
        let decoder = isCompressed ? ZstdDecoder() : nil
        var total = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkBytes, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = read(fd, buffer.baseAddress, chunkBytes)
            if n < 0 {
                if errno == EINTR { continue }
                issue(LogIssue(file: path, line: splitter.lineNumber, category: .unreadableFile, message: String(cString: strerror(errno))))
                break
            }
            if n == 0 { break }
            total += n
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
            if let decoder {
                try decoder.decompress(chunk, emit: { try splitter.feed($0, path: path, line: line, issue: issue) }, damaged: { d in
                    // Text decoded so far from the damaged frame may end mid-line: drop that tail.
                    splitter.discardPartial()
                    let resumed = d.skipped.map { "skipped \($0) bytes to the next frame" } ?? "skipping to the next frame, if one follows"
                    issue(LogIssue(file: path, line: splitter.lineNumber + 1, category: .damagedFrame,
                                   message: "\(d.message) at compressed byte \(d.offset); \(resumed)"))
                })
            } else {
                try splitter.feed(chunk, path: path, line: line, issue: issue)
            }
        }
        if let decoder, decoder.insideFrame {
            issue(LogIssue(file: path, line: splitter.lineNumber + 1, category: .truncatedFile,
                           message: "the file ends inside a zstd frame; every complete line before the cut was read"))
        }
        splitter.finish(path: path, issue: issue)
        return total
    }
}

/// Splits a byte stream into lines, carrying a partial line across chunks.
struct LineSplitter {
    let maximumLineBytes: Int
    private(set) var lineNumber = 0
    private var pending: [UInt8] = []
    private var skippingLongLine = false
    private var skippedBytes = 0

    init(maximumLineBytes: Int) { self.maximumLineBytes = maximumLineBytes }

    mutating func discardPartial() {
        pending.removeAll(keepingCapacity: true)
        skippingLongLine = false
    }

    mutating func feed(
        _ data: UnsafeRawBufferPointer, path: String,
        line: (UnsafeBufferPointer<UInt8>, Int) throws -> Void, issue: (LogIssue) -> Void
    ) rethrows {
        let bytes = data.bindMemory(to: UInt8.self)
        var start = 0
        while start < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: data[start...])
            guard let nl = memchr(rest.baseAddress!, 0x0A, rest.count) else {
                appendPartial(UnsafeBufferPointer(rebasing: bytes[start...]), path: path, issue: issue)
                return
            }
            let end = start + rest.baseAddress!.distance(to: UnsafeRawPointer(nl))
            lineNumber += 1
            if skippingLongLine {
                skippingLongLine = false
                issue(LogIssue(file: path, line: lineNumber, category: .lineTooLong,
                               message: "\(skippedBytes + end - start) bytes (limit \(maximumLineBytes)); skipped"))
            } else if pending.isEmpty {
                try line(trimCR(UnsafeBufferPointer(rebasing: bytes[start..<end])), lineNumber)
            } else {
                pending.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<end]))
                if pending.count > maximumLineBytes {
                    issue(LogIssue(file: path, line: lineNumber, category: .lineTooLong,
                                   message: "\(pending.count) bytes (limit \(maximumLineBytes)); skipped"))
                } else {
                    try pending.withUnsafeBufferPointer { try line(trimCR($0), lineNumber) }
                }
                pending.removeAll(keepingCapacity: pending.count < (1 << 20))
            }
            start = end + 1
        }
    }

    private mutating func appendPartial(_ part: UnsafeBufferPointer<UInt8>, path: String, issue: (LogIssue) -> Void) {
        if skippingLongLine { skippedBytes += part.count; return }
        if pending.count + part.count > maximumLineBytes {
            skippingLongLine = true
            skippedBytes = pending.count + part.count
            pending = []
            return
        }
        pending.append(contentsOf: part)
    }

    private func trimCR(_ b: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        if let last = b.last, last == 0x0D { return UnsafeBufferPointer(rebasing: b.dropLast()) }
        return b
    }

    mutating func finish(path: String, issue: (LogIssue) -> Void) {
        if skippingLongLine || !pending.isEmpty {
            issue(LogIssue(file: path, line: lineNumber + 1, category: .partialLine,
                           message: "\(skippingLongLine ? skippedBytes : pending.count) bytes after the last newline; skipped"))
        }
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
        try lines.forEachLine({ bytes, n in
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
/// recursively for `*.ndjson` and `*.ndjson.zst` (also `*.jsonl[.zst]`), sorted by path.
public enum LogFiles {
    public static func isLogFile(_ name: String) -> Bool {
        name.hasSuffix(".ndjson") || name.hasSuffix(".ndjson.zst") || name.hasSuffix(".jsonl") || name.hasSuffix(".jsonl.zst")
    }

    public static func find(_ paths: [String]) -> (files: [String], missing: [String]) {
        var files = [String](), missing = [String]()
        for p in paths {
            var st = stat()
            guard stat(p, &st) == 0 else { missing.append(p); continue }
            if (st.st_mode & S_IFMT) == S_IFDIR { files.append(contentsOf: walk(p)) } else { files.append(p) }
        }
        return (files.sorted(), missing)
    }

    private static func walk(_ dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var out = [String]()
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name == "." || name == ".." || name.hasPrefix(".") { continue }
            let path = dir.hasSuffix("/") ? dir + name : dir + "/" + name
            var st = stat()
            guard lstat(path, &st) == 0 else { continue }
            if (st.st_mode & S_IFMT) == S_IFDIR {
                out.append(contentsOf: walk(path))
            } else if (st.st_mode & S_IFMT) == S_IFREG, isLogFile(name) {
                out.append(path)
            }
        }
        return out
    }
}
