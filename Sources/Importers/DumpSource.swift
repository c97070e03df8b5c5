import CallLog
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

#if canImport(Glibc)
private let systemRead = Glibc.read
#elseif canImport(Darwin)
private let systemRead = Darwin.read
#endif

/// Why a dump could not be read (fully), with where: the file, and the line and column in its
/// decompressed text when the problem is in the content.
public struct DumpError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int?
    public var column: Int?
    public var message: String

    public init(file: String, line: Int? = nil, column: Int? = nil, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
    }

    public var description: String {
        var place = file
        if let line { place += ":\(line)" }
        if let column { place += ":\(column)" }
        return "\(place): \(message)"
    }
}

/// The decompressed bytes of a dump file, a chunk at a time: gzip (Chrome's "compressed" dump
/// and rtcstats-server's stored dumps), zstd, or plain, told by the first bytes, not the name
/// (`StreamCompression`), decompressed by `CallLog`'s `StreamDecompressor`.
///
/// Memory is bounded whatever the file's size or compression ratio: one input chunk, and the
/// output of one small slice of it at a time (`sliceBytes`: a slice of a zstd frame made of
/// run-length blocks decodes to at most about 16 MiB, of deflate to far less).
public final class DumpSource {
    public typealias Compression = StreamCompression

    public let path: String
    public var compression: Compression { decompressor.compression }
    private let fd: Int32
    private var input: [UInt8]
    private var inputStart = 0
    private var inputEnd = 0
    private var atEOF = false
    private var decompressor: StreamDecompressor
    /// Output decompressed and not yet handed out.
    private var pending: [UInt8] = []
    private var pendingStart = 0
    /// Decompressed bytes handed out so far.
    public private(set) var produced = 0
    /// Compressed bytes given to the decompressor at a time.
    static let sliceBytes = 512

    public init(path: String, chunkBytes: Int = 1 << 18) throws(DumpError) {
        self.path = path
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw DumpError(file: path, message: "cannot open: \(String(cString: strerror(errno)))") }
        self.fd = fd
        input = [UInt8](repeating: 0, count: chunkBytes)
        decompressor = StreamDecompressor(.plain)
        try fill()
        let compression = StreamCompression(firstBytes: input[inputStart..<inputEnd])
        if compression != .plain { decompressor = StreamDecompressor(compression) }
    }

    deinit { close(fd) }

    private func fill() throws(DumpError) {
        if inputStart > 0 {
            let n = inputEnd - inputStart
            if n > 0 { input.withUnsafeMutableBytes { p in _ = memmove(p.baseAddress!, p.baseAddress! + inputStart, n) } }
            inputEnd = n
            inputStart = 0
        }
        while inputEnd < input.count && !atEOF {
            let got = input.withUnsafeMutableBytes { p in systemRead(fd, p.baseAddress! + inputEnd, p.count - inputEnd) }
            if got < 0 {
                if errno == EINTR { continue }
                throw DumpError(file: path, message: "cannot read: \(String(cString: strerror(errno)))")
            }
            if got == 0 { atEOF = true } else { inputEnd += got }
        }
    }

    /// Fills `buffer` with the next decompressed bytes; 0 at the end of the file.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(DumpError) -> Int {
        while true {
            if pendingStart < pending.count {
                let n = min(buffer.count, pending.count - pendingStart)
                pending.withUnsafeBytes { p in buffer.baseAddress!.copyMemory(from: p.baseAddress! + pendingStart, byteCount: n) }
                pendingStart += n
                produced += n
                return n
            }
            if inputStart == inputEnd {
                if atEOF {
                    if decompressor.insideFrame {
                        throw DumpError(file: path, message: "the \(compression.rawValue) stream is cut short: the file ends inside it")
                    }
                    return 0
                }
                try fill()
                continue
            }
            if compression == .plain {
                let n = min(buffer.count, inputEnd - inputStart)
                input.withUnsafeBytes { p in buffer.baseAddress!.copyMemory(from: p.baseAddress! + inputStart, byteCount: n) }
                inputStart += n
                produced += n
                return n
            }
            pending.removeAll(keepingCapacity: true)
            pendingStart = 0
            let slice = min(Self.sliceBytes, inputEnd - inputStart)
            do {
                try input.withUnsafeBytes { p in
                    try decompressor.decompress(UnsafeRawBufferPointer(rebasing: p[inputStart..<(inputStart + slice)])) {
                        pending.append(contentsOf: $0)
                    }
                }
            } catch StreamDecompressionError.damaged(let why, let decompressed) {
                throw DumpError(file: path, message: "damaged \(compression.rawValue) data after \(decompressed) decompressed bytes: \(why)")
            } catch {
                throw DumpError(file: path, message: "\(error)")
            }
            inputStart += slice
        }
    }
}

