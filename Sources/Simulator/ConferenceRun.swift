import CallLog

/// Plays a `ConferenceSimulation` second by second and hands out every participant's records
/// in time order.
///
/// What must stay true:
/// - A snapshot taken at time T holds exactly the conference seconds that ended by T, so a
///   counter never runs ahead of the clock and every counter only grows.
/// - Every random draw comes from a generator of its own (one per uplink, per downlink, per
///   sender-receiver pair and per participant's schedule), each derived from the seed alone:
///   the output depends on the configuration only.
struct ConferenceRun {
    let simulation: ConferenceSimulation
    private let count: Int
    private var senders: [SenderState]
    /// `received[receiver * count + sender]`: the streams `receiver` gets from `sender`.
    private var received: [ReceivedPair]
    private var uplinkRNG: [Xoshiro256]
    private var downlinkRNG: [Xoshiro256]
    private var pairRNG: [Xoshiro256]
    private var reportRNG: [Xoshiro256]
    /// Each participant's records other than statistics are fixed in advance; statistics
    /// snapshots are scheduled here and built when their time comes.
    private var schedules: [[Scheduled]]
    private var scheduleIndex: [Int]
    /// Conference seconds simulated so far.
    private var completedSeconds = 0

    enum Scheduled {
        case record(LogRecord)
        case stats(ts: Int64)

        var ts: Int64 {
            switch self {
            case .record(let r): r.ts
            case .stats(let ts): ts
            }
        }
    }

    /// Packets per second of an Opus stream with 20 ms frames.
    static let audioPacketsPerSecond = 50
    /// Samples concealed for one lost 20 ms Opus packet at 48 kHz.
    static let samplesPerAudioPacket = 960
    static let videoFramesPerSecond = 30
    static let peerConnection = "sfu"

    init(_ simulation: ConferenceSimulation) {
        self.simulation = simulation
        let seed = simulation.configuration.seed
        count = simulation.participants.count
        senders = simulation.participants.map { SenderState(audioSSRC: $0.audioSSRC, videoSSRC: $0.videoSSRC) }
        received = Array(repeating: ReceivedPair(), count: count * count)
        uplinkRNG = (0..<count).map { Xoshiro256(seed: seed ^ 0x5550_4C49_4E4B, stream: UInt64($0)) }
        downlinkRNG = (0..<count).map { Xoshiro256(seed: seed ^ 0x444F_574E_4C4E, stream: UInt64($0)) }
        pairRNG = (0..<(count * count)).map { Xoshiro256(seed: seed ^ 0x5041_4952, stream: UInt64($0)) }
        reportRNG = (0..<count).map { Xoshiro256(seed: seed ^ 0x5245_504F_5254, stream: UInt64($0)) }
        schedules = []
        scheduleIndex = Array(repeating: 0, count: count)
        for p in simulation.participants {
            schedules.append(ConferenceRun.schedule(p, simulation: simulation, rng: &reportRNG[p.index]))
        }
    }

    /// One participant's timeline: the `call` record, ICE and connection states, a snapshot
    /// every period and one more as it leaves, the `end`.
    private static func schedule(
        _ p: ConferenceSimulation.Participant, simulation: ConferenceSimulation, rng: inout Xoshiro256
    ) -> [Scheduled] {
        let id = p.callID, end = simulation.endMs
        let pc: JSONObject = ["pc": .string(peerConnection)]
        let connected = connectedMs(p, simulation: simulation)
        var out: [Scheduled] = [
            .record(
                .callInfo(
                    call: id, ts: p.joinMs, direction: "outgoing", sdk: "conference-sim", sdkVersion: "1.0.0",
                    app: "conference-sim", appVersion: "1.0.0", platform: "web", network: "wifi", media: ["audio", "video"],
                    labels: ["conference": .string(simulation.conferenceID), "participant": .string(p.name)])),
            .record(.event(call: id, ts: p.joinMs + 40, action: "iceConnectionState", type: "checking", detail: pc)),
            .record(.event(call: id, ts: connected, action: "iceConnectionState", type: "connected", detail: pc)),
            .record(.event(call: id, ts: connected + 1, action: "connectionState", type: "connected", detail: pc)),
        ]
        let period = Int64(simulation.configuration.periodSeconds) * 1_000
        var tick = p.joinMs + period
        while tick < end {
            out.append(.stats(ts: tick + Int64(rng.int(0...4))))
            tick += period
        }
        // The last snapshot as the participant hangs up, then the end.
        out.append(.stats(ts: end + 2))
        out.append(
            .record(
                .end(
                    call: id, ts: end + 8, reason: "terminatedLocally", statusCode: 9901, statusText: "Ended by local user",
                    durationMs: end - p.joinMs)))
        return out
    }

