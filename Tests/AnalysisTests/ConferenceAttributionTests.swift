import Analysis
import MaterialScanning
import XCTest

/// The attribution rules on conferences built here with a known answer: who had the bad uplink,
/// who the bad downlink, and when.
final class ConferenceAttributionTests: XCTestCase {
    /// A participant's impairments: loss, %, over [start, end) seconds of the call.
    struct Impairment {
        var uplink: (loss: Double, from: Int, to: Int)?
        var downlink: (loss: Double, from: Int, to: Int)?
    }

    /// `n` participants, one leg each, `seconds` of 1-s intervals. Through a server (`sfu`):
    /// each sends one audio SSRC heard by all others, with the server's reports about the uplink;
    /// a mesh: one leg per pair, each stream heard by one receiver, no uplink of its own.
    static func conference(
        _ n: Int, seconds: Int = 120, sfu: Bool = true, impairments: [Int: Impairment], packetsPerSecond: Int64 = 50
    ) -> ConferenceInput {
        func loss(_ p: Int, up: Bool, at t: Int) -> Double {
            guard let i = impairments[p], let w = up ? i.uplink : i.downlink, t >= w.from, t < w.to else { return 0 }
            return w.loss / 100
        }
        var legs: [ConferenceLeg] = [], streams: [ConferenceStream] = [], intervals: [ConferenceInterval] = []
        let start: Int64 = 1_800_000_000_000
        func add(call: String, stream: String, direction: StreamDirection, lossAt: (Int) -> Double) {
            for t in 0..<seconds {
                var i = ConferenceInterval(
                    callID: call, streamID: stream, startTs: start + Int64(t) * 1000, endTs: start + Int64(t + 1) * 1000)
                let lost = Int64((Double(packetsPerSecond) * lossAt(t)).rounded())
                i.packets = direction == .outbound ? packetsPerSecond : packetsPerSecond - lost
                i.packetsLost = lost
                i.jitterMs = 5
                intervals.append(i)
            }
        }
        if sfu {
            for p in 1...n {
                let call = "call-p\(p)"
                legs.append(ConferenceLeg(callID: call, participant: "p\(p)", startTs: start, endTs: start + Int64(seconds) * 1000, linkedBy: "ssrc"))
                streams.append(ConferenceStream(callID: call, streamID: "out-a", ssrc: UInt32(1000 + p), direction: .outbound, kind: .audio))
                add(call: call, stream: "out-a", direction: .outbound) { loss(p, up: true, at: $0) }
                for q in 1...n where q != p {
                    streams.append(ConferenceStream(callID: call, streamID: "in-a-\(q)", ssrc: UInt32(1000 + q), direction: .inbound, kind: .audio))
                    add(call: call, stream: "in-a-\(q)", direction: .inbound) { t in
                        1 - (1 - loss(q, up: true, at: t)) * (1 - loss(p, up: false, at: t))
                    }
                }
            }
        } else {
            for p in 1...n {
                for q in 1...n where q != p {
                    let call = "p\(p)-to-p\(q)"
                    legs.append(ConferenceLeg(callID: call, participant: "p\(p)", startTs: start, endTs: start + Int64(seconds) * 1000, linkedBy: "ssrc"))
                    let ssrc = UInt32(p * 100 + q)
                    streams.append(ConferenceStream(callID: call, streamID: "out-a", ssrc: ssrc, direction: .outbound, kind: .audio))
                    let path: (Int) -> Double = { t in 1 - (1 - loss(p, up: true, at: t)) * (1 - loss(q, up: false, at: t)) }
                    add(call: call, stream: "out-a", direction: .outbound, lossAt: path)
                    streams.append(
                        ConferenceStream(callID: call, streamID: "in-a", ssrc: UInt32(q * 100 + p), direction: .inbound, kind: .audio))
                    add(call: call, stream: "in-a", direction: .inbound) { t in
                        1 - (1 - loss(q, up: true, at: t)) * (1 - loss(p, up: false, at: t))
                    }
                }
            }
        }
        return ConferenceInput(conferenceID: "conf-1", legs: legs, streams: streams, intervals: intervals)
    }

    /// The true cause of a poor slot of `receiver`'s stream from `sender` starting at second `t`.
    static func truth(_ impairments: [Int: Impairment], sender: Int, receiver: Int, at t: Int) -> String? {
        let up = impairments[sender]?.uplink.map { t >= $0.from && t < $0.to } ?? false
        let down = impairments[receiver]?.downlink.map { t >= $0.from && t < $0.to } ?? false
        switch (up, down) {
        case (true, true): return "both"
        case (true, false): return "sender_uplink"
        case (false, true): return "receiver_downlink"
        default: return nil
        }
    }

    let sixParty: [Int: Impairment] = [
        1: Impairment(uplink: (10, 20, 80)),
        2: Impairment(downlink: (10, 40, 100)),
    ]

