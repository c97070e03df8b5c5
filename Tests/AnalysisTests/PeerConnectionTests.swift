import Analysis
import CallLog
import MaterialScanning
import MaterialTestSupport
import XCTest

/// Peer connections as rows of their own, and the call's pair, transport, disconnections,
/// reconnects and failure taken from those that carried media: calls built as a browser's trace
/// is imported (each event naming its pc in `detail.pc`), with known answers.
final class PeerConnectionTests: XCTestCase {
    let t0: Int64 = 1_795_400_000_000

    /// A local candidate as a browser reports it.
    struct Candidate {
        var type: String
        var proto = "udp"
        var relayProtocol: String?
        var url: String?
    }

    /// A W3C report of one pc at `t`: an audio stream each way carrying `packets` packets so
    /// far (none when nil: an idle pc), and the selected pair `local` → `remote`.
    func report(t: Int64, packets: Double?, local: Candidate, remote: String) -> [JSONValue] {
        var objects: [JSONValue] = []
        if let packets {
            objects += [
                [
                    "id": "IT1", "timestamp": .number(Double(t)), "type": "inbound-rtp", "kind": "audio", "ssrc": 1111,
                    "codecId": "C111", "packetsReceived": .number(packets), "packetsLost": 0, "jitter": 0.004,
                    "bytesReceived": .number(packets * 80),
                ],
                [
                    "id": "OT1", "timestamp": .number(Double(t)), "type": "outbound-rtp", "kind": "audio", "ssrc": 2222,
                    "codecId": "C111", "packetsSent": .number(packets), "bytesSent": .number(packets * 80),
                ],
                ["id": "C111", "timestamp": .number(Double(t)), "type": "codec", "mimeType": "audio/opus", "clockRate": 48000],
            ]
        }
        var l: JSONObject = [
            "id": "L1", "timestamp": .number(Double(t)), "type": "local-candidate", "candidateType": .string(local.type),
            "protocol": .string(local.proto),
        ]
        if let p = local.relayProtocol { l["relayProtocol"] = .string(p) }
        if let u = local.url { l["url"] = .string(u) }
        objects += [
            [
                "id": "CP1", "timestamp": .number(Double(t)), "type": "candidate-pair", "state": "succeeded", "nominated": true,
                "localCandidateId": "L1", "remoteCandidateId": "R1", "currentRoundTripTime": 0.04, "responsesReceived": 5,
            ],
            .object(l),
            ["id": "R1", "timestamp": .number(Double(t)), "type": "remote-candidate", "candidateType": .string(remote), "protocol": "udp"],
            ["id": "T1", "timestamp": .number(Double(t)), "type": "transport", "selectedCandidatePairId": "CP1"],
        ]
        return objects
    }

    /// An event of pc `pc` as `callstats import` writes a trace's entry.
    func event(_ call: String, _ dt: Int64, _ action: String, _ type: String, pc: String, _ extra: JSONObject = [:]) -> LogRecord {
        var detail: JSONObject = ["pc": .string(pc)]
        detail.entries += extra.entries
        return .event(call: call, ts: t0 + dt, action: action, type: type, detail: detail)
    }

    /// ICE connected as the importers write it (`iceState` with the browser's state).
    func iceConnected(_ call: String, _ dt: Int64, pc: String) -> LogRecord {
        event(call, dt, EventName.iceState, "iceConnected", pc: pc, ["state": "connected"])
    }

    /// Snapshots of pc `pc` every 10 s from `from` to `to` (s after t0), `perInterval` packets
    /// each way per 10 s (nil: an idle pc), with `local(k)` the local candidate at snapshot k.
    func snapshots(
        _ call: String, pc: String, from: Int, to: Int, perInterval: Double?, remote: String = "host",
        local: (Int) -> Candidate = { _ in Candidate(type: "host") }
    ) -> [LogRecord] {
        stride(from: from, through: to, by: 10).enumerated().map { k, s in
            let ts = t0 + Int64(s) * 1000
            return .stats(
                call: call, ts: ts, format: .w3c,
                report: report(t: ts, packets: perInterval.map { $0 * Double(k) }, local: local(k), remote: remote), peerConnection: pc)
        }
    }

    func row(_ a: CallAnalysis, _ pc: String) throws -> PeerConnectionSummary {
        try XCTUnwrap(a.peerConnections.first { $0.pcID == pc }, "no row for \(pc)")
    }

