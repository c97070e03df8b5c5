#if canImport(CZstd) && !CALLSTATS_WITHOUT_ZSTD
import CZstd

/// Streaming zstd compression into a growing byte buffer.
///
/// Call logs use one long frame per segment with `ZSTD_e_flush` at each flush point: the
/// decoder can decode every flushed block of a frame whose end never made it to disk, and
/// the shared window keeps the file about a third the size of one frame per flush
/// (measured with `callstats bench --log-size`).
public final class ZstdCompressor: LogCompressor {
    private let cctx: OpaquePointer
    public let level: Int32

    public typealias Directive = CompressionDirective

    /// A 1 MiB window (`windowLog` 20) bounds memory (apps, readers) at every level; logs gain
    /// nothing beyond it. (Tests use smaller ones, to make the decoder move its output often.)
    public init(level: Int32 = 3, windowLog: Int32 = 20) {
        cctx = ZSTD_createCCtx()
        self.level = level
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level)
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1)
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, windowLog)
    }

    deinit { ZSTD_freeCCtx(cctx) }

    /// A flush emits complete blocks inside the open frame, which goes on.
    public var flushClosesFrame: Bool { false }

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
///
/// Blocks are decoded one at a time straight into the caller's memory (zstd's buffer-less
/// API), not into a window of zstd's own that is then copied out: into 1.25 MiB chunks, a
/// 174 MB log took a median 0.075 s through `ZSTD_decompressStream` and 0.064 s block by block
/// (DECISIONS.md). The price is that zstd reads back into the output: see `outputMayMove`.
public final class ZstdDecoder: LogDecompressor {
    private let dctx: OpaquePointer
    /// True while a frame has started but not finished.
    public private(set) var insideFrame = false
    /// Set when bytes after a corrupt frame are being skipped until the next frame starts.
    private var search = FrameSearch(startLength: 4)
    /// Compressed bytes consumed so far (for error positions).
    public private(set) var compressedOffset: Int = 0

    /// The piece zstd asks for next, gathered here when it crosses the end of an input.
    private let staged: UnsafeMutableRawBufferPointer
    private var stagedCount = 0
    /// Where the staged piece starts in the file.
    private var stagedOffset = 0
    /// The current frame's header bytes, until they tell its window.
    private var headerBytes: [UInt8] = []
    /// How far back the current frame's blocks may refer, and the most one block may decode to
    /// (0 until its header is read).
    public private(set) var windowSize = 0
    private var blockSizeMax = 0
    /// Skippable frames' content is stepped over here: zstd would want it in one piece.
    private var skippableHeaderRead = false
    private var skipRemaining = 0
    /// The end of the last output, and the output written there without a move.
    private var outputEnd: UnsafeMutableRawPointer?
    private var runBytes = 0
    private var runHoldsFrameStart = false

    /// Larger windows are refused as damage. 2 GiB (`windowLog` 31, zstd's largest, what
    /// `zstd --long=31` writes), as `zstd -d --long=31` accepts; this API checks it here
    /// (`ZSTD_d_windowLogMax` applies to the streaming API only). The bound this allows: a
    /// reader's output buffers are sized for a window and two blocks (`outputReserve`), two
    /// of them alive at once, so a frame declaring a 2 GiB window may reserve about 4.5 GiB of
    /// address space; pages are touched only as text is decoded, so resident memory stays
    /// within about twice the smaller of the window and the frame's decoded text.
    public static let windowSizeLimit = 1 << 31
    /// This decoder's limit: `windowSizeLimit` unless a caller that knows its input needs less
    /// (a request body) asks for a smaller one.
    private let windowLimit: Int
    /// The largest piece zstd asks for: a block (skippable frames are stepped over).
    private static let largestPiece = Int(ZSTD_BLOCKSIZE_MAX) + 3

    public typealias Damage = DecompressionDamage

    public var formatName: String { "zstd frame" }
    /// Set once the frame's header is read: it carries a checksum of its content.
    public private(set) var frameIsChecked = false

    public init(windowLimit: Int = ZstdDecoder.windowSizeLimit) {
        self.windowLimit = min(windowLimit, Self.windowSizeLimit)
        dctx = ZSTD_createDCtx()
        staged = .allocate(byteCount: Self.largestPiece, alignment: 16)
    }

    deinit {
        ZSTD_freeDCtx(dctx)
        staged.deallocate()
        emitBuffer.deallocate()
    }

