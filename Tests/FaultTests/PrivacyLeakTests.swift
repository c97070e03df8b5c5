import CallLog
import Foundation
import MaterialCodec
import MaterialScanning
import SQLiteDatabase
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// `--pseudonymize-key` end to end: known identifiers are planted in every field that can carry
/// one, in every kind of record and every way records arrive (an app's log, a capture built
/// here, an imported webrtc-internals dump, records posted to a running `callstats serve`), and
/// after a pseudonymised run none of them may be found in the database file, in any table, in
/// the stored call material decoded, in the HTML report or in the log files `serve` wrote.
///
/// Identifiers of an unknowable shape (a user name, a display name) are planted in person fields
/// under the names apps use (`user`, `Email`, `e-mail`, `phoneNumber`, nested objects, numbers);
/// those of a recognisable shape (IP addresses, e-mail addresses, E.164 numbers, the call's own
/// id, a SIP Call-ID) also in free text: end status texts, SIP reasons, event details, labels.
final class PrivacyLeakTests: XCTestCase {
    static let key = "000102030405060708090a0b0c0d0e0f"

    /// Every planted identifier: none may survive.
    static let planted = [
        "c-leak-7f3a91", "alice.leak", "Leakwood", "alice.sip", "4155550188", "14155550199", "198.51.100.77",
        "2001:db8:77::77", "pc-leak-bob",
        // capture
        "sipuser7731", "198.51.100.78", "198.51.100.79", "198.51.100.81", "198.51.100.82", "2001:db8:77::81",
        "2001:db8:77::82",
        // import
        "impleak4471", "imp.leak", "198.51.100.91",
        // serve
        "c-served-5521", "carol.leak", "served-pc-leak", "198.51.100.95", "4155550177",
    ]

    func testNoPlantedIdentifierSurvivesAPseudonymisedRun() throws {
        let dir = TestPaths.temporaryDirectory("privacy-leak")
        defer { try? FileManager.default.removeItem(at: dir) }
        let app = dir.appendingPathComponent("app"), capture = dir.appendingPathComponent("capture")
        let imported = dir.appendingPathComponent("imported"), served = dir.appendingPathComponent("served")
        for d in [app, capture, imported, served] { try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true) }

        try Self.appLog.write(to: app.appendingPathComponent("app.ndjson"), atomically: true, encoding: .utf8)

        let pcap = dir.appendingPathComponent("call.pcap").path
        try Self.capture().write(to: pcap)
        let cap = try Binary.run(["capture", "-r", pcap, "-o", capture.path])
        XCTAssertEqual(cap.status, 0, cap.err)

        let dump = dir.appendingPathComponent("impleak4471.txt")
        try Self.dump.write(to: dump, atomically: true, encoding: .utf8)
        let imp = try Binary.run(["import", dump.path, "--out", imported.path])
        XCTAssertEqual(imp.status, 0, imp.err)

        try postToServe(out: served)

        let db = dir.appendingPathComponent("calls.sqlite").path
        let analyze = try Binary.run([
            "analyze", app.path, capture.path, imported.path, served.path, "--db", db, "--pseudonymize-key", Self.key, "--quiet",
        ])
        XCTAssertEqual(analyze.status, 0, analyze.err)
        let report = dir.appendingPathComponent("report.html").path
        let rep = try Binary.run(["report", "--db", db, "--out", report])
        XCTAssertEqual(rep.status, 0, rep.err)

        // The run saw what was planted: four sources' calls, streams from the capture and the app.
        let database = try Database(path: db, readOnly: true)
        let calls = try database.scalar("SELECT count(*) FROM calls")?.int64 ?? 0
        XCTAssertGreaterThanOrEqual(calls, 5, "the app's, the import's, the served and two captured calls")
        let wireStreams = try database.scalar("SELECT count(*) FROM streams WHERE stream_id LIKE 'wire:%'")?.int64 ?? 0
        XCTAssertGreaterThanOrEqual(wireStreams, 4)