    /// When ICE connects: just before the participant's media starts.
    static func connectedMs(_ p: ConferenceSimulation.Participant, simulation: ConferenceSimulation) -> Int64 {
        max(p.joinMs + 60, simulation.startMs + Int64(p.firstMediaSecond) * 1_000 - 40)
    }

    /// Hands every record to `body` with its participant's index, in time order (ties: lower
    /// participant first).
    mutating func play(_ body: (Int, LogRecord) throws -> Void) rethrows {
        let seconds = simulation.configuration.seconds
        for s in 0...seconds {
            // Everything before the end of second s reads the seconds before it only.
            let limit = s < seconds ? simulation.startMs + Int64(s + 1) * 1_000 : Int64.max
            var due: [(ts: Int64, participant: Int, item: Scheduled)] = []
            for k in 0..<count {
                while scheduleIndex[k] < schedules[k].count, schedules[k][scheduleIndex[k]].ts < limit {
                    due.append((schedules[k][scheduleIndex[k]].ts, k, schedules[k][scheduleIndex[k]]))
                    scheduleIndex[k] += 1
                }
            }
            // Stable: one participant's records keep their order.
            due = due.enumerated().sorted { ($0.element.ts, $0.element.participant, $0.offset) < ($1.element.ts, $1.element.participant, $1.offset) }
                .map(\.element)
            for d in due {
                switch d.item {
                case .record(let r): try body(d.participant, r)
                case .stats(let ts): try body(d.participant, snapshot(of: d.participant, at: ts))
                }
            }
            if s < seconds {
                simulate(second: s)
                completedSeconds = s + 1
            }
        }
    }

    // MARK: - Media

    /// Seconds a participant is in, sending and receiving.
    private func present(_ k: Int, _ second: Int) -> Bool { second >= simulation.participants[k].firstMediaSecond }

    /// What reached the server from one sender in one second.
    private struct Uplink {
        var audioAtServer = 0, videoAtServer = 0
        var audioLost = 0, videoLost = 0
        var videoSent = 0
        var jitterMs = 0.0
        var audioPayload = 0, videoPayload = 0
        var audioLevel = 0.0
    }

