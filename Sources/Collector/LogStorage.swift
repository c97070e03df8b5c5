import CallLog
import Foundation

/// Where the writer's files live: the file system in an app, a faulty one in tests (full
/// disk, slow disk). The only seam between the collector's logic and the disk.
protocol LogStorage: Sendable {
    /// Creates the directory and its parents when missing: 0 or errno.
    func prepareDirectory(_ path: String) -> Int32
    /// A new log file; on failure the errno that says why.
    func create(_ path: String, options: LogWriter.Options) -> Result<any LogSink, StorageError>
    /// Names and sizes of the files in `directory` (not recursive); empty when unreadable.
    func files(in directory: String) -> [(name: String, size: Int)]
    func remove(_ path: String) -> Int32
    func exists(_ path: String) -> Bool
    /// Bytes free for this process, when known.
    func availableBytes(_ path: String) -> Int64?
    /// Makes created and removed entries of `directory` durable.
    func syncDirectory(_ directory: String)
}

struct StorageError: Error {
    var errno: Int32
    var message: String
}

/// An open log file. `LogWriter` is the real one.
protocol LogSink: AnyObject {
    func append(_ record: LogRecord) throws
    func flush(sync: Bool) throws
    func close() throws
    var bytesWritten: Int { get }
}

extension LogWriter: LogSink {}

/// The real file system.
struct FileStorage: LogStorage {
    func prepareDirectory(_ path: String) -> Int32 {
        Platform.isDirectory(path) ? 0 : Platform.makeDirectories(path)
    }

    func create(_ path: String, options: LogWriter.Options) -> Result<any LogSink, StorageError> {
        // LogWriter reports an open failure as text; the probe gives the errno that decides
        // the drop reason (and creates the file LogWriter then appends to).
        let e = Platform.probeCreate(path)
        guard e == 0 else { return .failure(StorageError(errno: e, message: Platform.describe(e))) }
        do {
            return .success(try LogWriter(path: path, options: options))
        } catch {
            return .failure(StorageError(errno: 0, message: "\(error)"))
        }
    }

    func files(in directory: String) -> [(name: String, size: Int)] {
        let fm = FileManager.default
        guard let names = try? fm.contentsOfDirectory(atPath: directory) else { return [] }
        return names.map { name in
            let size = (try? fm.attributesOfItem(atPath: directory + "/" + name))?[.size] as? NSNumber
            return (name, size?.intValue ?? 0)
        }
    }

    func remove(_ path: String) -> Int32 { Platform.remove(path) }
    func exists(_ path: String) -> Bool { Platform.exists(path) }
    func availableBytes(_ path: String) -> Int64? { Platform.availableBytes(path) }
    func syncDirectory(_ directory: String) { Platform.syncDirectory(directory) }
}

/// File names that sort by time: `<prefix>-20251121T121850123Z-0001.ndjson.zst` (UTC, ms;
/// `.ndjson.gz` where the collector writes gzip).
enum LogFileName {
    /// The endings of the files the collector writes and rotates: its own compressions.
    static let suffixes = [LogCompression.zstd.fileSuffix, LogCompression.gzip.fileSuffix]

    static func make(prefix: String, epochMs: Int64, counter: Int, compression: LogCompression) -> String {
        let (y, mo, d, h, mi, s, ms) = civil(epochMs)
        func pad(_ n: Int64, _ w: Int) -> String {
            let t = String(n)
            return String(repeating: "0", count: max(0, w - t.count)) + t
        }
        return
            "\(prefix)-\(pad(y, 4))\(pad(mo, 2))\(pad(d, 2))T\(pad(h, 2))\(pad(mi, 2))\(pad(s, 2))\(pad(ms, 3))Z-\(pad(Int64(counter % 10_000), 4))\(compression.fileSuffix)"
    }

    static func isLog(_ name: String, prefix: String) -> Bool {
        name.hasPrefix(prefix + "-") && suffixes.contains { name.hasSuffix($0) }
    }

    /// UTC calendar fields of an epoch time (days-from-civil inverse, Howard Hinnant's algorithm).
    static func civil(_ epochMs: Int64) -> (Int64, Int64, Int64, Int64, Int64, Int64, Int64) {
        let ms = ((epochMs % 1000) + 1000) % 1000
        let secs = (epochMs - ms) / 1000
        var days = secs / 86_400
        var rem = secs % 86_400
        if rem < 0 { rem += 86_400; days -= 1 }
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        return (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60, ms)
    }
}
