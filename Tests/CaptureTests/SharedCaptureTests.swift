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
                let row =
                    "\(name) \(hexSSRC(t.ssrc)) pkts \(st.packets)/\(t.packets) lost \(lost)/\(t.lost) (rfc \(st.lost)) maxJ \(f3(st.maxJitterMs))/\(f3(t.maxJitterMs)) meanJ \(f3(st.meanJitterMs))/\(f3(t.meanJitterMs)) maxD \(f3(st.maxDeltaMs))/\(f3(t.maxDeltaMs))"
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

/// RTCP contents against tshark's fields (`*.rtcp_fields.tsv`): packet types, sender
/// counts and every report block, matched by flow and arrival millisecond.
final class SharedRTCPTests: XCTestCase {
    func testRTCPFieldsMatchTshark() throws {
        let dir = try SharedCaptures.requireDirectory()
        let files = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: nil)!
            .compactMap { $0 as? URL }.filter { $0.lastPathComponent.hasSuffix(".rtcp_fields.tsv") }
        var compared = 0
        var failures: [String] = []
        for tsv in files {
            let capture = String(tsv.path.dropLast(".rtcp_fields.tsv".count))
            let oracleText = (try? String(contentsOfFile: capture + ".rtp_streams.txt", encoding: .utf8)) ?? ""
            var config = TsharkOracle.parse(oracleText).configuration
            config.rtpDetection = .heuristic
            let result = try analyse(file: capture, configuration: config)
            var origin: Int64 = 0
            try PcapSource.open(file: capture).run(maxFrames: 1) { ts, _, _ in origin = ts }
            let rtcp = result.records.filter { $0.kind == .rtcp }
            for line in try String(contentsOf: tsv, encoding: .utf8).split(separator: "\n") where !line.hasPrefix("#") {
                let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                guard f.count >= 21 else { continue }
                let rel = Double(f[1])!
                let ms = (origin + Int64((rel * 1e9).rounded())) / 1_000_000
                let src = "\(f[2].isEmpty ? "[\(f[3])]" : f[2]):\(f[4])"
                let dst = "\(f[5].isEmpty ? "[\(f[6])]" : f[5]):\(f[7])"
                let name = "\(URL(fileURLWithPath: capture).lastPathComponent) frame \(f[0])"
                func list(_ s: String) -> [Double] { s.isEmpty ? [] : s.split(separator: ",").map { Double($0)! } }
                func types(_ r: LogRecord) -> [Double] { r["types"]?.arrayValue?.compactMap(\.doubleValue) ?? [] }
                // Several RTCP datagrams can share a millisecond; take the one whose types agree.
                let candidates = rtcp.filter { abs($0.ts - ms) <= 1 && $0["src"]?.stringValue == src && $0["dst"]?.stringValue == dst }
                guard let r = candidates.first(where: { list(f[8]).starts(with: types($0)) }) ?? candidates.first else {
                    failures.append("\(name): no rtcp record"); continue
                }
                compared += 1
                // SRTCP: after the first packet everything is ciphertext, which tshark decodes
                // as packet types anyway; we stop there and mark the record truncated.
                let expectedTypes = r["truncated"]?.boolValue == true ? Array(list(f[8]).prefix(types(r).count)) : list(f[8])
                if types(r) != expectedTypes { failures.append("\(name): types \(types(r)) vs \(f[8])") }
                if !f[12].isEmpty, r["sr"]?["packetsSent"]?.doubleValue != Double(f[12]) { failures.append("\(name): sender packets") }
                if !f[13].isEmpty, r["sr"]?["bytesSent"]?.doubleValue != Double(f[13]) { failures.append("\(name): sender octets") }
                let reports = r["reports"]?.arrayValue ?? []
                let ours: [[Double]] = [
                    reports.map { (($0["fractionLost"]?.doubleValue ?? -1) * 256).rounded() },
                    reports.map { $0["packetsLost"]?.doubleValue ?? -1 },
                    reports.map { $0["highestSeq"]?.doubleValue ?? -1 },
                    reports.map { $0["jitter"]?.doubleValue ?? -1 },
                    reports.map { $0["lsr"]?.doubleValue ?? -1 },
                    reports.map { (($0["dlsrMs"]?.doubleValue ?? -1) * 65.536).rounded() },
                ]
                let theirs = (15...20).map { list(f[$0]) }
                if ours != theirs { failures.append("\(name): report blocks \(ours) vs \(theirs)") }
            }
        }
        XCTAssertGreaterThan(compared, 0)
        XCTAssert(failures.isEmpty, failures.joined(separator: "\n"))
    }
}