    static let magic: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD]

    /// Whether the next output may go elsewhere than right after the last. A block may copy
    /// from up to `windowSize` bytes back, and zstd finds those bytes in the current run of
    /// output and the one before it only. So output may move when no frame is being decoded,
    /// when the current run holds the frame's start (nothing before it is referred to), or
    /// when the run holds a whole window. The run before the current one must stay where it is,
    /// unchanged, until the output moves again.
    public var outputMayMove: Bool { !insideFrame || runHoldsFrameStart || runBytes >= windowSize }

    /// The room a new output buffer needs after the bytes it starts with, so that it holds a
    /// whole window by the time it has no room for another block: a window and two blocks.
    public var outputReserve: Int { insideFrame && windowSize > 0 ? windowSize + 2 * blockSizeMax : 0 }

    /// Decompresses `input`; `emit` receives decompressed bytes, `damaged` each corrupt region.
    public func decompress(
        _ input: UnsafeRawBufferPointer,
        emit: (UnsafeRawBufferPointer) throws -> Void,
        damaged: (Damage) -> Void
    ) rethrows {
        try decompress(
            input,
            into: { minimum in
                let size = max(windowSize + 2 * minimum, 1 << 16)
                if emitBuffer.count < size {
                    // Only before a frame's first block (a frame's window and blocks keep their size),
                    // so nothing in the old buffer is read again.
                    emitBuffer.deallocate()
                    emitBuffer = .allocate(byteCount: size, alignment: 16)
                    emitFilled = 0
                } else if emitBuffer.count - emitFilled < minimum {
                    // Round and round: what the next blocks write over is more than a window back.
                    emitFilled = 0
                }
                return UnsafeMutableRawBufferPointer(rebasing: emitBuffer[emitFilled...])
            },
            wrote: { n in
                try emit(UnsafeRawBufferPointer(rebasing: emitBuffer[emitFilled..<emitFilled + n]))
                emitFilled += n
            }, damaged: damaged)
    }

    /// The `emit` form's output: a window and two blocks, written round and round.
    private var emitBuffer = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    private var emitFilled = 0

    /// Decompresses `input` straight into memory the caller owns: `space(minimum)` gives where
    /// the next bytes go (at least `minimum` bytes), and `wrote` how many went there. A reader
    /// that keeps lines where they were decoded (`LineChunker`) copies nothing. The memory must
    /// follow `outputMayMove`.
    /// `frameEnded` is told each frame that ended whole (its checksum, when it has one, matched).
    public func decompress(
        _ input: UnsafeRawBufferPointer,
        into space: (_ minimum: Int) throws -> UnsafeMutableRawBufferPointer,
        wrote: (Int) throws -> Void,
        damaged: (Damage) -> Void,
        frameEnded: () -> Void = {}
    ) rethrows {
        guard search.active else { return try decode(input, into: space, wrote: wrote, damaged: damaged, frameEnded: frameEnded) }
        guard let rest = search.resume(input, offset: &compressedOffset, find: ZstdDecoder.findMagic) else { return }
        try rest.withUnsafeBytes { try decode($0, into: space, wrote: wrote, damaged: damaged, frameEnded: frameEnded) }
    }

    /// Feeds zstd the pieces it asks for (`ZSTD_nextSrcSizeToDecompress`): straight from `src`,
    /// or gathered in `staged` when a piece crosses the end of `src`.
    private func decode(
        _ src: UnsafeRawBufferPointer,
        into space: (Int) throws -> UnsafeMutableRawBufferPointer,
        wrote: (Int) throws -> Void,
        damaged: (Damage) -> Void,
        frameEnded: () -> Void
    ) rethrows {
        let start = compressedOffset
        var pos = 0
        defer { if !search.active { compressedOffset = start + pos } }
        while true {
            if skipRemaining > 0 {
                let n = min(skipRemaining, src.count - pos)
                pos += n
                skipRemaining -= n
                if skipRemaining > 0 { return }
                insideFrame = false
            }
            if !insideFrame {
                if pos == src.count { return }
                beginFrame()
            }
            let need = ZSTD_nextSrcSizeToDecompress(dctx)
            if need == 0 {
                insideFrame = false
                frameEnded()
                continue
            }
            let kind = ZSTD_nextInputType(dctx)
            if kind == ZSTDnit_skippableFrame && skippableHeaderRead {
                skipRemaining = need
                continue
            }
            let piece: UnsafeRawPointer
            let pieceOffset: Int
            let wasStaged = stagedCount > 0 || src.count - pos < need
            if wasStaged {
                if need > staged.count {
                    // Only a damaged block header asks for more than a block.
                    guard
                        let resume = try report(
                            ZSTD_error_srcSize_wrong, at: start + pos, pieceStart: pos, in: src, staged: nil,
                            into: space, wrote: wrote, damaged: damaged, frameEnded: frameEnded)
                    else { pos = src.count; return }
                    pos = resume
                    continue
                }
                if stagedCount == 0 { stagedOffset = start + pos }
                let take = min(need - stagedCount, src.count - pos)
                (staged.baseAddress! + stagedCount).copyMemory(from: src.baseAddress! + pos, byteCount: take)
                stagedCount += take
                pos += take
                if stagedCount < need { return }
                piece = UnsafeRawPointer(staged.baseAddress!)
                pieceOffset = stagedOffset
                stagedCount = 0
            } else {
                piece = src.baseAddress! + pos
                pieceOffset = start + pos
                pos += need
            }
            // Where the piece lay, for a report of damage in it.
            let pieceStart = wasStaged ? pos : pos - need
            let stagedTail = wasStaged ? UnsafeRawBufferPointer(start: piece + 1, count: need - 1) : nil
            let isBlock = kind == ZSTDnit_block || kind == ZSTDnit_lastBlock
            var out = UnsafeMutableRawBufferPointer(start: nil, count: 0)
            if isBlock {
                out = try space(blockSizeMax)
                if let end = outputEnd, out.baseAddress != end {
                    precondition(outputMayMove, "zstd output moved before a window was written")
                    runBytes = 0
                    runHoldsFrameStart = false
                }
            }
            let r = ZSTD_decompressContinue(dctx, out.baseAddress, out.count, piece, need)
            if ZSTD_isError(r) != 0 {
                guard
                    let resume = try report(
                        ZSTD_getErrorCode(r), at: pieceOffset, pieceStart: pieceStart, in: src, staged: stagedTail,
                        into: space, wrote: wrote, damaged: damaged, frameEnded: frameEnded)
                else { pos = src.count; return }
                pos = resume
                continue
            }
            if kind == ZSTDnit_skippableFrame { skippableHeaderRead = true }
            if windowSize == 0 && kind == ZSTDnit_frameHeader {
                headerBytes.append(contentsOf: UnsafeRawBufferPointer(start: piece, count: need))
                var header = ZSTD_frameHeader()
                if ZSTD_getFrameHeader(&header, headerBytes, headerBytes.count) == 0 {
                    guard header.windowSize <= UInt64(windowLimit) else {
                        guard
                            let resume = try report(
                                ZSTD_error_frameParameter_windowTooLarge, at: pieceOffset, pieceStart: pieceStart,
                                in: src, staged: stagedTail, into: space, wrote: wrote, damaged: damaged, frameEnded: frameEnded)
                        else { pos = src.count; return }
                        pos = resume
                        continue
                    }
                    windowSize = max(Int(header.windowSize), 1)
                    blockSizeMax = max(Int(header.blockSizeMax), 1)
                    frameIsChecked = header.checksumFlag != 0
                }
            }
            if r > 0 {
                outputEnd = out.baseAddress! + r
                runBytes += r
                try wrote(r)
            }
        }
    }

    private func beginFrame() {
        ZSTD_decompressBegin(dctx)
        insideFrame = true
        frameIsChecked = false
        headerBytes.removeAll(keepingCapacity: true)
        windowSize = 0
        blockSizeMax = 0
        outputEnd = nil
        runBytes = 0
        runHoldsFrameStart = true
        skippableHeaderRead = false
    }

    /// Reports damage found in a piece: the one at `pieceStart` in `src`, or, when it was
    /// staged, the one whose bytes after the first are `tail` and that ended at `pieceStart`.
    /// Returns where in `src` decoding resumes: at the next frame start after the piece's
    /// first byte (nil when none is in `src`: the next input is searched, or the rest was
    /// decoded here because the frame start lay in the staged bytes).
    private func report(
        _ code: ZSTD_ErrorCode, at offset: Int, pieceStart: Int, in src: UnsafeRawBufferPointer,
        staged tail: UnsafeRawBufferPointer?,
        into space: (Int) throws -> UnsafeMutableRawBufferPointer, wrote: (Int) throws -> Void, damaged: (Damage) -> Void,
        frameEnded: () -> Void
    ) rethrows -> Int? {
        insideFrame = false
        stagedCount = 0
        skipRemaining = 0
        skippableHeaderRead = false
        let message = String(cString: ZSTD_getErrorString(code))
        let from = tail == nil ? min(pieceStart + 1, src.count) : pieceStart
        let rest = UnsafeRawBufferPointer(rebasing: src[from...])
        let tailCount = tail?.count ?? 0
        if let tail, let at = ZstdDecoder.findMagic(Array(tail) + Array(rest.prefix(3))), at < tailCount {
            // The next frame starts among the staged bytes: decode them and the rest from a copy.
            damaged(Damage(offset: offset, message: message, skipped: at + 1))
            let joined = Array(tail[at...]) + Array(rest)
            compressedOffset = offset + 1 + at
            try joined.withUnsafeBytes { try decode($0, into: space, wrote: wrote, damaged: damaged, frameEnded: frameEnded) }
            return nil
        }
        if let at = ZstdDecoder.findMagic(rest) {
            damaged(Damage(offset: offset, message: message, skipped: tailCount + at + 1))
            return from + at
        }
        damaged(Damage(offset: offset, message: message, skipped: nil))
        search.begin(after: Array(tail ?? UnsafeRawBufferPointer(start: nil, count: 0)) + Array(rest))
        compressedOffset = offset + 1 + tailCount + rest.count
        return nil
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
#endif

#if canImport(CZstd) && !CALLSTATS_WITHOUT_ZSTD
extension CompressionDirective {
    var raw: ZSTD_EndDirective {
        switch self {
        case .continue: ZSTD_e_continue
        case .flush: ZSTD_e_flush
        case .end: ZSTD_e_end
        }
    }
}
#endif
