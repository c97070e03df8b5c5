/// Cumulative RTP counters of one media stream, advanced one second at a time.
///
/// The relations the analyser relies on hold by construction (quality-models §3.8, §6):
/// concealed samples come from lost and late packets (or from everything, when nothing
/// arrives), `totalSamplesReceived` includes them, `jitterBufferEmittedCount` counts the rest,
/// `jitterBufferDelay` is a sum over emitted samples, freezes and pauses follow the W3C rules,
/// and counters only ever grow (a new SSRC starts from zero).

/// How many packets of `expected` were lost this second, and in how many bursts.
@inline(__always)
func drawLoss(expected: Int, rate: Double, burst: Double, _ rng: inout Xoshiro256) -> (lost: Int, bursts: Int) {
    guard expected > 0, rate > 0 else { return (0, 0) }
    let bursts = rng.poisson(Double(expected) * rate / max(1, burst))
    var lost = 0
    for _ in 0..<bursts { lost += rng.burstLength(mean: burst) }
    return (min(lost, expected), bursts)
}

/// Audio we receive: `inbound-rtp` (audio), its `remote-outbound-rtp` and the playout.
struct AudioInbound {
    let ssrc: UInt32
    let clockRate: Int
    var packetsReceived = 0, packetsLost = 0, packetsDiscarded = 0
    var bytesReceived = 0, headerBytesReceived = 0
    var fecPacketsReceived = 0
    var jitter = 0.0
    var concealedSamples = 0, silentConcealedSamples = 0, concealmentEvents = 0, totalSamplesReceived = 0
    var insertedSamplesForDeceleration = 0, removedSamplesForAcceleration = 0
    var jitterBufferDelay = 0.0, jitterBufferTargetDelay = 0.0, jitterBufferMinimumDelay = 0.0
    var jitterBufferEmittedCount = 0
    var totalProcessingDelay = 0.0
    var audioLevel = 0.0, totalAudioEnergy = 0.0, totalSamplesDuration = 0.0
    var lastPacketReceivedTimestamp: Double?
    /// The last second's concealment share and target delay (legacy stats report rates).
    var expandRate = 0.0, currentDelayMs = 0.0
    var wasFlowing = true
    // Playout device (44.1 kHz, like the recording's).
    var playoutSamples = 0, playoutDuration = 0.0, playoutDelay = 0.0
    // The remote's sender reports.
    var senderPacketsSent = 0, senderBytesSent = 0, reportsSent = 0
    var senderReportTime = 0.0, senderRemoteTime = 0.0
    var senderRtt: Double?, senderTotalRtt = 0.0, senderRttCount = 0
    // Loss and expected packets since the last quality callback window.
    var windowExpected = 0, windowLost = 0

    init(ssrc: UInt32, clockRate: Int) {
        self.ssrc = ssrc
        self.clockRate = clockRate
    }

