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
