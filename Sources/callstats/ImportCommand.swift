import ConsoleOutput
import ArgumentParser
import CallLog
import Foundation
import Importers
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `callstats import`: dumps users already have, as log format v1 (one call per dump).
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Convert webrtc-internals dumps, rtcstats dumps and Chromium test-page recordings into log format v1.",
        discussion: """
            The format is told by content (gzip and zstd are decompressed): chrome://webrtc-internals \
            dumps (standard or legacy statistics), rtcstats dumps (rtcstats-server's files as stored: \
            a connectionInfo line, a metadata object or no header first; rtcstats-js 3's \
            table-compressed ones too; Chrome's "rtcstats dump"), and the project's Chromium \
            test-page recordings. rtcstats-server's JVB, Jicofo and Jigasi samples are not browser \
            dumps and are refused. Each dump becomes one \
            call in DIR/<call>.ndjson.zst, its peer connections as "pc"; `callstats analyze DIR` \
            scores it. The call id is the dump's file name (--call for one dump). Labels come only \
            from --label.

            Exit status as analyze's: 0 all imported, 3 some input left out (details on stderr), \
            1 nothing imported.

            Examples:
              callstats import webrtc_internals_dump.txt rtcstats-*.gz --out imported/ --label tenant=acme
              callstats analyze imported/ --db calls.sqlite
            """,
        aliases: ["import-chromium"])

    @Argument(help: "Dump files.")
    var inputs: [String]

    @Option(help: "Output directory (a .ndjson[.zst] file name: one input written to that file).")
    var out: String

    @Option(name: .customLong("label"), help: "A label for every imported call (key=value; repeatable).")
    var labels: [String] = []

    @Option(help: "Call id to write (one input only; default: the file name, or a recording's own id).")
    var call: String?

    @Option(help: "Test-page recordings: keep every K-th snapshot per side (5 turns the 1 s recording into 5 s).")
    var every: Int = 1

    @Flag(help: "Write every statistics snapshot in full (no deltas).")
    var fullSnapshots = false

    @Option(
        help: ArgumentHelp(
            "Pseudonymise call ids, person fields and IP addresses with this key as the dumps are converted "
                + "(as serve and analyze do with it); file names and messages name calls and inputs by pseudonym.",
            valueName: "32 hex digits"))
    var pseudonymizeKey: String?

    @Option(help: ArgumentHelp("Keep addresses in this prefix as they are (repeatable; needs --pseudonymize-key).", valueName: "prefix"))
    var keepAddress: [String] = []

    var outIsFile: Bool { [".ndjson", ".ndjson.zst", ".jsonl", ".jsonl.zst"].contains { out.hasSuffix($0) } }

    func validate() throws {
        guard every >= 1 else { throw ValidationError("--every must be at least 1") }
        if call != nil && inputs.count > 1 { throw ValidationError("--call names one call: give one input") }
        if outIsFile && inputs.count > 1 { throw ValidationError("--out is a file: give one input, or a directory") }
        for l in labels where !l.contains("=") || l.hasPrefix("=") {
            throw ValidationError("--label \(l): expected key=value")
        }
        if let k = pseudonymizeKey, SipHashKey(hex: k) == nil {
            throw ValidationError("--pseudonymize-key must be 32 hexadecimal digits (a 128-bit key), got \(k.count) characters")
        }
        for p in keepAddress where IPPrefix(p) == nil { throw ValidationError("--keep-address: not a prefix: \(p) (e.g. 203.0.113.0/24)") }
        if !keepAddress.isEmpty && pseudonymizeKey == nil { throw ValidationError("--keep-address needs --pseudonymize-key") }
    }

    /// With a key, what the output says of a dump: its folder and its name's pseudonym (a
    /// dump's name is often its call's id or a person's), and messages with identifiers
    /// replaced as in the records.
    struct Shown {
        let privacy: RecordPrivacy?

        func input(_ path: String) -> String {
            guard let privacy else { return path }
            let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
            return String(path[..<slash]) + privacy.identifier(String(path[slash...]))
        }

        /// A peer connection's name as the records name it (`RecordPrivacy`).
        func peerConnection(_ name: String) -> String {
            guard let privacy, name != "pc" else { return name }
            return privacy.identifier(name)
        }

        func message(_ text: String, input path: String) -> String {
            guard let privacy else { return text }
            let named = text.replacing(path, with: input(path))
            return privacy.identifiers.scrubbed(privacy.addresses.scrub(named), secrets: []) ?? privacy.addresses.scrub(named)
        }
    }

    func run() throws {
        var labelMap: [String: String] = [:]
        for l in labels {
            let i = l.firstIndex(of: "=")!
            labelMap[String(l[..<i])] = String(l[l.index(after: i)...])
        }
        if !outIsFile {
            do {
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            } catch {
                Terminal.error("\(out): cannot create the output directory (\((error as NSError).localizedDescription))")
                throw ExitCode(ExitStatus.failure)
            }
        }
        let privacy = pseudonymizeKey.flatMap(SipHashKey.init(hex:)).map {
            RecordPrivacy(key: $0, keepAddresses: keepAddress.compactMap(IPPrefix.init))
        }
        let shown = Shown(privacy: privacy)
        // Dumps named alike (two folders' webrtc_internals_dump.txt) get distinct calls.
        var seen: [String: Int] = [:]
        var imported = 0, failed = 0, partial = 0
        for input in inputs {
            var explicit = call
            if explicit == nil {
                let id = DumpImport.defaultCallID(input)
                seen[id, default: 0] += 1
                if seen[id]! > 1 { explicit = "\(id)-\(seen[id]!)" }
            }
            let target = outIsFile ? out : "\(out)/.importing-\(getpid()).ndjson.zst"
            unlink(target)
            var options = LogWriter.Options()
            options.deltaStats = !fullSnapshots
            let writer = try LogWriter(path: target, options: options)
            let job = DumpImport(path: input, callID: explicit, labels: labelMap, every: every)
            let result = job.run { try writer.append(privacy?.apply(to: $0) ?? $0) }
            try writer.close()
            let callID = privacy?.identifier(result.callID) ?? result.callID
            for note in result.notes { Terminal.error(shown.message("\(input): note: \(note)", input: input)) }
            for s in result.skipped { Terminal.error(shown.message(s.description, input: input)) }
            if let failure = result.failure, result.records == 0 {
                Terminal.error(shown.message(failure.description, input: input))
                unlink(target)
                failed += 1
                continue
            }
            if let failure = result.failure { Terminal.error(shown.message(failure.description, input: input)) }
            var path = target
            if !outIsFile {
                path = "\(out)/\(Self.fileName(callID)).ndjson.zst"
                unlink(path)
                guard rename(target, path) == 0 else {
                    Terminal.error("\(path): cannot write: \(String(cString: strerror(errno)))")
                    failed += 1
                    continue
                }
            }
            imported += 1
            if !result.skipped.isEmpty || result.failure != nil { partial += 1 }
            // Each peer connection's snapshots, or their total when there are many.
            let pcs =
                result.snapshots.count <= 6
                ? result.snapshots.keys.sorted().map { "\(shown.peerConnection($0)): \(result.snapshots[$0]!)" }.joined(separator: ", ")
                : "\(result.snapshots.values.reduce(0, +)) in all"
            print(
                "\(shown.input(input)): \(result.format?.rawValue ?? "?"), call \(callID), \(result.peerConnections) peer connection(s)"
                    + (pcs.isEmpty ? ", no snapshots" : " (snapshots \(pcs))") + ", \(result.records) records -> \(path)")
        }
        if imported == 0 { throw ExitCode(ExitStatus.failure) }
        if failed > 0 || partial > 0 { throw ExitCode(ExitStatus.skippedInput) }
    }

    /// A call id as a file name: path separators and leading dots replaced.
    static func fileName(_ id: String) -> String {
        var s = String(id.map { $0 == "/" || $0 == "\\" || $0 == "\0" ? "_" : $0 })
        while s.hasPrefix(".") { s = "_" + s.dropFirst() }
        return s.isEmpty ? "call" : String(s.prefix(200))
    }
}
