#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Identifies a log file's content cheaply: its size and a hash of its first and last 64 KiB.
///
/// The ledger keys on this, not on the path, so a renamed or copied file is recognised as
/// already ingested, and a file that grew (an agent still appending) is read again; reading
/// it again is harmless because records merge per call without double counting.
public struct FileFingerprint: Hashable, Sendable, CustomStringConvertible {
    public var size: Int64
    public var mtime: Int64
    public var hash: UInt64

    public var description: String { "\(size)-\(String(hash, radix: 16))" }

    public static func of(path: String) -> FileFingerprint? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        let size = Int64(st.st_size)
        #if canImport(Darwin)
        let mtime = Int64(st.st_mtimespec.tv_sec)
        #else
        let mtime = Int64(st.st_mtim.tv_sec)
        #endif
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let window = 64 << 10
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a 64
        var buf = [UInt8](repeating: 0, count: window)
        func mix(from offset: Int64) {
            let n = buf.withUnsafeMutableBytes { pread(fd, $0.baseAddress, window, off_t(offset)) }
            guard n > 0 else { return }
            for i in 0..<n {
                hash ^= UInt64(buf[i])
                hash = hash &* 0x100_0000_01b3
            }
        }
        mix(from: 0)
        if size > Int64(window) { mix(from: max(Int64(window), size - Int64(window))) }
        return FileFingerprint(size: size, mtime: mtime, hash: hash)
    }
}
