/// A 128-bit SipHash key.
public struct SipHashKey: Sendable, Equatable {
    public var k0: UInt64
    public var k1: UInt64

    public init(k0: UInt64, k1: UInt64) {
        self.k0 = k0
        self.k1 = k1
    }

    /// Sixteen bytes, read as two little-endian words as the SipHash paper specifies.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        k0 = SipHash24.littleEndianWord(bytes[0..<8])
        k1 = SipHash24.littleEndianWord(bytes[8..<16])
    }

    /// 32 hex digits (the 16 bytes in order), e.g. from a configuration file.
    public init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 32 else { return nil }
        var bytes = [UInt8]()
        for i in stride(from: 0, to: 32, by: 2) {
            guard let b = UInt8(String(decoding: digits[i..<(i + 2)], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(b)
        }
        self.init(bytes: bytes)
    }
}

/// SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012): a keyed
/// 64-bit hash built for short inputs, small enough to carry here without a crypto package.
public enum SipHash24 {
    public static func hash(_ message: [UInt8], key: SipHashKey) -> UInt64 {
        var v0: UInt64 = 0x736f6d6570736575 ^ key.k0
        var v1: UInt64 = 0x646f72616e646f6d ^ key.k1
        var v2: UInt64 = 0x6c7967656e657261 ^ key.k0
        var v3: UInt64 = 0x7465646279746573 ^ key.k1

        @inline(__always) func round() {
            v0 = v0 &+ v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
            v2 = v2 &+ v3; v3 = rotl(v3, 16); v3 ^= v2
            v0 = v0 &+ v3; v3 = rotl(v3, 21); v3 ^= v0
            v2 = v2 &+ v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
        }

        let fullWords = message.count / 8
        for w in 0..<fullWords {
            let m = littleEndianWord(message[(w * 8)..<(w * 8 + 8)])
            v3 ^= m
            round(); round()
            v0 ^= m
        }
        // The last word: remaining bytes, and the message length in the top byte.
        var last = UInt64(truncatingIfNeeded: message.count) << 56
        for (i, b) in message[(fullWords * 8)...].enumerated() { last |= UInt64(b) << UInt64(8 * i) }
        v3 ^= last
        round(); round()
        v0 ^= last
        v2 ^= 0xff
        round(); round(); round(); round()
        return v0 ^ v1 ^ v2 ^ v3
    }

    @inline(__always) static func rotl(_ x: UInt64, _ b: UInt64) -> UInt64 { (x << b) | (x >> (64 - b)) }

    static func littleEndianWord(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        var w: UInt64 = 0
        for (i, b) in bytes.enumerated() { w |= UInt64(b) << UInt64(8 * i) }
        return w
    }
}