        var places: [(String, String)] = []
        places.append(("the database file", String(decoding: try Data(contentsOf: URL(fileURLWithPath: db)), as: UTF8.self)))
        for table in try database.rows("SELECT name FROM sqlite_master WHERE type = 'table'") {
            guard case .text(let name) = table[0] else { continue }
            let text = try database.rows("SELECT * FROM \"\(name)\"").map { $0.map(Self.text).joined(separator: "|") }
            places.append(("table \(name)", text.joined(separator: "\n")))
        }
        for row in try database.rows("SELECT call_id, material FROM call_material") {
            guard case .blob(let bytes) = row[1] else { continue }
            places.append(("the stored material of \(row[0])", Self.text(of: try CallMaterial(decoding: bytes))))
        }
        places.append(("the report", try String(contentsOfFile: report, encoding: .utf8)))
        let servedText = try Binary.run(["cat", served.path])
        XCTAssertEqual(servedText.status, 0, servedText.err)
        XCTAssertTrue(servedText.out.contains(#""kind":"stats""#), "the served statistics are in the log")
        places.append(("the served logs", servedText.out))
        places.append(("the served logs' names", try FileManager.default.subpathsOfDirectory(atPath: served.path).joined(separator: "\n")))
        // What a run prints names files and calls as the database does: a log named after its
        // call (as `import` names them), past a bound so that the call is named in a warning.
        let named = dir.appendingPathComponent("named")
        try FileManager.default.createDirectory(at: named, withIntermediateDirectories: true)
        try Self.appLog.write(to: named.appendingPathComponent("c-leak-7f3a91.ndjson"), atomically: true, encoding: .utf8)
        let noisy = try Binary.run([
            "analyze", named.path, "--db", dir.appendingPathComponent("noisy.sqlite").path, "--pseudonymize-key", Self.key,
            "--max-records-per-call", "2",
        ])
        XCTAssertTrue(noisy.err.contains("record beyond a limit: call anon-"), noisy.err)
        places.append(("analyze's output", noisy.out + noisy.err))
        // `import` with the key: its files, their names and what it prints hold pseudonyms only.
        let importedWithKey = dir.appendingPathComponent("imported-with-key")
        let keyed = try Binary.run(["import", dump.path, "--out", importedWithKey.path, "--pseudonymize-key", Self.key])
        XCTAssertEqual(keyed.status, 0, keyed.err)
        XCTAssertTrue(keyed.out.contains("call anon-"), keyed.out)
        places.append(("import's output", keyed.out + keyed.err))
        places.append(("import's file names", try FileManager.default.subpathsOfDirectory(atPath: importedWithKey.path).joined(separator: "\n")))
        let keyedText = try Binary.run(["cat", importedWithKey.path])
        XCTAssertTrue(keyedText.out.contains(#""kind":"event""#), "the imported trace is in the log")
        places.append(("the imported logs", keyedText.out))

        var hits: [String] = []
        for (place, text) in places {
            for id in Self.planted where text.localizedCaseInsensitiveContains(id) { hits.append("\(id) in \(place)") }
        }
        XCTAssertEqual(hits, [], "identifiers that survived pseudonymisation")
        // The same key gives the same pseudonym: the served call is under the id serve gave it.
        let servedID = PlantedPseudonym.of("c-served-5521")
        XCTAssertEqual(try database.scalar("SELECT count(*) FROM calls WHERE call_id = ?", [.text(servedID)])?.int64, 1)
    }

    enum PlantedPseudonym {
        static func of(_ id: String) -> String { KeyedIdentifiers(key: SipHashKey(hex: key)!).identifier(id) }
    }

    static func text(_ v: SQLValue) -> String {
        switch v {
        case .null: ""
        case .integer(let i): String(i)
        case .real(let d): String(d)
        case .text(let s): s
        case .blob(let b): String(decoding: b, as: UTF8.self)
        }
    }

    /// Every string a call's material holds.
    static func text(of m: CallMaterial) -> String {
        var parts = [m.callID, m.info.map { JSONValue.object($0).serialized() } ?? "", m.end.map { JSONValue.object($0).serialized() } ?? ""]
        for e in m.events { parts += [e.callID, e.kind, e.action, e.type, e.detailJSON] }
        for s in m.snapshots {
            parts += [s.peerConnection, s.source, s.pair?.localType ?? "", s.pair?.networkType ?? ""]
            for r in s.streams { parts += [r.streamID, r.codec ?? "", r.qualityLimitation ?? ""] }
        }
        return parts.joined(separator: "\n")
    }

    // MARK: What is planted

    static let t0: Int64 = 1_795_349_930_000

    /// An app's log: every record kind, person fields under many names and types, the call id,
    /// addresses, e-mail addresses and phone numbers in free text, a named peer connection.
    static var appLog: String {
        let c = "c-leak-7f3a91"
        func stats(_ n: Int) -> String {
            let ts = t0 + Int64(n) * 10_000
            return #"{"v":1,"kind":"stats","call":"\#(c)","ts":\#(ts),"format":"w3c","pc":"pc-leak-bob","report":["#
                + #"{"id":"IT01A1","timestamp":\#(ts),"type":"inbound-rtp","kind":"audio","ssrc":1111,"packetsReceived":\#(500 * n),"packetsLost":\#(n),"jitter":0.004,"codecId":"C1","transportId":"T1"},"#
                + #"{"id":"OT01A2","timestamp":\#(ts),"type":"outbound-rtp","kind":"audio","ssrc":2222,"packetsSent":\#(500 * n),"bytesSent":\#(80000 * n),"codecId":"C1"},"#
                + #"{"id":"C1","timestamp":\#(ts),"type":"codec","mimeType":"audio/opus","clockRate":48000},"#
                + #"{"id":"T1","timestamp":\#(ts),"type":"transport","selectedCandidatePairId":"CP1"},"#
                + #"{"id":"CP1","timestamp":\#(ts),"type":"candidate-pair","localCandidateId":"L1","remoteCandidateId":"R1","nominated":true,"state":"succeeded","currentRoundTripTime":0.05},"#
                + #"{"id":"L1","timestamp":\#(ts),"type":"local-candidate","address":"198.51.100.77","port":50000,"candidateType":"srflx","protocol":"udp","relatedAddress":"2001:db8:77::77","url":"stun:alice.leak@example.org"},"#
                + #"{"id":"R1","timestamp":\#(ts),"type":"remote-candidate","address":"2001:db8:77::77","port":50001,"candidateType":"host","protocol":"udp"}]}"#
        }
        return [
            #"{"v":1,"kind":"call","call":"\#(c)","ts":\#(t0),"direction":"outgoing","sdk":"kandy-mobile","sdkVersion":"5.14.0","app":"acme","appVersion":"3.2.1","platform":"android","network":"wifi","media":["audio"],"user":"alice.leak","Email":"alice.leak@example.org","phoneNumber":4155550188,"caller":{"name":"Alice Leakwood","uri":"sip:alice.sip@example.org"},"note":"call \#(c) from 198.51.100.77 by alice.leak@example.org, +14155550199","labels":{"e-mail":"alice.leak@example.org","Phone":"+14155550199","room":"blue","User_ID":4155550188,"host":"2001:db8:77::77","contact":"sip:alice.sip@example.org"}}"#,
            stats(1), stats(2), stats(3),
            #"{"v":1,"kind":"event","call":"\#(c)","ts":\#(t0 + 1000),"action":"callMetric","type":"callRinging","target":"alice.leak@example.org","text":"\#(c) rang 198.51.100.77","phone":"+14155550199","peer":{"e_mail":"alice.leak@example.org","displayName":"Alice Leakwood"}}"#,
            #"{"v":1,"kind":"event","call":"\#(c)","ts":\#(t0 + 2000),"action":"callState","type":"moved \#(c) to 198.51.100.77"}"#,
            #"{"v":1,"kind":"quality","call":"\#(c)","ts":\#(t0 + 3000),"score":80,"reason":"\#(c) on 198.51.100.77 for alice.leak@example.org"}"#,
            #"{"v":1,"kind":"end","call":"\#(c)","ts":\#(t0 + 40000),"reason":"terminatedLocally","statusCode":9901,"statusText":"Call \#(c) ended by alice.leak@example.org","sipStatus":200,"sipReason":"BYE \#(c) from 198.51.100.77 (+14155550199)"}"#,
        ].joined(separator: "\n") + "\n"
    }

    /// A capture: a SIP call whose Call-ID has a user part, an unsignalled IPv4 flow and an
    /// IPv6 one, 100 RTP packets each way.
    static func capture() -> PcapWriter {
        var w = PcapWriter()
        let start = t0 * 1_000_000
        let sipID = "sipuser7731@198.51.100.78"
        w.addUDP(
            from: "198.51.100.78", 5060, to: "198.51.100.79", 5060,
            payload: PcapPayloads.sip(callID: sipID, address: "198.51.100.78", audioPort: 40000, formats: [(0, "PCMU", 8000)]),
            timestampNanos: start)
        w.addUDP(
            from: "198.51.100.79", 5060, to: "198.51.100.78", 5060,
            payload: PcapPayloads.sip(
                callID: sipID, response: true, address: "198.51.100.79", audioPort: 50000, formats: [(0, "PCMU", 8000)]),
            timestampNanos: start + 1_000_000)
        let flows: [(String, UInt16, String, UInt16, UInt32)] = [
            ("198.51.100.78", 40000, "198.51.100.79", 50000, 0x1111), ("198.51.100.79", 50000, "198.51.100.78", 40000, 0x2222),
            ("198.51.100.81", 41000, "198.51.100.82", 51000, 0x3333), ("198.51.100.82", 51000, "198.51.100.81", 41000, 0x4444),
            ("2001:db8:77::81", 42000, "2001:db8:77::82", 52000, 0x5555), ("2001:db8:77::82", 52000, "2001:db8:77::81", 42000, 0x6666),
        ]
        for i in 0..<100 {
            for (src, sp, dst, dp, ssrc) in flows {
                w.addUDP(
                    from: src, sp, to: dst, dp,
                    payload: PcapPayloads.rtp(seq: UInt16(i), timestamp: UInt32(i * 160), ssrc: ssrc),
                    timestampNanos: start + 10_000_000 + Int64(i) * 20_000_000)
            }
        }
        return w
    }

    /// A webrtc-internals dump (the file's name becomes the call id) with a page URL naming
    /// someone, and candidates with addresses.
    static let dump = """
        {
         "getUserMedia": [],
         "PeerConnections": {
          "3-1": {
           "pid": 9,
           "rtcConfiguration": "{ iceServers: [turn:198.51.100.91:3478], iceTransportPolicy: all }",
           "stats": {},
           "updateLog": [
            {"type": "createOffer", "value": "", "timestamp": 1700000000100},
            {"type": "icecandidate", "value": "sdpMid: 0, candidate: candidate:1 1 udp 2122260223 198.51.100.91 50000 typ host", "timestamp": 1700000000110},
            {"type": "setLocalDescription", "value": "{\\"type\\":\\"offer\\",\\"sdp\\":\\"v=0\\"}", "timestamp": 1700000000120},
            {"type": "setRemoteDescription", "value": "{\\"type\\":\\"answer\\",\\"sdp\\":\\"v=0\\"}", "timestamp": 1700000001000},
            {"type": "iceconnectionstatechange", "value": "\\"failed\\"", "timestamp": 1700000031000}
           ],
           "url": "https://meet.example.test/room?email=imp.leak@example.org&from=198.51.100.91"
          }
         },
         "UserAgent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.85 Safari/537.36"
        }
        """

    /// Starts `callstats serve --pseudonymize-key` and posts one call's records to it.
    func postToServe(out: URL) throws {
        let c = "c-served-5521"
        let ts = Self.t0 + 100_000
        let body = [
            #"{"v":1,"kind":"call","call":"\#(c)","ts":\#(ts),"direction":"incoming","platform":"web","media":["audio"],"userName":"carol.leak","mobile":4155550177,"labels":{"E-Mail":"carol.leak@example.org","ip":"198.51.100.95"}}"#,
            #"{"v":1,"kind":"stats","call":"\#(c)","ts":\#(ts + 1000),"format":"w3c","pc":"served-pc-leak","report":[{"id":"IT1","timestamp":\#(ts + 1000),"type":"inbound-rtp","kind":"audio","ssrc":777,"packetsReceived":50,"packetsLost":0,"jitter":0.002},{"id":"L1","timestamp":\#(ts + 1000),"type":"local-candidate","address":"198.51.100.95","candidateType":"host","url":"turn:carol.leak@example.org"}]}"#,
            #"{"v":1,"kind":"stats","call":"\#(c)","ts":\#(ts + 11000),"format":"w3c","pc":"served-pc-leak","report":[{"id":"IT1","timestamp":\#(ts + 11000),"type":"inbound-rtp","kind":"audio","ssrc":777,"packetsReceived":550,"packetsLost":2,"jitter":0.003}]}"#,
            #"{"v":1,"kind":"event","call":"\#(c)","ts":\#(ts + 2000),"action":"callState","type":"held","by":"carol.leak@example.org","note":"\#(c) held at 198.51.100.95"}"#,
            #"{"v":1,"kind":"end","call":"\#(c)","ts":\#(ts + 20000),"reason":"terminatedRemotely","statusText":"\#(c) ended by carol.leak@example.org +14155550177"}"#,
        ].joined(separator: "\n")
        let serve = Process()
        serve.executableURL = Binary.url
        serve.arguments = ["serve", "--listen", "127.0.0.1:0", "--out", out.path, "--pseudonymize-key", Self.key]
        let stdout = Pipe()
        serve.standardOutput = stdout
        serve.standardError = FileHandle.nullDevice
        try serve.run()
        defer {
            kill(serve.processIdentifier, SIGTERM)
            serve.waitUntilExit()
        }
        guard let first = PipeLines(stdout).next(), let match = first.firstMatch(of: /127\.0\.0\.1:(\d+)/), let port = Int(match.1) else {
            return XCTFail("callstats serve did not say where it listens")
        }
        let reply = try Self.post(port: port, body: body)
        XCTAssertTrue(reply.hasPrefix("HTTP/1.1 200"), reply)
    }

    /// One HTTP/1.1 POST of `body` to /v1/records on 127.0.0.1; the reply's text.
    static func post(port: Int, body: String) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else { throw CocoaError(.fileReadUnknown) }
        let request = Array(
            "POST /v1/records HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8)
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { break }
            sent += n
        }
        var reply = [UInt8](), chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n <= 0 { break }
            reply += chunk[0..<n]
        }
        return String(decoding: reply, as: UTF8.self)
    }
}
