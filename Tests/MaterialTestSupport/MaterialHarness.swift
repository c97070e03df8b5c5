import CallLog
import Foundation
import MaterialScanning

/// A hand-built W3C snapshot with known counters: one audio stream each way, its remote report,
/// codecs, the selected candidate pair and its candidates.
public struct W3CSnapshot {
    public var t: Double
    public var received: Double = 0, lost: Double = 0, jitter: Double = 0.005
    public var concealed: Double = 0, silent: Double = 0, events: Double = 0, samples: Double = 0
    public var jbDelay: Double = 0, jbEmitted: Double = 0
    public var sent: Double = 0, remoteLost: Double = 0, rtt: Double = 0.05, rttTotal: Double = 0, rttCount: Double = 0
    public var pairRTT: Double = 0.05
    public var inboundSSRC = 1111.0
    public var outboundSSRC = 2222.0

    public init(t: Double) { self.t = t }

    public var report: [JSONValue] {
        [
            [
                "id": "IT01A", "timestamp": .number(t), "type": "inbound-rtp", "kind": "audio", "ssrc": .number(inboundSSRC),
                "codecId": "CIT01_111", "packetsReceived": .number(received), "packetsLost": .number(lost), "jitter": .number(jitter),
                "concealedSamples": .number(concealed), "silentConcealedSamples": .number(silent), "concealmentEvents": .number(events),
                "totalSamplesReceived": .number(samples), "jitterBufferDelay": .number(jbDelay), "jitterBufferEmittedCount": .number(jbEmitted),
                "bytesReceived": .number(received * 80),
            ],
            [
                "id": "OT01A", "timestamp": .number(t), "type": "outbound-rtp", "kind": "audio", "ssrc": .number(outboundSSRC), "codecId": "COT01_111",
                "packetsSent": .number(sent), "bytesSent": .number(sent * 80),
            ],
            [
                "id": "RIA", "timestamp": .number(t - 300), "type": "remote-inbound-rtp", "kind": "audio", "ssrc": .number(outboundSSRC), "localId": "OT01A",
                "packetsLost": .number(remoteLost), "roundTripTime": .number(rtt), "totalRoundTripTime": .number(rttTotal),
                "roundTripTimeMeasurements": .number(rttCount), "jitter": 0.004, "fractionLost": 0,
            ],
            ["id": "CIT01_111", "timestamp": .number(t), "type": "codec", "mimeType": "audio/opus", "clockRate": 48000, "payloadType": 111],
            ["id": "COT01_111", "timestamp": .number(t), "type": "codec", "mimeType": "audio/opus", "clockRate": 48000, "payloadType": 111],
            ["id": "CF01", "timestamp": .number(t), "type": "certificate", "fingerprint": "AA:BB", "base64Certificate": "MIIB\\u0041x"],
            [
                "id": "CP1", "timestamp": .number(t), "type": "candidate-pair", "state": "succeeded", "nominated": true,
                "localCandidateId": "L1", "remoteCandidateId": "R1", "currentRoundTripTime": .number(pairRTT), "responsesReceived": 5,
            ],
            [
                "id": "L1", "timestamp": .number(t), "type": "local-candidate", "candidateType": "srflx", "protocol": "udp", "address": "192.0.2.1",
                "networkType": "wifi",
            ],
            ["id": "R1", "timestamp": .number(t), "type": "remote-candidate", "candidateType": "host", "protocol": "udp", "address": "198.51.100.2"],
            ["id": "T01", "timestamp": .number(t), "type": "transport", "selectedCandidatePairId": "CP1"],
        ]
    }
}

/// Records made into call material as a log file would be: written as text lines (optionally
/// delta-encoded), then read back by `RecordIngestor`.
public enum Harness {
    /// `editLines` changes the written file's lines before they are read (repeats, reordering).
    public static func material(_ records: [LogRecord], deltas: Bool = true, editLines: (([String]) -> [String])? = nil) throws -> CallMaterial {
        let path = NSTemporaryDirectory() + "analysis-\(UUID().uuidString).ndjson"
        defer { try? FileManager.default.removeItem(atPath: path) }
        var o = LogWriter.Options()
        o.deltaStats = deltas
        let w = try LogWriter(path: path, options: o)
        for r in records { try w.append(r) }
        try w.close()
        if let editLines {
            // An edited file fails the writer's checkpoints, as a file edited by hand would have none.
            let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
                .filter { !$0.contains(#""event":"checkpoint""#) }
            try (editLines(lines).joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        }
        return try material(ofLog: path)
    }

    /// The material of the one call a log file holds (its parts merged), read as `analyze`'s
    /// readers read it; the first line or damage the reader skips is thrown.
    public static func material(ofLog path: String) throws -> CallMaterial {
        var ingestor = RecordIngestor()
        var failures: [String] = []
        LogLineReader(path: path).forEachLine(
            { line, n in
                if case .skipped(_, let message) = ingestor.ingest(line) { failures.append("line \(n): \(message)") }
            }, issue: { failures.append($0.description) })
        if let f = failures.first { throw NSError(domain: "analysis", code: 1, userInfo: [NSLocalizedDescriptionKey: f]) }
        var all = ingestor.takeAll()
        guard var m = all.popLast() else { throw NSError(domain: "analysis", code: 2) }
        for other in all { m.merge(other) }
        return m
    }

    public static func stats(_ call: String, _ s: W3CSnapshot, ts: Int64) -> LogRecord {
        .stats(call: call, ts: ts, format: .w3c, report: s.report, peerConnection: "pc0")
    }
}
