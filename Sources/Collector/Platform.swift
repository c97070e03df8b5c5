#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The collector's only calls into the C library: creating directories, probing whether a
/// file can be created, syncing a directory, free space and error names. Everything else in
/// the module is portable Swift, so the same code links into an iOS, macOS or Linux app.
enum Platform {
    /// Creates `path` and its missing parents. Returns 0 or the errno of the first failure.
    static func makeDirectories(_ path: String) -> Int32 {
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, 0o755) != 0 {
                let e = errno
                if e == EEXIST, isDirectory(prefix) { continue }
                return e == EEXIST ? ENOTDIR : e
            }
        }
        return 0
    }

    static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }

    /// Creates (or opens) `path` for appending and closes it again: 0, or why it cannot be
    /// written. The log writer reports open failures as text only; this gives the errno that
    /// decides the drop reason.
    static func probeCreate(_ path: String) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return errno }
        close(fd)
        return 0
    }

    /// Makes a new or removed directory entry durable (after creating or deleting a log file).
    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    /// Bytes available to this process on the file system holding `path`, if known.
    static func availableBytes(_ path: String) -> Int64? {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { return nil }
        return Int64(s.f_bavail) * Int64(s.f_frsize)
    }

    /// Removes a file: 0 or errno.
    static func remove(_ path: String) -> Int32 {
        unlink(path) == 0 ? 0 : errno
    }

    static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// Which drop reason an errno stands for.
    static func reason(for code: Int32) -> DropReason {
        switch code {
        case ENOSPC, EDQUOT, EFBIG: .diskFull
        case EACCES, EPERM, EROFS, ENOTDIR, EISDIR: .notWritable
        case ENOENT: .directoryMissing
        default: .writeError
        }
    }

    static let noSpace = ENOSPC
    static let noEntry = ENOENT
}
