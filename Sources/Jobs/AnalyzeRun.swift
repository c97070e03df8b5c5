import Analysis
import CallLog
import Foundation
import MaterialScanning
import Store

/// The `analyze` job: reads log files, analyses every call, writes the database.
///
/// Two kinds of threads: readers (one per core by default) each take whole files (or a share of
/// the calls of the last few), decompress and scan them, and hand finished calls to one writer
/// (`AnalyzeWriter`, on the thread that called `run`), the only thread that touches the database.
/// Memory stays bounded: a reader holds the calls still open in its current file, and the
/// hand-off queue is bounded, so readers wait when the writer falls behind.
///
/// Idempotence: a file whose fingerprint is in the ledger is skipped; every call's compact
/// material is stored, and new records for a stored call merge with it (duplicates collapse),
/// so re-reading anything never double-counts. Crash safety: the writer commits in
/// transactions and records a file in the ledger in the transaction that writes its last
/// calls; an interrupted run leaves a consistent database and the next run reads the
/// unfinished files again. Rollups are rebuilt at the end of a run: during a run they may lag
/// the calls already committed, and after an interrupted one the next run brings them up to
/// date (`rollup_pending`).
public final class AnalyzeRun {
    public struct Options: Sendable {
        public var paths: [String]
        public var database: String
        /// The analysis settings: nil for the database's own (the defaults for a new one);
        /// others are refused while the database holds calls graded otherwise (`callstats regrade`).
        public var config: AnalysisConfig?
        public var readers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8))
        /// A transaction is committed at the next file boundary once this long has passed since
        /// the last commit, or once `callsPerTransaction` calls are in it: an interrupted run
        /// loses about this much work, which the next run redoes. Not a count of calls alone:
        /// every commit writes each index page its calls touched, and calls land on random
        /// pages (their ids are random), so commits every 2,000 calls rewrote the indexes
        /// again and again as the database grew (40,000 calls in one day: 2.8 GB written for
        /// a 313 MB database; one commit: 1.7 GB).
        /// (One more commit comes when every reader is on its last file, so that most of a short
        /// run's writes overlap the readers' last work: 700 real-shaped calls, the writer alone
        /// after the readers for 0.69-0.72 s before, 0.29-0.39 s after.)
        public var secondsPerTransaction = 10.0
        public var callsPerTransaction = 200_000
        /// Calls written at a time inside a transaction, sorted by id so that consecutive rows
        /// land on the same B-tree pages. Small enough that the writer keeps pace with the
        /// readers: what it has not written when they finish, it writes alone on one core
        /// (700 real-shaped calls, `analyze --calls-per-write`: 1.99-2.04 s at 2,000, the whole
        /// run in one write; 1.69-1.75 s at 128).
        public var callsPerWrite = 128
        /// Calls (and issues) the readers may hand over before they wait for the writer. The
        /// memory check runs with 1, so that how far the reader runs ahead, which varies with
        /// thread scheduling, does not move the peak.
        public var handOffCapacity = 2_048
        /// true: readers share every file, each taking its share of the calls; false: readers
        /// take whole files only; nil: whole files, and the last few (fewer than the readers)
        /// shared, so that no core idles at the end.
        public var shareFiles: Bool?
        /// Read files again even when the ledger has them.
        public var force = false
        /// Pseudonymise call ids, person fields and addresses before anything is stored.
        public var pseudonymizer: CallPseudonymizer?
        /// The least time between two `onProgress` calls, seconds.
        public var progressInterval = 0.25
        /// How many of a file's problems a reader hands over one by one (to be shown and kept
        /// among `Report.firstIssues`); the rest are counted. Set it at least as high as the
        /// number of problems to be shown.
        public var issuesHandedOver = Options.defaultIssuesHandedOver
        public static let defaultIssuesHandedOver = 100
        /// How long a commit to a new database waits for readers before `onReaderWait` says who
        /// they are and it waits again (a commit never gives up: the run's work is kept).
        public var readerWaitSeconds = 60.0
        /// What one file can make a reader hold (`RecordIngestor.Bounds`).
        public var bounds = RecordIngestor.Bounds()

        public init(paths: [String], database: String) {
            self.paths = paths
            self.database = database
        }
    }

    /// Figures for the progress line and the final summary. While the run goes on, `records`
    /// and `textBytes` count what the readers have read so far, files still being read
    /// included (a run over one large file would otherwise show nothing until its end); in the
    /// report, those of the files read, as the ledger has them.
    public struct Progress: Sendable {
        public var filesTotal = 0
        public var filesDone = 0
        public var filesSkipped = 0
        public var records = 0
        public var compressedBytes = 0
        public var textBytes = 0
        public var callsWritten = 0
        public var seconds = 0.0
        /// Bytes read from disk so far, of `bytesToRead` (the files not skipped).
        public var bytesRead = 0
        public var bytesToRead = 0
    }

    public struct Report: Sendable {
        public var progress: Progress
        /// Files skipped because the ledger already had their content, with the path it had.
        public var alreadyIngested: [(file: String, as: String)]
        public var missing: [String]
        /// Folders given that held no log file (`LogFiles.Found.foldersWithoutLogs`).
        public var foldersWithoutLogs: [String]
        /// Skipped input by category, and the first few issues in full.
        public var issueCounts: [String: Int]
        public var firstIssues: [LogIssue]
        public var totals: StoreTotals
        public var callsInRun: Int
        public var gradesInRun: [Grade: Int]
        /// The schema version the run upgraded the database from, if it did.
        public var upgradedFrom: Int?
        /// The settings the calls were graded with.
        public var settings: AnalysisConfig
        /// The quality model the database's stored calls were graded by when it is not this
        /// callstats' (`CallAnalyzer.qualityModelVersion`): the run's calls were graded by this
        /// one, the earlier calls keep their scores until `callstats regrade`. Nil when they agree.
        public var otherQualityModel: String?

        public var skippedAnything: Bool { !issueCounts.isEmpty || !missing.isEmpty }
    }

    public let options: Options
    public var onProgress: (@Sendable (Progress) -> Void)?
    /// Each issue as it is found (the CLI prints them on stderr).
    public var onIssue: (@Sendable (LogIssue) -> Void)?
    /// Before the database is upgraded from an older schema version (the argument), which
    /// happens before any file is read and can take minutes for millions of calls.
    public var onUpgrade: ((Int) -> Void)?
    /// Each time a commit has waited `Options.readerWaitSeconds` for readers of a new database
    /// and waits on: the processes that hold the file (`FileLockHolders.describe`).
    public var onReaderWait: ((String) -> Void)?

    public init(options: Options) { self.options = options }

    /// Opens the database `options.database` names (`StoreLocation`) and runs.
    public func run() throws -> Report {
        let store = try StoreLocation.openForWriting(
            options.database,
            sqlite: .init(willUpgrade: onUpgrade, readerWaitSeconds: options.readerWaitSeconds, onReaderWait: onReaderWait))
        return try run(into: store)
    }

    private func run<Results: ResultStore>(into store: Results) throws -> Report {
        let started = Date()
        // Into a database without calls, a call this run has not written yet is not stored,
        // unless other processes write it too.
        let hasNoCalls = try store.hasNoCalls()
        let startedWithoutCalls = hasNoCalls && !store.sharedByOtherWriters
        // The key first: a run with another key is refused before it claims anything.
        let keyFingerprint = options.pseudonymizer?.keyFingerprint ?? MetaKey.noKeyFingerprint
        try store.checkKey(fingerprint: keyFingerprint)
        let config = try store.settingsForRun(asked: options.config, hasCalls: !hasNoCalls)
        // A database graded by another quality model keeps that model's name until a regrade
        // grades every call with one: recording ours would hide that its calls mix two. One
        // that records none was written before the version was kept, by the only model there
        // has been until then (callstats-quality-1): it gets ours.
        let recordedModel = try store.recordedQualityModel()
        let otherModel = hasNoCalls ? nil : recordedModel.flatMap { $0 == CallAnalyzer.qualityModelVersion ? nil : $0 }
        let search = LogFiles.find(options.paths)
        let found = search.files

        let ledgerCheck = try filesToRead(found, ledger: store)
        var work = ledgerCheck.work
        let already = ledgerCheck.already

        var progress = Progress()
        progress.filesTotal = found.count
        progress.filesSkipped = already.count
        progress.bytesToRead = work.reduce(0) { $0 + Int($1.fingerprint.size) }
        let reading = ReadProgress()
        let queue = HandOffQueue(capacity: options.handOffCapacity)
        // Readers take whole files, largest first, while there are enough to go round. The last
        // `count % readers` files (the smallest; all of them when there are fewer files than
        // readers) would leave a core idle, so every reader reads those and takes its share of
        // their calls, each file decompressed once for all of them (`SharedLines`).
        work.sort { ($0.fingerprint.size, $1.path) > ($1.fingerprint.size, $0.path) }
        let sharedCount =
            switch options.shareFiles {
            case true?: work.count
            case false?: 0
            case nil: options.readers < 2 ? 0 : work.count < options.readers ? work.count : work.count % options.readers
            }
        let wholeFiles = Array(work[..<(work.count - sharedCount)]), sharedFiles = Array(work[(work.count - sharedCount)...])
        let readers = sharedCount > 0 ? options.readers : min(options.readers, max(1, work.count))
        let group = startReaders(readers, wholeFiles: wholeFiles, sharedFiles: sharedFiles, config: config, reading: reading, into: queue)

        // The writer: this thread.
        let writer = AnalyzeWriter(
            store: store, options: options, queue: queue, readers: readers, filesToRead: work.count,
            startedWithoutCalls: startedWithoutCalls, progress: progress
        ) { pending, knownNew in
            try CallWriting.write(pending, to: store, config: config, knownNew: knownNew)
        }
        writer.onProgress = onProgress
        writer.onIssue = onIssue
        do {
            try writer.run(
                config: config, keyFingerprint: keyFingerprint,
                qualityModel: otherModel == nil ? CallAnalyzer.qualityModelVersion : nil, started: started, reading: reading)
        } catch {
            queue.cancel()
            group.wait()
            throw error
        }
        group.wait()
        store.endBulkLoad()
        progress = writer.progress
        progress.seconds = Date().timeIntervalSince(started)
        (progress.records, progress.textBytes) = (writer.recordsOfFilesRead, writer.textBytesOfFilesRead)
        progress.bytesRead = reading.totals.bytesRead
        return Report(
            progress: progress, alreadyIngested: already, missing: search.missing,
            foldersWithoutLogs: search.foldersWithoutLogs, issueCounts: writer.issueCounts,
            firstIssues: writer.firstIssues, totals: try store.totals(), callsInRun: writer.gradeByCall.count,
            gradesInRun: writer.gradesInRun.filter { $0.value > 0 }, upgradedFrom: store.upgradedFrom,
            settings: config, otherQualityModel: otherModel)
    }

    /// The files to read, and those skipped with the path their content was read under: content
    /// already in the ledger (unless `force`), or met twice in this run, is skipped whole.
    private func filesToRead(_ found: [String], ledger store: some ResultStore)
        throws -> (work: [(path: String, fingerprint: FileFingerprint)], already: [(file: String, as: String)])
    {
        var work: [(path: String, fingerprint: FileFingerprint)] = []
        var already: [(file: String, as: String)] = []
        var seenThisRun: [String: String] = [:]
        for path in found {
            guard let fp = FileFingerprint.of(path: path) else { work.append((path, FileFingerprint(size: 0, mtime: 0, hash: 0))); continue }
            // An empty file holds no record (a log just created, or a write that failed before
            // its first byte): passed over quietly and not entered in the ledger, so that it is
            // read once it has bytes.
            if fp.size == 0 { continue }
            if !options.force, let previous = try store.ingestedPath(fingerprint: fp.description) {
                already.append((path, previous))
            } else if let twin = seenThisRun[fp.description] {
                already.append((path, twin))
            } else {
                seenThisRun[fp.description] = path
                work.append((path, fp))
            }
        }
        return (work, already)
    }

    /// Starts `readers` threads: each takes whole files while any are left, then reads every
    /// shared file and takes its share of their calls (`SharedLines`). The group is left when
    /// all have finished.
    private func startReaders(
        _ readers: Int, wholeFiles: [(path: String, fingerprint: FileFingerprint)],
        sharedFiles: [(path: String, fingerprint: FileFingerprint)], config: AnalysisConfig,
        reading: ReadProgress, into queue: HandOffQueue
    ) -> DispatchGroup {
        let sharedLines = sharedFiles.map { SharedLines(path: $0.path, readers: readers, progress: reading) }
        let nextFile = AtomicCounter()
        let pseudonymizer = options.pseudonymizer
        let issuesHandedOver = options.issuesHandedOver
        let bounds = options.bounds
        let group = DispatchGroup()
        for r in 0..<readers {
            group.enter()
            Thread.detachNewThread {
                ReadingPriority.lowerCurrentThread()
                defer { group.leave(); queue.readerFinished() }
                while true {
                    let i = nextFile.next()
                    guard i < wholeFiles.count, !queue.isCancelled else { break }
                    FileReading.read(
                        path: wholeFiles[i].path, fingerprint: wholeFiles[i].fingerprint, config: config,
                        pseudonymizer: pseudonymizer, progress: reading, issuesHandedOver: issuesHandedOver, bounds: bounds,
                        into: queue)
                }
                for (file, lines) in zip(sharedFiles, sharedLines) {
                    guard !queue.isCancelled else { lines.leave(reader: r); continue }
                    FileReading.read(
                        path: file.path, fingerprint: file.fingerprint, shared: (lines, r, readers),
                        config: config, pseudonymizer: pseudonymizer, progress: reading,
                        issuesHandedOver: issuesHandedOver, bounds: bounds, into: queue)
                }
            }
        }
        return group
    }
}

