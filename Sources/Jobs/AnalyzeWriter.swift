import Analysis
import CallLog
import Foundation
import MaterialScanning
import Store

/// The writer of an `analyze` run: the one thread that touches the database. It takes what the
/// readers hand over (calls, issues, files done) and writes calls in sorted runs, records files
/// in the ledger, and commits at file boundaries.
///
/// What must stay true:
/// - A file's ledger entry commits in the transaction that writes its last calls, so an
///   interrupted run leaves a consistent database and the next run reads unfinished files again.
/// - Rollup buckets the calls touched are marked pending in the transaction of those calls, and
///   rebuilt once, in the final commit (`ResultStore.markRollupsPending`).
/// - Into a store other processes write too, every sorted batch of calls commits on its own.
/// - A call seen in several files of the run is written again with each part; it is counted
///   once, with the grade of its last write.
final class AnalyzeWriter<Results: ResultStore> {
    /// Writes one call (merging with what is stored unless `knownNew`) and says the grade it now
    /// has and the start times whose rollups it touched.
    typealias CallWriter = (_ call: PendingCall, _ knownNew: Bool) throws -> CallWriting.Written

    private let store: Results
    private let options: AnalyzeRun.Options
    private let queue: HandOffQueue
    private let readers: Int
    private let filesToRead: Int
    private let writeCall: CallWriter
    /// Into a database without calls, a call this run has not written yet is not stored.
    private let startedWithoutCalls: Bool
    var onProgress: (@Sendable (AnalyzeRun.Progress) -> Void)?
    var onIssue: (@Sendable (LogIssue) -> Void)?

    private(set) var progress: AnalyzeRun.Progress
    private(set) var issueCounts: [String: Int] = [:]
    private(set) var firstIssues: [LogIssue] = []
    private(set) var gradesInRun: [Grade: Int] = [:]
    /// The grade of each call written in this run, by its id's hash: 16 bytes a call where the
    /// ids themselves took tens (a run of millions of calls). Two ids of one hash (about one
    /// chance in 10^13 for a million calls) would only make a new call be looked up in the
    /// database and miscount one grade in the summary.
    private(set) var gradeByCall: [Int: Grade] = [:]
    /// The ledger's figures of the files read, for the report.
    private(set) var recordsOfFilesRead = 0, textBytesOfFilesRead = 0

    private var touchedStarts = Set<Int64>()
    private static var hourMs: Int64 { 3_600_000 }
    private var callsInTransaction = 0
    private var transactionStarted = Date()
    /// Shared files' parts done so far, by fingerprint and path.
    private var partsDone: [String: FileDone] = [:]
    private var lastProgress = Date.distantPast
    /// Calls wait here and are written `callsPerWrite` at a time in call-id order: every
    /// table is keyed by call id, and ids arrive in random order, so sorted writes touch
    /// each B-tree page once per batch instead of once per call.
    private var unwritten: [PendingCall] = []
    /// Once every reader is on its last file, calls are written as they come, 8 at a time,
    /// and the writer is woken for 8: what it has not written when the readers finish, it
    /// writes alone. At 128 a write (woken at 64), that was about 100 real-shaped calls, and
    /// the writer ended 47-130 ms after the readers; now 16-37 ms (a build that timed it).
    private var lastStretch = false
    static var lastStretchCallsPerWrite: Int { 8 }

    init(
        store: Results, options: AnalyzeRun.Options, queue: HandOffQueue, readers: Int, filesToRead: Int,
        startedWithoutCalls: Bool, progress: AnalyzeRun.Progress, writeCall: @escaping CallWriter
    ) {
        self.store = store
        self.options = options
        self.queue = queue
        self.readers = readers
        self.filesToRead = filesToRead
        self.startedWithoutCalls = startedWithoutCalls
        self.progress = progress
        self.writeCall = writeCall
        if filesToRead <= readers { enterLastStretch() }
    }

    /// Writes everything the readers hand over until they are done, then the rollups, and
    /// commits. On an error the open transaction is rolled back (what was committed stays).
    /// `qualityModel`: the model version to record as every stored call's, nil to leave the
    /// recorded one (calls graded by another model are stored: `AnalyzeRun` warns).
    func run(config: AnalysisConfig, keyFingerprint: String, qualityModel: String?, started: Date, reading: ReadProgress) throws {
        try store.begin()
        do {
            try store.record(settings: config)
            try store.record(keyFingerprint: keyFingerprint)
            if let qualityModel { try store.record(qualityModel: qualityModel) }
            while let batch = queue.takeAll(readers: readers) {
                for item in batch {
                    switch item {
                    case .call(let pending): try take(pending)
                    case .issue(let issue): note(issue)
                    case .fileDone(let file): try fileDone(file)
                    }
                }
                if let onProgress, Date().timeIntervalSince(lastProgress) > options.progressInterval {
                    lastProgress = Date()
                    progress.seconds = Date().timeIntervalSince(started)
                    (progress.records, progress.textBytes, progress.bytesRead) = reading.totals
                    onProgress(progress)
                }
            }
            try writeUnwritten()
            try store.markRollupsPending(forCallStarts: touchedStarts)
            try store.refreshPendingRollups()
            try store.linkConversations()
            try store.commit()
        } catch {
            store.rollback()
            throw error
        }
    }

