import CallLog
import Foundation
import Simulator
import TestSupport
import XCTest

/// The conference simulator: deterministic bytes, the server's forwarding (SSRCs unchanged),
/// counters that only grow, loss where the answer says, and an answer that matches the
/// configuration.
final class ConferenceSimulationTests: XCTestCase {
    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("conference") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// The default conference of six, generated once for the tests that only read it.
    static let six: (simulation: ConferenceSimulation, records: [[LogRecord]]) = {
        let simulation = try! ConferenceSimulation(.init(participants: 6, seed: 7))
        return (simulation, simulation.recordsByParticipant())
    }()

    /// One participant's statistics snapshots: time and objects by id.
    struct Snapshot {
        var ts: Int64
        var objects: [String: JSONObject]

        func number(_ id: String, _ field: String) -> Double? { objects[id]?[field]?.doubleValue }
    }

    static func snapshots(_ records: [LogRecord]) -> [Snapshot] {
        records.filter { $0.kind == .stats }.map { r in
            var objects: [String: JSONObject] = [:]
            for o in r["report"]?.arrayValue ?? [] {
                if let object = o.objectValue, let id = object["id"]?.stringValue { objects[id] = object }
            }
            return Snapshot(ts: r.ts, objects: objects)
        }
    }

    /// Files in `sub`, by name.
    func files(in sub: String) throws -> [String: Data] {
        let d = dir.appendingPathComponent(sub)
        var out: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: d.path) {
            out[name] = try Data(contentsOf: d.appendingPathComponent(name))
        }
        return out
    }

    func testSameSeedSameBytes() throws {
        var config = ConferenceSimulation.Configuration(participants: 4, seed: 5)
        config.seconds = 30
        _ = try ConferenceSimulation(config).write(to: dir.appendingPathComponent("a").path)
        _ = try ConferenceSimulation(config).write(to: dir.appendingPathComponent("b").path)
        config.seed = 6
        _ = try ConferenceSimulation(config).write(to: dir.appendingPathComponent("c").path)
        let a = try files(in: "a"), b = try files(in: "b"), c = try files(in: "c")
        XCTAssertEqual(
            a.keys.sorted(),
            ["conf-5-p1.ndjson.zst", "conf-5-p2.ndjson.zst", "conf-5-p3.ndjson.zst", "conf-5-p4.ndjson.zst", "conference-answer.json"])
        XCTAssertEqual(a, b, "byte-identical")
        XCTAssertNotEqual(a["conference-answer.json"], c["conference-answer.json"], "another seed, another conference")
        XCTAssertNotEqual(a["conf-5-p1.ndjson.zst"], c["conf-6-p1.ndjson.zst"])
        // Written again over the same folder: the same bytes (files replaced, not appended to).
        _ = try ConferenceSimulation(ConferenceSimulation.Configuration(participants: 4, seed: 5).with(seconds: 30))
            .write(to: dir.appendingPathComponent("a").path)
        XCTAssertEqual(try files(in: "a"), b)
    }

    func testFilesReadBackAsOneCallEachWithLabels() throws {
        var config = ConferenceSimulation.Configuration(participants: 3, seed: 9)
        config.seconds = 20
        let simulation = try ConferenceSimulation(config)
        let summary = try simulation.write(to: dir.path)
        XCTAssertEqual(summary.files.count, 3)
        for p in simulation.participants {
            let (records, issues) = LogReader(path: dir.appendingPathComponent(p.callID + ".ndjson.zst").path).readAll()
            XCTAssertEqual(issues, [], p.name)
            XCTAssertEqual(Set(records.map(\.call)), [p.callID], "one call per file")
            XCTAssertEqual(records.map(\.ts), records.map(\.ts).sorted(), "time order")
            let call = try XCTUnwrap(records.first)
            XCTAssertEqual(call.kind, .call)
            XCTAssertEqual(call["platform"]?.stringValue, "web")
            XCTAssertEqual(call["sdk"]?.stringValue, "conference-sim")
            XCTAssertEqual(call["media"], .array(["audio", "video"]))
            XCTAssertEqual(call["labels"], .object(["conference": "conf-9", "participant": .string(p.name)]))
            XCTAssertEqual(records.last?.kind, .end)
            let stats = records.filter { $0.kind == .stats }
            let secondsIn = Int((simulation.endMs - p.joinMs + 999) / 1_000)
            XCTAssertEqual(stats.count, secondsIn, "a snapshot a second from joining, and one on leaving")
            XCTAssertTrue(stats.allSatisfy { $0["pc"]?.stringValue == "sfu" && $0["format"]?.stringValue == "w3c" })
        }
    }

    func testJoinsAreStaggeredAndSSRCsUnique() throws {
        let (simulation, _) = Self.six
        let joins = simulation.participants.map { $0.joinMs - simulation.startMs }
        XCTAssertEqual(joins[0], 0)
        XCTAssertTrue(joins.allSatisfy { (0...5_000).contains($0) }, "\(joins)")
        XCTAssertGreaterThan(Set(joins).count, 3, "participants do not all join at once")
        let ssrcs = simulation.participants.flatMap { [$0.audioSSRC, $0.videoSSRC] }
        XCTAssertEqual(Set(ssrcs).count, 12)
    }

    /// The server forwards: every stream a participant receives is another participant's
    /// outbound stream, of the same kind, and every other participant's streams arrive.
    func testInboundStreamsAreOtherParticipantsOutboundStreams() throws {
        let records = Self.six.records
        var outbound: [UInt32: (participant: Int, kind: String)] = [:]
        for (k, list) in records.enumerated() {
            for snap in Self.snapshots(list) {
                for o in snap.objects.values where o["type"]?.stringValue == "outbound-rtp" {
                    let ssrc = UInt32(o["ssrc"]!.doubleValue!)
                    if let seen = outbound[ssrc] { XCTAssertEqual(seen.participant, k, "SSRC \(ssrc) sent by two participants") }
                    outbound[ssrc] = (k, o["kind"]!.stringValue!)
                }
            }
        }
        XCTAssertEqual(outbound.count, 12, "one audio and one video stream each")
        for (k, list) in records.enumerated() {
            var inboundSenders = Set<Int>()
            var inboundCount = 0
            for snap in Self.snapshots(list) {
                for o in snap.objects.values where o["type"]?.stringValue == "inbound-rtp" {
                    inboundCount += 1
                    let ssrc = UInt32(o["ssrc"]!.doubleValue!)
                    let sender = try XCTUnwrap(outbound[ssrc], "p\(k + 1) receives SSRC \(ssrc), which nobody sends")
                    XCTAssertNotEqual(sender.participant, k, "nobody receives their own stream")
                    XCTAssertEqual(sender.kind, o["kind"]?.stringValue)
                    inboundSenders.insert(sender.participant)
                }
                for o in snap.objects.values where o["type"]?.stringValue == "remote-inbound-rtp" {
                    let local = try XCTUnwrap(o["localId"]?.stringValue)
                    XCTAssertEqual(snap.objects[local]?["ssrc"], o["ssrc"], "localId names the outbound stream")
                }
            }
            XCTAssertGreaterThan(inboundCount, 0)
            XCTAssertEqual(inboundSenders, Set(0..<6).subtracting([k]), "p\(k + 1) receives everyone else")
        }
    }

    func testCumulativeCountersNeverGoDown() throws {
        let counters = [
            "packetsSent", "bytesSent", "packetsReceived", "packetsLost", "bytesReceived", "concealedSamples",
            "concealmentEvents", "totalSamplesReceived", "framesDecoded", "framesReceived", "freezeCount",
            "totalFreezesDuration", "jitterBufferEmittedCount", "jitterBufferDelay", "framesEncoded", "totalRoundTripTime",
            "roundTripTimeMeasurements", "responsesReceived", "totalAudioEnergy",
        ]
        var checks = 0
        for list in Self.six.records {
            var last: [String: Double] = [:]
            for snap in Self.snapshots(list) {
                for (id, o) in snap.objects {
                    for field in counters {
                        guard let v = o[field]?.doubleValue else { continue }
                        let key = id + "/" + field
                        if let previous = last[key] {
                            XCTAssertGreaterThanOrEqual(v, previous, "\(list[0].call) \(key) at \(snap.ts)")
                            checks += 1
                        }
                        last[key] = v
                    }
                }
            }
        }
        XCTAssertGreaterThan(checks, 10_000)
    }

    /// Loss of `receiver`'s streams from `sender` (audio and video together) between the first
    /// snapshot at or after `from` and the last at or before `to` (epoch ms): counters cover
    /// whole seconds that ended by their snapshot, so that span lies inside [from, to).
    func measuredLoss(receiver: Int, sender: Int, from: Int64, to: Int64) throws -> Double {
        let (simulation, records) = Self.six
        let snaps = Self.snapshots(records[receiver])
        let a = try XCTUnwrap(snaps.first { $0.ts >= from }), b = try XCTUnwrap(snaps.last { $0.ts <= to })
        let s = simulation.participants[sender]
        var lost = 0.0, received = 0.0
        for id in ["IT01A\(s.audioSSRC)", "IT01V\(s.videoSSRC)"] {
            lost += (b.number(id, "packetsLost") ?? 0) - (a.number(id, "packetsLost") ?? 0)
            received += (b.number(id, "packetsReceived") ?? 0) - (a.number(id, "packetsReceived") ?? 0)
        }
        XCTAssertGreaterThan(lost + received, 1_000, "enough packets to measure")
        return lost / (lost + received)
    }

    func testReceiversMeasureTheLossTheAnswerGives() throws {
        let (simulation, _) = Self.six
        let start = simulation.startMs
        let ms = { (second: Int) in start + Int64(second) * 1_000 }
        // Defaults over 120 s: p1's uplink bad in [24, 96), p2's downlink in [48, 120).
        XCTAssertEqual(simulation.uplinkBadSeconds(0), 24..<96)
        XCTAssertEqual(simulation.downlinkBadSeconds(1), 48..<120)
        // A clean receiver of the bad uplink: the uplink's loss.
        XCTAssertEqual(try measuredLoss(receiver: 2, sender: 0, from: ms(24), to: ms(96)), 0.10, accuracy: 0.025)
        XCTAssertEqual(try measuredLoss(receiver: 5, sender: 0, from: ms(24), to: ms(96)), 0.10, accuracy: 0.025)
        // ... and nothing before or after its window.
        XCTAssertLessThan(try measuredLoss(receiver: 2, sender: 0, from: ms(6), to: ms(24)), 0.01)
        XCTAssertLessThan(try measuredLoss(receiver: 2, sender: 0, from: ms(96), to: ms(120)), 0.01)
        // The bad downlink, on a clean sender: the downlink's loss, after 48 s only.
        XCTAssertEqual(try measuredLoss(receiver: 1, sender: 3, from: ms(48), to: ms(120)), 0.10, accuracy: 0.025)
        XCTAssertLessThan(try measuredLoss(receiver: 1, sender: 3, from: ms(6), to: ms(48)), 0.01)
        // Both at once: 1 - 0.9 × 0.9.
        XCTAssertEqual(try measuredLoss(receiver: 1, sender: 0, from: ms(48), to: ms(96)), 0.19, accuracy: 0.035)
        // Clean pairs: near nothing, the whole conference.
        for (r, s) in [(2, 3), (3, 4), (4, 5), (5, 2), (0, 3)] {
            XCTAssertLessThan(try measuredLoss(receiver: r, sender: s, from: ms(6), to: ms(120)), 0.006, "p\(r + 1) from p\(s + 1)")
        }
        XCTAssertEqual(simulation.trueCause(receiver: 2, sender: 0, second: 30), .senderUplink)
        XCTAssertEqual(simulation.trueCause(receiver: 1, sender: 0, second: 60), .both)
        XCTAssertEqual(simulation.trueCause(receiver: 1, sender: 3, second: 100), .receiverDownlink)
        XCTAssertNil(simulation.trueCause(receiver: 2, sender: 3, second: 60))
    }

    /// The sender's view (the server's receiver reports) shows its uplink only.
    func testServerReportsShowTheUplinkOnly() throws {
        let (simulation, records) = Self.six
        let start = simulation.startMs
        func fractions(_ k: Int, _ seconds: Range<Int>) -> (mean: Double, cumulative: Double) {
            let p = simulation.participants[k]
            let snaps = Self.snapshots(records[k]).filter {
                $0.ts >= start + Int64(seconds.lowerBound + 1) * 1_000 && $0.ts <= start + Int64(seconds.upperBound) * 1_000
            }
            let ids = ["RIA\(p.audioSSRC)", "RIV\(p.videoSSRC)"], outs = ["OT01A\(p.audioSSRC)", "OT01V\(p.videoSSRC)"]
            let values = snaps.flatMap { s in ids.compactMap { s.number($0, "fractionLost") } }
            guard let a = snaps.first, let b = snaps.last else { return (.nan, .nan) }
            var lost = 0.0, sent = 0.0
            for (ri, out) in zip(ids, outs) {
                lost += b.number(ri, "packetsLost")! - a.number(ri, "packetsLost")!
                sent += b.number(out, "packetsSent")! - a.number(out, "packetsSent")!
            }
            return (values.reduce(0, +) / Double(values.count), lost / sent)
        }
        let bad = fractions(0, 24..<96)
        XCTAssertEqual(bad.mean, 0.10, accuracy: 0.02, "fractionLost of the bad uplink")
        XCTAssertEqual(bad.cumulative, 0.10, accuracy: 0.02, "packetsLost of the bad uplink")
        XCTAssertLessThan(fractions(0, 5..<24).mean, 0.01)
        XCTAssertLessThan(fractions(0, 96..<120).cumulative, 0.01)
        // The bad downlink's owner sends on a clean uplink: its reports stay clean.
        XCTAssertLessThan(fractions(1, 48..<120).mean, 0.01)
        XCTAssertLessThan(fractions(1, 48..<120).cumulative, 0.01)
        // Jitter the server measures on the bad uplink: about 40 ms; on a clean one 2-8 ms.
        let p1 = simulation.participants[0], p3 = simulation.participants[2]
        let at60 = try XCTUnwrap(Self.snapshots(records[0]).first { $0.ts >= start + 60_000 })
        XCTAssertEqual(try XCTUnwrap(at60.number("RIA\(p1.audioSSRC)", "jitter")), 0.040, accuracy: 0.015)
        let p3at60 = try XCTUnwrap(Self.snapshots(records[2]).first { $0.ts >= start + 60_000 })
        XCTAssertLessThan(try XCTUnwrap(p3at60.number("RIA\(p3.audioSSRC)", "jitter")), 0.0095)
    }

    /// Audio concealment and video freezes follow the loss a receiver sees.
    func testConcealmentRisesWithLoss() throws {
        let (simulation, records) = Self.six
        let start = simulation.startMs
        let snaps = Self.snapshots(records[2])
        let a = try XCTUnwrap(snaps.first { $0.ts >= start + 24_000 }), b = try XCTUnwrap(snaps.last { $0.ts <= start + 96_000 })
        func share(_ from: Int) -> Double {
            let id = "IT01A\(simulation.participants[from].audioSSRC)"
            let concealed = b.number(id, "concealedSamples")! - a.number(id, "concealedSamples")!
            return concealed / (b.number(id, "totalSamplesReceived")! - a.number(id, "totalSamplesReceived")!)
        }
        XCTAssertEqual(share(0), 0.10, accuracy: 0.03, "from the bad uplink")
        XCTAssertLessThan(share(3), 0.01, "from a clean sender")
        let video = "IT01V\(simulation.participants[0].videoSSRC)"
        XCTAssertGreaterThan(b.number(video, "freezeCount")! - a.number(video, "freezeCount")!, 3)
        XCTAssertLessThan(b.number(video, "framesPerSecond")!, 30)
    }

    func testAnswerFileMatchesTheConfiguration() throws {
        var config = ConferenceSimulation.Configuration(participants: 5, seed: 3)
        config.seconds = 50
        config.badUplink = 3
        config.badDownlink = 5
        config.startMs = 1_800_000_000_000
        let simulation = try ConferenceSimulation(config)
        let summary = try simulation.write(to: dir.path)
        XCTAssertEqual(summary.answerPath, dir.path + "/conference-answer.json")
        let answer = try JSONValue.parse(String(contentsOfFile: summary.answerPath, encoding: .utf8))
        XCTAssertEqual(answer["conference"], "conf-3")
        XCTAssertEqual(answer["startMs"]?.doubleValue, 1_800_000_000_000)
        XCTAssertEqual(answer["endMs"]?.doubleValue, 1_800_000_050_000)
        XCTAssertEqual(answer["lossPct"]?["bad"]?.doubleValue, 10)
        let list = try XCTUnwrap(answer["participants"]?.arrayValue)
        XCTAssertEqual(list.count, 5)
        for (k, p) in list.enumerated() {
            let sim = simulation.participants[k]
            XCTAssertEqual(p["participant"]?.stringValue, "p\(k + 1)")
            XCTAssertEqual(p["call"]?.stringValue, "conf-3-p\(k + 1)")
            XCTAssertTrue(FileManager.default.fileExists(atPath: dir.path + "/conf-3-p\(k + 1).ndjson.zst"))
            XCTAssertEqual(p["audioSsrc"]?.doubleValue, Double(sim.audioSSRC))
            XCTAssertEqual(p["videoSsrc"]?.doubleValue, Double(sim.videoSSRC))
            XCTAssertEqual(p["joinMs"]?.doubleValue, Double(sim.joinMs))
            XCTAssertEqual(p["uplink"]?.stringValue, k == 2 ? "bad" : "clean")
            XCTAssertEqual(p["downlink"]?.stringValue, k == 4 ? "bad" : "clean")
            XCTAssertEqual(p["uplinkWindow"], k == 2 ? .array([1_800_000_010_000, 1_800_000_040_000]) : .null)
            XCTAssertEqual(p["downlinkWindow"], k == 4 ? .array([1_800_000_020_000, 1_800_000_050_000]) : .null)
        }
        // The causes the answer implies, p5 receiving p3: uplink alone, both, downlink alone.
        XCTAssertNil(simulation.trueCause(receiver: 4, sender: 2, second: 9))
        XCTAssertEqual(simulation.trueCause(receiver: 4, sender: 2, second: 10), .senderUplink)
        XCTAssertEqual(simulation.trueCause(receiver: 4, sender: 2, second: 25), .both)
        XCTAssertEqual(simulation.trueCause(receiver: 4, sender: 2, second: 40), .receiverDownlink)
        XCTAssertEqual(simulation.trueCause(receiver: 0, sender: 2, second: 25), .senderUplink)
        XCTAssertEqual(simulation.trueCause(receiver: 4, sender: 0, second: 25), .receiverDownlink)
        XCTAssertNil(simulation.trueCause(receiver: 0, sender: 1, second: 25))
        XCTAssertEqual(simulation.second(atMs: 1_800_000_010_000), 10)
        XCTAssertNil(simulation.second(atMs: 1_800_000_050_000))

        // Nobody impaired: every path clean in the answer.
        config.badUplink = nil
        config.badDownlink = nil
        let clean = try ConferenceSimulation(config).answer()
        for p in clean["participants"]?.arrayValue ?? [] {
            XCTAssertEqual(p["uplink"], "clean")
            XCTAssertEqual(p["downlink"], "clean")
            XCTAssertEqual(p["uplinkWindow"], .null)
        }
    }

    func testConfigurationsThatCannotBeSimulatedAreRefused() throws {
        func refusal(_ change: (inout ConferenceSimulation.Configuration) -> Void) -> String? {
            var c = ConferenceSimulation.Configuration(participants: 6)
            change(&c)
            do {
                _ = try ConferenceSimulation(c)
                return nil
            } catch {
                return String(describing: error)
            }
        }
        XCTAssertEqual(
            refusal { $0.participants = 2 },
            "a bad uplink and a bad downlink need at least 3 participants (got 2): with two, no stream would show either cause alone")
        XCTAssertNil(
            refusal {
                $0.participants = 2; $0.badDownlink = nil
            })
        XCTAssertNil(refusal { $0.participants = 32 })
        XCTAssertEqual(refusal { $0.participants = 33 }, "participants must be 2...32, got 33")
        XCTAssertEqual(refusal { $0.participants = 1 }, "participants must be 2...32, got 1")
        XCTAssertEqual(refusal { $0.badUplink = 7 }, "the bad uplink participant must be 1...6, got 7")
        XCTAssertEqual(refusal { $0.seconds = 5 }, "seconds must be 10...86400, got 5")
        XCTAssertEqual(refusal { $0.periodSeconds = 0 }, "the period must be 1...120 s, got 0")
    }
}

extension ConferenceSimulation.Configuration {
    fileprivate func with(seconds: Int) -> Self {
        var c = self
        c.seconds = seconds
        return c
    }
}
