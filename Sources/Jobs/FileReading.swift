import Analysis
import CallLog
import MaterialCodec
import MaterialScanning
import Store

/// A call's part from one file, analysed and encoded on the reader thread, on its way to the
/// writer. The material itself stays behind: it is freed by the thread that made it (freed by
/// the writer, its many small allocations went back across threads), and the rare call that
/// continues a stored one is decoded again from `stored`, which keeps all of it.
struct PendingCall {
    var callID: String
    var hasEnded: Bool
    /// Used as it is when the database has nothing of this call yet (the common case), which
    /// keeps the single writer thread free for SQLite.
    var analysis: CallAnalysis
    /// The material's stored form (`CallMaterial.encoded`).
    var stored: [UInt8]

    init(material: CallMaterial, config: AnalysisConfig, pseudonymizer: CallPseudonymizer?, compressor: ZstdCompressor) {
        var m = pseudonymizer?.apply(to: material) ?? material
        m.normalize()
        callID = m.callID
        hasEnded = m.hasEnded
        analysis = CallAnalyzer.analyze(m, config: config)
        stored = m.encoded(using: compressor)
    }
}

/// A reader thread's work on one file: lines → per-call material → hand-off queue.
enum FileReading {
    /// Reads the file, or with `shared` this reader's part of it: the calls it claims among the
    /// lines that `SharedLines` decompressed once for every reader of the file (one large file
    /// still uses every core). `readers`: how many readers share it (the parts the writer adds up).
    /// `issuesHandedOver`: how many of the file's problems go to the writer one by one (the rest
    /// are counted, and the counts go with the file's end).
    static func read(
        path: String, fingerprint: FileFingerprint, shared: (lines: SharedLines, reader: Int, readers: Int)? = nil,
        config: AnalysisConfig, pseudonymizer: CallPseudonymizer?, progress: ReadProgress,
        issuesHandedOver: Int = AnalyzeRun.Options.defaultIssuesHandedOver, bounds: RecordIngestor.Bounds = .init(),
        into queue: HandOffQueue
    ) {
        var intake = LineIntake(
            path: path, config: config, pseudonymizer: pseudonymizer, progress: progress, queue: queue,
            issuesHandedOver: issuesHandedOver, bounds: bounds)
        // Closures written at the call, not kept in a constant: a closure in a constant may
        // escape, so the state it changes was boxed and every line's access to it checked at
        // run time (`swift_beginAccess`, 0.2 % of the instructions on the simulated corpus).
        if let shared {
            shared.lines.forEachLine(reader: shared.reader, { intake.line($0, number: $1) }, issue: { intake.issue($0) })
        } else {
            var reader = LogLineReader(path: path)
            reader.onRead = { progress.add(bytesRead: $0) }
            reader.forEachLine({ intake.line($0, number: $1) }, issue: { intake.issue($0) })
        }
        intake.finish()
        let entry = LedgerEntry(
            path: pseudonymizer?.ledgerPath(path) ?? path, fingerprint: fingerprint.description, size: fingerprint.size,
            mtime: fingerprint.mtime, records: intake.records, skipped: intake.skipped,
            calls: intake.ingestor.callsSeen)
        queue.put(
            .fileDone(
                FileDone(
                    entry: entry, textBytes: intake.textBytes, parts: shared?.readers ?? 1,
                    issuesCounted: intake.issuesCounted)))
    }
}

/// One reader's lines of one file, into calls on the hand-off queue, with the counts for the
/// ledger and the progress line.
private struct LineIntake {
    let path: String
    let config: AnalysisConfig
    let pseudonymizer: CallPseudonymizer?
    /// The file as messages name it: with a pseudonymizer, as the ledger does (a log's name is
    /// often its call's id).
    let shownPath: String
    let progress: ReadProgress
    let queue: HandOffQueue
    /// For the calls' stored material, reused.
    let compressor = ZstdCompressor(level: CallMaterial.compressionLevel)
    var ingestor: RecordIngestor
    var records = 0, skipped = 0, textBytes = 0
    /// Problems handed to the writer one by one, at most `issuesHandedOver`; past that they are
    /// only counted here, by category. A file of garbage lines handed each over, and woke the
    /// writer for it: 1 MB/s on a file of one-byte lines.
    let issuesHandedOver: Int
    var issuesSent = 0
    var saidHandedOn = false
    var issuesCounted: [LogIssue.Category: Int] = [:]
    /// What `progress` has been told: it is told every `ReadProgress.batchBytes` of text and at
    /// the end, since a lock per line would cost more than the line.
    var recordsReported = 0, textBytesReported = 0

    init(
        path: String, config: AnalysisConfig, pseudonymizer: CallPseudonymizer?, progress: ReadProgress, queue: HandOffQueue,
        issuesHandedOver: Int, bounds: RecordIngestor.Bounds
    ) {
        ingestor = RecordIngestor(bounds: bounds)
        ingestor.pseudonymizer = pseudonymizer
        self.issuesHandedOver = issuesHandedOver
        self.path = path
        shownPath = pseudonymizer?.ledgerPath(path) ?? path
        self.config = config
        self.pseudonymizer = pseudonymizer
        self.progress = progress
        self.queue = queue
    }

