/// A STUN transaction ID (96 bits; classic RFC 3489 messages use the last 96 of their 128).
public struct STUNTransactionID: Hashable, Sendable {
    var high: UInt64
    var low: UInt32
}

/// The parts of a STUN message (RFC 8489) that connectivity-check analysis needs.
public struct STUNMessage: Equatable, Sendable {
    public enum Class: UInt8, Sendable {
        case request = 0, indication = 1, successResponse = 2, errorResponse = 3
    }

    public static let magicCookie: UInt32 = 0x2112_A442
    public static let bindingMethod: UInt16 = 0x001

    public var method: UInt16
    public var messageClass: Class
    public var transactionID: STUNTransactionID
    /// RFC 3489 message without the magic cookie.
    public var isClassic: Bool
    public var useCandidate = false
    public var iceControlling = false
    public var iceControlled = false
    public var priority: UInt32?
    public var errorCode: Int?
    public var hasUsername = false

    /// Header checks only: two zero bits, a length that is a multiple of four and matches
    /// the datagram, and the magic cookie (or, for classic STUN, a known Binding type).
    @inline(__always)
    package static func looksLikeSTUN(_ p: UnsafeRawBufferPointer) -> Bool {
        guard p.count >= 20 else { return false }
        let type = p.u16(0)
        let length = Int(p.u16(2))
        guard type & 0xC000 == 0, length & 3 == 0, length + 20 == p.count else { return false }
        if p.u32(4) == magicCookie { return true }
        return [0x0001, 0x0101, 0x0111, 0x0002, 0x0102, 0x0112].contains(type)
    }

    public static func parse(_ p: UnsafeRawBufferPointer) -> STUNMessage? {
        guard looksLikeSTUN(p) else { return nil }
        let type = p.u16(0)
        let method = (type & 0x000F) | (type & 0x00E0) >> 1 | (type & 0x3E00) >> 2
        let cls = UInt8((type & 0x0100) >> 7 | (type & 0x0010) >> 4)
        var m = STUNMessage(
            method: method, messageClass: Class(rawValue: cls)!,
            transactionID: STUNTransactionID(high: p.u64(8), low: p.u32(16)),
            isClassic: p.u32(4) != magicCookie)
        var o = 20
        while o + 4 <= p.count {
            let attr = p.u16(o)
            let len = Int(p.u16(o + 2))
            guard o + 4 + len <= p.count else { break }
            switch attr {
            case 0x0006: m.hasUsername = true
            case 0x0024 where len == 4: m.priority = p.u32(o + 4)
            case 0x0025: m.useCandidate = true
            case 0x802A: m.iceControlling = true
            case 0x8029: m.iceControlled = true
            case 0x0009 where len >= 4: m.errorCode = Int(p.u8(o + 6) & 0x07) * 100 + Int(p.u8(o + 7))
            default: break
            }
            o += 4 + (len + 3) & ~3
        }
        return m
    }
}
