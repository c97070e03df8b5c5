@testable import Analysis
import CallLog
import Foundation
import MaterialScanning
import MaterialTestSupport
import Quality
import XCTest

/// Only what was received is scored: idle and padding streams, data-channel calls, muted far
/// ends, counter restarts, and the sent direction's loss, each as a call's records give them.
final class ScoringWhatWasThereTests: XCTestCase {
    let t0: Int64 = 1_795_100_000_000

    /// One W3C object: `fields` besides id, type and timestamp.
    static func object(_ id: String, _ type: String, _ t: Double, _ fields: [(String, JSONValue)]) -> JSONValue {
        var o: JSONObject = ["id": .string(id), "timestamp": .number(t), "type": .string(type)]
        for (k, v) in fields { o[k] = v }
        return .object(o)
    }

    /// The candidate pair, its candidates and the transport: a direct UDP path, 40 ms round trip.
    static func path(_ t: Double) -> [JSONValue] {
        [
            object(
                "CP1", "candidate-pair", t,
                [
                    ("state", "succeeded"), ("nominated", true), ("localCandidateId", "L1"), ("remoteCandidateId", "R1"),
                    ("currentRoundTripTime", 0.04), ("responsesReceived", 5),
                ]),
            object("L1", "local-candidate", t, [("candidateType", "host"), ("protocol", "udp"), ("networkType", "ethernet")]),
            object("R1", "remote-candidate", t, [("candidateType", "host"), ("protocol", "udp")]),
            object("T1", "transport", t, [("selectedCandidatePairId", "CP1")]),
            object("CA", "codec", t, [("mimeType", "audio/opus"), ("clockRate", 48_000)]),
            object("CV", "codec", t, [("mimeType", "video/VP8"), ("clockRate", 90_000)]),
        ]
    }

    /// Inbound audio after `k` seconds of clean speech (50 packets/s of 80 bytes), `level` its
    /// audio level, `energy` its running energy.
    static func inboundAudio(_ id: String, ssrc: Double, _ t: Double, packets: Double, bytes: Double, level: Double?, energy: Double?) -> JSONValue {
        var fields: [(String, JSONValue)] = [
            ("kind", "audio"), ("ssrc", .number(ssrc)), ("codecId", "CA"), ("packetsReceived", .number(packets)),
            ("bytesReceived", .number(bytes)), ("packetsLost", 0), ("jitter", 0.004),
            ("totalSamplesReceived", .number(packets * 960)), ("concealedSamples", 0), ("silentConcealedSamples", 0),
            ("concealmentEvents", 0), ("jitterBufferDelay", .number(packets * 960 * 0.03)),
            ("jitterBufferEmittedCount", .number(packets * 960)),
        ]
        if let level { fields.append(("audioLevel", .number(level))) }
        if let energy { fields.append(("totalAudioEnergy", .number(energy))) }
        return object(id, "inbound-rtp", t, fields)
    }

    static func outboundAudio(_ t: Double, packets: Double, remoteLost: Double, mediaSource: String? = nil) -> [JSONValue] {
        var out: [(String, JSONValue)] = [
            ("kind", "audio"), ("ssrc", 2222), ("codecId", "CA"), ("packetsSent", .number(packets)), ("bytesSent", .number(packets * 80)),
        ]
        if let mediaSource { out.append(("mediaSourceId", .string(mediaSource))) }
        return [
            object("OA", "outbound-rtp", t, out),
            object(
                "RIA", "remote-inbound-rtp", t - 300,
                [("kind", "audio"), ("ssrc", 2222), ("packetsLost", .number(remoteLost)), ("roundTripTime", 0.04), ("jitter", 0.004)]),
        ]
    }