    /// One second. `flowing`: packets arrive; `playing`: the track plays out (not on hold).
    mutating func step(
        now: Double, flowing: Bool, playing: Bool, talking: Bool, opus: Bool,
        link: LinkConditions, _ rng: inout Xoshiro256
    ) {
        guard playing else { wasFlowing = false; return }
        let perPacket = clockRate / 50
        totalSamplesReceived += clockRate
        totalSamplesDuration += 1
        playoutSamples += 44_100
        playoutDuration += 1
        let delay = 0.02 + 2.2 * link.jitterDownMs / 1000 + rng.uniform(0, 0.006)
        playoutDelay += 44_100 * (delay + 0.012)
        currentDelayMs = delay * 1000
        guard flowing else {
            // Nothing arrives: the decoder conceals everything, soon as silence.
            concealedSamples += clockRate
            silentConcealedSamples += clockRate
            if wasFlowing { concealmentEvents += 1 }
            expandRate = 1
            audioLevel = 0
            wasFlowing = false
            windowExpected += 50
            windowLost += 50
            return
        }
        wasFlowing = true
        let (lost, bursts) = drawLoss(expected: 50, rate: link.lossDown, burst: link.burst, &rng)
        let late = link.jitterDownMs > 30 ? rng.poisson(50 * (link.jitterDownMs - 30) / 3000) : 0
        let received = 50 - lost
        packetsReceived += received
        packetsLost += lost
        packetsDiscarded += min(late, received)
        let payload = opus ? (talking ? rng.int(70...100) : rng.int(35...50)) : 160
        bytesReceived += received * payload
        headerBytesReceived += received * 28
        if opus && lost > 0 { fecPacketsReceived += lost / 3 }
        jitter = (link.jitterDownMs / 1000 * rng.uniform(0.85, 1.15) * 1000).rounded() / 1000
        // FEC (Opus in-band) recovers some single losses.
        let recovered = opus ? min(lost, bursts / 2) : 0
        let concealed = (lost - recovered + min(late, received)) * perPacket
        concealedSamples += concealed
        if !talking { silentConcealedSamples += concealed / 2 }
        concealmentEvents += max(0, bursts - recovered / 2) + (late > 0 ? 1 : 0)
        expandRate = Double(concealed) / Double(clockRate)
        let emitted = clockRate - concealed
        jitterBufferEmittedCount += emitted
        jitterBufferDelay += Double(emitted) * delay
        jitterBufferTargetDelay += Double(emitted) * (delay * 1.2 + 0.004)
        jitterBufferMinimumDelay += Double(emitted) * (delay * 1.2)
        totalProcessingDelay += Double(emitted) * (delay * 0.75)
        if link.jitterDownMs > 15 {
            insertedSamplesForDeceleration += rng.poisson(link.jitterDownMs * 8)
            removedSamplesForAcceleration += rng.poisson(link.jitterDownMs * 3)
        } else {
            insertedSamplesForDeceleration += rng.poisson(60)
            removedSamplesForAcceleration += rng.poisson(30)
        }
        audioLevel = talking ? rng.uniform(0.02, 0.35) : rng.uniform(0, 0.003)
        totalAudioEnergy += audioLevel * audioLevel
        lastPacketReceivedTimestamp = ((now - rng.uniform(0, 20)) * 1000).rounded() / 1000
        windowExpected += 50
        windowLost += lost
        // The remote sends a sender report about every 5 s.
        if rng.chance(0.2) || reportsSent == 0 {
            reportsSent += 1
            senderPacketsSent = packetsReceived + packetsLost + rng.int(0...5)
            senderBytesSent = bytesReceived + lost * payload + rng.int(0...400)
            senderReportTime = ((now - rng.uniform(0, 900)) * 1000).rounded() / 1000
            senderRemoteTime = ((senderReportTime - link.rttMs / 2) * 10000).rounded() / 10000
            let rtt = (link.rttMs + rng.uniform(-3, 3)) / 1000
            senderRtt = (rtt * 1e6).rounded() / 1e6
            senderTotalRtt += senderRtt!
            senderRttCount += 1
        }
    }
}

/// Audio we send: `outbound-rtp` (audio), its `media-source` and `remote-inbound-rtp`.
struct AudioOutbound {
    let ssrc: UInt32
    var packetsSent = 0, bytesSent = 0, headerBytesSent = 0
    var totalPacketSendDelay = 0.0
    // Media source (the microphone).
    var audioLevel = 0.0, totalAudioEnergy = 0.0, totalSamplesDuration = 0.0
    var echoReturnLoss = -30.0, echoReturnLossEnhancement = 0.0
    // The remote's receiver reports about this stream.
    var remotePacketsLost = 0, remoteJitter = 0.0, fractionLost = 0.0
    var roundTripTime: Double?, totalRoundTripTime = 0.0, roundTripTimeMeasurements = 0
    var reportTime = 0.0
    var pendingLost = 0, pendingExpected = 0

    init(ssrc: UInt32) { self.ssrc = ssrc }

