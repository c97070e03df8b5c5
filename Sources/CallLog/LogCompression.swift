/// How a log file is compressed, told by its name when written (`.zst`, `.gz`) and by its first
/// bytes when read (`LogLineReader.content`).
///
/// zstd is the format's compression. gzip exists for platforms without a zstd library (iOS and
/// the other Apple platforms ship zlib, not zstd): each flush point ends a gzip member, so a
/// file cut anywhere still yields every flushed record, as with zstd's flushed blocks.
public enum LogCompression: String, Sendable, CaseIterable {
    case zstd, gzip, none

    /// Whether this build can write and read it (zstd needs the system library at build time).
    public var isAvailable: Bool {
        switch self {
        case .zstd: Self.zstdAvailable
        case .gzip, .none: true
        }
    }

    /// zstd where the build has it, else gzip.
    public static var platformDefault: LogCompression { zstdAvailable ? .zstd : .gzip }

    /// A log file's name ends with this.
    public var fileSuffix: String {
        switch self {
        case .zstd: ".ndjson.zst"
        case .gzip: ".ndjson.gz"
        case .none: ".ndjson"
        }
    }

    /// The compression a log written to `path` gets: by its last extension.
    public static func forPath(_ path: String) -> LogCompression {
        if path.hasSuffix(".zst") { return .zstd }
        if path.hasSuffix(".gz") { return .gzip }
        return .none
    }

    #if canImport(CZstd) && !CALLSTATS_WITHOUT_ZSTD
    static let zstdAvailable = true
    #else
    static let zstdAvailable = false
    #endif

    /// A compressor for a new file; nil for `.none`. zstd's `level` is the writer's; gzip always
    /// uses zlib's default level 6 (its levels above 6 cost twice the time for 1-2 % less).
    func makeCompressor(level: Int32) -> (any LogCompressor)? {
        switch self {
        case .zstd:
            #if canImport(CZstd) && !CALLSTATS_WITHOUT_ZSTD
            return ZstdCompressor(level: level)
            #else
            return nil
            #endif
        case .gzip: return GzipCompressor()
        case .none: return nil
        }
    }
}

/// What a compressor does with the input it is given.
public enum CompressionDirective: Sendable {
    /// Buffer; output whatever is ready.
    case `continue`
    /// Make everything so far decodable from the output, even if nothing more is ever written.
    case flush
    /// Close the frame (or gzip member), with its checksum.
    case end
}

/// A streaming compressor writing one log file (`LogWriter`).
public protocol LogCompressor: AnyObject {
    /// Compresses `input` and appends what is produced to `output`.
    func compress(_ input: UnsafeRawBufferPointer, _ directive: CompressionDirective, into output: inout [UInt8])
    /// Whether `.flush` also closes the frame (gzip: a flush point is the end of a member), so
    /// that a flush with nothing new to write writes nothing.
    var flushClosesFrame: Bool { get }
}

/// A region of a compressed file that could not be decoded.
public struct DecompressionDamage: Sendable, Equatable {
    /// Offset in the compressed file where the damage was detected.
    public var offset: Int
    public var message: String
    /// Compressed bytes skipped before decoding resumed at the next frame (or gzip member); nil
    /// when none starts in the input at hand (decoding resumes at the next one, if one follows).
    public var skipped: Int?
}

/// A streaming decompressor that writes straight into memory the reader owns (`LineChunker`)
/// and survives damage: a damaged frame is reported and decoding resumes at the next one.
public protocol LogDecompressor: AnyObject {
    /// True while a frame (gzip member) has started but not finished.
    var insideFrame: Bool { get }
    /// Whether the output may move to another buffer now (zstd reads back into its output).
    var outputMayMove: Bool { get }
    /// The room a new output buffer needs after the bytes it starts with.
    var outputReserve: Int { get }
    /// The name users know the format by, for messages.
    var formatName: String { get }
    /// Whether the frame being decoded will have its own checksum checked at its end (`frameEnded`
    /// is told only then): a zstd frame whose header asks for one, every gzip member (CRC-32).
    var frameIsChecked: Bool { get }
    /// `space(minimum)` gives where the next bytes go, `wrote` how many went there, `damaged`
    /// each damaged region, `frameEnded` each frame that ended whole (its checksum matched).
    func decompress(
        _ input: UnsafeRawBufferPointer,
        into space: (_ minimum: Int) throws -> UnsafeMutableRawBufferPointer,
        wrote: (Int) throws -> Void,
        damaged: (DecompressionDamage) -> Void,
        frameEnded: () -> Void
    ) rethrows
}

/// The search for the next frame (gzip member) after damage, across inputs: the last bytes of
/// an input are kept, so that a start split between two inputs is found.
struct FrameSearch {
    /// Whether bytes are being stepped over until a frame starts.
    private(set) var active = false
    private var carry: [UInt8] = []
    /// A start's length less one: what must be kept of an input.
    let kept: Int

    init(startLength: Int) { kept = startLength - 1 }

    /// Starts looking after damage: `tail` is the end of the input the damage was found in.
    mutating func begin(after tail: [UInt8]) {
        carry = Array(tail.suffix(kept))
        active = true
    }

    /// Looks for a start in the kept bytes and `input` with `find` (its position in the bytes
    /// given, or nil). Returns the bytes from the start on, with `offset` (of the compressed
    /// file) moved to it; or nil, with `offset` moved past `input`.
    mutating func resume(_ input: UnsafeRawBufferPointer, offset: inout Int, find: ([UInt8]) -> Int?) -> [UInt8]? {
        var joined = carry
        joined.append(contentsOf: input)
        let joinedOffset = offset - carry.count
        guard let at = find(joined) else {
            carry = Array(joined.suffix(kept))
            offset += input.count
            return nil
        }
        active = false
        carry = []
        offset = joinedOffset + at
        return Array(joined[at...])
    }
}