/// Hands work from readers to the writer; bounded, so readers wait when the writer is behind.
///
/// Each side wakes the other only when it has a reason to: the writer once `wakeWriterAt` items
/// wait (or a file is done, or a reader finishes), a reader only when it is waiting for room.
/// Woken for every call, the writer took one call at a time and slept again: on 1,000 simulated
/// calls with one reader, 845-921 voluntary context switches (`/usr/bin/time`); 186-195 now.
final class HandOffQueue: @unchecked Sendable {
    enum Item {
        case call(PendingCall)
        case issue(LogIssue)
        case fileDone(FileDone)
    }

    private let condition = NSCondition()
    private var items: [Item] = []
    private let capacity: Int
    private var wakeWriterAt: Int
    private var finishedReaders = 0
    private var cancelled = false
    private var writerWaiting = false
    private var readersWaiting = 0
    /// An issue or a file done is queued: the writer takes them at once (ledger, commits, warnings).
    private var urgentQueued = false

    /// `wakeWriterAt`: below `capacity`, so that a reader never waits for room while the writer sleeps.
    init(capacity: Int, wakeWriterAt: Int = 64) {
        self.capacity = capacity
        self.wakeWriterAt = max(1, min(wakeWriterAt, capacity))
    }

    /// Wakes the writer from now on once `count` items wait.
    func wakeWriter(at count: Int) {
        condition.lock()
        wakeWriterAt = max(1, min(count, capacity))
        if writerWaiting && items.count >= wakeWriterAt { condition.broadcast() }
        condition.unlock()
    }

