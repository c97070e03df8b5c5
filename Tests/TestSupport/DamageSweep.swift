import CallLog
import Foundation

/// One log file as a writer wrote it, damaged at chosen offsets (a flipped byte, a cut) and read
/// again: what the reader keeps, held against what it keeps of the undamaged file.
///
/// What must stay true for every writer (`LogWriter` bounds damage, not its callers):
/// - nothing altered is used: what is kept is the undamaged file's records, in order, unchanged;
/// - a flipped byte costs records of one stretch of text no longer than one segment
///   (`segmentBytes` and the line that crossed it): the reader resumes at the next zstd frame,
///   which restates every chain in full;
/// - a cut costs, beyond what zstd can still decode, no more text than one flush
///   (`flushTextBytes` and the line that crossed it).
public struct DamageSweep {
    /// The undamaged file.
    public let clean: [UInt8]
    /// What a reader keeps of the undamaged file.
    public let records: [LogRecord]
    /// Each record's line as written (delta-encoded), newline included; checkpoints left out.
    public let lineBytes: [Int]
    public let path: String

    public struct Outcome {
        public var kept = 0
        /// Text from the first record lost to the last (a flip), or of the records lost beyond
        /// what zstd still decodes (a cut).
        public var lostText = 0
        public var lostRecords = 0
        /// Broken promises: an altered or reordered record used, a cut losing more than its end.
        public var violations: [String] = []
    }

    public init(path: String) throws {
        self.path = path
        clean = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let (records, issues) = LogReader(path: path).readAll()
        guard issues.isEmpty else { throw SweepError("\(path): the undamaged file has issues: \(issues)") }
        self.records = records
        lineBytes = Self.recordLines(ZstdDecoder.decompressAll(clean).output)
        guard lineBytes.count == records.count else {
            throw SweepError("\(path): \(lineBytes.count) lines of records, \(records.count) records read")
        }
    }

    /// The longest line: a segment or a flush ends after the line that crossed its size.
    public var longestLine: Int { lineBytes.max() ?? 0 }
    public var textBytes: Int { lineBytes.reduce(0, +) }

