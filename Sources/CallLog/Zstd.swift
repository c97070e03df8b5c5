import CZstd

/// Streaming zstd compression into a growing byte buffer.
///
/// Call logs use one long frame per segment with `ZSTD_e_flush` at each flush point: the
/// decoder can decode every flushed block of a frame whose end never made it to disk, and
/// the shared window keeps the file about a third the size of one frame per flush
/// (measured with `callstats bench --log-size`).
public final class ZstdCompressor {
    private let cctx: OpaquePointer
    public let level: Int32

    public enum Directive {
        /// Buffer; output whatever zstd has ready.
        case `continue`
        /// Emit everything so far as complete blocks (decodable even if the frame never ends).
        case flush
        /// Close the frame (with its checksum).
        case end

        var raw: ZSTD_EndDirective {
            switch self {
            case .continue: ZSTD_e_continue
            case .flush: ZSTD_e_flush
            case .end: ZSTD_e_end
            }
        }
    }

    public init(level: Int32 = 3) {
        cctx = ZSTD_createCCtx()
        self.level = level
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level)
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1)
        // A 1 MiB window bounds memory (apps, readers) at every level; logs gain nothing beyond it.
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, 20)
    }

    deinit { ZSTD_freeCCtx(cctx) }

    /// Compresses `input` and appends the produced bytes to `output`.
    public func compress(_ input: UnsafeRawBufferPointer, _ directive: Directive, into output: inout [UInt8]) {
        var inBuf = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
        let chunk = ZSTD_CStreamOutSize()
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: chunk) { tmp in
            while true {
                var outBuf = ZSTD_outBuffer(dst: tmp.baseAddress, size: chunk, pos: 0)
                let remaining = ZSTD_compressStream2(cctx, &outBuf, &inBuf, directive.raw)
                // Compression cannot fail with valid parameters: a failure is a programming error.
                precondition(ZSTD_isError(remaining) == 0, "zstd: \(String(cString: ZSTD_getErrorName(remaining)))")
                output.append(contentsOf: UnsafeBufferPointer(rebasing: tmp[0..<outBuf.pos]))
                let inputDone = inBuf.pos == inBuf.size
                if directive == .continue ? inputDone : (inputDone && remaining == 0) { return }
            }
        }
    }

    public func compress(_ input: [UInt8], _ directive: Directive, into output: inout [UInt8]) {
        input.withUnsafeBytes { compress($0, directive, into: &output) }
    }

    /// One-shot compression of a whole buffer into one frame.
    public static func compressFrame(_ input: [UInt8], level: Int32 = 3) -> [UInt8] {
        var out = [UInt8]()
        ZstdCompressor(level: level).compress(input, .end, into: &out)
        return out
    }
}

/// Streaming zstd decompression that survives damage.
///
/// Feeds compressed chunks, hands back decompressed bytes. A corrupt frame is reported and
/// decoding resumes at the next frame's magic number; a file that ends inside a frame yields
/// every block that was completely written (the caller reports the cut).
public final class ZstdDecoder {
    private let dctx: OpaquePointer
    /// True while a frame has started but not finished.
    public private(set) var insideFrame = false
    /// Set when bytes after a corrupt frame are being skipped until the next frame starts.
    private var resyncing = false
    /// A few trailing bytes kept while resyncing, so a magic number split across chunks is found.
    private var carry: [UInt8] = []
    /// Compressed bytes consumed so far (for error positions).
    public private(set) var compressedOffset: Int = 0

    public struct Damage: Sendable, Equatable {
        /// Offset in the compressed file where the damage was detected.
        public var offset: Int
        public var message: String
        /// Compressed bytes skipped before decoding resumed at the next frame; nil when no frame
        /// starts in the input at hand (decoding resumes at the next one, if one follows).
        public var skipped: Int?
    }