    /// A page with a p2p pc carrying the media (host/host, never dropped) and an idle pc to the
    /// media server that never connected and failed, whose snapshots come last. The call's pair
    /// is the p2p pc's, it has no disconnections and did not fail; the idle pc's failure is a
    /// finding of its own.
    func testTheCallIsItsMediaPCNotAnIdleFailedOne() throws {
        let a = try Harness.analyze(multiPCCall("multi-pc"))
        try checkMultiPCCall(a, p2pName: "p2p", jvbName: "jvb")
    }

    /// Pseudonymised (`--pseudonymize-key`), a pc's events and snapshots name it alike: the call
    /// still has two pcs, with the same figures, under their pseudonyms.
    func testPseudonymisedPCNamesStillMatchTheirEvents() throws {
        let key = try XCTUnwrap(SipHashKey(hex: "000102030405060708090a0b0c0d0e0f"))
        let p = CallPseudonymizer(key: key)
        let m = p.apply(to: try Harness.material(multiPCCall("multi-pc-private")))
        let a = CallAnalyzer.analyze(m)
        XCTAssertEqual(a.peerConnections.count, 2)
        XCTAssertFalse(a.peerConnections.contains { ["p2p", "jvb"].contains($0.pcID) }, "\(a.peerConnections.map(\.pcID))")
        try checkMultiPCCall(a, p2pName: p.identifier("p2p"), jvbName: p.identifier("jvb"))
    }

    func multiPCCall(_ c: String) -> [LogRecord] {
        var records: [LogRecord] = [
            event(c, 50, "webrtc", "constraints", pc: "p2p", ["value": ["optional": [["rtcStatsSFUP2P": true]]]]),
            event(c, 0, "webrtc", "constraints", pc: "jvb", ["value": ["optional": [["rtcStatsSFUP2P": false]]]]),
            event(c, 100, "iceConnectionState", "checking", pc: "jvb", ["state": "checking"]),
            iceConnected(c, 500, pc: "p2p"),
            event(c, 600, "connectionState", "connected", pc: "p2p"),
            // The media-server pc never connects: its disconnection and failure are not outages.
            event(c, 15_000, EventName.iceState, "iceDisconnected", pc: "jvb", ["state": "disconnected"]),
            event(c, 30_000, EventName.iceState, "iceDisconnected", pc: "jvb", ["state": "failed"]),
            event(c, 30_000, "connectionState", "failed", pc: "jvb"),
        ]
        records += snapshots(c, pc: "p2p", from: 1, to: 61, perInterval: 500)
        // Its snapshots a moment after the p2p pc's: the last pair read in the call is its own.
        records += snapshots(c, pc: "jvb", from: 2, to: 62, perInterval: nil, remote: "srflx") { _ in Candidate(type: "prflx") }
        // A trace's end says failed when any pc failed (`callstats import`).
        records.append(.end(call: c, ts: t0 + 62_000, reason: "failed", statusText: "ICE failed"))
        return records
    }

    func checkMultiPCCall(_ a: CallAnalysis, p2pName: String, jvbName: String) throws {
        XCTAssertEqual(Set(a.peerConnections.map(\.pcID)), [jvbName, p2pName])
        XCTAssertEqual(a.peerConnections.first?.pcID, jvbName, "by first appearance")
        let p2p = try row(a, p2pName), jvb = try row(a, jvbName)
        XCTAssertEqual(p2p.role, "p2p")
        XCTAssertEqual(jvb.role, "media_server")
        XCTAssertEqual(p2p.streams, 2)
        XCTAssertEqual(p2p.packets, 2 * 500 * 6, "both directions, six intervals")
        XCTAssertTrue(p2p.carriedMedia)
        XCTAssertEqual(p2p.connectedTs, t0 + 500)
        XCTAssertEqual(p2p.connectedMs, 61_000 - 500, "connected until its last record")
        XCTAssertEqual(p2p.disconnects, 0)
        XCTAssertFalse(p2p.failed)
        XCTAssertEqual([p2p.localCandidateType, p2p.remoteCandidateType, p2p.transport], ["host", "host", "udp"])
        XCTAssertEqual(jvb.packets, 0)
        XCTAssertEqual(jvb.streams, 0)
        XCTAssertNil(jvb.connectedTs)
        XCTAssertEqual(jvb.connectedMs, 0)
        XCTAssertTrue(jvb.failed)
        XCTAssertEqual(jvb.failedTs, t0 + 30_000)
        XCTAssertEqual(jvb.disconnects, 0, "a pc that never connected cannot drop")
        XCTAssertEqual(jvb.disconnectedMs, 0)
        XCTAssertEqual([jvb.iceState, jvb.connectionState], ["failed", "failed"])
        XCTAssertEqual([jvb.localCandidateType, jvb.remoteCandidateType], ["prflx", "srflx"])

        let call = a.call
        XCTAssertEqual(call.localCandidateType, "host")
        XCTAssertEqual(call.remoteCandidateType, "host")
        XCTAssertEqual(call.transport, "udp")
        XCTAssertFalse(call.relayUsed)
        XCTAssertEqual(call.iceDisconnects, 0)
        XCTAssertEqual(call.iceDisconnectedMs, 0)
        XCTAssertEqual(call.endReason, "undefined", "the media pc did not fail: who ended the call is not known")
        XCTAssertNil(call.endStatusText)
        XCTAssertEqual(call.grade, .good, call.gradeReason)
        XCTAssertFalse(a.findings.contains { ["ice_disconnected", "ice_failure", "no_media"].contains($0.code) }, "\(a.findings)")
        let f = try XCTUnwrap(a.findings.first { $0.code == "auxiliary_pc_failed" })
        XCTAssertEqual(f.severity, .info)
        XCTAssertEqual(f.startTs, t0 + 30_000)
        XCTAssertEqual(f.durationMs, 32_000, "until the pc's last record")
        XCTAssertTrue(f.detail.contains(jvbName), f.detail)
    }

