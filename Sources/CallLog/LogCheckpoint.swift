/// A checkpoint line: the length and XXH64 of the text since the previous checkpoint (or since
/// the start of the zstd frame, or of a plain file), written by `LogWriter` at every flush,
/// segment end and close, and checked by readers before they use any of that text.
///
/// Written exactly as
/// `{"v":1,"kind":"agent","call":"-","ts":T,"agent":"writer","event":"checkpoint","bytes":N,"xxh64":"<16 hex digits>"}`:
/// an `agent` record, which readers that predate checkpoints count and otherwise ignore. Only
/// a line of exactly this form is a checkpoint; any other is an ordinary line (covered by the
/// next checkpoint), so a damaged checkpoint fails the next one.
public struct LogCheckpoint: Equatable, Sendable {
    /// Bytes covered: every line since the previous checkpoint, each with its newline.
    public var bytes: UInt64
    public var xxh64: UInt64
    /// The last record's `ts` before it (0 when none).
    public var ts: Int64

    public init(bytes: UInt64, xxh64: UInt64, ts: Int64) {
        self.bytes = bytes
        self.xxh64 = xxh64
        self.ts = ts
    }

    static let head = Array(#"{"v":1,"kind":"agent","call":"-","ts":"#.utf8)
    static let middle = Array(#","agent":"writer","event":"checkpoint","bytes":"#.utf8)
    static let hashField = Array(#","xxh64":""#.utf8)
    static let tail = Array(#""}"#.utf8)

    /// Appends the line, with its newline.
    public func write(to out: inout [UInt8]) {
        out.append(contentsOf: Self.head)
        out.append(contentsOf: String(ts).utf8)
        out.append(contentsOf: Self.middle)
        out.append(contentsOf: String(bytes).utf8)
        out.append(contentsOf: Self.hashField)
        let hex = Array("0123456789abcdef".utf8)
        for shift in stride(from: 60, through: 0, by: -4) { out.append(hex[Int(xxh64 >> UInt64(shift) & 0xF)]) }
        out.append(contentsOf: Self.tail)
        out.append(0x0A)
    }

    /// Whether a line (without its newline) may be a checkpoint: cheap, for every line.
    @inline(__always)
    static func mayBe(_ line: UnsafeRawBufferPointer) -> Bool {
        line.count > head.count + middle.count + hashField.count + 16 + tail.count
            && line.load(fromByteOffset: 15, as: UInt8.self) == UInt8(ascii: "a")
            && line.load(fromByteOffset: 0, as: UInt8.self) == UInt8(ascii: "{")
    }

    /// The checkpoint a line (without its newline) is, if it is one in exactly the written form.
    public init?(line: UnsafeRawBufferPointer) {
        var at = 0
        func expect(_ bytes: [UInt8]) -> Bool {
            guard line.count - at >= bytes.count else { return false }
            for b in bytes {
                guard line[at] == b else { return false }
                at += 1
            }
            return true
        }
        func number(limit: Int) -> UInt64? {
            let start = at
            var v: UInt64 = 0
            while at < line.count, at - start < limit, line[at] >= 0x30, line[at] <= 0x39 {
                v = v * 10 + UInt64(line[at] - 0x30)
                at += 1
            }
            // Digits as the writer prints them: no leading zero, unless the number is 0.
            guard at > start, at - start < limit, !(line[start] == 0x30 && at - start > 1) else { return nil }
            return v
        }
        guard expect(Self.head) else { return nil }
        let negative = at < line.count && line[at] == UInt8(ascii: "-")
        if negative { at += 1 }
        guard let magnitude = number(limit: 19), let middle = Optional(Self.middle), expect(middle),
            let bytes = number(limit: 20), expect(Self.hashField), line.count - at == 16 + Self.tail.count
        else { return nil }
        var hash: UInt64 = 0
        for _ in 0..<16 {
            let c = line[at]
            let digit: UInt8
            switch c {
            case 0x30...0x39: digit = c - 0x30
            case 0x61...0x66: digit = c - 0x61 + 10
            default: return nil
            }
            hash = hash << 4 | UInt64(digit)
            at += 1
        }
        guard expect(Self.tail) else { return nil }
        self.init(bytes: bytes, xxh64: hash, ts: negative ? -Int64(magnitude) : Int64(magnitude))
    }
}
