import CallLog
import Foundation
import TestSupport
import XCTest

final class LogSizeProbe: XCTestCase {
    func testProbe() throws {
        guard ProcessInfo.processInfo.environment["PROBE"] != nil, let url = TestPaths.chromiumRecording else { throw XCTSkip("probe") }
        let rec = try ChromiumRecording(url: url)
        for every in [5, 10] {
            var bySide: [String: Int] = [:]
            let kept = rec.snapshots.filter { s in
                let i = bySide[s.side, default: 0]; bySide[s.side] = i + 1; return i % every == 0
            }
            for (delta, perFlush, level) in [(false, false, 3), (true, false, 3), (true, false, 9), (true, false, 19), (false, false, 19)] as [(Bool, Bool, Int32)] {
                var o = LogWriter.Options(); o.deltaStats = delta; o.framePerFlush = perFlush; o.compressionLevel = level
                let path = NSTemporaryDirectory() + "/probe-\(every)-\(delta)-\(perFlush).ndjson.zst"
                try? FileManager.default.removeItem(atPath: path)
                let w = try LogWriter(path: path, options: o)
                for s in kept {
                    try w.append(.stats(call: rec.callID, ts: s.time, format: .w3c, report: s.stats, peerConnection: s.side))
                    try w.flush()
                }
                try w.close()
                let minutes = Double(rec.snapshots.last!.time - rec.snapshots.first!.time + 1000) / 60000
                print("L\(level) every \(every)s delta=\(delta) framePerFlush=\(perFlush): \(w.bytesWritten) B, text \(w.textBytes) B, \(String(format: "%.2f", Double(w.bytesWritten) / 1024 / 2 / minutes)) KiB/pc-min")
            }
        }
    }
}
