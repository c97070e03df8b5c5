import CZlib

/// gzip compression for logs on platforms without zstd: one member per flush point.
///
/// Text between flushes is deflated into the open member; a flush (or segment end) finishes it
/// with its CRC-32 and length, so everything flushed decodes even if the file is cut right after,
/// and every member's integrity is checked on its own. Members restart the dictionary, which
/// costs some size against zstd's long frames: the price of a platform without zstd.
public final class GzipCompressor: LogCompressor {
    private var stream = z_stream()
    private static let outputPiece = 64 << 10

    public init(level: Int32 = 6) {
        // 15 window bits + 16: a gzip wrapper (header, CRC-32, length) rather than zlib's.
        let r = czlib_deflate_init2(&stream, level, 15 + 16)
        precondition(r == Z_OK, "zlib deflateInit2 failed: \(r)")
    }

    deinit { deflateEnd(&stream) }

    public var flushClosesFrame: Bool { true }

    public func compress(_ input: UnsafeRawBufferPointer, _ directive: CompressionDirective, into output: inout [UInt8]) {
        let finish = directive != .continue
        if input.isEmpty && !finish { return }
        stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.avail_in = uInt(input.count)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.outputPiece) { tmp in
            while true {
                stream.next_out = tmp.baseAddress
                stream.avail_out = uInt(Self.outputPiece)
                let r = deflate(&stream, finish ? Z_FINISH : Z_NO_FLUSH)
                // deflate fails only on a misused stream: a programming error.
                precondition(r == Z_OK || r == Z_STREAM_END || r == Z_BUF_ERROR, "zlib deflate: \(r)")
                output.append(contentsOf: UnsafeBufferPointer(rebasing: tmp[0..<(Self.outputPiece - Int(stream.avail_out))]))
                if finish ? r == Z_STREAM_END : (stream.avail_in == 0 && stream.avail_out != 0) { break }
            }
        }
        stream.next_in = nil
        if finish { deflateReset(&stream) }
    }

    /// One member holding all of `input` (tests and small files).
    public static func compressMember(_ input: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        input.withUnsafeBytes { GzipCompressor().compress($0, .end, into: &out) }
        return out
    }
}

/// Streaming gzip decompression that survives damage, member after member.
///
/// zlib checks a member's CRC-32 and length at its end (`frameEnded` is told then); a damaged
/// member is reported and decoding resumes at the next gzip header found after the damage. zlib
/// keeps its own window, so the output may move to another buffer at any time.
public final class GzipDecoder: LogDecompressor {
    private var stream = z_stream()
    public private(set) var insideFrame = false
    /// Compressed bytes consumed so far (for error positions); in `frameEnded`, where the member ends.
    public private(set) var compressedOffset = 0
    /// Bytes after damage are stepped over until the next member's header.
    private var search = FrameSearch(startLength: 3)
    private static let outputPiece = 64 << 10
    /// A gzip member starts with these: the magic number and the deflate method.
    private static let header: [UInt8] = [0x1F, 0x8B, 0x08]

    public init() {
        // 15 window bits + 16: gzip members only.
        let r = czlib_inflate_init2(&stream, 15 + 16)
        precondition(r == Z_OK, "zlib inflateInit2 failed: \(r)")
    }

    deinit { inflateEnd(&stream) }

    public var outputMayMove: Bool { true }
    public var outputReserve: Int { 0 }
    public var formatName: String { "gzip member" }
    public var frameIsChecked: Bool { insideFrame }

    public func decompress(
        _ input: UnsafeRawBufferPointer,
        into space: (_ minimum: Int) throws -> UnsafeMutableRawBufferPointer,
        wrote: (Int) throws -> Void,
        damaged: (DecompressionDamage) -> Void,
        frameEnded: () -> Void
    ) rethrows {
        guard search.active else { return try decode(input, into: space, wrote: wrote, damaged: damaged, frameEnded: frameEnded) }
        guard let rest = search.resume(input, offset: &compressedOffset, find: { Self.findHeader($0, from: 0) }) else { return }
        try rest.withUnsafeBytes { try decode($0, into: space, wrote: wrote, damaged: damaged, frameEnded: frameEnded) }
    }