/// Reads a `DumpSource` byte by byte (for the JSON tokenizer) or line by line, counting lines
/// and columns for error messages.
public final class DumpReader {
    public let source: DumpSource
    private var buffer: UnsafeMutableRawBufferPointer
    private var pos = 0
    private var end = 0
    /// 1-based line and column of the next byte.
    public private(set) var line = 1
    public private(set) var column = 1

    public init(source: DumpSource, chunkBytes: Int = 1 << 18) {
        self.source = source
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkBytes, alignment: 16)
    }

    deinit { buffer.deallocate() }

    public var path: String { source.path }

    /// Bytes of the decompressed text consumed so far.
    public var offset: Int { source.produced - (end - pos) }

    public func error(_ message: String) -> DumpError {
        DumpError(file: source.path, line: line, column: column, message: message)
    }

    @inline(__always)
    private func refill() throws(DumpError) -> Bool {
        if pos < end { return true }
        end = try source.read(into: buffer)
        pos = 0
        return end > 0
    }

    /// The next byte without consuming it; nil at the end.
    @inline(__always)
    public func peek() throws(DumpError) -> UInt8? {
        guard try refill() else { return nil }
        return buffer[pos]
    }

    /// The next byte; nil at the end.
    @inline(__always)
    public func next() throws(DumpError) -> UInt8? {
        guard try refill() else { return nil }
        let b = buffer[pos]
        pos += 1
        if b == 0x0A { line += 1; column = 1 } else { column += 1 }
        return b
    }

    public func skipWhitespace() throws(DumpError) {
        while try refill() {
            while pos < end {
                let c = buffer[pos]
                if c == 0x0A { line += 1; column = 1 } else if c == 0x20 || c == 0x0D || c == 0x09 { column += 1 } else { return }
                pos += 1
            }
        }
    }

    public func stringRun(into out: inout [UInt8]) throws(DumpError) -> UInt8? {
        while try refill() {
            let start = pos
            while pos < end {
                let c = buffer[pos]
                if c == 0x22 || c == 0x5C || c < 0x20 { break }
                pos += 1
            }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[start..<pos]))
            column += pos - start
            if pos < end { return buffer[pos] }
        }
        return nil
    }

    /// The next line without its `\n` (and `\r`), or nil at the end of the file. A line longer
    /// than `maximumBytes` is an error naming its line: dumps' lines are a report each.
    public func nextLine(maximumBytes: Int = 256 << 20) throws(DumpError) -> [UInt8]? {
        var out = [UInt8]()
        var sawBytes = false
        let startLine = line
        while true {
            guard try refill() else {
                if sawBytes { line += 1; column = 1 }
                return sawBytes ? out : nil
            }
            sawBytes = true
            let available = UnsafeRawBufferPointer(rebasing: buffer[pos..<end])
            if let i = available.firstIndex(of: 0x0A) {
                out.append(contentsOf: available[available.startIndex..<i])
                pos += i + 1
                line += 1
                column = 1
                if out.last == 0x0D { out.removeLast() }
                return out
            }
            out.append(contentsOf: available)
            pos = end
            if out.count > maximumBytes {
                throw DumpError(file: source.path, line: startLine, message: "line longer than \(maximumBytes >> 20) MiB")
            }
        }
    }
}