    /// Inbound video at 30 fps, 720p, 100 packets/s of 1,000 bytes, after `seconds`.
    static func inboundVideo(_ id: String, ssrc: Double, _ t: Double, seconds: Double) -> JSONValue {
        object(
            id, "inbound-rtp", t,
            [
                ("kind", "video"), ("ssrc", .number(ssrc)), ("codecId", "CV"), ("packetsReceived", .number(seconds * 100)),
                ("bytesReceived", .number(seconds * 100_000)), ("packetsLost", 0), ("jitter", 0.005),
                ("framesDecoded", .number(seconds * 30)), ("framesPerSecond", 30), ("frameWidth", 1280), ("frameHeight", 720),
                ("freezeCount", 0), ("totalFreezesDuration", 0), ("totalPausesDuration", 0),
            ])
    }

    /// A call of 13 snapshots 10 s apart; `extra(k, t)` adds objects to snapshot `k` (at `t`).
    func call(_ id: String, _ extra: (Int, Double) -> [JSONValue]) -> [LogRecord] {
        (0...12).map { k in
            let ts = t0 + Int64(k) * 10_000, t = Double(ts)
            return LogRecord.stats(call: id, ts: ts, format: .w3c, report: Self.path(t) + extra(k, t), peerConnection: "pc0")
        }
    }

    /// A good audio+video call (audio both ways, one video received) and, beside it, an SFU's
    /// idle video slot: an inbound SSRC that never receives a packet.
    func testAnIdleInboundVideoSSRCHasNoScoreAndTheCallStaysGood() throws {
        let records = call("idle-slot") { k, t in
            let s = Double(k * 10)
            return [
                Self.inboundAudio("IA", ssrc: 1111, t, packets: s * 50, bytes: s * 4_000, level: 0.1, energy: s * 0.01),
                Self.inboundVideo("IV", ssrc: 3333, t, seconds: s),
                Self.object(
                    "IDLE", "inbound-rtp", t,
                    [
                        ("kind", "video"), ("ssrc", 4444), ("packetsReceived", 0), ("bytesReceived", 0), ("packetsLost", 0),
                        ("framesDecoded", 0), ("freezeCount", 0), ("totalFreezesDuration", 0), ("totalPausesDuration", 0),
                    ]),
            ] + Self.outboundAudio(t, packets: s * 50, remoteLost: 0)
        }
        let r = try Harness.analyze(records)
        let idle = try XCTUnwrap(r.streams.first { $0.ssrc == 4444 })
        XCTAssertEqual(idle.packets, 0)
        XCTAssertNil(idle.videoScoreMean)
        XCTAssertNil(idle.fpsMean)
        let idleIntervals = r.intervals.filter { $0.streamID == idle.streamID }
        XCTAssertEqual(idleIntervals.count, 12, "the rows stay, with their counters")
        XCTAssertTrue(idleIntervals.allSatisfy { $0.videoScore == nil && $0.fps == nil && $0.packets == 0 })
        XCTAssertFalse(r.findings.contains { $0.streamID == idle.streamID })
        // The call's worst video is the received stream's: 30 fps at 720p, no freezes.
        let live = try XCTUnwrap(r.streams.first { $0.ssrc == 3333 })
        XCTAssertEqual(try XCTUnwrap(live.fpsMean), 30, accuracy: 1e-9)
        let liveScore = try XCTUnwrap(live.videoScoreMean)
        XCTAssertEqual(try XCTUnwrap(r.call.videoScoreWorst), liveScore, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(r.call.videoScore), liveScore, accuracy: 1e-9)
        XCTAssertGreaterThan(liveScore, 4)
        XCTAssertEqual(r.call.grade, .good, r.call.gradeReason)
    }

