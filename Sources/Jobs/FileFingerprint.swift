import CallLog
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Identifies a log file's content: its size and the XXH64 of every byte of it.
///
/// The ledger keys on this, not on the path, so a renamed or copied file is recognised as
/// already ingested, and a file that changed anywhere (grew, or was rewritten in the middle)
/// is read again; reading it again is harmless because records merge per call without double
/// counting. Keys of other forms (older ledgers) never equal one of these: such files are
/// read once more, with the same merge.
public struct FileFingerprint: Hashable, Sendable, CustomStringConvertible {
    public var size: Int64
    public var mtime: Int64
    public var hash: UInt64

    public var description: String { "\(size)-xxh64-\(String(hash, radix: 16))" }

    /// Bytes read per `read` while hashing.
    static let readBytes = 1 << 20

    /// Nil when the path is not a regular file or cannot be read (the reader then reports why).
    public static func of(path: String) -> FileFingerprint? {
        // Not blocking: a FIFO given as a log would otherwise wait here for a writer.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        #if canImport(Darwin)
        let mtime = Int64(st.st_mtimespec.tv_sec)
        #else
        let mtime = Int64(st.st_mtim.tv_sec)
        #endif
        var hasher = XXH64()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: readBytes, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = read(fd, buffer.baseAddress, buffer.count)
            if n < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if n == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
        // The size hashed, not the size `stat` saw: a file still growing is keyed on what was read.
        return FileFingerprint(size: Int64(hasher.count), mtime: mtime, hash: hasher.digest)
    }
}