    private mutating func simulate(second s: Int) {
        let bad = ConferenceSimulation.badLossPct
        var uplinks = [Uplink?](repeating: nil, count: count)
        for k in 0..<count where present(k, s) {
            let p = simulation.participants[k]
            var rng = uplinkRNG[k]
            let impaired = simulation.uplinkBadSeconds(k).contains(s)
            let loss = impaired ? rng.uniform(bad.lowerBound, bad.upperBound) / 100 : p.cleanUplinkLoss
            var u = Uplink()
            u.jitterMs = ConferenceRun.jitterMs(impaired: impaired, &rng)
            u.videoSent = rng.int(90...110)
            u.audioPayload = rng.int(70...100)
            u.videoPayload = rng.int(1_000...1_150)
            u.audioLevel = rng.chance(0.4) ? rng.uniform(0.05, 0.3) : rng.uniform(0.001, 0.01)
            u.audioLost = ConferenceRun.binomial(ConferenceRun.audioPacketsPerSecond, loss, &rng)
            u.videoLost = ConferenceRun.binomial(u.videoSent, loss, &rng)
            u.audioAtServer = ConferenceRun.audioPacketsPerSecond - u.audioLost
            u.videoAtServer = u.videoSent - u.videoLost
            // The server's receiver report: this second's loss, jitter, and the round trip,
            // longer on a congested uplink.
            let rtt = p.baseRoundTripSeconds + (impaired ? rng.uniform(0.01, 0.03) : rng.uniform(0, 0.004))
            senders[k].send(
                u, keyFrame: s == p.firstMediaSecond || s % 60 == 0, reportedJitter: u.jitterMs / 1000 * rng.uniform(0.9, 1.1),
                roundTrip: rtt)
            uplinkRNG[k] = rng
            uplinks[k] = u
        }
        for r in 0..<count where present(r, s) {
            var rng = downlinkRNG[r]
            let impaired = simulation.downlinkBadSeconds(r).contains(s)
            let loss = impaired ? rng.uniform(bad.lowerBound, bad.upperBound) / 100 : simulation.participants[r].cleanDownlinkLoss
            let downJitterMs = ConferenceRun.jitterMs(impaired: impaired, &rng)
            downlinkRNG[r] = rng
            for sender in 0..<count where sender != r {
                guard let u = uplinks[sender] else { continue }
                var pr = pairRNG[r * count + sender]
                received[r * count + sender].receive(u, downlinkLoss: loss, downJitterMs: downJitterMs, &pr)
                pairRNG[r * count + sender] = pr
            }
        }
    }

    /// One second's jitter of a path segment, ms.
    private static func jitterMs(impaired: Bool, _ rng: inout Xoshiro256) -> Double {
        if impaired { return max(20, rng.normal(mean: ConferenceSimulation.badJitterMs, sd: 5)) }
        let clean = ConferenceSimulation.cleanJitterMs
        return rng.uniform(clean.lowerBound, clean.upperBound)
    }

    /// Packets lost of `n`, each independently with probability `p`.
    static func binomial(_ n: Int, _ p: Double, _ rng: inout Xoshiro256) -> Int {
        guard n > 0, p > 0 else { return 0 }
        var lost = 0
        for _ in 0..<n where rng.uniform() < p { lost += 1 }
        return lost
    }

    /// A sender's outgoing streams, and what the server reported about them.
    private struct SenderState {
        var audio: SentStream
        var video: SentStream
        var framesEncoded = 0, keyFramesEncoded = 0
        var audioLevel = 0.0, totalAudioEnergy = 0.0, totalSamplesDuration = 0.0

        init(audioSSRC: UInt32, videoSSRC: UInt32) {
            audio = SentStream(ssrc: audioSSRC)
            video = SentStream(ssrc: videoSSRC)
        }

        /// One second sent over uplink `u`, and the server's report about it (jitter in seconds,
        /// round trip in seconds).
        mutating func send(_ u: Uplink, keyFrame: Bool, reportedJitter: Double, roundTrip: Double) {
            audio.send(
                packets: ConferenceRun.audioPacketsPerSecond, payload: u.audioPayload, lost: u.audioLost, jitter: reportedJitter,
                rtt: roundTrip)
            video.send(packets: u.videoSent, payload: u.videoPayload, lost: u.videoLost, jitter: reportedJitter, rtt: roundTrip)
            framesEncoded += ConferenceRun.videoFramesPerSecond
            if keyFrame { keyFramesEncoded += 1 }
            audioLevel = u.audioLevel
            totalAudioEnergy += u.audioLevel * u.audioLevel
            totalSamplesDuration += 1
        }
    }