    /// A media server's padding stream (packets, no payload bytes, no frames decoded) raises no
    /// finding and has no frame rate: before, its 0 fps made the call fair (`low_fps`).
    func testAPaddingOnlyStreamRaisesNoLowFPS() throws {
        let records = call("padding") { k, t in
            let s = Double(k * 10)
            return [
                Self.inboundAudio("IA", ssrc: 1111, t, packets: s * 50, bytes: s * 4_000, level: 0.1, energy: s * 0.01),
                Self.object(
                    "PAD", "inbound-rtp", t,
                    [
                        ("kind", "video"), ("ssrc", 5555), ("codecId", "CV"), ("packetsReceived", .number(s * 20)),
                        ("bytesReceived", 0), ("headerBytesReceived", .number(s * 20 * 1_200)), ("packetsLost", 0),
                        ("framesDecoded", 0), ("framesPerSecond", 0), ("jitter", 0.002),
                    ]),
            ] + Self.outboundAudio(t, packets: s * 50, remoteLost: 0)
        }
        let r = try Harness.analyze(records)
        let pad = try XCTUnwrap(r.streams.first { $0.ssrc == 5555 })
        XCTAssertEqual(pad.packets, 2_400)
        XCTAssertNil(pad.fpsMean)
        XCTAssertNil(pad.videoScoreMean)
        XCTAssertFalse(r.findings.contains { $0.code == "low_fps" })
        XCTAssertFalse(r.findings.contains { $0.streamID == pad.streamID })
        XCTAssertNil(r.call.videoScoreWorst)
        XCTAssertEqual(r.call.grade, .good, r.call.gradeReason)
    }

    /// Data channels alone, on two peer connections (one also negotiated an audio SSRC that never
    /// flowed), answered: not "no media", but unmeasured, the reason naming the channels.
    func testADataChannelCallIsNotPoorOrNoMedia() throws {
        var records: [LogRecord] = [
            .event(call: "data", ts: t0 - 2_000, action: "callMetric", type: "callCreate"),
            .event(call: "data", ts: t0 - 1_000, action: "callMetric", type: "callAnswerReceived"),
        ]
        for k in 0...12 {
            let ts = t0 + Int64(k) * 10_000, t = Double(ts)
            for pc in ["pc0", "pc1"] {
                var report =
                    Self.path(t) + [
                        Self.object(
                            "D1", "data-channel", t,
                            [
                                ("label", "chat"), ("state", "open"), ("messagesSent", .number(Double(k * 3))),
                                ("messagesReceived", .number(Double(k * 4))), ("bytesSent", .number(Double(k * 300))),
                            ])
                    ]
                if pc == "pc1" {
                    report.append(
                        Self.object(
                            "IA", "inbound-rtp", t, [("kind", "audio"), ("ssrc", 7777), ("packetsReceived", 0), ("bytesReceived", 0)]))
                }
                records.append(.stats(call: "data", ts: ts + (pc == "pc1" ? 5 : 0), format: .w3c, report: report, peerConnection: pc))
            }
        }
        records.append(.end(call: "data", ts: t0 + 121_000, reason: "terminatedLocally"))
        let m = try Harness.material(records)
        XCTAssertEqual(m.snapshots.last?.dataChannels?.open, 1)
        XCTAssertEqual(m.snapshots.last?.dataChannels?.messagesSent, 36)
        let r = CallAnalyzer.analyze(m)
        XCTAssertFalse(r.findings.contains { $0.code == "no_media" || $0.code == "ice_failure" })
        let data = try XCTUnwrap(r.findings.first { $0.code == "data_channels_only" })
        XCTAssertEqual(data.severity, .info)
        XCTAssertEqual(data.value, 2 * (36 + 48))
        XCTAssertEqual(r.call.grade, .unmeasured)
        XCTAssertEqual(r.call.gradeReason, "data channels only (2 channel(s), 168 messages); no audio or video")
    }

