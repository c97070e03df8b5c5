import CallLog
import Capture
import Foundation
import XCTest

/// Every shared capture with a tshark oracle: per-stream packets and loss must equal
/// tshark's, and jitter must match to 0.01 ms (see `documentedDifferences` for exceptions).
final class SharedCaptureTests: XCTestCase {
    func testStreamsMatchTshark() throws {
        var table: [String] = []
        var failures: [String] = []
        for (capture, oracleURL) in try SharedCaptures.oracles() {
            let oracle = TsharkOracle.parse(try String(contentsOf: oracleURL, encoding: .utf8))
            let result = try analyse(file: capture.path, configuration: oracle.configuration)
            let ours = Dictionary(result.streams.map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
            let name = capture.lastPathComponent
            for t in oracle.streams {
                guard let s = ours[t.key] else {
                    failures.append("\(name): missing stream \(t.key)")
                    continue
                }
                let st = s.statistics
                let lost = st.wireshark.lost(received: st.packets)
                let row = "\(name) \(hexSSRC(t.ssrc)) pkts \(st.packets)/\(t.packets) lost \(lost)/\(t.lost) (rfc \(st.lost)) maxJ \(f3(st.maxJitterMs))/\(f3(t.maxJitterMs)) meanJ \(f3(st.meanJitterMs))/\(f3(t.meanJitterMs)) maxD \(f3(st.maxDeltaMs))/\(f3(t.maxDeltaMs))"
                table.append(row)
                if st.packets != t.packets || lost != t.lost { failures.append("counts: " + row) }
                if abs(st.maxJitterMs - t.maxJitterMs) > 0.01 || abs(st.meanJitterMs - t.meanJitterMs) > 0.01 {
                    failures.append("jitter: " + row)
                }
                if abs(st.maxDeltaMs - t.maxDeltaMs) > 0.01 { failures.append("delta: " + row) }
            }
            let theirs = Set(oracle.streams.map(\.key))
            for s in result.streams where !theirs.contains(s.key) {
                failures.append("\(name): extra stream \(s.key) pkts \(s.statistics.packets)")
            }
        }
        print(table.joined(separator: "\n"))
        XCTAssert(failures.isEmpty, failures.joined(separator: "\n"))
    }
}

func f3(_ v: Double) -> String { String(format: "%.3f", v) }
func hexSSRC(_ v: UInt32) -> String { String(format: "0x%08X", v) }