    private struct SentStream {
        let ssrc: UInt32
        var packetsSent = 0, bytesSent = 0, headerBytesSent = 0
        /// The server's receiver reports: cumulative loss, the last interval's fraction (in
        /// 1/256 steps, as RTCP carries it), jitter and round trips.
        var remoteLost = 0, fractionLost = 0.0, remoteJitter = 0.0
        var roundTripTime = 0.0, totalRoundTripTime = 0.0, roundTripTimeMeasurements = 0

        init(ssrc: UInt32) { self.ssrc = ssrc }

        mutating func send(packets: Int, payload: Int, lost: Int, jitter: Double, rtt: Double) {
            packetsSent += packets
            bytesSent += packets * payload
            headerBytesSent += packets * 12
            remoteLost += lost
            fractionLost = (Double(lost) * 256 / Double(packets)).rounded(.down) / 256
            remoteJitter = (jitter * 10_000).rounded() / 10_000
            roundTripTime = (rtt * 1_000).rounded() / 1_000
            totalRoundTripTime += roundTripTime
            roundTripTimeMeasurements += 1
        }
    }

    /// What one receiver got from one sender: its audio and its video.
    private struct ReceivedPair {
        var started = false
        var audio = ReceivedStream(), video = ReceivedStream()
        var audioLevel = 0.0

        mutating func receive(_ u: Uplink, downlinkLoss: Double, downJitterMs: Double, _ rng: inout Xoshiro256) {
            let first = !started
            started = true
            // The receiver's jitter: both segments' delay variations, independent.
            let jitterMs = (u.jitterMs * u.jitterMs + downJitterMs * downJitterMs).squareRoot()
            let audioDown = ConferenceRun.binomial(u.audioAtServer, downlinkLoss, &rng)
            let videoDown = ConferenceRun.binomial(u.videoAtServer, downlinkLoss, &rng)
            let audioLost = u.audioLost + audioDown, videoLost = u.videoLost + videoDown
            audio.packetsReceived += u.audioAtServer - audioDown
            audio.packetsLost += audioLost
            audio.bytesReceived += (u.audioAtServer - audioDown) * u.audioPayload
            audio.jitter = (jitterMs / 1000 * rng.uniform(0.9, 1.1) * 10_000).rounded() / 10_000
            let concealed = audioLost * ConferenceRun.samplesPerAudioPacket
            let samples = ConferenceRun.audioPacketsPerSecond * ConferenceRun.samplesPerAudioPacket
            audio.concealedSamples += concealed
            audio.concealmentEvents += min(audioLost, max(audioLost > 0 ? 1 : 0, rng.poisson(Double(audioLost) * 0.7)))
            audio.totalSamplesReceived += samples
            let emitted = samples - concealed
            audio.jitterBufferEmittedCount += emitted
            audio.jitterBufferDelay += Double(emitted) * (0.02 + 2 * jitterMs / 1000)
            audioLevel = u.audioLevel
            audio.totalAudioEnergy += u.audioLevel * u.audioLevel
            audio.totalSamplesDuration += 1

            video.packetsReceived += u.videoAtServer - videoDown
            video.packetsLost += videoLost
            video.bytesReceived += (u.videoAtServer - videoDown) * u.videoPayload
            video.jitter = (jitterMs / 1000 * rng.uniform(0.9, 1.1) * 10_000).rounded() / 10_000
            video.nackCount += videoLost
            // Lost packets cost whole frames; heavy loss freezes the picture now and then.
            let lossShare = Double(videoLost) / Double(max(1, u.videoSent))
            var frames = ConferenceRun.videoFramesPerSecond - Int((lossShare * 60).rounded())
            if lossShare >= 0.05 && rng.chance(0.35) {
                let freeze = (rng.uniform(0.2, 0.7) * 1_000).rounded() / 1_000
                video.freezeCount += 1
                video.totalFreezesDuration += freeze
                frames -= Int(freeze * Double(ConferenceRun.videoFramesPerSecond))
            }
            frames = max(0, frames)
            video.framesReceived += frames
            video.framesDecoded += frames
            video.framesPerSecond = Double(frames)
            if first || lossShare >= 0.05 && rng.chance(0.2) { video.keyFramesDecoded += 1 }
        }
    }

