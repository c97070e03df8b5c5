import CallLog
import XCTest

/// One stream read whole (a dump, a request body): frames and members one after another, the
/// first damage an error naming how much came before it, a cut stream told apart, and output
/// bounded as it is produced.
final class StreamDecompressorTests: XCTestCase {
    let text = Array(String(repeating: #"{"v":1,"kind":"call","call":"a","ts":1}"# + "\n", count: 2000).utf8)

    func testFormatsAreToldByTheirFirstBytes() {
        XCTAssertEqual(StreamCompression(firstBytes: ZstdCompressor.compressFrame(text)), .zstd)
        XCTAssertEqual(StreamCompression(firstBytes: GzipCompressor.compressMember(text)), .gzip)
        XCTAssertEqual(StreamCompression(firstBytes: text), .plain)
        XCTAssertEqual(StreamCompression(firstBytes: [UInt8]()), .plain)
    }

    func testConsecutiveFramesAndMembersAreOneStream() throws {
        let zstd = ZstdCompressor.compressFrame(text) + ZstdCompressor.compressFrame(text)
        XCTAssertEqual(try StreamDecompressor.decompress(zstd, .zstd, limit: 1 << 20), text + text)
        let gzip = GzipCompressor.compressMember(text) + GzipCompressor.compressMember(text)
        XCTAssertEqual(try StreamDecompressor.decompress(gzip, .gzip, limit: 1 << 20), text + text)
        // Fed in pieces of any size, the same bytes.
        for compressed in [(zstd, StreamCompression.zstd), (gzip, .gzip)] {
            let d = StreamDecompressor(compressed.1)
            var out = [UInt8]()
            var i = 0
            while i < compressed.0.count {
                let piece = Array(compressed.0[i..<min(compressed.0.count, i + 7)])
                try piece.withUnsafeBytes { try d.decompress($0) { out.append(contentsOf: $0) } }
                i += 7
            }
            XCTAssertEqual(out, text + text, "\(compressed.1)")
            XCTAssertFalse(d.insideFrame)
        }
    }

    func testDamageCutsAndLimitsAreErrors() {
        let frame = ZstdCompressor.compressFrame(text)
        XCTAssertThrowsError(try StreamDecompressor.decompress(Array(frame.dropLast(3)), .zstd, limit: 1 << 20)) {
            XCTAssertEqual($0 as? StreamDecompressionError, .truncated)
        }
        XCTAssertThrowsError(try StreamDecompressor.decompress(frame, .zstd, limit: text.count - 1)) {
            XCTAssertEqual($0 as? StreamDecompressionError, .tooLarge(limit: text.count - 1))
        }
        // A damaged second member: the first one's text came before the error, and the count says so.
        var member = GzipCompressor.compressMember(text)
        member[member.count / 2] ^= 0xFF
        let d = StreamDecompressor(.gzip)
        var out = [UInt8]()
        let stream = GzipCompressor.compressMember(text) + member
        XCTAssertThrowsError(try stream.withUnsafeBytes { try d.decompress($0) { out.append(contentsOf: $0) } }) { e in
            guard case .damaged(_, let decompressed)? = e as? StreamDecompressionError else { return XCTFail("\(e)") }
            XCTAssertEqual(decompressed, out.count)
            XCTAssertGreaterThanOrEqual(out.count, self.text.count)
        }
        XCTAssertEqual(Array(out.prefix(text.count)), text)
        // A frame asking for a window larger than the caller allows is damage, not an allocation.
        let large = ZstdCompressor.compressFrame([UInt8](repeating: 7, count: 4 << 20), level: 19)
        XCTAssertThrowsError(try StreamDecompressor.decompress(large, .zstd, limit: 8 << 20, zstdWindowLimit: 1 << 12)) {
            guard case .damaged? = $0 as? StreamDecompressionError else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(try StreamDecompressor.decompress(large, .zstd, limit: 8 << 20).count, 4 << 20)
    }
}