    /// The far end muted, three ways, each not one-way audio: its packets carry no payload; its
    /// audio is silence (level 0, energy flat); and, on an SFU, its audio SSRC receives nothing
    /// while video from the same server arrives. Audio alone with nothing received stays
    /// one-way audio: nothing says the far end meant it.
    func testAMutedFarEndIsNotOneWayAudio() throws {
        // Payload-less packets: 50 a second, no bytes.
        let keepalive = try Harness.analyze(
            call("keepalive") { k, t in
                let s = Double(k * 10)
                return [Self.inboundAudio("IA", ssrc: 1111, t, packets: s * 50, bytes: 0, level: nil, energy: nil)]
                    + Self.outboundAudio(t, packets: s * 50, remoteLost: 0)
            })
        XCTAssertFalse(keepalive.findings.contains { $0.code == "one_way_audio" })
        let muted = try XCTUnwrap(keepalive.findings.first { $0.code == "remote_muted" })
        XCTAssertEqual(muted.severity, .info)
        XCTAssertEqual(muted.streamID, "pc0:inbound:audio:1111")
        XCTAssertEqual(muted.durationMs, 120_000)
        XCTAssertNil(keepalive.call.mosWorst, "no payload, no MOS")
        XCTAssertNotEqual(keepalive.call.grade, .poor)

        // Silence: packets and payload (DTX) but level 0 and no energy.
        let silence = try Harness.analyze(
            call("silence") { k, t in
                let s = Double(k * 10)
                return [Self.inboundAudio("IA", ssrc: 1111, t, packets: s * 3, bytes: s * 3 * 5, level: 0, energy: 0)]
                    + Self.outboundAudio(t, packets: s * 50, remoteLost: 0)
            })
        XCTAssertFalse(silence.findings.contains { $0.code == "one_way_audio" })
        XCTAssertEqual(silence.findings.filter { $0.code == "remote_muted" }.map(\.durationMs), [120_000])

        // An SFU: the participant's audio SSRC is idle while its video arrives.
        let sfu = try Harness.analyze(
            call("sfu-muted") { k, t in
                let s = Double(k * 10)
                return [
                    Self.inboundAudio("IA", ssrc: 1111, t, packets: 0, bytes: 0, level: 0, energy: 0),
                    Self.inboundVideo("IV", ssrc: 3333, t, seconds: s),
                ] + Self.outboundAudio(t, packets: s * 50, remoteLost: 0)
            })
        XCTAssertFalse(sfu.findings.contains { $0.code == "one_way_audio" })
        let sfuMuted = try XCTUnwrap(sfu.findings.first { $0.code == "remote_muted" })
        XCTAssertEqual(sfuMuted.detail, "no audio received while its video arrives and its audio never did: the far end sends none (muted)")
        XCTAssertEqual(sfu.call.grade, .good, sfu.call.gradeReason)

        // Audio that flowed for 20 s and then stopped while video goes on: a far end that
        // stopped sending cannot be told from audio lost on the way, and one-way audio stays.
        let stopped = try Harness.analyze(
            call("stopped") { k, t in
                let s = Double(k * 10), heard = Double(min(k, 2) * 500)
                return [
                    Self.inboundAudio("IA", ssrc: 1111, t, packets: heard, bytes: heard * 80, level: 0, energy: heard / 1e4),
                    Self.inboundVideo("IV", ssrc: 3333, t, seconds: s),
                ] + Self.outboundAudio(t, packets: s * 50, remoteLost: 0)
            })
        XCTAssertEqual(stopped.findings.filter { $0.code == "one_way_audio" }.map(\.startTs), [t0 + 20_000])
        XCTAssertFalse(stopped.findings.contains { $0.code == "remote_muted" })

        // Audio only, received for 20 s and then not at all, nothing announced: one-way audio, poor.
        let oneWay = try Harness.analyze(
            call("one-way") { k, t in
                let s = Double(k * 10), heard = Double(min(k, 2) * 500)
                return [Self.inboundAudio("IA", ssrc: 1111, t, packets: heard, bytes: heard * 80, level: 0, energy: heard / 1e4)]
                    + Self.outboundAudio(t, packets: s * 50, remoteLost: 0)
            })
        XCTAssertEqual(oneWay.findings.filter { $0.code == "one_way_audio" }.map(\.startTs), [t0 + 20_000])
        XCTAssertFalse(oneWay.findings.contains { $0.code == "remote_muted" })
        XCTAssertEqual(oneWay.call.grade, .poor)

        // The same, with the far end's hold announced: its silence is explained.
        var held = call("held") { k, t in
            let s = Double(k * 10), heard = Double(min(k, 2) * 500)
            return [Self.inboundAudio("IA", ssrc: 1111, t, packets: heard, bytes: heard * 80, level: 0, energy: heard / 1e4)]
                + Self.outboundAudio(t, packets: s * 50, remoteLost: 0)
        }
        held.append(.event(call: "held", ts: t0 + 20_000, action: "callState", type: "remoteHold"))
        let heldCall = try Harness.analyze(held)
        XCTAssertFalse(heldCall.findings.contains { $0.code == "one_way_audio" })
        XCTAssertEqual(
            heldCall.findings.first { $0.code == "remote_muted" }?.detail,
            "no audio received while the far end holds the call: the far end sends none (muted)")
    }