    mutating func step(
        now: Double, sending: Bool, linkUp: Bool, muted: Bool, talking: Bool, opus: Bool,
        link: LinkConditions, _ rng: inout Xoshiro256
    ) {
        totalSamplesDuration += 1
        audioLevel = muted ? 0 : talking ? rng.uniform(0.05, 0.6) : rng.uniform(0.001, 0.01)
        totalAudioEnergy += audioLevel * audioLevel
        echoReturnLossEnhancement = rng.uniform(0.1, 12)
        guard sending else { return }
        // A muted track still sends (silence) packets, just smaller ones.
        let payload = opus ? (muted ? rng.int(3...8) : talking ? rng.int(70...100) : rng.int(35...50)) : 160
        packetsSent += 50
        bytesSent += 50 * payload
        headerBytesSent += 50 * 28
        totalPacketSendDelay += rng.uniform(0, 0.0004)
        guard linkUp else { return }
        let (lost, _) = drawLoss(expected: 50, rate: link.lossUp, burst: link.burst, &rng)
        pendingLost += lost
        pendingExpected += 50
        if rng.chance(0.2) || roundTripTimeMeasurements == 0 {
            remotePacketsLost += pendingLost
            fractionLost = (Double(pendingLost) / Double(max(1, pendingExpected)) * 256).rounded(.down) / 256
            pendingLost = 0
            pendingExpected = 0
            remoteJitter = (link.jitterUpMs / 1000 * rng.uniform(0.85, 1.15) * 1e6).rounded() / 1e6
            let rtt = ((link.rttMs + rng.uniform(-4, 4)) / 1000 * 1e6).rounded() / 1e6
            roundTripTime = max(0.001, rtt)
            totalRoundTripTime += roundTripTime!
            roundTripTimeMeasurements += 1
            reportTime = ((now - rng.uniform(0, 900)) * 1000).rounded() / 1000
        }
    }
}

/// A resolution a sender can use, and the bitrate it needs (kbps).
struct Rung {
    var width: Int
    var height: Int
    var kbps: Double
}

func ladder(for camera: (width: Int, height: Int)) -> [Rung] {
    if camera.width >= 1280 {
        return [
            Rung(width: 1280, height: 720, kbps: 1500), Rung(width: 960, height: 540, kbps: 900),
            Rung(width: 640, height: 360, kbps: 500), Rung(width: 480, height: 270, kbps: 260),
            Rung(width: 320, height: 180, kbps: 130),
        ]
    }
    return [
        Rung(width: 640, height: 480, kbps: 800), Rung(width: 480, height: 360, kbps: 450),
        Rung(width: 320, height: 240, kbps: 200), Rung(width: 240, height: 180, kbps: 110),
    ]
}

/// Picks the rung for the available bandwidth, moving one step at a time after the need has
/// lasted a few seconds (how libwebrtc's quality scaler behaves, roughly).
struct Adaptation {
    let rungs: [Rung]
    var current = 0
    var pressure = 0
    var changes = 0

    init(rungs: [Rung]) { self.rungs = rungs }

    var rung: Rung { rungs[current] }

    mutating func step(availableKbps: Double) {
        let budget = availableKbps * 0.8
        var wanted = rungs.count - 1
        for (i, r) in rungs.enumerated() where r.kbps <= budget { wanted = i; break }
        if wanted == current { pressure = 0; return }
        pressure += 1
        if pressure >= 3 {
            current += wanted > current ? 1 : -1
            pressure = 0
            changes += 1
        }
    }
}