    mutating func line(_ line: UnsafeBufferPointer<UInt8>, number n: Int) {
        textBytes += line.count + 1
        if textBytes - textBytesReported >= ReadProgress.batchBytes { report() }
        switch ingestor.ingest(line) {
        case .used(let call, let ended):
            records += 1
            // An ended call leaves the reader at once: memory holds open calls only.
            if ended, let m = ingestor.take(call) { send(m) }
            if ingestor.holdsTooManyCalls { handOnOpenCalls(line: n) }
        case .agentNote:
            records += 1
        case .usedPartly(_, let message):
            records += 1
            if handOver(.beyondLimit) { queue.put(.issue(LogIssue(file: shownPath, line: n, category: .beyondLimit, message: message))) }
        case .skipped(let category, let message):
            if handOver(category) { queue.put(.issue(LogIssue(file: shownPath, line: n, category: category, message: message))) }
        }
    }

    /// More calls are open than a reader holds: they go on now and are merged with their later
    /// records (as a call split over files is), said once per file.
    private mutating func handOnOpenCalls(line n: Int) {
        let count = ingestor.open.count, bytes = ingestor.openIDBytes
        let bounds = ingestor.bounds
        for m in ingestor.takeOpen() { send(m) }
        guard !saidHandedOn else { return }
        saidHandedOn = true
        queue.put(
            .issue(
                LogIssue(
                    file: shownPath, line: n, category: .callsHandedOnEarly,
                    message:
                        "\(count) calls open at once, their ids \(bytes) bytes (a reader holds at most \(bounds.maximumOpenCalls) "
                        + "calls, \(bounds.maximumOpenIDBytes) bytes of ids): those open were "
                        + "handed on and are merged with their later records; nothing is skipped")))
    }

    mutating func issue(_ issue: LogIssue) {
        guard handOver(issue.category) else { return }
        var shown = issue
        if pseudonymizer != nil { shown.file = shownPath }
        queue.put(.issue(shown))
    }

    /// Counts a problem: true while it is to be handed over (the first `issuesHandedOver`),
    /// false once it is only counted by category.
    private mutating func handOver(_ category: LogIssue.Category) -> Bool {
        skipped += 1
        guard issuesSent < issuesHandedOver else {
            issuesCounted[category, default: 0] += 1
            return false
        }
        issuesSent += 1
        return true
    }

    /// The calls still open at the file's end, and the last of the progress.
    mutating func finish() {
        for m in ingestor.takeAll() { send(m) }
        report()
    }

    private func send(_ m: CallMaterial) {
        var m = m
        m.attribute(to: shownPath)
        queue.put(.call(PendingCall(material: m, config: config, pseudonymizer: pseudonymizer, compressor: compressor)))
    }

    private mutating func report() {
        progress.add(records: records - recordsReported, textBytes: textBytes - textBytesReported)
        (recordsReported, textBytesReported) = (records, textBytes)
    }
}

/// The writer's work on one call: merge with what the database has, analyse, replace.
enum CallWriting {
    /// `knownNew`: the caller knows the database holds nothing of this call (not looked up).
    /// Returns what the writer needs of the written call (the analysis itself is not handed
    /// back: copying it retained and released all its arrays).
    static func write(
        _ p: PendingCall, to store: some ResultStore, config: AnalysisConfig,
        knownNew: Bool = false
    ) throws -> Written {
        guard !knownNew, let stored = try store.storedCall(p.callID) else {
            try store.write(p.analysis, complete: p.hasEnded, material: p.stored, replacing: false)
            return Written(grade: p.analysis.call.grade, starts: [p.analysis.call.startTs])
        }
        // The call continues something stored: merge (duplicates collapse) and analyse again.
        // Without the stored material the merge would replace the stored call with only its new
        // part, so the run stops instead (its transaction rolls back: nothing is lost).
        guard let bytes = stored.material else {
            throw StoredCallError(callID: p.callID, reason: "its stored call material is missing")
        }
        var material: CallMaterial
        let disagreements: [CallMaterial.Disagreement]
        do {
            material = try CallMaterial(decoding: p.stored)
            disagreements = material.merge(try CallMaterial(decoding: bytes))
        } catch {
            throw StoredCallError(callID: p.callID, reason: "\(error)")
        }
        let analysis = CallAnalyzer.analyze(material, config: config)
        try store.write(analysis, complete: material.hasEnded, material: material.encoded(), replacing: true)
        return Written(grade: analysis.call.grade, starts: [stored.startTs, analysis.call.startTs], disagreements: disagreements)
    }

    /// A written call: the grade it now has, the start times whose rollups it touched, and
    /// where its new part disagreed with what was stored.
    struct Written {
        var grade: Grade
        var starts: [Int64]
        var disagreements: [CallMaterial.Disagreement] = []
    }
}

/// A call in the database that new records continue, but whose stored material (the inputs
/// the merge needs) cannot be read: written by an incompatible callstats, or edited by hand.
public struct StoredCallError: Error, CustomStringConvertible {
    public var callID: String
    public var reason: String
    public var description: String {
        "call \(callID) continues a call stored in the database, but \(reason), so the two cannot be merged; "
            + "the run stopped before writing it (files committed earlier stay): analyse all the logs into a new database"
    }
}
