import Foundation
import TestSupport
import XCTest

/// A real conference in headless Chromium: three participants in a full mesh (each pair two
/// RTCPeerConnections, one per side, each a leg recorded by agent.js with the labels
/// `conference` and `participant`), where one participant's uplink loses packets.
///
/// The loss is real network loss: every candidate alice gathers is handed to her peers as the
/// address of an `ImpairingRelay` (opened by a `RelayBroker` the page asks), and her peers'
/// candidates are never given to her, so that she learns each peer only as the relay that
/// forwards its ICE checks (a peer-reflexive candidate) and never finds a direct path around
/// it. Everything she sends passes a relay that drops `dropFraction` of her RTP and RTCP; what
/// she receives passes untouched. The relays count what they dropped per SSRC, which is what
/// the receivers' statistics must show.
final class BrowserConferenceTests: XCTestCase {
    static let participants = ["alice", "bob", "carol"]
    static let impaired = "alice"
    static let dropFraction = 0.10
    static let callSeconds = 35

    /// What the one call left behind, shared by the tests (it takes half a minute).
    struct Outcome {
        var lines: [String]
        var database: String
        /// The relays' counts summed per leg of the impaired participant, and per SSRC.
        var relayCounts: [String: ImpairingRelay.Counts]
        var ssrcCounts: [UInt32: ImpairingRelay.StreamCounts]
        var seconds: Double
    }

    nonisolated(unsafe) static var outcome: Result<Outcome, Error>?
    nonisolated(unsafe) static var directory: URL?

    override class func tearDown() {
        if let directory { try? FileManager.default.removeItem(at: directory) }
        super.tearDown()
    }

    static func leg(_ from: String, _ to: String) -> String { "\(from)-to-\(to)" }

    static var legs: [String] { participants.flatMap { p in participants.filter { $0 != p }.map { leg(p, $0) } } }

    /// The conference page: `collector` serves agent.js and takes its records, `broker` opens
    /// relays.
    static func page(collector: String, broker: String, seconds: Int = callSeconds) -> String {
        """
        <!doctype html>
        <html><head><title>conference</title>
        <script src="\(collector)/agent.js"></script>
        </head><body>
        <script>
        const sleep = ms => new Promise(r => setTimeout(r, ms));
        function say(text) { document.title = text; }
        const people = [\(participants.map { "\"\($0)\"" }.joined(separator: ", "))], impaired = "\(impaired)";
        const monitors = [], pcs = [], relays = {};
        const leg = (from, to) => from + "-to-" + to;
        let failed = null;
        function fail(e) {
          if (failed) return;
          failed = e;
          say("error " + e);
          fetch("\(collector)/v1/records", {method: "POST", body: JSON.stringify({v: 1, kind: "event", call: "page-error", ts: Date.now(), action: "error", type: String(e)})});
        }
        // The impaired participant's IPv4 UDP host candidates, each through a relay; her other
        // candidates (IPv6, TCP) are not handed out, so that none bypasses a relay.
        async function relayed(c, name) {
          const f = c.candidate.split(" ");
          if (f.length < 8 || f[2].toLowerCase() !== "udp" || !/^[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+$/.test(f[4]) || f[7] !== "host") return null;
          const r = await fetch("\(broker)/relay?leg=" + name + "&ip=" + f[4] + "&port=" + f[5]);
          if (!r.ok) throw new Error("relay for " + c.candidate + ": " + await r.text());
          const relay = await r.json();
          relays[name] = (relays[name] || 0) + 1;
          f[4] = relay.ip;
          f[5] = String(relay.port);
          return new RTCIceCandidate({candidate: f.join(" "), sdpMid: c.sdpMid, sdpMLineIndex: c.sdpMLineIndex});
        }
        function open(self, other, stream) {
          const pc = new RTCPeerConnection({bundlePolicy: "max-bundle"});
          pc.remoteSet = new Promise(r => { pc.markRemoteSet = r; });
          monitors.push(callstats.attach(pc, {callId: leg(self, other), conference: "mesh-1", participant: self,
            labels: {conference: "replaced", room: "mesh"}, intervalMs: 1000, flushIntervalMs: 2000,
            app: "browser-conference-test", appVersion: "1"}));
          pcs.push(pc);
          return pc;
        }
        // Candidates go to the other side once it has the remote description they belong to.
        function signal(pc, other, self, peer) {
          pc.onicecandidate = e => {
            if (!e.candidate || !e.candidate.candidate || peer === impaired) return;
            (async () => {
              const c = self === impaired ? await relayed(e.candidate, leg(self, peer)) : e.candidate;
              if (!c) return;
              await other.remoteSet;
              await other.addIceCandidate(c);
            })().catch(fail);
          };
        }
        async function connect(x, y, streams) {
          const a = open(x, y, streams[x]), b = open(y, x, streams[y]);
          signal(a, b, x, y);
          signal(b, a, y, x);
          for (const t of streams[x].getTracks()) a.addTrack(t, streams[x]);
          const offer = await a.createOffer();
          await a.setLocalDescription(offer);
          await b.setRemoteDescription(offer);
          b.markRemoteSet();
          for (const t of streams[y].getTracks()) b.addTrack(t, streams[y]);
          const answer = await b.createAnswer();
          await b.setLocalDescription(answer);
          await a.setRemoteDescription(answer);
          a.markRemoteSet();
        }
        (async () => {
          try {
            const streams = {};
            for (const p of people) streams[p] = await navigator.mediaDevices.getUserMedia({audio: true, video: {width: 320, height: 180, frameRate: 15}});
            for (let i = 0; i < people.length; i++) for (let j = i + 1; j < people.length; j++) await connect(people[i], people[j], streams);
            say("connecting");
            for (let waited = 0; pcs.some(pc => pc.connectionState !== "connected"); waited += 250) {
              if (waited > 30000) throw new Error("not connected: " + pcs.map(pc => pc.connectionState).join(",") + "; relays " + JSON.stringify(relays));
              await sleep(250);
            }
            say("connected");
            await sleep(\(seconds * 1000));
            await Promise.all(monitors.map(m => m.end("terminatedLocally")));
            for (const pc of pcs) pc.close();
            say("ended");
          } catch (e) { fail(e); }
        })();
        </script></body></html>
        """
    }