/// Video we receive: `inbound-rtp` (video) and its `remote-outbound-rtp`.
struct VideoInbound {
    let ssrc: UInt32
    let rtxSsrc: UInt32
    var adaptation: Adaptation
    var packetsReceived = 0, packetsLost = 0, bytesReceived = 0, headerBytesReceived = 0
    var jitter = 0.0
    var framesReceived = 0, framesDecoded = 0, keyFramesDecoded = 0, framesDropped = 0
    var framesAssembledFromMultiplePackets = 0
    var framesPerSecond = 0.0
    var freezeCount = 0, totalFreezesDuration = 0.0, pauseCount = 0, totalPausesDuration = 0.0
    var totalInterFrameDelay = 0.0, totalSquaredInterFrameDelay = 0.0
    var jitterBufferDelay = 0.0, jitterBufferTargetDelay = 0.0, jitterBufferMinimumDelay = 0.0
    var jitterBufferEmittedCount = 0
    var totalProcessingDelay = 0.0, totalDecodeTime = 0.0, totalAssemblyTime = 0.0
    var nackCount = 0, pliCount = 0, firCount = 0, qpSum = 0
    var retransmittedPacketsReceived = 0, retransmittedBytesReceived = 0
    var lastPacketReceivedTimestamp: Double?
    /// Seconds since the last rendered frame (a gap becomes a freeze or, over 5 s, a pause).
    var gap = 0.0
    var started = false
    var currentDelayMs = 0.0, decodeMs = 0.0
    // Sender reports from the remote.
    var senderPacketsSent = 0, senderBytesSent = 0, reportsSent = 0
    var senderReportTime = 0.0, senderRemoteTime = 0.0
    var senderRtt: Double?, senderTotalRtt = 0.0, senderRttCount = 0

    init(ssrc: UInt32, rtxSsrc: UInt32, remoteCamera: (width: Int, height: Int)) {
        self.ssrc = ssrc
        self.rtxSsrc = rtxSsrc
        adaptation = Adaptation(rungs: ladder(for: remoteCamera))
    }

    var frameWidth: Int { adaptation.rung.width }
    var frameHeight: Int { adaptation.rung.height }

