/// Big-endian field access on raw packet bytes.
///
/// Decoders check lengths once per header and then read fields without further checks, so
/// these readers are unchecked in release builds; a debug build still traps on a bad offset.
extension UnsafeRawBufferPointer {
    @inline(__always)
    func u8(_ offset: Int) -> UInt8 {
        assert(offset >= 0 && offset < count)
        return load(fromByteOffset: offset, as: UInt8.self)
    }

    @inline(__always)
    func u16(_ offset: Int) -> UInt16 {
        assert(offset >= 0 && offset + 2 <= count)
        return UInt16(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    @inline(__always)
    func u32(_ offset: Int) -> UInt32 {
        assert(offset >= 0 && offset + 4 <= count)
        return UInt32(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inline(__always)
    func u64(_ offset: Int) -> UInt64 {
        assert(offset >= 0 && offset + 8 <= count)
        return UInt64(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// A sub-range, clamped to the buffer.
    @inline(__always)
    func slice(from start: Int, count length: Int) -> UnsafeRawBufferPointer {
        let s = Swift.min(Swift.max(start, 0), count)
        let e = Swift.min(s + Swift.max(length, 0), count)
        return UnsafeRawBufferPointer(rebasing: self[s..<e])
    }

    @inline(__always)
    func slice(from start: Int) -> UnsafeRawBufferPointer {
        slice(from: start, count: count - start)
    }
}