    private struct ReceivedStream {
        var packetsReceived = 0, packetsLost = 0, bytesReceived = 0
        var jitter = 0.0
        var concealedSamples = 0, concealmentEvents = 0, totalSamplesReceived = 0
        var jitterBufferDelay = 0.0, jitterBufferEmittedCount = 0
        var totalAudioEnergy = 0.0, totalSamplesDuration = 0.0
        var framesReceived = 0, framesDecoded = 0, keyFramesDecoded = 0, framesPerSecond = 0.0
        var freezeCount = 0, totalFreezesDuration = 0.0, nackCount = 0
    }

    // MARK: - Reports

    private typealias Members = [(key: String, value: JSONValue)]

    /// Participant `k`'s statistics at `tick`: every object of its peer connection to the
    /// server, sorted by id as Chromium lists them.
    private mutating func snapshot(of k: Int, at tick: Int64) -> LogRecord {
        let p = simulation.participants[k]
        let now = (Double(tick) - reportRNG[k].uniform(0.5, 2.5)).rounded(toPlaces: 3)
        let ts = JSONValue.number(now)
        var objects: [(id: String, value: JSONValue)] = []
        func add(_ id: String, _ type: String, timestamp: JSONValue? = nil, _ members: Members) {
            objects.append((id, .object(W3CReport.statsObject(id, type, timestamp: timestamp ?? ts, members))))
        }
        func n(_ v: Int) -> JSONValue { .number(Double(v)) }
        func d(_ v: Double) -> JSONValue { .number(v) }
        func s(_ v: String) -> JSONValue { .string(v) }

        let sender = senders[k]
        let sending = sender.audio.packetsSent > 0
        let pairs = (0..<count).filter { $0 != k && received[k * count + $0].started }
        var packetsReceived = 0, bytesReceived = 0
        for j in pairs {
            let r = received[k * count + j]
            packetsReceived += r.audio.packetsReceived + r.video.packetsReceived
            bytesReceived += r.audio.bytesReceived + r.video.bytesReceived
        }
        let packetsSent = sender.audio.packetsSent + sender.video.packetsSent
        let bytesSent = sender.audio.bytesSent + sender.video.bytesSent

        let audioCodec = W3CReport.codec(.opus), videoCodec = W3CReport.codec(.vp8)
        let inAudio = "CIT01_" + audioCodec.suffix, outAudio = "COT01_" + audioCodec.suffix
        let inVideo = "CIT01_" + videoCodec.suffix, outVideo = "COT01_" + videoCodec.suffix
        if sending || !pairs.isEmpty {
            for id in [inAudio, outAudio] { add(id, "codec", audioCodec.members) }
            for id in [inVideo, outVideo] { add(id, "codec", videoCodec.members) }
        }
        add("P", "peer-connection", [("dataChannelsClosed", 0), ("dataChannelsOpened", 0)])

        // ICE: one pair to the server, chosen once media flows.
        let local = "I\(p.name)L", remote = "I\(p.name)R", pairID = "CP\(local)_\(remote)"
        let connected = tick >= ConferenceRun.connectedMs(p, simulation: simulation)
        let rtt = sender.audio.roundTripTimeMeasurements > 0 ? sender.audio.roundTripTime : (p.baseRoundTripSeconds * 1_000).rounded() / 1_000
        let seconds = max(0, completedSeconds - p.firstMediaSecond)
        add(
            pairID, "candidate-pair",
            [
                ("availableOutgoingBitrate", n(2_500_000)), ("bytesReceived", n(bytesReceived)), ("bytesSent", n(bytesSent)),
                ("currentRoundTripTime", d(rtt)), ("localCandidateId", s(local)), ("nominated", .bool(connected)),
                ("packetsReceived", n(packetsReceived)), ("packetsSent", n(packetsSent)), ("remoteCandidateId", s(remote)),
                ("requestsSent", n(seconds + 1)), ("responsesReceived", n(connected ? seconds + 1 : 0)),
                ("state", s(connected ? "succeeded" : "in-progress")),
                ("totalRoundTripTime", d((p.baseRoundTripSeconds + sender.audio.totalRoundTripTime).rounded(toPlaces: 3))),
                ("transportId", "T01"), ("writable", .bool(connected)),
            ])
        add(
            local, "local-candidate",
            [
                ("address", s(p.publicAddress)), ("candidateType", "srflx"), ("ip", s(p.publicAddress)), ("isRemote", false),
                ("networkType", "wifi"), ("port", n(p.localPort)), ("protocol", "udp"), ("transportId", "T01"),
            ])
        add(
            remote, "remote-candidate",
            [
                ("address", "198.51.100.20"), ("candidateType", "host"), ("ip", "198.51.100.20"), ("isRemote", true),
                ("port", 10_000), ("protocol", "udp"), ("transportId", "T01"),
            ])
        var transport: Members = [
            ("bytesReceived", n(bytesReceived)), ("bytesSent", n(bytesSent)), ("dtlsState", s(connected ? "connected" : "connecting")),
            ("iceRole", "controlling"), ("iceState", s(connected ? "connected" : "checking")),
            ("packetsReceived", n(packetsReceived)), ("packetsSent", n(packetsSent)),
        ]
        if connected { transport.append(("selectedCandidatePairId", s(pairID))) }
        add("T01", "transport", transport)

        // What this participant captures.
        add(
            "SA1", "media-source",
            [
                ("kind", "audio"), ("trackIdentifier", s(p.audioTrack)), ("audioLevel", d(sender.audioLevel.rounded(toPlaces: 4))),
                ("totalAudioEnergy", d(sender.totalAudioEnergy.rounded(toPlaces: 6))), ("totalSamplesDuration", d(sender.totalSamplesDuration)),
            ])
        add(
            "SV2", "media-source",
            [
                ("kind", "video"), ("trackIdentifier", s(p.videoTrack)), ("frames", n(sender.framesEncoded)), ("framesPerSecond", 30),
                ("height", 360), ("width", 640),
            ])

        // What it sends, and what the server reports receiving of it.
        let reportTime = d(Double(simulation.startMs + Int64(completedSeconds) * 1_000 - 150))
        if sending {
            for (stream, audio) in [(sender.audio, true), (sender.video, false)] {
                let kind = audio ? "audio" : "video", letter = audio ? "A" : "V"
                let outID = "OT01\(letter)\(stream.ssrc)", remoteID = "RI\(letter)\(stream.ssrc)"
                var m: Members = [
                    ("codecId", s(audio ? outAudio : outVideo)), ("kind", s(kind)), ("mediaType", s(kind)), ("ssrc", n(Int(stream.ssrc))),
                    ("transportId", "T01"), ("bytesSent", n(stream.bytesSent)), ("packetsSent", n(stream.packetsSent)), ("active", true),
                    ("headerBytesSent", n(stream.headerBytesSent)), ("mediaSourceId", s(audio ? "SA1" : "SV2")), ("mid", s(audio ? "0" : "1")),
                ]
                if !audio {
                    let seconds = Double(sender.framesEncoded / ConferenceRun.videoFramesPerSecond)
                    m.append(
                        contentsOf: [
                            ("frameHeight", 360), ("frameWidth", 640), ("framesEncoded", n(sender.framesEncoded)), ("framesPerSecond", 30),
                            ("framesSent", n(sender.framesEncoded)), ("keyFramesEncoded", n(sender.keyFramesEncoded)),
                            (
                                "qualityLimitationDurations",
                                .object(["bandwidth": 0, "cpu": 0, "none": d(seconds), "other": 0])
                            ),
                            ("qualityLimitationReason", "none"),
                        ] as Members)
                }
                if stream.roundTripTimeMeasurements > 0 { m.append(("remoteId", s(remoteID))) }
                m.append(("targetBitrate", n(audio ? 32_000 : 900_000)))
                add(outID, "outbound-rtp", m)
                if stream.roundTripTimeMeasurements > 0 {
                    add(
                        remoteID, "remote-inbound-rtp", timestamp: reportTime,
                        [
                            ("codecId", s(audio ? outAudio : outVideo)), ("kind", s(kind)), ("mediaType", s(kind)),
                            ("ssrc", n(Int(stream.ssrc))), ("transportId", "T01"), ("jitter", d(stream.remoteJitter)),
                            ("packetsLost", n(stream.remoteLost)), ("fractionLost", d(stream.fractionLost)), ("localId", s(outID)),
                            ("roundTripTime", d(stream.roundTripTime)),
                            ("roundTripTimeMeasurements", n(stream.roundTripTimeMeasurements)),
                            ("totalRoundTripTime", d(stream.totalRoundTripTime.rounded(toPlaces: 6))),
                        ])
                }
            }
        }

        // What it receives from each other participant, under the sender's SSRCs.
        for j in pairs {
            let r = received[k * count + j], from = simulation.participants[j]
            let a = r.audio, v = r.video
            add(
                "IT01A\(from.audioSSRC)", "inbound-rtp",
                [
                    ("codecId", s(inAudio)), ("kind", "audio"), ("mediaType", "audio"), ("ssrc", n(Int(from.audioSSRC))),
                    ("transportId", "T01"), ("jitter", d(a.jitter)), ("packetsLost", n(a.packetsLost)),
                    ("packetsReceived", n(a.packetsReceived)), ("audioLevel", d(r.audioLevel.rounded(toPlaces: 4))),
                    ("bytesReceived", n(a.bytesReceived)), ("concealedSamples", n(a.concealedSamples)),
                    ("concealmentEvents", n(a.concealmentEvents)), ("jitterBufferDelay", d(a.jitterBufferDelay.rounded(toPlaces: 1))),
                    ("jitterBufferEmittedCount", n(a.jitterBufferEmittedCount)), ("mid", s("\(2 + 2 * j)")),
                    ("totalAudioEnergy", d(a.totalAudioEnergy.rounded(toPlaces: 6))), ("totalSamplesDuration", d(a.totalSamplesDuration)),
                    ("totalSamplesReceived", n(a.totalSamplesReceived)), ("trackIdentifier", s(from.audioTrack)),
                ])
            add(
                "IT01V\(from.videoSSRC)", "inbound-rtp",
                [
                    ("codecId", s(inVideo)), ("kind", "video"), ("mediaType", "video"), ("ssrc", n(Int(from.videoSSRC))),
                    ("transportId", "T01"), ("jitter", d(v.jitter)), ("packetsLost", n(v.packetsLost)),
                    ("packetsReceived", n(v.packetsReceived)), ("bytesReceived", n(v.bytesReceived)),
                    ("frameHeight", 360), ("frameWidth", 640), ("framesDecoded", n(v.framesDecoded)),
                    ("framesPerSecond", d(v.framesPerSecond)), ("framesReceived", n(v.framesReceived)),
                    ("freezeCount", n(v.freezeCount)), ("keyFramesDecoded", n(v.keyFramesDecoded)), ("mid", s("\(3 + 2 * j)")),
                    ("nackCount", n(v.nackCount)), ("totalFreezesDuration", d(v.totalFreezesDuration.rounded(toPlaces: 3))),
                    ("totalPausesDuration", 0), ("trackIdentifier", s(from.videoTrack)),
                ])
        }
        objects.sort { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
        return .stats(call: p.callID, ts: tick, format: .w3c, report: objects.map(\.value), peerConnection: ConferenceRun.peerConnection)
    }
}