    func testSixPartyConferenceThroughAServerBlamesTheRightNetworks() {
        let result = ConferenceAttribution.attribute(Self.conference(6, impairments: sixParty), config: AnalysisConfig())
        XCTAssertEqual(result.participants.count, 6)
        let poor = result.cells.filter(\.poor)
        XCTAssertFalse(poor.isEmpty)
        var right = 0
        for c in poor {
            let sender = Int(c.senderParticipant!.dropFirst())!, receiver = Int(c.receiverParticipant.dropFirst())!
            let t = Int((c.slotStartTs - 1_800_000_000_000) / 1000)
            if Self.truth(sixParty, sender: sender, receiver: receiver, at: t) == c.cause { right += 1 }
            // Clean participants are never blamed: p3-p6's uplinks, and downlinks other than p2's.
            if c.cause == "sender_uplink" || c.cause == "both" { XCTAssertEqual(c.senderParticipant, "p1", "\(c)") }
            if c.cause == "receiver_downlink" || c.cause == "both" { XCTAssertEqual(c.receiverParticipant, "p2", "\(c)") }
        }
        XCTAssertGreaterThanOrEqual(Double(right) / Double(poor.count), 0.95, "\(right) of \(poor.count) attributed right")
        // Every slot in an impairment window is poor, and nothing else is.
        for c in result.cells {
            let sender = Int(c.senderParticipant!.dropFirst())!, receiver = Int(c.receiverParticipant.dropFirst())!
            let t = Int((c.slotStartTs - 1_800_000_000_000) / 1000)
            XCTAssertEqual(c.poor, Self.truth(sixParty, sender: sender, receiver: receiver, at: t) != nil, "\(c)")
        }
        // The uplink's reports are beside the received figures.
        let fromP1 = result.cells.first { $0.senderParticipant == "p1" && $0.slotStartTs == 1_800_000_030_000 }!
        XCTAssertEqual(fromP1.uplinkLossPct ?? 0, 10, accuracy: 0.5)
        // p1 spoiled audio for the five others; the finding is on its leg.
        let finding = result.findings.first { $0.code == "caused_poor_audio_for" }
        XCTAssertEqual(finding?.callID, "call-p1")
        XCTAssertEqual(finding?.value, 5)
        XCTAssertEqual(result.findings.count, 1)
        let p1 = result.participants.first { $0.participant == "p1" }!
        // 6 slots of 10 s × 5 receivers.
        XCTAssertEqual(p1.spoiledForOthersMinutes, 5, accuracy: 1e-9)
        XCTAssertEqual(p1.spoiledParticipants, 5)
        let p2 = result.participants.first { $0.participant == "p2" }!
        XCTAssertEqual(p2.ownDownlinkMinutes, 1, accuracy: 1e-9)
        XCTAssertEqual(p2.spoiledForOthersMinutes, 0)
    }

    func testMeshCompareAcrossReceivers() {
        // No server: a stream's reports cover the whole path, so the sender's uplink is told by
        // its streams at the other receivers.
        let impairments: [Int: Impairment] = [1: Impairment(uplink: (10, 0, 60))]
        let result = ConferenceAttribution.attribute(Self.conference(4, seconds: 60, sfu: false, impairments: impairments), config: AnalysisConfig())
        let poor = result.cells.filter(\.poor)
        XCTAssertEqual(poor.count, 3 * 6, "p1's stream at 3 receivers, 6 slots")
        XCTAssertTrue(poor.allSatisfy { $0.senderParticipant == "p1" && $0.cause == "sender_uplink" }, "\(poor.map(\.cause))")
        XCTAssertTrue(poor.allSatisfy { $0.uplinkLossPct == nil }, "a stream heard by one receiver has no uplink figures")
        XCTAssertEqual(Set(result.findings.map(\.callID)), ["p1-to-p2", "p1-to-p3", "p1-to-p4"])
    }

    func testWhatTheDataCannotTellIsUnknownOrTheServer() {
        // Two participants through a server: one stream each way, nothing to compare with.
        let two = ConferenceAttribution.attribute(
            Self.conference(2, seconds: 30, impairments: [1: Impairment(downlink: (10, 0, 30))]), config: AnalysisConfig())
        XCTAssertEqual(Set(two.cells.filter(\.poor).map(\.cause)), ["unknown"])

        // One stream poor at one receiver while its sender's uplink is fine and the receiver's
        // other streams are fine: the server or the path between.
        var input = Self.conference(4, seconds: 30, impairments: [:])
        for i in input.intervals.indices where input.intervals[i].callID == "call-p3" && input.intervals[i].streamID == "in-a-1" {
            input.intervals[i].packetsLost = 8
            input.intervals[i].packets = 42
        }
        let one = ConferenceAttribution.attribute(input, config: AnalysisConfig())
        let poor = one.cells.filter(\.poor)
        XCTAssertEqual(poor.count, 3)
        XCTAssertEqual(Set(poor.map(\.cause)), ["server_or_path"])
        XCTAssertTrue(one.findings.isEmpty)
    }

    func testTheResultDoesNotDependOnTheOrderOfItsInputs() {
        let input = Self.conference(5, seconds: 60, impairments: sixParty)
        var shuffled = input
        var rng = SystemRandomNumberGenerator()
        shuffled.legs.shuffle(using: &rng)
        shuffled.streams.shuffle(using: &rng)
        shuffled.intervals.shuffle(using: &rng)
        let a = ConferenceAttribution.attribute(input, config: AnalysisConfig())
        let b = ConferenceAttribution.attribute(shuffled, config: AnalysisConfig())
        XCTAssertEqual(a.cells, b.cells)
        XCTAssertEqual(a.participants, b.participants)
        XCTAssertEqual(a.findings, b.findings)
    }

    func testAStreamWhoseSenderIsNotStoredIsSaidSo() {
        var input = Self.conference(3, seconds: 20, impairments: [:])
        input.legs.removeAll { $0.participant == "p3" }
        let result = ConferenceAttribution.attribute(input, config: AnalysisConfig())
        let unmatched = result.cells.filter { $0.matchedBy == "unknown" }
        XCTAssertEqual(Set(unmatched.map(\.streamID)), ["in-a-3"])
        XCTAssertTrue(unmatched.allSatisfy { $0.senderParticipant == nil })
        XCTAssertEqual(result.participants.first { $0.participant == "p1" }?.streamsMatched, 1)
    }
}