    public init() {
        dctx = ZSTD_createDCtx()
        ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, 27)  // refuse absurd windows from hostile input
    }

    deinit { ZSTD_freeDCtx(dctx) }

    static let magic: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD]

    /// Decompresses `input`; `emit` receives decompressed bytes, `damaged` each corrupt region.
    public func decompress(
        _ input: UnsafeRawBufferPointer,
        emit: (UnsafeRawBufferPointer) throws -> Void,
        damaged: (Damage) -> Void
    ) rethrows {
        try withUnsafeTemporaryAllocation(byteCount: ZSTD_DStreamOutSize(), alignment: 16) { tmp in
            try decompress(input, into: { tmp }, wrote: { try emit(UnsafeRawBufferPointer(rebasing: tmp[..<$0])) }, damaged: damaged)
        }
    }

    /// Decompresses `input` straight into memory the caller owns: `space` gives where the next
    /// bytes go (at least one byte), and `wrote` how many went there. A reader that keeps lines
    /// where they were decoded (`LineChunker`) copies nothing.
    public func decompress(
        _ input: UnsafeRawBufferPointer,
        into space: () throws -> UnsafeMutableRawBufferPointer,
        wrote: (Int) throws -> Void,
        damaged: (Damage) -> Void
    ) rethrows {
        guard resyncing else { return try decode(input, into: space, wrote: wrote, damaged: damaged) }
        var joined = carry
        joined.append(contentsOf: input)
        let joinedOffset = compressedOffset - carry.count
        guard let at = ZstdDecoder.findMagic(joined) else {
            carry = Array(joined.suffix(3))
            compressedOffset += input.count
            return
        }
        resyncing = false
        carry = []
        compressedOffset = joinedOffset + at
        try joined.withUnsafeBytes {
            try decode(UnsafeRawBufferPointer(rebasing: $0[at...]), into: space, wrote: wrote, damaged: damaged)
        }
    }

    private func decode(
        _ src: UnsafeRawBufferPointer,
        into space: () throws -> UnsafeMutableRawBufferPointer,
        wrote: (Int) throws -> Void,
        damaged: (Damage) -> Void
    ) rethrows {
        // Offsets are `start + inBuf.pos`: zstd also consumes input while it empties a full
        // output buffer, and a running sum that missed that, or counted a position twice,
        // reported damage past the end of the file.
        let start = compressedOffset
        var inBuf = ZSTD_inBuffer(src: src.baseAddress, size: src.count, pos: 0)
        defer { if !resyncing { compressedOffset = start + inBuf.pos } }
        // A full output buffer may leave more output inside zstd, with no more input needed.
        var outputFull = false
        while inBuf.pos < inBuf.size || outputFull {
            let out = try space()
            var outBuf = ZSTD_outBuffer(dst: out.baseAddress, size: out.count, pos: 0)
            let r = ZSTD_decompressStream(dctx, &outBuf, &inBuf)
            if ZSTD_isError(r) != 0 {
                outputFull = false
                let errorAt = start + inBuf.pos
                ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only)
                insideFrame = false
                // Resume at the next frame start after the failing position.
                let rest = UnsafeRawBufferPointer(rebasing: src[min(inBuf.pos + 1, src.count)...])
                if let at = ZstdDecoder.findMagic(rest) {
                    let skip = at + (inBuf.pos + 1 <= src.count ? 1 : 0)
                    damaged(Damage(offset: errorAt, message: String(cString: ZSTD_getErrorName(r)), skipped: skip))
                    inBuf.pos = min(inBuf.pos + skip, inBuf.size)
                    continue
                } else {
                    damaged(Damage(offset: errorAt, message: String(cString: ZSTD_getErrorName(r)), skipped: nil))
                    resyncing = true
                    carry = Array(rest.suffix(3))
                    compressedOffset = start + src.count
                    return
                }
            }
            insideFrame = r != 0
            if outBuf.pos > 0 { try wrote(outBuf.pos) }
            outputFull = outBuf.pos == out.count
        }
    }

    static func findMagic<C: Collection>(_ bytes: C) -> Int? where C.Element == UInt8, C.Index == Int {
        var i = bytes.startIndex
        while i + 4 <= bytes.endIndex {
            if bytes[i] == 0x28, bytes[i + 1] == 0xB5, bytes[i + 2] == 0x2F, bytes[i + 3] == 0xFD { return i - bytes.startIndex }
            i += 1
        }
        return nil
    }

    /// Decompresses a whole buffer (tests and small files).
    public static func decompressAll(_ input: [UInt8]) -> (output: [UInt8], damage: [Damage], truncated: Bool) {
        let d = ZstdDecoder()
        var out = [UInt8]()
        var damage = [Damage]()
        input.withUnsafeBytes { d.decompress($0, emit: { out.append(contentsOf: $0) }, damaged: { damage.append($0) }) }
        return (out, damage, d.insideFrame)
    }
}
