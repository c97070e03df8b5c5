import Analysis
import Foundation
import MaterialCodec
import MaterialScanning
import Store

/// The `regrade` job: every call of a database analysed again from its stored material, with
/// other settings (or the same ones, after an upgrade of callstats changed the analysis), and
/// every rollup rebuilt. No log is read: the material holds all a call's inputs.
///
/// One transaction: an interrupted regrade leaves the database as it was, never half graded
/// one way and half the other. Calls are taken in batches (memory stays bounded); each batch
/// is analysed on every core and written by this thread, the only one that touches SQLite.
public final class RegradeRun {
    public struct Options: Sendable {
        public var database: String
        /// nil: the database's own settings (analysis code changed, settings did not).
        public var config: AnalysisConfig?
        public var threads = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8))
        public var callsPerBatch = 256
        /// The least time between two `onProgress` calls, seconds.
        public var progressInterval = 0.25

        public init(database: String) { self.database = database }
    }

    public struct Report: Sendable {
        public var calls: Int
        public var gradesBefore: [String: Int]
        public var gradesAfter: [String: Int]
        public var findingsBefore: Int
        public var findingsAfter: Int
        public var previousSettings: AnalysisConfig
        public var settings: AnalysisConfig
        /// The quality model the calls were graded by before (nil: none recorded), and the one
        /// that graded them now (`CallAnalyzer.qualityModelVersion`).
        public var previousQualityModel: String?
        public var qualityModel: String
        public var seconds: Double
    }

    public let options: Options
    /// Calls regraded so far, of all, and the seconds since the start.
    public var onProgress: ((_ done: Int, _ total: Int, _ seconds: Double) -> Void)?

    public init(options: Options) { self.options = options }

    /// Opens the database `options.database` names (`StoreLocation`) and regrades it.
    public func run() throws -> Report {
        guard StoreLocation.exists(options.database) else { throw RegradeError.noDatabase(options.database) }
        return try run(on: StoreLocation.openForWriting(options.database))
    }

    private func run<Results: ResultStore>(on store: Results) throws -> Report {
        let started = Date()
        let previous = try store.recordedSettings()
        let previousModel = try store.recordedQualityModel()
        let config = options.config ?? previous
        let before = try store.totals()
        let findingsBefore = try store.findingCount()
        let withoutMaterial = try store.callsWithoutMaterial()
        guard withoutMaterial == 0 else { throw RegradeError.callsWithoutMaterial(options.database, withoutMaterial) }
        let total = try store.materialCount()
        var done = 0, lastProgress = Date.distantPast

        try store.inTransaction {
            try store.deleteAllAnalyses()
            // In call-id order, as analyze writes them. While this thread writes one batch, the
            // next is analysed (`Batch`): the writing takes longer than the analysis.
            func batch(after id: String?) throws -> Batch? {
                let calls = try store.material(after: id, limit: options.callsPerBatch)
                guard !calls.isEmpty else { return nil }
                return Batch(calls.map { ($0.callID, $0.material) }, config: config, threads: options.threads)
            }
            var next = try batch(after: nil)
            while let current = next {
                let results = current.results()
                next = try batch(after: current.calls.last!.id)
                do {
                    for (i, result) in results.enumerated() {
                        switch result {
                        case .success(let (analysis, complete)):
                            try store.write(analysis, complete: complete, material: nil, replacing: false)
                        case .failure(let error):
                            throw RegradeError.unreadableMaterial(options.database, callID: current.calls[i].id, reason: "\(error)")
                        }
                    }
                } catch {
                    next?.wait()  // no thread left behind, whatever failed
                    throw error
                }
                done += results.count
                if let onProgress, Date().timeIntervalSince(lastProgress) > options.progressInterval {
                    lastProgress = Date()
                    onProgress(done, total, Date().timeIntervalSince(started))
                }
            }
            // Every analysis was deleted: each must have been written again.
            guard done == total else { throw RegradeError.callsMissed(options.database, written: done, stored: total) }
            try store.record(settings: config)
            // Every call was graded again just now, by this model.
            try store.record(qualityModel: CallAnalyzer.qualityModelVersion)
            try store.rebuildAllRollups()
            try store.linkConversations()
        }
        return Report(
            calls: done, gradesBefore: before.byGrade, gradesAfter: try store.totals().byGrade,
            findingsBefore: findingsBefore, findingsAfter: try store.findingCount(),
            previousSettings: previous, settings: config, previousQualityModel: previousModel,
            qualityModel: CallAnalyzer.qualityModelVersion, seconds: Date().timeIntervalSince(started))
    }
}

/// Calls' stored material decoded and analysed in the background, `threads` calls at a time.
private final class Batch: @unchecked Sendable {
    typealias Outcome = Result<(CallAnalysis, complete: Bool), Error>
    let calls: [(id: String, bytes: [UInt8])]
    /// Written by the workers before `done` is signalled, read after it.
    private var outcomes: [Outcome?]
    private let done = DispatchGroup()

    init(_ calls: [(id: String, bytes: [UInt8])], config: AnalysisConfig, threads: Int) {
        self.calls = calls
        outcomes = Array(repeating: nil, count: calls.count)
        let workers = max(1, min(threads, calls.count))
        done.enter()
        DispatchQueue.global().async { [self] in
            outcomes.withUnsafeMutableBufferPointer { out in
                let out = UnsafeSendable(out)
                // Worker w takes calls w, w + workers, …: each writes only its own slots.
                DispatchQueue.concurrentPerform(iterations: workers) { w in
                    for i in stride(from: w, to: calls.count, by: workers) {
                        out.value[i] = Result {
                            let material = try CallMaterial(decoding: calls[i].bytes)
                            return (CallAnalyzer.analyze(material, config: config), material.hasEnded)
                        }
                    }
                }
            }
            done.leave()
        }
    }

    func wait() { done.wait() }

    /// Every call's outcome, in order, once all are analysed.
    func results() -> [Outcome] {
        done.wait()
        return outcomes.map { $0! }
    }
}

/// A buffer handed to worker threads that write disjoint slots of it.
private struct UnsafeSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

public enum RegradeError: Error, CustomStringConvertible {
    case noDatabase(String)
    case callsWithoutMaterial(String, Int)
    case unreadableMaterial(String, callID: String, reason: String)
    case callsMissed(String, written: Int, stored: Int)

    public var description: String {
        switch self {
        case .noDatabase(let p): "\(p): no such database"
        case .callsWithoutMaterial(let p, let n):
            "\(p): \(n == 1 ? "1 call has" : "\(n) calls have") no stored material (the inputs a regrade analyses again), so \(n == 1 ? "it cannot be" : "they cannot be") regraded; nothing was changed"
        case .unreadableMaterial(let p, let id, let reason):
            "\(p): the stored material of call \(id) cannot be read (\(reason)); nothing was changed"
        case .callsMissed(let p, let written, let stored):
            "\(p): \(written) calls were analysed again of \(stored) stored, so nothing was changed"
        }
    }
}