    /// Runs the conference once: served, relayed, analysed.
    static func run(chromium: String) throws -> Outcome {
        let dir = TestPaths.temporaryDirectory("serve-conference")
        directory = dir
        let started = Date()
        let logs = dir.appendingPathComponent("logs")
        let server = try ServeProcess(directory: logs, arguments: ["--allow-origin", "*"])
        let broker = try RelayBroker(dropFraction: dropFraction, seed: 0xC0FF_EE07)
        defer { broker.stop() }
        let html = dir.appendingPathComponent("conference.html")
        try page(collector: "http://127.0.0.1:\(server.port)", broker: "http://127.0.0.1:\(broker.port)")
            .write(to: html, atomically: true, encoding: .utf8)
        let lines = try BrowserCallTests.runCall(
            chromium: chromium, page: "file://" + html.path, profile: dir.appendingPathComponent("profile"), logs: logs,
            seconds: callSeconds + 30,
            // Host candidates as addresses, not mDNS names: the page hands them to the broker.
            arguments: ["--disable-features=WebRtcHideLocalIpsWithMdns"], ends: legs.count)
        broker.stop()
        server.signal(SIGTERM)
        server.wait()
        var relayCounts: [String: ImpairingRelay.Counts] = [:]
        var ssrcCounts: [UInt32: ImpairingRelay.StreamCounts] = [:]
        for (leg, relay) in broker.relays {
            let c = relay.snapshot
            var total = relayCounts[leg] ?? ImpairingRelay.Counts()
            total.rtpForwarded += c.rtpForwarded
            total.rtpDropped += c.rtpDropped
            total.rtcpForwarded += c.rtcpForwarded
            total.rtcpDropped += c.rtcpDropped
            total.otherForwarded += c.otherForwarded
            total.unroutable += c.unroutable
            total.toReal += c.toReal
            relayCounts[leg] = total
            for (ssrc, s) in relay.streamCounts {
                ssrcCounts[ssrc, default: ImpairingRelay.StreamCounts()].forwarded += s.forwarded
                ssrcCounts[ssrc, default: ImpairingRelay.StreamCounts()].dropped += s.dropped
            }
        }
        let db = dir.appendingPathComponent("calls.sqlite").path
        let analyzed = try Binary.run(["analyze", logs.path, "--db", db, "--quiet"])
        guard analyzed.status == 0 else { throw Failure.analyze(analyzed.err) }
        return Outcome(
            lines: lines, database: db, relayCounts: relayCounts, ssrcCounts: ssrcCounts, seconds: Date().timeIntervalSince(started))
    }