    mutating func step(now: Double, flowing: Bool, link: LinkConditions, _ rng: inout Xoshiro256) {
        guard flowing else {
            if started { gap += 1 }
            framesPerSecond = 0
            return
        }
        adaptation.step(availableKbps: link.bandwidthKbps - 50)
        let rung = adaptation.rung
        let limited = adaptation.current == adaptation.rungs.count - 1 && rung.kbps > link.bandwidthKbps * 0.8
        let fps = limited ? rng.int(12...18) : rng.int(27...30)
        let kbps = min(rung.kbps, link.bandwidthKbps * 0.85)
        let packets = max(fps, Int(kbps * 1000 / 8 / 1_100))
        let (lost, bursts) = drawLoss(expected: packets, rate: link.lossDown, burst: link.burst, &rng)
        let recovered = lost - lost * 45 / 100
        packetsReceived += packets - lost + recovered
        packetsLost += lost - recovered
        let payloadBytes = Int(kbps * 1000 / 8)
        bytesReceived += payloadBytes * (packets - lost) / packets
        headerBytesReceived += (packets - lost) * 26
        nackCount += lost + lost / 4
        retransmittedPacketsReceived += recovered
        retransmittedBytesReceived += recovered * 1_050
        jitter = (link.jitterDownMs / 1000 * rng.uniform(0.8, 1.2) * 1000).rounded() / 1000
        lastPacketReceivedTimestamp = ((now - rng.uniform(0, 30)) * 1000).rounded() / 1000

        // Resuming after a gap: over 5 s it was a pause, otherwise a freeze.
        if gap > 0 {
            if gap > 5 {
                pauseCount += 1
                totalPausesDuration += gap
            } else {
                freezeCount += 1
                totalFreezesDuration += gap
            }
            totalInterFrameDelay += gap
            totalSquaredInterFrameDelay += gap * gap
            keyFramesDecoded += 1
            pliCount += 1
            gap = 0
        }
        var freeze = 0.0
        let freezeChance = min(0.6, 3 * link.lossDown * link.burst / 2) + (limited ? 0.04 : 0) + 0.002
        if started && bursts > 0 && rng.chance(freezeChance) {
            freeze = rng.uniform(0.25, 0.9)
            freezeCount += 1
            totalFreezesDuration += freeze
            pliCount += 1
            keyFramesDecoded += 1
        }
        if !started { keyFramesDecoded += 1; started = true }
        let dropped = rng.chance(0.1 + link.lossDown * 3) ? rng.int(1...2) : 0
        let rendered = max(1, Int(Double(fps) * (1 - freeze)) - dropped)
        framesReceived += rendered + dropped
        framesDecoded += rendered
        framesDropped += dropped
        framesAssembledFromMultiplePackets += packets > fps ? rendered : 0
        framesPerSecond = Double(rendered)
        // Inter-frame delays: steady frames plus, in a freeze, one long interval.
        let period = 1.0 / Double(fps)
        let spread = 1 + min(0.5, link.jitterDownMs / 100)
        let steady = (1 - freeze)
        totalInterFrameDelay += steady + freeze
        totalSquaredInterFrameDelay += steady * period * spread + (freeze > 0 ? (freeze + period) * (freeze + period) : 0)
        qpSum += rendered * (limited ? rng.int(40...60) : rng.int(20...38))
        let delay = 0.008 + 2 * link.jitterDownMs / 1000 + rng.uniform(0, 0.004)
        currentDelayMs = (delay + 0.04) * 1000
        jitterBufferEmittedCount += rendered
        jitterBufferDelay += Double(rendered) * delay
        jitterBufferTargetDelay += Double(rendered) * (delay * 1.3 + 0.003)
        jitterBufferMinimumDelay += Double(rendered) * (delay * 0.3 + 0.0007)
        decodeMs = rng.uniform(0.7, 3)
        totalDecodeTime += Double(rendered) * decodeMs / 1000
        totalAssemblyTime += Double(rendered) * rng.uniform(0.004, 0.008)
        totalProcessingDelay += Double(rendered) * (delay + decodeMs / 1000 + 0.001)
        if rng.chance(0.5) || reportsSent == 0 {
            reportsSent += rng.int(2...4)
            senderPacketsSent = packetsReceived + packetsLost + rng.int(0...20)
            senderBytesSent = bytesReceived + rng.int(0...20_000)
            senderReportTime = ((now - rng.uniform(0, 400)) * 1000).rounded() / 1000
            senderRemoteTime = ((senderReportTime - link.rttMs / 2) * 1000).rounded() / 1000
            let rtt = ((link.rttMs + rng.uniform(-4, 4)) / 1000 * 1e6).rounded() / 1e6
            senderRtt = max(0.001, rtt)
            senderTotalRtt += senderRtt!
            senderRttCount += 1
        }
    }
}

/// Video we send: `outbound-rtp` (video), its camera `media-source` and `remote-inbound-rtp`.
struct VideoOutbound {
    let ssrc: UInt32
    let rtxSsrc: UInt32
    let camera: (width: Int, height: Int)
    var adaptation: Adaptation
    let cpuBound: Bool
    var packetsSent = 0, bytesSent = 0, headerBytesSent = 0
    var retransmittedPacketsSent = 0, retransmittedBytesSent = 0
    var framesEncoded = 0, framesSent = 0, keyFramesEncoded = 0, hugeFramesSent = 0
    var framesPerSecond = 0.0
    var qualityLimitationReason = "none"
    /// Seconds spent in each limitation: bandwidth, cpu, none, other.
    var limitation = [0.0, 0.0, 0.0, 0.0]
    var targetBitrate = 0.0, totalEncodeTime = 0.0, qpSum = 0
    var nackCount = 0, pliCount = 0, firCount = 0
    var totalPacketSendDelay = 0.0
    var sourceFrames = 0
    var sourceFps = 0.0
    var encodeMs = 0.0
    var availableSendKbps = 0.0
    // Receiver reports from the remote.
    var remotePacketsLost = 0, remoteJitter = 0.0, fractionLost = 0.0
    var roundTripTime: Double?, totalRoundTripTime = 0.0, roundTripTimeMeasurements = 0
    var reportTime = 0.0
    var pendingLost = 0, pendingExpected = 0

