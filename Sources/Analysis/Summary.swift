import MaterialScanning

/// Call-level figures and the grade.
enum Summary {
    /// `worst`: the call's worst sustained audio MOS and video score, the lowest of its inbound
    /// streams' (`worstSustained`, from the windows the stream's findings were found in).
    /// `ranges`: each stream's intervals in `intervals` (in order, covering them all).
    static func apply(
        streams: [StreamSummary], intervals: [IntervalMetrics], ranges: [Range<Int>],
        worst: (mos: Double?, videoScore: Double?, mosSent: Double?),
        material m: CallMaterial, config: AnalysisConfig, to c: inout CallSummary
    ) {
        // Inbound audio and video intervals by their streams' ranges, and the means in one pass:
        // copying an interval retains its strings, and this runs for every call.
        var all = IntervalTotals(), inAudio = IntervalTotals(), inVideo = IntervalTotals(), outAudio = IntervalTotals()
        for (s, range) in zip(streams, ranges) {
            let inbound = s.direction == .inbound
            for i in range {
                all.add(intervals[i])
                if inbound && s.kind == .audio {
                    inAudio.add(intervals[i])
                } else if inbound && s.kind == .video {
                    inVideo.add(intervals[i])
                } else if s.kind == .audio {
                    outAudio.add(intervals[i])
                }
            }
        }
        c.mosCQSent = outAudio.mosCQ.value
        c.mosLQSent = outAudio.mosLQ.value
        c.mosWorstSent = worst.mosSent
        // Loss only over intervals the far end reported on (an interval without a report has
        // packets sent and no loss figure: counting its packets would dilute the loss).
        c.lossPctSent = Intervals.sentLossPercent(lost: Double(outAudio.reportedLost), sent: Double(outAudio.reportedPackets))
        c.jitterMsSent = outAudio.jitterMs.value
        c.mosCQ = inAudio.mosCQ.value
        c.mosLQ = inAudio.mosLQ.value
        c.rFactor = inAudio.rFactor.value
        c.mosWorst = worst.mos
        c.videoScore = inVideo.videoScore.value
        c.videoScoreWorst = worst.videoScore
        let lost = inAudio.packetsLost ?? 0, received = inAudio.packets ?? 0
        if lost + received > 0 { c.lossPct = 100 * Double(lost) / Double(lost + received) }
        c.jitterMs = inAudio.jitterMs.value
        c.rttMs = inAudio.rttMs.value ?? all.rttMs.value
        c.iceRttMs = all.iceRttMs.value ?? wireICERoundTrip(m)
        c.concealmentPct = inAudio.concealmentPct.value
        c.jitterBufferMs = inAudio.jitterBufferMs.value
        c.audioCodec = streams.first { $0.kind == .audio && $0.codec != nil }?.codec
        c.videoCodec = streams.first { $0.kind == .video && $0.codec != nil }?.codec
        if c.media == "unknown" {
            c.media = streams.contains { $0.kind == .video } ? "audio+video" : (streams.isEmpty ? "unknown" : "audio")
        }
        // A captured call's pairs (`ice` records) name no candidate types: they say nothing of relays.
        if let pair = m.snapshots.last(where: { $0.pair != nil && $0.source != "wire" })?.pair {
            c.localCandidateType = pair.localType
            c.remoteCandidateType = pair.remoteType
            c.transport = pair.relayProtocol ?? pair.transport
            c.relayUsed = pair.localType == "relay" || pair.remoteType == "relay"
        }
        if c.network == "unknown", let n = m.snapshots.last(where: { $0.pair?.networkType != nil })?.pair?.networkType {
            c.network = n
        }
    }

    /// A captured call's ICE round-trip time: the mean of its `ice` records' latest round trips
    /// (snapshots without streams: no interval carries them); nil when none was answered.
    static func wireICERoundTrip(_ m: CallMaterial) -> Double? {
        var sum = 0.0, n = 0.0
        for s in m.snapshots where s.source == "wire" && s.streams.isEmpty {
            if let rtt = s.pair?.rttMs, rtt.isFinite, rtt >= 0, rtt <= 60_000 {
                sum += rtt
                n += 1
            }
        }
        return n > 0 ? sum / n : nil
    }

