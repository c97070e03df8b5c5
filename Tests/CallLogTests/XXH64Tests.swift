import CallLog
import XCTest

final class XXH64Tests: XCTestCase {
    /// zstd's frame checksum is the low 32 bits of the content's XXH64: every length up to a
    /// few stripes, and a long input, fed whole and in uneven pieces.
    func testAgreesWithZstdsFrameChecksumForEveryLengthAndSplit() {
        var bytes = [UInt8]()
        var state: UInt64 = 0x1234_5678
        for _ in 0..<5_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            bytes.append(UInt8(truncatingIfNeeded: state >> 33))
        }
        let lengths = Array(0...100) + [255, 256, 1_000, 4_999, 5_000]
        for n in lengths {
            let input = Array(bytes.prefix(n))
            let frame = ZstdCompressor.compressFrame(input)
            let checksum = frame.suffix(4).reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            XCTAssertEqual(UInt32(truncatingIfNeeded: XXH64.hash(input)), checksum, "length \(n)")
            for piece in [1, 3, 7, 31, 33] {
                var h = XXH64()
                var at = 0
                while at < n {
                    let end = min(n, at + piece)
                    h.update(Array(input[at..<end]))
                    at = end
                }
                XCTAssertEqual(h.digest, XXH64.hash(input), "length \(n) in pieces of \(piece)")
                XCTAssertEqual(h.count, UInt64(n))
            }
        }
        XCTAssertEqual(XXH64.hash([]), 0xEF46_DB37_51D8_E999)
    }
}