    /// A media server's audio slots that never carry a packet while this end's audio flows: the
    /// server forwards audio only from participants who send it, so they are muted or gone, not
    /// a path failing one way. The same slots on a pc the dump does not name as a media
    /// server's stay one-way audio.
    func testIdleAudioSlotsOfAMediaServerAreMutedParticipants() throws {
        // A participant heard for the first 10 s, who then leaves; two slots that never carry audio.
        func slots(_ id: String) -> [LogRecord] {
            call(id) { k, t in
                let s = Double(k * 10)
                let left = k <= 1 ? [Self.inboundAudio("IA0", ssrc: 1110, t, packets: s * 50, bytes: s * 4_000, level: 0.1, energy: s * 0.01)] : []
                return left + [
                    Self.inboundAudio("IA1", ssrc: 1111, t, packets: 0, bytes: 0, level: nil, energy: nil),
                    Self.inboundAudio("IA2", ssrc: 1112, t, packets: 0, bytes: 0, level: nil, energy: nil),
                ] + Self.outboundAudio(t, packets: s * 50, remoteLost: 0)
            }
        }
        var server = slots("server-slots")
        let role: JSONObject = ["pc": "pc0", "value": ["optional": [["rtcStatsSFUP2P": false]]]]
        server.insert(.event(call: "server-slots", ts: t0 - 1_000, action: "webrtc", type: "constraints", detail: role), at: 0)
        let muted = try Harness.analyze(server)
        XCTAssertEqual(muted.peerConnections.map(\.role), ["media_server"])
        XCTAssertFalse(muted.findings.contains { $0.code == "one_way_audio" })
        XCTAssertEqual(
            muted.findings.first { $0.code == "remote_muted" }?.detail,
            "no audio received while the media server forwards audio on none of its slots: the far end sends none (muted)")
        XCTAssertNotEqual(muted.call.grade, .poor, muted.call.gradeReason)

        let unknown = try Harness.analyze(slots("unknown-slots"))
        XCTAssertTrue(unknown.findings.contains { $0.code == "one_way_audio" })
        XCTAssertEqual(unknown.call.grade, .poor)
    }

    /// This end muted: its media source's level is 0 and its energy flat while packets (of
    /// silence) are sent. An info finding on the sent stream; the grade does not change.
    func testALocalMuteIsNamedFromTheMediaSource() throws {
        let r = try Harness.analyze(
            call("local-muted") { k, t in
                let s = Double(k * 10)
                return [
                    Self.inboundAudio("IA", ssrc: 1111, t, packets: s * 50, bytes: s * 4_000, level: 0.1, energy: s * 0.01),
                    Self.object("MS", "media-source", t, [("kind", "audio"), ("audioLevel", 0), ("totalAudioEnergy", 0.25)]),
                ] + Self.outboundAudio(t, packets: s * 50, remoteLost: 0, mediaSource: "MS")
            })
        let muted = try XCTUnwrap(r.findings.first { $0.code == "local_muted" })
        XCTAssertEqual(muted.streamID, "pc0:outbound:audio:2222")
        XCTAssertEqual(muted.durationMs, 120_000)
        XCTAssertFalse(r.findings.contains { $0.code == "remote_muted" || $0.code == "one_way_audio" })
        XCTAssertEqual(r.call.grade, .good, r.call.gradeReason)
    }