    func put(_ item: Item) {
        condition.lock()
        defer { condition.unlock() }
        while items.count >= capacity && !cancelled {
            readersWaiting += 1
            condition.wait()
            readersWaiting -= 1
        }
        guard !cancelled else { return }
        items.append(item)
        if case .call = item {} else { urgentQueued = true }
        if writerWaiting && (urgentQueued || items.count >= wakeWriterAt) { condition.broadcast() }
    }

    /// Everything queued, in order (one lock and no element moves per item), or nil once every
    /// reader has finished and the queue is empty.
    func takeAll(readers: Int) -> [Item]? {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty || !cancelled && finishedReaders < readers && items.count < wakeWriterAt && !urgentQueued {
            if items.isEmpty && (finishedReaders == readers || cancelled) { return nil }
            writerWaiting = true
            condition.wait()
            writerWaiting = false
        }
        var batch: [Item] = []
        batch.reserveCapacity(capacity)
        swap(&batch, &items)
        urgentQueued = false
        if readersWaiting > 0 { condition.broadcast() }
        return batch
    }

    func readerFinished() {
        condition.lock()
        finishedReaders += 1
        condition.broadcast()
        condition.unlock()
    }

    var isCancelled: Bool {
        condition.lock()
        defer { condition.unlock() }
        return cancelled
    }

