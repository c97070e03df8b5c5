import Analysis
import CallLog
import Foundation
import MaterialTestSupport

/// Hand-built calls run through the analyser as a log file would carry them.
extension Harness {
    /// Runs records through text lines (as written by LogWriter with or without deltas) into the analyser.
    static func analyze(_ records: [LogRecord], deltas: Bool = true, config: AnalysisConfig = AnalysisConfig()) throws -> CallAnalysis {
        let m = try material(records, deltas: deltas)
        return CallAnalyzer.analyze(m, config: config)
    }

    /// A call of 12 snapshots 10 s apart (so each interval is one window) sending and receiving
    /// 500 packets an interval, 40 of them (7.4 %) lost in the intervals `lossy`.
    static func lossyCall(_ lossy: Set<Int>, id: String, t0: Int64, config: AnalysisConfig = AnalysisConfig()) throws -> CallAnalysis {
        var s = W3CSnapshot(t: Double(t0))
        var records: [LogRecord] = []
        for k in 0..<12 {
            let ts = t0 + Int64(k) * 10_000
            s.t = Double(ts)
            let lost = lossy.contains(k) ? 40.0 : 0
            s.received += 500 - lost; s.lost += lost; s.sent += 500
            records.append(stats(id, s, ts: ts))
        }
        return try analyze(records, config: config)
    }
}