    /// Calls are written in sorted runs as they come (bounded memory, and no backlog when the
    /// readers finish); committed with the files they came from.
    private func take(_ pending: PendingCall) throws {
        unwritten.append(pending)
        callsInTransaction += 1
        let callsPerWrite = lastStretch ? min(options.callsPerWrite, Self.lastStretchCallsPerWrite) : options.callsPerWrite
        if unwritten.count >= min(callsPerWrite, options.callsPerTransaction) { try writeUnwritten() }
    }

    /// A warning naming both copies of a call that disagree, and which was kept.
    static func issue(_ d: CallMaterial.Disagreement, callID: String) -> LogIssue {
        let unknown = "a file not recorded with the stored call"
        let kept = d.kept ?? unknown, left = d.left ?? unknown
        return LogIssue(
            file: d.kept ?? d.left ?? "", line: nil, category: .disagreeingCopies,
            message: "call \(callID): its \(d.record) record at ts \(d.ts) differs between \(kept) and \(left); "
                + "kept the one from \(kept) (its text sorts first, whatever the order the files are read in)")
    }

    private func note(_ issue: LogIssue) {
        // A note says what was done, not what was skipped: shown, never counted as skipped.
        if issue.category.isNote {
            onIssue?(issue)
            return
        }
        issueCounts[issue.category.rawValue, default: 0] += 1
        if firstIssues.count < 20 { firstIssues.append(issue) }
        onIssue?(issue)
    }

    private func fileDone(_ part: FileDone) throws {
        var f = part
        // A shared file is done when every reader has finished its part.
        if f.parts > 1 {
            let key = f.entry.fingerprint + "\u{0}" + f.entry.path
            if var sum = partsDone[key] {
                sum.add(f)
                partsDone[key] = sum
            } else {
                partsDone[key] = f
            }
            f = partsDone[key]!
            guard f.partsDone == f.parts else { return }
            partsDone[key] = nil
        }
        // A file nothing could be read from (another compression, damaged throughout) stays out
        // of the ledger: the next run reports it again rather than skip it as ingested.
        if f.entry.records > 0 || f.textBytes > 0 || f.entry.skipped == 0 {
            try store.recordIngested(f.entry, at: Int64(Date().timeIntervalSince1970 * 1000))
        }
        for (category, n) in f.issuesCounted { issueCounts[category.rawValue, default: 0] += n }
        progress.filesDone += 1
        recordsOfFilesRead += f.entry.records
        progress.compressedBytes += Int(f.entry.size)
        textBytesOfFilesRead += f.textBytes
        // A file's calls and its ledger entry commit together. Once every reader is on its last
        // file, each file's calls commit when it is done: writing their pages overlaps the
        // readers' last work, and the final commit, which nothing overlaps, holds only the last
        // file's calls.
        if progress.filesDone + readers >= filesToRead { enterLastStretch() }
        // The last file's calls commit with the run's final commit, just after.
        let lastFile = progress.filesDone == filesToRead
        if !lastFile
            && (callsInTransaction >= options.callsPerTransaction || callsInTransaction > 0 && lastStretch
                || callsInTransaction > 0 && Date().timeIntervalSince(transactionStarted) >= options.secondsPerTransaction)
        {
            try writeUnwritten()
            try commitAndContinue()
        }
    }

    private func enterLastStretch() {
        guard !lastStretch else { return }
        lastStretch = true
        queue.wakeWriter(at: Self.lastStretchCallsPerWrite)
    }

    private func writeUnwritten() throws {
        unwritten.sort { $0.callID < $1.callID }  // stable: a call's parts keep their order
        if !startedWithoutCalls { try store.prepareLookups(unwritten.map(\.callID)) }
        for i in unwritten.indices {  // by index: `for pending in unwritten` copied each call
            let key = unwritten[i].callID.hashValue
            let written = try writeCall(unwritten[i], startedWithoutCalls && gradeByCall[key] == nil)
            // Kept as the hour each started in: the buckets the rollups rebuild are hours and days.
            for t in written.starts { touchedStarts.insert(t - ((t % Self.hourMs) + Self.hourMs) % Self.hourMs) }
            if let earlier = gradeByCall.updateValue(written.grade, forKey: key) {
                gradesInRun[earlier, default: 0] -= 1
            }
            gradesInRun[written.grade, default: 0] += 1
            progress.callsWritten += 1
            for d in written.disagreements { note(Self.issue(d, callID: unwritten[i].callID)) }
        }
        unwritten.removeAll(keepingCapacity: true)
        // Each call written was locked in call-id order: committing now keeps another writer's
        // locks from ever waiting on these in a cycle (`ResultStore.sharedByOtherWriters`).
        if store.sharedByOtherWriters && callsInTransaction > 0 { try commitAndContinue() }
    }

    /// Commits the calls written so far with their pending rollup marks, and opens the next
    /// transaction.
    private func commitAndContinue() throws {
        try store.markRollupsPending(forCallStarts: touchedStarts)
        touchedStarts.removeAll()
        try store.commit()
        try store.begin()
        callsInTransaction = 0
        transactionStarted = Date()
    }
}
