import ConsoleOutput
import Foundation

/// `-` among the paths of `cat` and `analyze`: standard input, kept in a temporary file named
/// `standard-input` for the run, since logs are read by position (zstd frames, checkpoints) and
/// the ledger keys on the whole content. The file is removed when the command ends.
struct StandardInput {
    let directory: String
    let path: String

    /// The paths with `-` replaced by the copy of standard input, and the copy (nil without `-`).
    static func replacingDash(in paths: [String]) throws -> (paths: [String], copy: StandardInput?) {
        guard paths.contains("-") else { return (paths, nil) }
        let directory = NSTemporaryDirectory() + "callstats-stdin-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/standard-input"
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw CommandFailure(message: "standard input: cannot keep a copy in \(directory)")
        }
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        while let chunk = try FileHandle.standardInput.read(upToCount: 1 << 20), !chunk.isEmpty { try out.write(contentsOf: chunk) }
        try out.close()
        let copy = StandardInput(directory: directory, path: path)
        return (paths.map { $0 == "-" ? path : $0 }, copy)
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}
