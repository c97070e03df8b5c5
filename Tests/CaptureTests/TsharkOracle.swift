import CallLog
import Capture
import Foundation
import XCTest

/// One row of `tshark -q -z rtp,streams`.
struct TsharkStream {
    var source: Endpoint
    var destination: Endpoint
    var ssrc: UInt32
    var payload: String
    var packets: Int
    var lost: Int
    var maxDeltaMs: Double
    var meanJitterMs: Double
    var maxJitterMs: Double
    var minJitterMs: Double

    var key: StreamKey { StreamKey(flow: FlowKey(source: source, destination: destination), ssrc: ssrc) }
}

/// The oracle files beside each shared capture, and the options tshark ran with.
struct TsharkOracle {
    var streams: [TsharkStream]
    var command: String

    /// Parses an `.rtp_streams.txt` file (tshark 4.0 layout, with a `# command:` line).
    static func parse(_ text: String) -> TsharkOracle {
        var streams: [TsharkStream] = []
        var command = ""
        var inTable = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# command:") { command = String(line.dropFirst(10)) }
            if line.contains("Src IP addr") { inTable = true; continue }
            if line.hasPrefix("====") { inTable = false; continue }
            guard inTable else { continue }
            var t = line.split(separator: " ").map(String.init)
            if t.last == "X" { t.removeLast() }
            guard t.count >= 17 else { continue }
            let n = t.count
            let numbers = t[(n - 6)...].map { Double($0)! }
            let lost = Int(t[n - 8])!
            let packets = Int(t[n - 9])!
            let payload = t[7..<(n - 9)].joined(separator: " ")
            streams.append(
                TsharkStream(
                    source: Endpoint(address: IPAddress(t[2])!, port: UInt16(t[3])!),
                    destination: Endpoint(address: IPAddress(t[4])!, port: UInt16(t[5])!),
                    ssrc: UInt32(t[6].dropFirst(2), radix: 16)!, payload: payload, packets: packets, lost: lost,
                    maxDeltaMs: numbers[2], meanJitterMs: numbers[4], maxJitterMs: numbers[5], minJitterMs: numbers[3]))
        }
        return TsharkOracle(streams: streams, command: command)
    }

    /// A session configured the way tshark was run: heuristics on or off, "decode as" ports,
    /// no TURN payload analysis and no assumed clock rate for unannounced dynamic types.
    var configuration: CaptureConfiguration {
        var c = CaptureConfiguration()
        c.rtpDetection = command.contains("--enable-heuristic rtp_udp") ? .heuristic : .signalledOnly
        if let r = command.range(of: "udp.port=="), let port = UInt16(command[r.upperBound...].prefix(while: { $0.isNumber })) {
            c.rtpPorts = [port]
        }
        c.analyseTURNChannelData = false
        c.defaultDynamicClockRate = nil
        c.keepsClosedStreams = true
        c.minimumStreamPackets = 1
        // tshark never splits a stream; a long silence (fax, hold) must not close ours.
        c.idleTimeoutNanos = 3_600_000_000_000
        return c
    }
}

enum SharedCaptures {
    /// `../shared/pcaps` beside the repository root, found from this file's path.
    static var directory: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared/pcaps")
    }

    static func requireDirectory() throws -> URL {
        let dir = directory
        guard FileManager.default.fileExists(atPath: dir.path) else {
            throw XCTSkip("shared captures not found at \(dir.path); nothing to compare")
        }
        return dir
    }

    /// Every capture that has a `.rtp_streams.txt` oracle, as (capture, oracle) paths.
    static func oracles() throws -> [(capture: URL, oracle: URL)] {
        let dir = try requireDirectory()
        var out: [(URL, URL)] = []
        let e = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: nil)!
        for case let url as URL in e where url.lastPathComponent.hasSuffix(".rtp_streams.txt") {
            let capture = URL(fileURLWithPath: String(url.path.dropLast(".rtp_streams.txt".count)))
            if FileManager.default.fileExists(atPath: capture.path) { out.append((capture, url)) }
        }
        return out.sorted { $0.0.path < $1.0.path }
    }
}

/// Runs a capture file through a session and returns the records and closed-stream summaries.
func analyse(file: String, configuration: CaptureConfiguration) throws -> (records: [LogRecord], streams: [RTPStreamSummary], counters: CaptureCounters) {
    let box = RecordCollector()
    var session = CaptureSession(configuration: configuration) { box.records.append($0) }
    let source = try PcapSource.open(file: file)
    try source.feed(&session)
    session.finish()
    return (box.records, session.closedStreams, session.counters)
}

/// Collects records from a session's sink.
final class RecordCollector: @unchecked Sendable {
    var records: [LogRecord] = []
}
