/// XXH64 (xxHash, 64-bit, seed 0), fed in pieces: the hash zstd's own frame checksum is cut
/// from, here over whole files (the ingest ledger's key) and over the text between a log's
/// checkpoints. Equal to the reference `XXH64()` for every split of the input.
public struct XXH64: Sendable {
    private static let p1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let p2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let p3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let p4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let p5: UInt64 = 0x27D4_EB2F_1656_67C5

    private var v1: UInt64, v2: UInt64, v3: UInt64, v4: UInt64
    /// Bytes fed so far.
    public private(set) var count: UInt64 = 0
    /// Input not yet folded into v1…v4: fewer than 32 bytes.
    private var pending: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    private var pendingCount = 0

    public init() {
        v1 = Self.p1 &+ Self.p2
        v2 = Self.p2
        v3 = 0
        v4 = 0 &- Self.p1
    }

    @inline(__always) private static func round(_ acc: UInt64, _ input: UInt64) -> UInt64 {
        ((acc &+ input &* p2).rotatedLeft(31)) &* p1
    }

    @inline(__always) private static func merge(_ acc: UInt64, _ v: UInt64) -> UInt64 {
        (acc ^ round(0, v)) &* p1 &+ p4
    }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var p = bytes.baseAddress, bytes.count > 0 else { return }
        var n = bytes.count
        count &+= UInt64(n)
        if pendingCount > 0 {
            let take = min(32 - pendingCount, n)
            withUnsafeMutableBytes(of: &pending) { ($0.baseAddress! + pendingCount).copyMemory(from: p, byteCount: take) }
            pendingCount += take
            p += take
            n -= take
            guard pendingCount == 32 else { return }
            withUnsafeBytes(of: pending) { stripe($0.baseAddress!) }
            pendingCount = 0
        }
        var a = v1, b = v2, c = v3, d = v4
        while n >= 32 {
            a = Self.round(a, UInt64(littleEndian: p.loadUnaligned(as: UInt64.self)))
            b = Self.round(b, UInt64(littleEndian: (p + 8).loadUnaligned(as: UInt64.self)))
            c = Self.round(c, UInt64(littleEndian: (p + 16).loadUnaligned(as: UInt64.self)))
            d = Self.round(d, UInt64(littleEndian: (p + 24).loadUnaligned(as: UInt64.self)))
            p += 32
            n -= 32
        }
        (v1, v2, v3, v4) = (a, b, c, d)
        if n > 0 {
            withUnsafeMutableBytes(of: &pending) { $0.baseAddress!.copyMemory(from: p, byteCount: n) }
            pendingCount = n
        }
    }

    public mutating func update(_ bytes: UnsafeBufferPointer<UInt8>) { update(UnsafeRawBufferPointer(bytes)) }

    public mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    @inline(__always) private mutating func stripe(_ p: UnsafeRawPointer) {
        v1 = Self.round(v1, UInt64(littleEndian: p.loadUnaligned(as: UInt64.self)))
        v2 = Self.round(v2, UInt64(littleEndian: (p + 8).loadUnaligned(as: UInt64.self)))
        v3 = Self.round(v3, UInt64(littleEndian: (p + 16).loadUnaligned(as: UInt64.self)))
        v4 = Self.round(v4, UInt64(littleEndian: (p + 24).loadUnaligned(as: UInt64.self)))
    }

    /// The hash of everything fed so far (feeding may go on).
    public var digest: UInt64 {
        var h: UInt64
        if count >= 32 {
            h = v1.rotatedLeft(1) &+ v2.rotatedLeft(7) &+ v3.rotatedLeft(12) &+ v4.rotatedLeft(18)
            h = Self.merge(h, v1)
            h = Self.merge(h, v2)
            h = Self.merge(h, v3)
            h = Self.merge(h, v4)
        } else {
            h = v3 &+ Self.p5  // v3 is still the seed (0)
        }
        h &+= count
        let n = pendingCount
        withUnsafeBytes(of: pending) { raw in
            let p = raw.baseAddress!
            var i = 0
            while i + 8 <= n {
                h ^= Self.round(0, UInt64(littleEndian: (p + i).loadUnaligned(as: UInt64.self)))
                h = h.rotatedLeft(27) &* Self.p1 &+ Self.p4
                i += 8
            }
            if i + 4 <= n {
                h ^= UInt64(UInt32(littleEndian: (p + i).loadUnaligned(as: UInt32.self))) &* Self.p1
                h = h.rotatedLeft(23) &* Self.p2 &+ Self.p3
                i += 4
            }
            while i < n {
                h ^= UInt64(p.load(fromByteOffset: i, as: UInt8.self)) &* Self.p5
                h = h.rotatedLeft(11) &* Self.p1
                i += 1
            }
        }
        h ^= h >> 33
        h &*= Self.p2
        h ^= h >> 29
        h &*= Self.p3
        h ^= h >> 32
        return h
    }

    /// The hash of `bytes` alone.
    public static func hash(_ bytes: [UInt8]) -> UInt64 {
        var h = XXH64()
        h.update(bytes)
        return h.digest
    }
}

extension UInt64 {
    @inline(__always) fileprivate func rotatedLeft(_ k: UInt64) -> UInt64 { (self << k) | (self >> (64 - k)) }
}