    /// An outage the connection state saw while ICE stayed connected (DTLS, or a browser that
    /// reports only the aggregate) is a disconnection and, once connected again, a reconnect.
    func testAnOutageSeenOnlyInConnectionStateCounts() throws {
        let c = "connection-state-outage"
        var records: [LogRecord] = [
            iceConnected(c, 500, pc: "a"),
            event(c, 600, "connectionState", "connected", pc: "a"),
            event(c, 20_000, "connectionState", "disconnected", pc: "a"),
            event(c, 26_000, "connectionState", "connected", pc: "a"),
        ]
        records += snapshots(c, pc: "a", from: 1, to: 51, perInterval: 500)
        let a = try Harness.analyze(records)
        let pc = try row(a, "a")
        XCTAssertEqual(pc.disconnects, 1)
        XCTAssertEqual(pc.disconnectedMs, 6_000)
        XCTAssertEqual(pc.reconnects, 1)
        XCTAssertEqual(pc.connectedMs, 51_000 - 500 - 6_000)
        XCTAssertEqual(pc.iceState, "connected")
        XCTAssertEqual(pc.connectionState, "connected")
        XCTAssertEqual(a.call.iceDisconnects, 1)
        XCTAssertEqual(a.call.iceDisconnectedMs, 6_000)
        XCTAssertEqual(a.call.reconnects, 1)
        let f = try XCTUnwrap(a.findings.first { $0.code == "ice_disconnected" })
        XCTAssertEqual(f.severity, .warn, "more than 5 s disconnected")
        XCTAssertEqual(f.value, 1)
    }

    /// ICE and the connection state reporting the same outage, each at its own moment, count
    /// it once: from the first to say down until both are up again. An open outage at the end
    /// lasts until the pc's last record; it is no reconnect.
    func testOneOutageReportedByBothStatesCountsOnce() throws {
        let c = "both-states"
        var records: [LogRecord] = [
            iceConnected(c, 500, pc: "a"),
            event(c, 600, "connectionState", "connected", pc: "a"),
            event(c, 10_000, EventName.iceState, "iceDisconnected", pc: "a", ["state": "disconnected"]),
            event(c, 11_000, "connectionState", "disconnected", pc: "a"),
            iceConnected(c, 14_000, pc: "a"),
            event(c, 14_500, "connectionState", "connected", pc: "a"),
            // Down again at 40 s and never back.
            event(c, 40_000, "connectionState", "disconnected", pc: "a"),
            event(c, 45_000, "connectionState", "failed", pc: "a"),
        ]
        records += snapshots(c, pc: "a", from: 1, to: 51, perInterval: 500)
        let a = try Harness.analyze(records)
        let pc = try row(a, "a")
        XCTAssertEqual(pc.disconnects, 2)
        XCTAssertEqual(pc.disconnectedMs, 4_500 + 11_000)
        XCTAssertEqual(pc.reconnects, 1)
        XCTAssertTrue(pc.failed)
        XCTAssertEqual(pc.failedTs, t0 + 45_000)
        XCTAssertEqual(a.call.iceDisconnects, 2)
        XCTAssertEqual(a.call.iceDisconnectedMs, 15_500)
        XCTAssertEqual(a.call.endReason, "failed", "its only media pc ended failed, and no end record said otherwise")
    }