    func cancel() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        condition.unlock()
    }
}

/// What the readers have read so far, added to in batches (see `FileReading`) and read by the
/// writer for the progress line.
final class ReadProgress: Sendable {
    /// The text a reader reads between two reports (18 real-shaped lines; a few thousand
    /// locks in a run over 1 GB).
    static let batchBytes = 256 << 10

    private struct Counts {
        var records = 0, textBytes = 0, bytesRead = 0
        /// How many batches of records were added (the tests check that a file is told in parts).
        var batches = 0
    }

    private let counts = Locked(Counts())

    var batches: Int { counts.withLock { $0.batches } }

    func add(records r: Int, textBytes t: Int) {
        counts.withLock {
            $0.records += r
            $0.textBytes += t
            $0.batches += 1
        }
    }

    func add(bytesRead n: Int) {
        counts.withLock { $0.bytesRead += n }
    }

    var totals: (records: Int, textBytes: Int, bytesRead: Int) {
        counts.withLock { ($0.records, $0.textBytes, $0.bytesRead) }
    }
}

final class AtomicCounter: Sendable {
    private let value = Locked(0)

    func next() -> Int {
        value.withLock {
            $0 += 1
            return $0 - 1
        }
    }
}

struct FileDone {
    var entry: LedgerEntry
    var textBytes: Int
    /// How many readers share the file, and how many of their parts this holds.
    var parts = 1
    var partsDone = 1
    /// Problems past the ones handed over one by one, counted by category.
    var issuesCounted: [LogIssue.Category: Int] = [:]

    /// Adds another reader's part: its records, skips and calls (the parts' calls are disjoint).
    mutating func add(_ other: FileDone) {
        entry.records += other.entry.records
        entry.skipped += other.entry.skipped
        entry.calls += other.entry.calls
        textBytes += other.textBytes
        partsDone += other.partsDone
        issuesCounted.merge(other.issuesCounted, uniquingKeysWith: +)
    }
}