    init(ssrc: UInt32, rtxSsrc: UInt32, camera: (width: Int, height: Int), cpuBound: Bool) {
        self.ssrc = ssrc
        self.rtxSsrc = rtxSsrc
        self.camera = camera
        self.cpuBound = cpuBound
        adaptation = Adaptation(rungs: ladder(for: camera))
    }

    var frameWidth: Int { adaptation.rung.width }
    var frameHeight: Int { adaptation.rung.height }

    mutating func step(
        now: Double, sending: Bool, cameraOn: Bool, linkUp: Bool, link: LinkConditions,
        _ rng: inout Xoshiro256
    ) {
        sourceFps = cameraOn ? Double(rng.int(29...30)) : 0
        sourceFrames += Int(sourceFps)
        availableSendKbps = link.bandwidthKbps
        guard sending && cameraOn else { framesPerSecond = 0; return }
        // CPU-bound devices also step down now and then, whatever the network.
        let cpuSqueeze = cpuBound && rng.chance(0.02) ? 0.5 : 1.0
        adaptation.step(availableKbps: (link.bandwidthKbps - 50) * cpuSqueeze)
        let rung = adaptation.rung
        let reduced = adaptation.current > 0
        qualityLimitationReason = reduced ? (cpuBound && cpuSqueeze < 1 ? "cpu" : "bandwidth") : "none"
        switch qualityLimitationReason {
        case "bandwidth": limitation[0] += 1
        case "cpu": limitation[1] += 1
        default: limitation[2] += 1
        }
        let limited = adaptation.current == adaptation.rungs.count - 1 && rung.kbps > link.bandwidthKbps * 0.8
        let fps = limited ? rng.int(12...18) : rng.int(28...30)
        let kbps = min(rung.kbps, link.bandwidthKbps * 0.85)
        targetBitrate = (kbps * 1000).rounded()
        let packets = max(fps, Int(kbps * 1000 / 8 / 1_100))
        packetsSent += packets
        bytesSent += Int(kbps * 1000 / 8)
        headerBytesSent += packets * 26
        framesEncoded += fps
        framesSent += fps
        framesPerSecond = Double(fps)
        if rng.chance(0.01) { hugeFramesSent += 1 }
        encodeMs = rng.uniform(2, cpuBound ? 12 : 6)
        totalEncodeTime += Double(fps) * encodeMs / 1000
        qpSum += fps * (limited ? rng.int(40...60) : rng.int(20...38))
        totalPacketSendDelay += Double(packets) * rng.uniform(0.0001, 0.002)
        guard linkUp else { return }
        let (lost, _) = drawLoss(expected: packets, rate: link.lossUp, burst: link.burst, &rng)
        nackCount += lost + lost / 4
        retransmittedPacketsSent += lost
        retransmittedBytesSent += lost * 1_050
        packetsSent += lost
        if lost > 0 && rng.chance(0.1) { pliCount += 1; keyFramesEncoded += 1 }
        if keyFramesEncoded == 0 { keyFramesEncoded = 1 }
        pendingLost += lost - lost * 55 / 100
        pendingExpected += packets
        if rng.chance(0.6) || roundTripTimeMeasurements == 0 {
            remotePacketsLost += pendingLost
            fractionLost = (Double(pendingLost) / Double(max(1, pendingExpected)) * 256).rounded(.down) / 256
            pendingLost = 0
            pendingExpected = 0
            remoteJitter = (link.jitterUpMs / 1000 * rng.uniform(0.8, 1.2) * 1e6).rounded() / 1e6
            let rtt = ((link.rttMs + rng.uniform(-4, 4)) / 1000 * 1e6).rounded() / 1e6
            roundTripTime = max(0.001, rtt)
            totalRoundTripTime += roundTripTime!
            roundTripTimeMeasurements += 1
            reportTime = ((now - rng.uniform(0, 300)) * 1000).rounded() / 1000
        }
    }
}
