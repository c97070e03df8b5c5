#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one-writer-at-a-time lock beside a database: an exclusive `flock` on `<db>.lock`, which
/// holds the writer's pid for the message another run gets.
///
/// What must stay true:
/// - The lock file is never followed through a symbolic link, and only a regular file owned by
///   this user is used: a run as root from cron must not truncate a file an attacker linked there.
/// - A run that cannot take the lock does not run: without it, two writers would race on one file.
/// - No lock file is left behind: the holder removes it when it is done. Removing a locked file
///   lets a waiting process lock the old, unlinked inode while a third creates a new file, so a
///   process that obtains the lock checks that the path still names the file it locked, and
///   starts over when it does not.
struct WriterLock {
    private let fd: Int32
    let path: String

    enum Failure: Error, CustomStringConvertible {
        case heldBy(path: String, holder: String)
        case unusable(path: String, reason: String)

        var description: String {
            switch self {
            case .heldBy(let p, let h): "\(p) is held by \(h)"
            case .unusable(let p, let r): "cannot take the writer's lock \(p): \(r)"
            }
        }
    }

    static func acquire(_ path: String) throws -> WriterLock {
        while true {
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else {
                let reason = errno == ELOOP ? "it is a symbolic link" : String(cString: strerror(errno))
                throw Failure.unusable(path: path, reason: reason)
            }
            var opened = stat()
            guard fstat(fd, &opened) == 0 else {
                close(fd)
                throw Failure.unusable(path: path, reason: String(cString: strerror(errno)))
            }
            guard (opened.st_mode & S_IFMT) == S_IFREG else {
                close(fd)
                throw Failure.unusable(path: path, reason: "it is not a regular file")
            }
            guard opened.st_uid == geteuid() else {
                close(fd)
                throw Failure.unusable(path: path, reason: "it belongs to another user (uid \(opened.st_uid))")
            }
            if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                var buf = [UInt8](repeating: 0, count: 64)
                let n = read(fd, &buf, 63)
                close(fd)
                let pid = n > 0 ? String(decoding: buf[0..<n], as: UTF8.self).filter(\.isNumber) : ""
                throw Failure.heldBy(path: path, holder: pid.isEmpty ? "another process" : "pid " + pid)
            }
            // The holder before us may have removed the file between our open and our lock.
            var named = stat()
            guard lstat(path, &named) == 0, named.st_dev == opened.st_dev, named.st_ino == opened.st_ino else {
                close(fd)
                continue
            }
            ftruncate(fd, 0)
            let pid = Array(String(getpid()).utf8)
            _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
            return WriterLock(fd: fd, path: path)
        }
    }

    /// The writer that holds `path` now, as "pid N", read without taking the lock (taking it,
    /// even for a moment, could turn a starting writer away): the pid the file names, when that
    /// process is alive.
    static func holder(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buf = [UInt8](repeating: 0, count: 32)
        let n = read(fd, &buf, 31)
        guard n > 0, let pid = Int32(String(decoding: buf[0..<n], as: UTF8.self).filter(\.isNumber)), pid > 0,
            kill(pid, 0) == 0 || errno == EPERM
        else { return nil }
        return "pid \(pid)"
    }

    /// Removes the lock file, then lets the lock go (in that order: see the type's comment).
    func release() {
        unlink(path)
        close(fd)
    }
}

/// The processes other than this one that hold a POSIX lock on a file (SQLite readers hold a
/// read lock on the database while they read), as the kernel lists them in /proc/locks: the
/// only way to name a reader, since SQLite itself records none. Loose by nature: it matches the
/// file by inode, sees only this machine, and names a process, not what it is doing.
public enum FileLockHolders {
    /// "pid 1234 (sqlite3), pid 99 (callstats)", or a sentence saying they could not be found.
    public static func describe(_ path: String) -> String {
        let pids = holders(path)
        guard !pids.isEmpty else { return "another process (no lock holder found in /proc/locks)" }
        return pids.map { pid in
            let comm = readText("/proc/\(pid)/comm")?.split(separator: "\n").first.map(String.init)
            return "pid \(pid)" + (comm.map { " (\($0))" } ?? "")
        }.joined(separator: ", ")
    }

    /// The pids, in order, of the processes other than this one with a lock on `path`'s inode.
    public static func holders(_ path: String) -> [Int32] {
        var st = stat()
        guard stat(path, &st) == 0, let text = readText("/proc/locks") else { return [] }
        let inode = UInt64(st.st_ino)
        var pids: [Int32] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // "1: POSIX  ADVISORY  READ 1234 08:01:5678 1073741824 1073742335" (a waiter has "->").
            guard !fields.contains("->"), let at = fields.firstIndex(where: { $0.split(separator: ":").count == 3 }), at > 0,
                let pid = Int32(fields[at - 1]), let ino = fields[at].split(separator: ":").last.flatMap({ UInt64($0) }),
                ino == inode, pid != getpid(), !pids.contains(pid)
            else { continue }
            pids.append(pid)
        }
        return pids.sorted()
    }

    /// A small file's text (files in /proc report no size, so it is read to its end).
    static func readText(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count < 16 << 20 {
            let n = read(fd, &chunk, chunk.count)
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