    private func decode(
        _ src: UnsafeRawBufferPointer,
        into space: (Int) throws -> UnsafeMutableRawBufferPointer,
        wrote: (Int) throws -> Void,
        damaged: (DecompressionDamage) -> Void,
        frameEnded: () -> Void
    ) rethrows {
        let start = compressedOffset
        var pos = 0
        /// Where the current member began in `src` (-1: in an earlier input).
        var memberStart = insideFrame ? -1 : 0
        defer { if !search.active { compressedOffset = start + pos } }
        while pos < src.count {
            if !insideFrame {
                memberStart = pos
                insideFrame = true
            }
            let out = try space(Self.outputPiece)
            stream.next_in = UnsafeMutablePointer(mutating: src.baseAddress!.assumingMemoryBound(to: Bytef.self) + pos)
            stream.avail_in = uInt(src.count - pos)
            stream.next_out = out.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.avail_out = uInt(out.count)
            let r = inflate(&stream, Z_NO_FLUSH)
            pos = src.count - Int(stream.avail_in)
            let produced = out.count - Int(stream.avail_out)
            stream.next_in = nil
            stream.next_out = nil
            if produced > 0 { try wrote(produced) }
            switch r {
            case Z_STREAM_END:
                inflateReset(&stream)
                insideFrame = false
                compressedOffset = start + pos  // the member's end, while `frameEnded` runs
                frameEnded()
            case Z_OK, Z_BUF_ERROR:
                // Z_BUF_ERROR: no progress possible without more input (all of it was taken).
                continue
            default:
                let message = stream.msg.map { String(cString: $0) } ?? "zlib error \(r)"
                inflateReset(&stream)
                insideFrame = false
                // The next header is looked for from just after the damaged member's own: a
                // damaged header (a flag for an extra field, say) may have made zlib read on
                // into the members after it. What is decoded from a false header is damage
                // too, or lines that no checkpoint vouches for.
                if let next = Self.findHeader(src, from: memberStart >= 0 ? memberStart + 1 : pos) {
                    damaged(DecompressionDamage(offset: start + pos, message: "damaged gzip member (\(message))", skipped: max(0, next - pos)))
                    pos = next
                } else {
                    damaged(DecompressionDamage(offset: start + pos, message: "damaged gzip member (\(message))", skipped: nil))
                    search.begin(after: Array(src))
                    compressedOffset = start + src.count
                    return
                }
            }
        }
    }

    private static func findHeader(_ bytes: some Collection<UInt8>, from: Int) -> Int? {
        let b = Array(bytes)
        guard b.count >= header.count else { return nil }
        var i = from
        while i + header.count <= b.count {
            if b[i] == header[0] && b[i + 1] == header[1] && b[i + 2] == header[2] { return i }
            i += 1
        }
        return nil
    }

    /// Decompresses a whole buffer (tests and small files); `memberEnded` is told where each
    /// member ends in `input`.
    public static func decompressAll(
        _ input: [UInt8], memberEnded: (Int) -> Void = { _ in }
    ) -> (output: [UInt8], damage: [DecompressionDamage], truncated: Bool) {
        let d = GzipDecoder()
        var out = [UInt8]()
        var damage = [DecompressionDamage]()
        var buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: outputPiece, alignment: 16)
        defer { buffer.deallocate() }
        input.withUnsafeBytes {
            d.decompress(
                $0,
                into: { minimum in
                    if buffer.count < minimum {
                        buffer.deallocate()
                        buffer = .allocate(byteCount: minimum, alignment: 16)
                    }
                    return buffer
                }, wrote: { out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<$0])) },
                damaged: { damage.append($0) }, frameEnded: { memberEnded(d.compressedOffset) })
        }
        return (out, damage, d.insideFrame)
    }
}