    /// Counters that restart (a new statistics object for the SSRC): the interval across the
    /// restart counts what the new counters say, so every packet reported after it is kept.
    /// 500 packets each 10 s; the restart comes 4 s before the fourth snapshot, which reports
    /// 200 since; then 500 each 10 s again: 3 × 500 + 200 + 8 × 500 = 5,700.
    func testPacketsAroundACounterRestartAreCounted() throws {
        let records = call("restart") { k, t in
            let packets = k <= 3 ? Double(k * 500) : Double(200 + (k - 4) * 500)
            return [Self.inboundAudio("IA", ssrc: 1111, t, packets: packets, bytes: packets * 80, level: 0.1, energy: t / 1e6)]
        }
        let r = try Harness.analyze(records)
        let s = try XCTUnwrap(r.streams.first)
        XCTAssertEqual(s.counterResets, 1)
        XCTAssertEqual(s.packets, 5_700)
        XCTAssertEqual(r.intervals.compactMap(\.packets), [500, 500, 500, 200, 500, 500, 500, 500, 500, 500, 500, 500])
        XCTAssertEqual(r.intervals.compactMap(\.bitrateKbps)[3], 200 * 80 * 8 / 10 / 1000, accuracy: 1e-9)
        XCTAssertEqual(r.findings.filter { $0.code == "counter_reset" }.map(\.value), [1])
    }

    /// The sent direction's loss is lost ÷ sent: 100 reported lost of every 500 sent is 20 %
    /// (lost ÷ (lost + sent) read 16.7 %). RFC 3550 §6.4.1 and A.3 give the receiver's own figure,
    /// the fraction lost, as (lost << 8) / expected over the same packets: 51/256, 19.92 %.
    func testSentLossIsLostOverSent() throws {
        let records = call("sent-loss") { k, t in
            let s = Double(k * 10)
            return [Self.inboundAudio("IA", ssrc: 1111, t, packets: s * 50, bytes: s * 4_000, level: 0.1, energy: s * 0.01)]
                + Self.outboundAudio(t, packets: s * 50, remoteLost: s * 10)
        }
        let r = try Harness.analyze(records)
        let sent = try XCTUnwrap(r.streams.first { $0.direction == .outbound })
        XCTAssertEqual(sent.packets, 6_000)
        XCTAssertEqual(sent.packetsLost, 1_200)
        XCTAssertEqual(try XCTUnwrap(sent.lossPct), 20.0, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(r.call.lossPctSent), 20.0, accuracy: 1e-9)
        let perInterval = r.intervals.filter { $0.streamID == sent.streamID }.compactMap(\.lossPct)
        XCTAssertEqual(perInterval.count, 12)
        XCTAssertTrue(perInterval.allSatisfy { abs($0 - 20) < 1e-9 }, "\(perInterval)")
        let rfc3550Fraction = Double((100 << 8) / 500) / 256
        XCTAssertEqual(rfc3550Fraction, 0.19921875)
        XCTAssertEqual(try XCTUnwrap(r.call.lossPctSent) / 100, rfc3550Fraction, accuracy: 1.0 / 256)
        // Reports that lag the sender's counter can claim more lost than sent: capped.
        XCTAssertEqual(Intervals.sentLossPercent(lost: 600, sent: 500), 100)
        XCTAssertNil(Intervals.sentLossPercent(lost: 3, sent: 0))
    }
}
