import CallLog
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `callstats import`'s job: each dump converted into a log of its own (or one dump into one
/// named file), written under a temporary name and renamed when whole, so that `analyze`
/// never reads half a dump. Dumps named alike (two folders' `webrtc_internals_dump.txt`) get
/// distinct calls. With a pseudonymisation key, records, file names and messages name calls and
/// inputs by pseudonym.
public struct DumpImportRun {
    public struct Options {
        public var inputs: [String]
        /// A folder, or a `.ndjson[.zst]` file for one input.
        public var out: String
        public var callID: String?
        public var labels: [String: String] = [:]
        public var every = 1
        public var deltaStats = true
        public var privacy: RecordPrivacy?

        public init(inputs: [String], out: String) {
            self.inputs = inputs
            self.out = out
        }

        public var outIsFile: Bool { [".ndjson", ".ndjson.zst", ".jsonl", ".jsonl.zst"].contains { out.hasSuffix($0) } }
    }

    /// One dump's outcome, as the command prints it.
    public struct Imported {
        /// The input as messages show it (its name's pseudonym under a key).
        public var input: String
        public var result: DumpImport.Result
        /// The call id written (a pseudonym under a key).
        public var callID: String
        public var path: String
        /// Each peer connection's snapshots (names as the records have them), or their total
        /// when there are many.
        public var snapshots: String
    }

    public struct Report {
        public var imported = 0
        public var failed = 0
        /// Imported with something left out.
        public var partial = 0
    }

    public let options: Options
    public init(options: Options) { self.options = options }

    /// Runs every input; `imported` is told each dump written, `problem` each line for
    /// standard error (notes, skipped parts, failures).
    public func run(imported: (Imported) -> Void, problem: (String) -> Void) throws -> Report {
        let o = options
        if !o.outIsFile {
            do {
                try FileManager.default.createDirectory(atPath: o.out, withIntermediateDirectories: true)
            } catch {
                throw DumpError(file: o.out, message: "cannot create the output directory (\((error as NSError).localizedDescription))")
            }
        }
        var seen: [String: Int] = [:]
        var report = Report()
        for input in o.inputs {
            var explicit = o.callID
            if explicit == nil {
                let id = DumpImport.defaultCallID(input)
                seen[id, default: 0] += 1
                if seen[id]! > 1 { explicit = "\(id)-\(seen[id]!)" }
            }
            let target = o.outIsFile ? o.out : "\(o.out)/.importing-\(getpid()).ndjson.zst"
            unlink(target)
            var writerOptions = LogWriter.Options()
            writerOptions.deltaStats = o.deltaStats
            let writer = try LogWriter(path: target, options: writerOptions)
            let result = DumpImport(path: input, callID: explicit, labels: o.labels, every: o.every).run {
                try writer.append(o.privacy?.apply(to: $0) ?? $0)
            }
            try writer.close()
            let callID = o.privacy?.identifier(result.callID) ?? result.callID
            for note in result.notes { problem(message("\(input): note: \(note)", input: input)) }
            for s in result.skipped { problem(message(s.description, input: input)) }
            if let failure = result.failure, result.records == 0 {
                problem(message(failure.description, input: input))
                unlink(target)
                report.failed += 1
                continue
            }
            if let failure = result.failure { problem(message(failure.description, input: input)) }
            var path = target
            if !o.outIsFile {
                path = "\(o.out)/\(Self.fileName(callID)).ndjson.zst"
                unlink(path)
                guard rename(target, path) == 0 else {
                    problem("\(path): cannot write: \(String(cString: strerror(errno)))")
                    report.failed += 1
                    continue
                }
            }
            report.imported += 1
            if !result.skipped.isEmpty || result.failure != nil { report.partial += 1 }
            let snapshots =
                result.snapshots.count <= 6
                ? result.snapshots.keys.sorted().map { "\(peerConnection($0)): \(result.snapshots[$0]!)" }.joined(separator: ", ")
                : "\(result.snapshots.values.reduce(0, +)) in all"
            imported(Imported(input: shown(input), result: result, callID: callID, path: path, snapshots: snapshots))
        }
        return report
    }

    /// A call id as a file name: path separators and leading dots replaced.
    public static func fileName(_ id: String) -> String {
        var s = String(id.map { $0 == "/" || $0 == "\\" || $0 == "\0" ? "_" : $0 })
        while s.hasPrefix(".") { s = "_" + s.dropFirst() }
        return s.isEmpty ? "call" : String(s.prefix(200))
    }

    /// With a key, an input as the output names it: its folder and its name's pseudonym (a
    /// dump's name is often its call's id or a person's).
    func shown(_ path: String) -> String {
        guard let privacy = options.privacy else { return path }
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        return String(path[..<slash]) + privacy.identifier(String(path[slash...]))
    }

    /// A peer connection's name as the records name it (`RecordPrivacy`).
    func peerConnection(_ name: String) -> String {
        guard let privacy = options.privacy, name != "pc" else { return name }
        return privacy.identifier(name)
    }

    /// A message with the input named as `shown` names it and identifiers replaced as in the records.
    func message(_ text: String, input path: String) -> String {
        guard let privacy = options.privacy else { return text }
        let named = text.replacing(path, with: shown(path))
        return privacy.identifiers.scrubbed(privacy.addresses.scrub(named), secrets: []) ?? privacy.addresses.scrub(named)
    }
}