    /// When no pc carried media, the call is all its pcs: one that failed fails the call (no
    /// media, ICE failure), and is no auxiliary pc.
    func testWithoutMediaEveryPCIsTheCalls() throws {
        let c = "no-media"
        var records: [LogRecord] = [
            event(c, 0, EventName.callMetric, "callCreate", pc: "a"),
            event(c, 100, "iceConnectionState", "checking", pc: "a"),
            event(c, 100, "iceConnectionState", "checking", pc: "b"),
            event(c, 15_000, EventName.iceState, "iceDisconnected", pc: "a", ["state": "failed"]),
        ]
        records += snapshots(c, pc: "a", from: 1, to: 11, perInterval: nil)
        records += snapshots(c, pc: "b", from: 2, to: 12, perInterval: nil)
        records.append(.end(call: c, ts: t0 + 15_000, reason: "failed", statusText: "ICE failed"))
        let a = try Harness.analyze(records)
        XCTAssertEqual(a.call.endReason, "failed")
        XCTAssertEqual(a.call.grade, .noMedia)
        XCTAssertTrue(a.findings.contains { $0.code == "ice_failure" }, "\(a.findings)")
        XCTAssertFalse(a.findings.contains { $0.code == "auxiliary_pc_failed" })
        XCTAssertEqual(try row(a, "a").failed, true)
        XCTAssertEqual(try row(a, "b").failed, false)
        XCTAssertEqual(a.call.iceDisconnects, 0, "neither pc ever connected")
    }

    /// An ICE restart made while connected is a reconnect; one made during an outage is not
    /// counted apart from the outage's end.
    func testICERestartsAreReconnects() throws {
        let c = "restarts"
        var records: [LogRecord] = [
            iceConnected(c, 500, pc: "a"),
            event(c, 10_000, "webrtc", "restartIce", pc: "a"),
            event(c, 20_000, "webrtc", "createOffer", pc: "a", ["value": ["iceRestart": true]]),
            event(c, 30_000, EventName.iceState, "iceDisconnected", pc: "a", ["state": "disconnected"]),
            event(c, 31_000, "webrtc", "restartIce", pc: "a"),
            iceConnected(c, 33_000, pc: "a"),
        ]
        records += snapshots(c, pc: "a", from: 1, to: 41, perInterval: 500)
        let a = try Harness.analyze(records)
        let pc = try row(a, "a")
        XCTAssertEqual(pc.reconnects, 3, "two restarts while connected, one outage ended")
        XCTAssertEqual(pc.disconnects, 1)
        XCTAssertEqual(pc.disconnectedMs, 3_000)
        XCTAssertEqual(a.call.reconnects, 3)
    }

    /// A relay's protocol without `relayProtocol` (Safari) is the TURN URL's: `turns:` TLS,
    /// `?transport=tcp` TCP, else UDP; `relayProtocol`, where given, wins.
    func testTheRelayProtocolComesFromTheTURNURLWhenNotReported() throws {
        let cases: [(Candidate, String)] = [
            (Candidate(type: "relay", url: "turns:turn.example.org:443?transport=tcp"), "tls"),
            (Candidate(type: "relay", url: "turn:turn.example.org:443?transport=tcp"), "tcp"),
            (Candidate(type: "relay", url: "turn:turn.example.org:3478"), "udp"),
            (Candidate(type: "relay", relayProtocol: "tcp", url: "turns:turn.example.org:443"), "tcp"),
            // A server-reflexive candidate's URL is its STUN server's: nothing to say.
            (Candidate(type: "srflx", url: "stun:stun.example.org:3478"), "udp"),
        ]
        for (k, (local, expected)) in cases.enumerated() {
            let c = "relay-\(k)"
            var records = [iceConnected(c, 500, pc: "a")]
            records += snapshots(c, pc: "a", from: 1, to: 31, perInterval: 500, remote: "srflx") { _ in local }
            let a = try Harness.analyze(records)
            XCTAssertEqual(a.call.transport, expected, "\(local)")
            XCTAssertEqual(try row(a, "a").transport, expected, "\(local)")
            XCTAssertEqual(a.call.relayUsed, local.type == "relay")
            XCTAssertEqual(a.findings.contains { $0.code == "tcp_used" }, expected != "udp", "\(local)")
        }
    }

