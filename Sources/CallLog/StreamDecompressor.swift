/// How a whole stream of bytes is compressed, told by its first bytes: a zstd frame's magic
/// number, a gzip member's, or neither (plain).
public enum StreamCompression: String, Sendable {
    case plain, gzip, zstd

    public init(firstBytes head: some Collection<UInt8>) {
        let b = Array(head.prefix(4))
        if b.count >= 2 && b[0] == 0x1F && b[1] == 0x8B {
            self = .gzip
        } else if b == [0x28, 0xB5, 0x2F, 0xFD] {
            self = .zstd
        } else {
            self = .plain
        }
    }
}

/// Why a stream could not be decompressed whole.
public enum StreamDecompressionError: Error, Equatable, Sendable {
    /// The output would pass the caller's limit.
    case tooLarge(limit: Int)
    /// The input ended inside a frame (gzip member).
    case truncated
    /// A frame could not be decoded; `decompressed`: the bytes produced before it.
    case damaged(String, decompressed: Int)
}

/// Decompresses one stream read in pieces (an imported dump, a request body) with the log
/// reader's own decoders (`ZstdDecoder`, `GzipDecoder`): one implementation of each format.
/// Frames or gzip members one after another are read as one stream, as `zstd -d` and `gunzip`
/// read them.
///
/// Unlike the log reader, which steps over a damaged frame and reads on, this stops at the
/// first damage: a dump or a request has no checkpoints to say which later text is whole.
public final class StreamDecompressor {
    public let compression: StreamCompression
    #if canImport(CZstd) && !CALLSTATS_WITHOUT_ZSTD
    private let zstd: ZstdDecoder?
    #endif
    private let gzip: GzipDecoder?
    /// Output pieces for gzip (zstd has its own, a window long).
    private var buffer = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    /// Decompressed bytes produced so far.
    public private(set) var produced = 0

    /// `zstdWindowLimit`: frames asking for a larger window are damage (a request body needs
    /// far less than the 2 GiB a log may use).
    public init(_ compression: StreamCompression, zstdWindowLimit: Int = StreamDecompressor.largestZstdWindow) {
        self.compression = compression
        #if canImport(CZstd) && !CALLSTATS_WITHOUT_ZSTD
        zstd = compression == .zstd ? ZstdDecoder(windowLimit: zstdWindowLimit) : nil
        #endif
        gzip = compression == .gzip ? GzipDecoder() : nil
        if compression == .gzip { buffer = .allocate(byteCount: 64 << 10, alignment: 16) }
    }

    deinit { buffer.deallocate() }

    /// True while a frame (gzip member) has started and not ended: at the end of the input, the
    /// stream was cut short.
    public var insideFrame: Bool {
        #if canImport(CZstd) && !CALLSTATS_WITHOUT_ZSTD
        if let zstd { return zstd.insideFrame }
        #endif
        return gzip?.insideFrame ?? false
    }

    /// The largest window a zstd frame may ask for (`ZstdDecoder.windowSizeLimit`: 2 GiB).
    public static let largestZstdWindow = 1 << 31

    /// Decompresses `input`, the next piece of the stream; `emit` gets each piece of output.
    /// Throws `damaged` at the first frame that cannot be decoded (what came before it was
    /// emitted), or what `emit` throws.
    public func decompress(_ input: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        var damage: DecompressionDamage?
        let before = produced
        func give(_ piece: UnsafeRawBufferPointer) throws {
            // Nothing after a damaged frame is handed on (the decoders resume at the next one).
            guard damage == nil else { throw StreamDecompressionError.damaged(damage!.message, decompressed: before) }
            produced += piece.count
            try emit(piece)
        }
        do {
            switch compression {
            case .plain:
                try give(input)
            case .zstd:
                #if canImport(CZstd) && !CALLSTATS_WITHOUT_ZSTD
                try zstd!.decompress(input, emit: give, damaged: { damage = damage ?? $0 })
                #else
                // A build without the zstd library (the collector on iOS) reads no zstd.
                damage = DecompressionDamage(offset: 0, message: "zstd is not available in this build", skipped: nil)
                #endif
            case .gzip:
                try gzip!.decompress(
                    input, into: { [buffer] _ in buffer }, wrote: { try give(UnsafeRawBufferPointer(rebasing: self.buffer[0..<$0])) },
                    damaged: { damage = damage ?? $0 }, frameEnded: {})
            }
        } catch StreamDecompressionError.damaged(let message, _) {
            throw StreamDecompressionError.damaged(message, decompressed: produced)
        }
        if let damage { throw StreamDecompressionError.damaged(damage.message, decompressed: produced) }
    }

    /// A whole stream at once, its output at most `limit` bytes (checked as it is produced, so
    /// a small input that inflates without end costs at most `limit` bytes of memory).
    public static func decompress(
        _ bytes: [UInt8], _ compression: StreamCompression, limit: Int, zstdWindowLimit: Int = StreamDecompressor.largestZstdWindow
    ) throws(StreamDecompressionError) -> [UInt8] {
        let d = StreamDecompressor(compression, zstdWindowLimit: zstdWindowLimit)
        var out = [UInt8]()
        do {
            try bytes.withUnsafeBytes { input in
                try d.decompress(input) { piece in
                    guard out.count + piece.count <= limit else { throw StreamDecompressionError.tooLarge(limit: limit) }
                    out.append(contentsOf: piece)
                }
            }
        } catch let e as StreamDecompressionError {
            throw e
        } catch {
            preconditionFailure("only the decompressor's own errors are thrown here: \(error)")
        }
        if d.insideFrame { throw .truncated }
        return out
    }
}