    /// Lengths of the complete lines of `text` that are records (not checkpoints).
    static func recordLines(_ text: [UInt8]) -> [Int] {
        var lengths: [Int] = []
        var start = 0
        let marker = Array(#""event":"checkpoint""#.utf8)
        for (i, b) in text.enumerated() where b == 0x0A {
            let line = text[start..<i]
            let isCheckpoint =
                line.count < 400 && line.firstRange(of: marker) != nil && line.firstRange(of: Array(#""agent":"writer""#.utf8)) != nil
            if !isCheckpoint { lengths.append(i + 1 - start) }
            start = i + 1
        }
        return lengths
    }

    /// The file with the byte at `offset` changed (every bit inverted), read again.
    public func flip(at offset: Int, scratch: URL) throws -> Outcome {
        var bytes = clean
        bytes[offset] ^= 0xFF
        var (outcome, lost) = try read(bytes, scratch: scratch)
        // Counted from the first record lost to the last: between them, records that a later
        // checkpoint vouched for may still be kept (events; statistics need their chain's base).
        if let first = lost.first, let last = lost.last { outcome.lostText = lineBytes[first...last].reduce(0, +) }
        return outcome
    }

    /// The file cut after `length` bytes, read again.
    public func cut(at length: Int, scratch: URL) throws -> Outcome {
        let bytes = Array(clean.prefix(length))
        var (outcome, lost) = try read(bytes, scratch: scratch)
        // Records zstd can still decode from the cut file: the loss is counted past these.
        let decodable = Self.recordLines(ZstdDecoder.decompressAll(bytes).output).count
        if outcome.kept > decodable { outcome.violations.append("cut at \(length): \(outcome.kept) records kept, \(decodable) decodable") }
        let run = Self.runs(lost)
        if run.count > 1 || (run.first.map { $0.upperBound != records.count } ?? false) {
            outcome.violations.append("cut at \(length): records lost before the end \(run)")
        }
        outcome.lostText = lineBytes[min(outcome.kept, decodable)..<decodable].reduce(0, +)
        return outcome
    }

    /// What a reader keeps of `bytes`, and the indices of the undamaged file's records it lost.
    private func read(_ bytes: [UInt8], scratch: URL) throws -> (Outcome, [Int]) {
        let file = scratch.appendingPathComponent((path as NSString).lastPathComponent)
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let kept = LogReader(path: file.path).readAll().records
        var outcome = Outcome()
        outcome.kept = kept.count
        // Each kept record must be the next undamaged one or a later one: anything else was altered.
        var i = 0
        var lost: [Int] = []
        for (n, r) in kept.enumerated() {
            guard let at = records[i...].firstIndex(of: r) else {
                outcome.violations.append("record \(n) kept is not the undamaged file's next: \(r.kind) \(r.call) ts \(r.ts)")
                break
            }
            lost += Array(i..<at)
            i = at + 1
        }
        lost += Array(i..<records.count)
        outcome.lostRecords = lost.count
        return (outcome, lost)
    }

    /// Indices as runs of consecutive ones.
    static func runs(_ indices: [Int]) -> [Range<Int>] {
        var runs: [Range<Int>] = []
        for i in indices {
            if let last = runs.last, last.upperBound == i {
                runs[runs.count - 1] = last.lowerBound..<(i + 1)
            } else {
                runs.append(i..<(i + 1))
            }
        }
        return runs
    }

    /// What a sweep found: its worst losses and every promise broken.
    public struct Report {
        public var frames = 0
        public var flips = 0
        public var cuts = 0
        public var worstFlipText = 0
        public var worstCutText = 0
        public var failures: [String] = []
    }

    /// Flips at `flips` offsets and cuts at `cuts` offsets spread over the file, each held to
    /// the bounds of `options` (the writer's): a flip loses at most one segment's text, a cut at
    /// most one flush's text beyond what zstd can still decode.
    public func sweep(flips: Int, cuts: Int, options: LogWriter.Options, scratch: URL) throws -> Report {
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        var report = Report()
        report.frames = ZstdFrameStarts.count(clean)
        let flipBound = options.segmentBytes + longestLine
        let cutBound = options.flushTextBytes + longestLine
        for offset in Self.offsets(flips, in: clean.count) {
            let o = try flip(at: offset, scratch: scratch)
            report.failures += o.violations
            if o.lostText > flipBound {
                report.failures.append("flip at \(offset) of \(clean.count): \(o.lostRecords) records, \(o.lostText) bytes of text lost")
            }
            report.worstFlipText = max(report.worstFlipText, o.lostText)
            report.flips += 1
        }
        for offset in Self.offsets(cuts, in: clean.count, headerBytes: 0) {
            let o = try cut(at: offset, scratch: scratch)
            report.failures += o.violations
            if o.lostText > cutBound {
                report.failures.append("cut at \(offset) of \(clean.count): \(o.lostRecords) records, \(o.lostText) bytes of text lost")
            }
            report.worstCutText = max(report.worstCutText, o.lostText)
            report.cuts += 1
        }
        return report
    }

    /// `count` offsets spread over `0..<size` (both ends included), the first `headerBytes`
    /// (zstd's frame header) always among them.
    public static func offsets(_ count: Int, in size: Int, headerBytes: Int = 6) -> [Int] {
        guard size > 1 else { return [0] }
        let spread = (0..<count).map { $0 * (size - 1) / max(1, count - 1) }
        return Array(Set(spread + Array(0..<min(headerBytes, size)))).sorted()
    }
}

/// zstd frames in a file: its start and every later magic number (a magic number inside
/// compressed data is possible but rare enough for a count).
enum ZstdFrameStarts {
    static func count(_ bytes: [UInt8]) -> Int {
        guard bytes.count >= 4 else { return 0 }
        return 1 + (1..<(bytes.count - 3)).filter { bytes[$0] == 0x28 && bytes[$0 + 1] == 0xB5 && bytes[$0 + 2] == 0x2F && bytes[$0 + 3] == 0xFD }.count
    }
}

public struct SweepError: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}