    /// `chromiumMissing`: in CI (`CI` set) the conference must run, not skip.
    enum Failure: Error { case analyze(String), query(String), chromiumMissing }

    /// The shared outcome, running the call on first use; skips without Chromium (outside CI).
    func conference() throws -> Outcome {
        guard let chromium = BrowserCallTests.chromium else {
            if ProcessInfo.processInfo.environment["CI"] != nil { throw Failure.chromiumMissing }
            throw XCTSkip("chromium is not installed (apt-get install chromium): the browser conference is not checked")
        }
        if Self.outcome == nil { Self.outcome = Result { try Self.run(chromium: chromium) } }
        return try Self.outcome!.get()
    }

    /// Rows of `sql` as CSV fields.
    func query(_ db: String, _ sql: String) throws -> [[String]] {
        let q = try Binary.run(["query", "--db", db, "--format", "csv", sql])
        guard q.status == 0 else { throw Failure.query(q.err) }
        return q.out.split(separator: "\n").dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
    }

    func testEveryLegIsLabelledAndTheImpairedUplinkLosesWhatTheRelayDropped() throws {
        let o = try conference()
        print(String(format: "browser-conference: %.0f s", o.seconds))
        XCTAssertFalse(o.lines.contains { $0.contains("page-error") }, o.lines.filter { $0.contains("page-error") }.joined())
        XCTAssertEqual(o.lines.filter { $0.contains(#""kind":"end""#) }.count, Self.legs.count, "every leg ended")

        // The call records as sent: the options' labels over `labels`, the others kept.
        let records = o.lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
        for leg in Self.legs {
            let call = records.first { $0["kind"] as? String == "call" && $0["call"] as? String == leg }
            let labels = call?["labels"] as? [String: String]
            if labels == nil { print("call record of \(leg): \(call.map { "\($0)" } ?? "none")") }
            XCTAssertEqual(labels?["conference"], "mesh-1", leg)
            XCTAssertEqual(labels?["participant"], String(leg.prefix { $0 != "-" }), leg)
            XCTAssertEqual(labels?["room"], "mesh", leg)
        }

        // Every datagram the impaired participant sent went through a relay of hers.
        for peer in Self.participants where peer != Self.impaired {
            let c = o.relayCounts[Self.leg(Self.impaired, peer)] ?? ImpairingRelay.Counts()
            print("relay \(Self.leg(Self.impaired, peer)): \(c)")
            XCTAssertGreaterThan(c.rtpForwarded + c.rtpDropped, Self.callSeconds * 50, "media of \(Self.leg(Self.impaired, peer)) passed its relay")
            let share = Double(c.rtpDropped) / Double(max(1, c.rtpForwarded + c.rtpDropped))
            XCTAssertEqual(share, Self.dropFraction, accuracy: 0.02, "the relay dropped its share of RTP")
        }

        // The `calls` rows keep them.
        let calls = try query(
            o.database,
            """
            SELECT call_id, json_extract(labels, '$.conference'), json_extract(labels, '$.participant'), json_extract(labels, '$.room')
            FROM calls ORDER BY call_id
            """)
        XCTAssertEqual(calls.map { $0[0] }, Self.legs.sorted())
        for row in calls where row.count == 4 {
            XCTAssertEqual(Array(row[1...]), ["mesh-1", String(row[0].prefix { $0 != "-" }), "mesh"], "labels of \(row[0])")
        }
        let streams = try query(
            o.database,
            """
            SELECT call_id, direction, kind, ssrc, packets, packets_lost, round(loss_pct, 2) FROM streams
            WHERE packets > 0 ORDER BY call_id, direction, kind
            """)
        print("streams\n" + streams.map { $0.joined(separator: ",") }.joined(separator: "\n"))
        XCTAssertEqual(streams.count, Self.legs.count * 4, "audio and video, sent and received, on every leg")
        var impairedStreams = 0
        for row in streams where row.count == 7 {
            let (call, direction, kind) = (row[0], row[1], row[2])
            let lost = Int(row[5]) ?? -1, loss = Double(row[6]) ?? -1
            let sender = direction == "outbound" ? String(call.prefix { $0 != "-" }) : String(call.split(separator: "-").last ?? "")
            guard sender == Self.impaired else {
                XCTAssertLessThan(loss, 0.5, "no loss on \(direction) \(kind) of \(call), sent by \(sender)")
                continue
            }
            impairedStreams += 1
            guard let ssrc = UInt32(row[3]), let relayed = o.ssrcCounts[ssrc] else {
                XCTFail("\(kind) stream \(row[3]) of \(call) did not pass a relay")
                continue
            }
            let total = relayed.dropped + relayed.forwarded
            let dropped = 100 * Double(relayed.dropped) / Double(max(1, total))
            let share = String(format: "%.2f", dropped)
            print("\(call) \(direction) \(kind) \(ssrc): relay dropped \(relayed.dropped) of \(total) (\(share) %), lost \(lost) (\(loss) %)")
            if direction == "inbound" {
                // The receiver's count of lost packets is the relay's count of drops on that SSRC.
                // Slack: a drop is counted at the next packet that arrives, so drops in the last
                // moments before the final snapshot are the relay's only (a few, at 10 % of
                // 50 packets a second).
                XCTAssertEqual(Double(lost), Double(relayed.dropped), accuracy: max(5, 0.05 * Double(relayed.dropped)), "\(kind) received on \(call)")
            } else {
                // As the far end reported it in RTCP receiver reports (which reach alice
                // undropped), as of its last report: libwebrtc reports audio every 2.5-7.5 s
                // (5 s randomised) and video every 0.5-1.5 s, so up to 7.5 s of drops, under a
                // third of the call, may not be in it yet.
                XCTAssertGreaterThanOrEqual(Double(lost), 0.6 * Double(relayed.dropped), "\(kind) sent on \(call)")
                XCTAssertLessThanOrEqual(lost, relayed.dropped + 2, "\(kind) sent on \(call)")
            }
            if kind == "audio" {
                // Audio is one packet per 20 ms on its SSRC alone, so the share the receiver lost
                // is the share the relay dropped (the binomial spread of the drops is the same on
                // both sides); the sender's figure lags by the report interval, as above.
                if direction == "inbound" {
                    XCTAssertEqual(loss, dropped, accuracy: 1, "inbound audio of \(call)")
                } else {
                    XCTAssertLessThanOrEqual(loss, dropped + 1, "outbound audio of \(call)")
                    XCTAssertGreaterThanOrEqual(loss, 0.6 * dropped, "outbound audio of \(call)")
                }
                XCTAssertGreaterThan(loss, 4, "\(direction) audio of \(call)")
            } else {
                // Chromium counts retransmissions and bandwidth-probing padding (RTX, an SSRC of
                // its own) among a video stream's packets received, so its share lost is below the
                // share dropped; still clearly above the clean streams' zero.
                XCTAssertGreaterThan(loss, 0.5, "\(direction) video of \(call)")
            }
        }
        XCTAssertEqual(impairedStreams, (Self.participants.count - 1) * 4, "every stream \(Self.impaired) sent, at both ends")
    }

    /// Attribution: the streams alice sent and that were poor are blamed on her uplink, and no
    /// clean participant's uplink is blamed for anything.
    func testPoorStreamsAreBlamedOnTheImpairedUplink() throws {
        let o = try conference()
        let rows = try query(
            o.database,
            "SELECT sender_participant, coalesce(cause, 'NULL'), count(*) FROM conference_matrix WHERE poor = 1 GROUP BY 1, 2")
        let fromImpaired = rows.filter { $0[0] == Self.impaired }
        let total = fromImpaired.reduce(0) { $0 + (Int($1[2]) ?? 0) }
        let uplink = fromImpaired.filter { $0[1] == "sender_uplink" }.reduce(0) { $0 + (Int($1[2]) ?? 0) }
        XCTAssertGreaterThan(total, 0, "poor slots in what \(Self.impaired) sent")
        // A slot only one receiver's intervals cover (the call's first and last, as legs connect
        // and end at different moments) has no other receiver to compare with: `unknown`, never
        // someone else's network. The others are her uplink's.
        let unknown = fromImpaired.filter { $0[1] == "unknown" }.reduce(0) { $0 + (Int($1[2]) ?? 0) }
        XCTAssertEqual(uplink + unknown, total, "\(Self.impaired)'s poor slots blamed on another network: \(fromImpaired)")
        XCTAssertGreaterThanOrEqual(Double(uplink), 0.6 * Double(total), "blamed on \(Self.impaired)'s uplink: \(fromImpaired)")
        let blamed = rows.filter { $0[0] != Self.impaired && ($0[1] == "sender_uplink" || $0[1] == "both") }
        XCTAssertEqual(blamed.count, 0, "a clean participant's uplink blamed: \(blamed)")
    }
}