    /// A pc whose selected pair changes mid-call (host to a TURN relay) counts the change, and
    /// reports the pair it ended on.
    func testAPairChangeMidCallIsCounted() throws {
        let c = "pair-change"
        var records = [iceConnected(c, 500, pc: "a")]
        records += snapshots(c, pc: "a", from: 1, to: 61, perInterval: 500) { k in
            k < 3 ? Candidate(type: "host") : Candidate(type: "relay", relayProtocol: "udp", url: "turn:turn.example.org:3478")
        }
        let a = try Harness.analyze(records)
        let pc = try row(a, "a")
        XCTAssertEqual(pc.pairChanges, 1)
        XCTAssertEqual([pc.localCandidateType, pc.remoteCandidateType, pc.transport], ["relay", "host", "udp"])
        XCTAssertTrue(pc.relayUsed)
        XCTAssertEqual(a.call.localCandidateType, "relay")
        XCTAssertTrue(a.call.relayUsed)
    }

    /// A pc reported in both dialects (W3C and legacy goog, as some dumps hold them) has one
    /// pair, though goog says less of it (no network type): no change is counted between them.
    func testBothDialectsOfOnePairAreNoChange() throws {
        let c = "two-dialects"
        var records = [iceConnected(c, 500, pc: "a")]
        for k in 0..<6 {
            let ts = t0 + Int64(k) * 10_000 + 1_000
            var w3c = report(t: ts, packets: Double(k * 500), local: Candidate(type: "host"), remote: "host")
            w3c[w3c.count - 3] = [
                "id": "L1", "timestamp": .number(Double(ts)), "type": "local-candidate", "candidateType": "host", "protocol": "udp",
                "networkType": "wifi",
            ]
            records.append(.stats(call: c, ts: ts, format: .w3c, report: w3c, peerConnection: "a"))
            let goog: [JSONValue] = [
                [
                    "id": "Conn-0-1-0", "type": "googCandidatePair", "timestamp": .number(Double(ts + 500)),
                    "values": [
                        "googActiveConnection": "true", "googLocalCandidateType": "local", "googRemoteCandidateType": "local",
                        "googTransportType": "udp", "googRtt": "40",
                    ],
                ]
            ]
            records.append(.stats(call: c, ts: ts + 500, format: .goog, report: goog, peerConnection: "a"))
        }
        let m = try Harness.material(records)
        // Each dialect read its pair, and they differ in what they say of it.
        XCTAssertEqual(m.snapshots.filter { $0.source == "goog" }.compactMap(\.pair?.localType), Array(repeating: "host", count: 6))
        XCTAssertEqual(Set(m.snapshots.compactMap(\.pair).map { $0.networkType ?? "none" }), ["wifi", "none"])
        let a = CallAnalyzer.analyze(m)
        let pc = try row(a, "a")
        XCTAssertEqual(pc.pairChanges, 0)
        XCTAssertEqual([pc.localCandidateType, pc.remoteCandidateType, pc.transport], ["host", "host", "udp"])
    }

    /// A call whose events name no pc (an SDK's) keeps the figures its events give, as before
    /// pcs were rows (repeated `iceDisconnected` events each count); its one pc still gets a
    /// row, whose outage counts once.
    func testACallWithoutNamedPCsKeepsItsEventFigures() throws {
        let c = "sdk-call"
        func sdkEvent(_ dt: Int64, _ type: String) -> LogRecord { .event(call: c, ts: t0 + dt, action: EventName.iceState, type: type) }
        var records = [
            sdkEvent(500, "iceConnected"), sdkEvent(20_000, "iceDisconnected"), sdkEvent(21_000, "iceDisconnected"), sdkEvent(24_000, "iceConnected"),
        ]
        records += snapshots(c, pc: "pc0", from: 1, to: 41, perInterval: 500)
        let a = try Harness.analyze(records)
        XCTAssertEqual(a.call.iceDisconnects, 2)
        XCTAssertEqual(a.call.iceDisconnectedMs, 4_000)
        XCTAssertEqual(a.call.reconnects, 0, "an SDK's reconnects are its reconnecting events")
        XCTAssertEqual(a.peerConnections.count, 1)
        let pc = try row(a, "pc0")
        XCTAssertEqual(pc.disconnects, 1)
        XCTAssertEqual(pc.disconnectedMs, 4_000)
        XCTAssertEqual(pc.reconnects, 1)
        XCTAssertEqual(pc.connectedTs, t0 + 500)
    }
}
