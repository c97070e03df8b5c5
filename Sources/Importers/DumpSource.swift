import CZlib
import CZstd
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
/// and rtcstats-server's stored dumps), zstd, or plain, told by the first bytes, not the name.
/// Memory is one input and one output chunk, whatever the file's size.
public final class DumpSource {
    public enum Compression: String, Sendable { case gzip, zstd, plain }

    public let path: String
    public private(set) var compression: Compression = .plain
    private let fd: Int32
    private var input: [UInt8]
    private var inputStart = 0
    private var inputEnd = 0
    private var atEOF = false
    private var inflater: UnsafeMutablePointer<z_stream>?
    private var zstd: OpaquePointer?
    /// True while a compressed stream has started and not ended (a cut file ends inside one).
    private var insideStream = false
    /// Decompressed bytes handed out so far.
    public private(set) var produced = 0

    public init(path: String, chunkBytes: Int = 1 << 18) throws(DumpError) {
        self.path = path
        fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw DumpError(file: path, message: "cannot open: \(String(cString: strerror(errno)))") }
        input = [UInt8](repeating: 0, count: chunkBytes)
        try fill()
        let head = Array(input[inputStart..<inputEnd].prefix(4))
        if head.count >= 2 && head[0] == 0x1F && head[1] == 0x8B {
            compression = .gzip
            let z = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
            z.initialize(to: z_stream())
            // 15 + 16: a gzip wrapper (members are restarted one after another below).
            guard inflateInit2_(z, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
                z.deallocate()
                throw DumpError(file: path, message: "zlib could not be initialised")
            }
            inflater = z
        } else if head.count == 4 && head == [0x28, 0xB5, 0x2F, 0xFD] {
            compression = .zstd
            zstd = ZSTD_createDStream()
            ZSTD_initDStream(zstd)
        }
    }

    deinit {
        if let inflater {
            inflateEnd(inflater)
            inflater.deallocate()
        }
        if let zstd { ZSTD_freeDStream(zstd) }
        close(fd)
    }

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
            if inputStart == inputEnd {
                if atEOF {
                    if insideStream {
                        throw DumpError(file: path, message: "the \(compression.rawValue) stream is cut short: the file ends inside it")
                    }
                    return 0
                }
                try fill()
                continue
            }
            let n: Int
            switch compression {
            case .plain:
                n = min(buffer.count, inputEnd - inputStart)
                input.withUnsafeBytes { p in buffer.baseAddress!.copyMemory(from: p.baseAddress! + inputStart, byteCount: n) }
                inputStart += n
            case .gzip:
                n = try inflate(into: buffer)
            case .zstd:
                n = try unzstd(into: buffer)
            }
            produced += n
            if n > 0 { return n }
            if inputStart == inputEnd && !atEOF { try fill() }
        }
    }

    private func inflate(into buffer: UnsafeMutableRawBufferPointer) throws(DumpError) -> Int {
        guard let z = inflater else { return 0 }
        if !insideStream {
            // A new member starts here (gzip files may hold several, one after another).
            inflateReset(z)
            insideStream = true
        }
        let available = inputEnd - inputStart
        let result: Int32 = input.withUnsafeMutableBytes { p in
            z.pointee.next_in = p.baseAddress!.assumingMemoryBound(to: Bytef.self) + inputStart
            z.pointee.avail_in = uInt(available)
            z.pointee.next_out = buffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
            z.pointee.avail_out = uInt(buffer.count)
            return CZlib.inflate(z, Z_NO_FLUSH)
        }
        inputStart += available - Int(z.pointee.avail_in)
        let n = buffer.count - Int(z.pointee.avail_out)
        switch result {
        case Z_OK, Z_BUF_ERROR:
            return n
        case Z_STREAM_END:
            insideStream = false
            return n
        default:
            let why = z.pointee.msg.map { String(cString: $0) } ?? "code \(result)"
            throw DumpError(file: path, message: "damaged gzip data after \(produced + n) decompressed bytes: \(why)")
        }
    }

    private func unzstd(into buffer: UnsafeMutableRawBufferPointer) throws(DumpError) -> Int {
        let available = inputEnd - inputStart
        var inBuf = ZSTD_inBuffer(src: nil, size: 0, pos: 0)
        var outBuf = ZSTD_outBuffer(dst: buffer.baseAddress, size: buffer.count, pos: 0)
        let r: Int = input.withUnsafeBytes { p in
            inBuf = ZSTD_inBuffer(src: p.baseAddress! + inputStart, size: available, pos: 0)
            return ZSTD_decompressStream(zstd, &outBuf, &inBuf)
        }
        inputStart += inBuf.pos
        if ZSTD_isError(r) != 0 {
            throw DumpError(
                file: path, message: "damaged zstd data after \(produced + outBuf.pos) decompressed bytes: \(String(cString: ZSTD_getErrorName(r)))")
        }
        // 0: a frame is complete and fully flushed.
        insideStream = r != 0
        return outBuf.pos
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
