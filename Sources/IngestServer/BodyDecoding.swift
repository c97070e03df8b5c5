import CZlib
import CZstd
import Foundation

/// Request bodies as sent (`Content-Encoding`), decoded to NDJSON text under a size cap.
///
/// The cap is checked as output is produced, so a small body that inflates without end (a
/// "zip bomb") costs at most `limit` bytes of memory before it is refused.
enum ContentEncoding: Equatable, Sendable {
    case identity, gzip, zstd

    /// The encoding named by a `Content-Encoding` header value; nil for one not supported.
    init?(header: String?) {
        switch header?.lowercased().trimmingCharacters(in: .whitespaces) {
        case nil, "", "identity": self = .identity
        case "gzip", "x-gzip": self = .gzip
        case "zstd": self = .zstd
        default: return nil
        }
    }
}

enum BodyDecodingError: Error, Equatable, CustomStringConvertible {
    /// Decoded text would exceed the cap.
    case tooLarge(limit: Int)
    /// The compressed data ended before its stream did.
    case truncated(String)
    case corrupt(String)

    var description: String {
        switch self {
        case .tooLarge(let l): "the decompressed body exceeds \(l) bytes"
        case .truncated(let m): "the compressed body is truncated (\(m))"
        case .corrupt(let m): "the compressed body is not valid: \(m)"
        }
    }
}

enum BodyDecoding {
    /// zstd frames may ask for a window of up to 2^windowLogMax bytes; larger ones are refused
    /// rather than allocated (a client's batch needs far less).
    static let zstdWindowLogMax: Int32 = 23

    static func decode(_ body: [UInt8], encoding: ContentEncoding, limit: Int) throws(BodyDecodingError) -> [UInt8] {
        switch encoding {
        case .identity:
            guard body.count <= limit else { throw .tooLarge(limit: limit) }
            return body
        case .gzip: return try gunzip(body, limit: limit)
        case .zstd: return try unzstd(body, limit: limit)
        }
    }

    /// gzip members (concatenated members are read one after the other, as gunzip does).
    static func gunzip(_ body: [UInt8], limit: Int) throws(BodyDecodingError) -> [UInt8] {
        var out = [UInt8]()
        var stream = z_stream()
        // 15 window bits + 16: gzip format only.
        guard czlib_inflate_init2(&stream, 15 + 16) == Z_OK else { throw .corrupt("zlib could not start") }
        defer { inflateEnd(&stream) }
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var consumed = 0
        var finishedMember = false
        while true {
            let status: Int32 = body.withUnsafeBufferPointer { input in
                chunk.withUnsafeMutableBufferPointer { output in
                    stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress.map { $0 + consumed })
                    stream.avail_in = UInt32(input.count - consumed)
                    stream.next_out = output.baseAddress
                    stream.avail_out = UInt32(output.count)
                    let s = inflate(&stream, Z_NO_FLUSH)
                    consumed = input.count - Int(stream.avail_in)
                    return s
                }
            }
            let produced = chunk.count - Int(stream.avail_out)
            if out.count + produced > limit { throw .tooLarge(limit: limit) }
            out.append(contentsOf: chunk[0..<produced])
            switch status {
            case Z_STREAM_END:
                finishedMember = true
                if consumed == body.count { return out }
                guard inflateReset(&stream) == Z_OK else { throw .corrupt("zlib could not restart") }
                finishedMember = false
            case Z_OK:
                continue
            case Z_BUF_ERROR:
                // No progress possible: the input ran out inside a member.
                if consumed == body.count {
                    if finishedMember { return out }
                    throw .truncated("gzip stream ends after \(body.count) bytes")
                }
                throw .corrupt("gzip stream stalled")
            default:
                let message = stream.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                throw .corrupt("gzip: \(message)")
            }
        }
    }

    /// zstd frames, one after the other.
    static func unzstd(_ body: [UInt8], limit: Int) throws(BodyDecodingError) -> [UInt8] {
        guard let context = ZSTD_createDStream() else { throw .corrupt("zstd could not start") }
        defer { ZSTD_freeDStream(context) }
        ZSTD_DCtx_setParameter(context, ZSTD_d_windowLogMax, zstdWindowLogMax)
        var out = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var pending: Int = 0
        var position = 0
        repeat {
            var failure: String?
            let produced: Int = body.withUnsafeBytes { input in
                chunk.withUnsafeMutableBytes { output in
                    var inBuffer = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: position)
                    var outBuffer = ZSTD_outBuffer(dst: output.baseAddress, size: output.count, pos: 0)
                    let r = ZSTD_decompressStream(context, &outBuffer, &inBuffer)
                    position = inBuffer.pos
                    if ZSTD_isError(r) != 0 {
                        failure = String(cString: ZSTD_getErrorName(r))
                    } else {
                        pending = r
                    }
                    return outBuffer.pos
                }
            }
            if let failure { throw .corrupt("zstd: \(failure)") }
            if out.count + produced > limit { throw .tooLarge(limit: limit) }
            out.append(contentsOf: chunk[0..<produced])
            // Output filled the chunk: zstd may hold more without needing input.
            if produced == chunk.count { continue }
            if position == body.count { break }
        } while true
        guard pending == 0 else { throw .truncated("zstd frame ends after \(body.count) bytes") }
        return out
    }
}
