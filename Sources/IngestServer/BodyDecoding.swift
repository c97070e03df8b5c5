import CallLog
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
    static let zstdWindowLogMax = 23

    /// The body as NDJSON text, decompressed by `CallLog`'s `StreamDecompressor` (gzip members
    /// and zstd frames one after another, as `gunzip` and `zstd -d` read them).
    static func decode(_ body: [UInt8], encoding: ContentEncoding, limit: Int) throws(BodyDecodingError) -> [UInt8] {
        let compression: StreamCompression =
            switch encoding {
            case .identity: .plain
            case .gzip: .gzip
            case .zstd: .zstd
            }
        do {
            return try StreamDecompressor.decompress(body, compression, limit: limit, zstdWindowLimit: 1 << zstdWindowLogMax)
        } catch {
            switch error {
            case .tooLarge(let limit): throw .tooLarge(limit: limit)
            case .truncated: throw .truncated("\(compression.rawValue) stream ends after \(body.count) bytes")
            case .damaged(let why, _): throw .corrupt(why)
            }
        }
    }
}