    /// The lowest mean of a metric over any `window` consecutive windows of one stream (or over
    /// all, if fewer); nil when no window has it.
    static func worstSustained(_ windows: [IntervalMetrics], _ key: (IntervalMetrics) -> Double?, window: Int) -> Double? {
        let values = windows.compactMap(key)
        guard !values.isEmpty else { return nil }
        let n = min(window, values.count)
        var worst: Double?
        for i in 0...(values.count - n) {
            let m = values[i..<(i + n)].reduce(0, +) / Double(n)
            worst = min(worst ?? m, m)
        }
        return worst
    }

    /// The received direction's mouth-to-ear delay as the E-model takes it, ms, and its largest
    /// part: the network (RTT/2), the jitter buffer, or packetisation (packet time and the device
    /// allowance). Nil without a round trip or a jitter-buffer figure.
    static func delayBudget(_ c: CallSummary, config: AnalysisConfig) -> (total: Double, largest: (name: String, ms: Double))? {
        let rtt = c.rttMs ?? c.iceRttMs
        guard rtt != nil || c.jitterBufferMs != nil else { return nil }
        let parts: [(name: String, ms: Double)] = [
            ("network one-way", (rtt ?? 0) / 2), ("jitter buffer", c.jitterBufferMs ?? 0),
            ("packetisation", config.packetTimeMs + config.deviceAllowanceMs),
        ]
        let largest = parts.max { $0.ms < $1.ms }!
        return (parts.reduce(0) { $0 + $1.ms }, largest)
    }

    /// `measuredIntervals`: how many intervals the call's streams gave (any metric).
    static func grade(
        _ c: inout CallSummary, findings: [Finding], streams: [StreamSummary], measuredIntervals: Int, config: AnalysisConfig
    ) {
        if findings.contains(where: { $0.code == "unanswered" }) {
            c.grade = .unanswered
            c.gradeReason = "not answered (\(c.endReason ?? "no end record"))"
            return
        }
        // Data channels alone carried the call: nothing says how audio or video would have been.
        if let f = findings.first(where: { $0.code == "data_channels_only" }) {
            c.grade = .unmeasured
            c.gradeReason = f.detail
            return
        }
        if let f = findings.first(where: { $0.code == "no_media" || $0.code == "ice_failure" }) {
            c.grade = .noMedia
            c.gradeReason = f.detail
            return
        }
        // No interval measured the media and no finding judged it: the call is not known to be good.
        if measuredIntervals == 0 && c.mosWorst == nil && c.mosWorstSent == nil && !findings.contains(where: { $0.severity >= .warn }) {
            c.grade = .unmeasured
            var reason = streams.isEmpty ? "no media statistics" : "no interval of media statistics"
            if let mean = c.sdkQualityMean, let low = c.sdkQualityMin {
                reason += "; the SDK's own score \(FixedText.decimal(mean, places: 0)) (lowest \(FixedText.decimal(low, places: 0)))"
            }
            c.gradeReason = reason
            return
        }
        var reasons: [String] = []
        var grade = Grade.good
        // Both directions grade the call by their worst sustained MOS, the received one first:
        // what this end heard is measured whole; the sent one is what the far end reported.
        func judge(_ worst: Double?, _ reason: (String) -> String) {
            guard let worst, worst < config.mosFair else { return }
            let g: Grade = worst < config.mosPoor ? .poor : .fair
            if g > grade { grade = g }
            reasons.append(reason(FixedText.decimal(worst, places: 2)))
        }
        judge(c.mosWorst) { mos in
            guard let delay = delayBudget(c, config: config) else { return "received audio MOS \(mos) sustained" }
            return "received audio MOS \(mos) sustained, delay \(FixedText.decimal(delay.total, places: 0)) ms mostly "
                + "\(delay.largest.name) (\(FixedText.decimal(delay.largest.ms, places: 0)) ms)"
        }
        judge(c.mosWorstSent) { "sent audio MOS \($0) sustained (far end's reports)" }
        for f in findings where f.severity >= .warn {
            let g: Grade = f.severity == .poor ? .poor : .fair
            if g > grade { grade = g }
            if reasons.count < 3 && !reasons.contains(f.detail) { reasons.append(f.detail) }
        }
        c.grade = grade
        c.gradeReason = reasons.isEmpty ? "no problems found" : reasons.joined(separator: "; ")
    }
}
