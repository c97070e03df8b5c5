import Foundation

/// Findings: what went wrong, from when, for how long.
///
/// Interval conditions count only when they persist: a sample is part of an episode when at
/// least `persistenceCount` of the last `persistenceWindow` samples are bad, so one bad sample
/// never marks a good call. An episode runs from its first bad sample to its last.
enum Findings {
    struct Rule {
        var code: String
        var test: (IntervalMetrics) -> (bad: Bool, poor: Bool, value: Double?)
        var describe: (Double) -> String
    }

    static func episodes(_ xs: [IntervalMetrics], config: AnalysisConfig,
                         _ test: (IntervalMetrics) -> (bad: Bool, poor: Bool, value: Double?))
        -> [(start: Int64, end: Int64, poor: Bool, worst: Double?)] {
        let flags = xs.map(test)
        var result: [(start: Int64, end: Int64, poor: Bool, worst: Double?)] = []
        var current: (start: Int64, end: Int64, poorCount: Int, worst: Double?)?
        var counted = -1  // samples up to here are already in the episode's tallies
        for i in xs.indices {
            let lo = max(0, i - config.persistenceWindow + 1)
            var badInWindow = 0
            for f in flags[lo...i] where f.bad { badInWindow += 1 }
            if badInWindow >= config.persistenceCount && flags[i].bad {
                let first = (lo...i).first { flags[$0].bad }!
                if current == nil { current = (xs[first].startTs, xs[i].endTs, 0, nil) }
                current!.end = xs[i].endTs
                for j in max(first, counted + 1)...i where flags[j].bad {
                    if flags[j].poor { current!.poorCount += 1 }
                    if let v = flags[j].value { current!.worst = max(current!.worst ?? v, v) }
                }
                counted = i
            } else if let c = current, badInWindow == 0 || !flags[i].bad && i - lo + 1 == config.persistenceWindow && badInWindow < config.persistenceCount {
                result.append((c.start, c.end, c.poorCount >= config.persistenceCount, c.worst))
                current = nil
            }
        }
        if let c = current { result.append((c.start, c.end, c.poorCount >= config.persistenceCount, c.worst)) }
        return result
    }

    /// Consecutive intervals merged into windows of at least `minimumMs`, so that persistence
    /// means the same span of time whatever the sampling period (1 s browsers, 10 s SDKs).
    static func windows(_ xs: ArraySlice<IntervalMetrics>, minimumMs: Int64) -> [IntervalMetrics] {
        var out: [IntervalMetrics] = []
        out.reserveCapacity(xs.count)
        // The current group is xs[lo..<hi].
        var lo = xs.startIndex
        func flush(_ hi: Int) {
            guard lo < hi else { return }
            let group = lo..<hi
            lo = hi
            var w = IntervalMetrics(callID: xs[group.lowerBound].callID, streamID: xs[group.lowerBound].streamID,
                                    startTs: xs[group.lowerBound].startTs, endTs: xs[hi - 1].endTs)
            var t = IntervalTotals()
            for i in group { t.add(xs[i]) }
            w.packets = t.packets
            w.packetsLost = t.packetsLost
            if let p = w.packets, let l = w.packetsLost, p + l > 0 {
                // Inbound loss is lost/(lost+received); outbound was computed the same way per interval.
                w.lossPct = 100 * Double(l) / Double(p + l)
            }
            w.jitterMs = t.jitterMs.value
            w.rttMs = t.rttMs.value
            w.iceRttMs = t.iceRttMs.value
            w.bitrateKbps = t.bitrateKbps.value
            w.concealmentPct = t.concealmentPct.value
            w.jitterBufferMs = t.jitterBufferMs.value
            w.rFactor = t.rFactor.value
            w.mosCQ = t.mosCQ.value
            w.mosLQ = t.mosLQ.value
            w.fps = t.fps.value
            w.videoScore = t.videoScore.value
            w.freezeMs = t.freezeMs
            w.freezeCount = t.freezeCount
            // The reason that limited the longest time (ties: the first name); a window has few.
            var byReason: [(reason: String, ms: Int64)] = []
            for i in group {
                guard let q = xs[i].qualityLimitation else { continue }
                let ms = xs[i].endTs - xs[i].startTs
                if let k = byReason.firstIndex(where: { $0.reason == q }) { byReason[k].ms += ms } else { byReason.append((q, ms)) }
            }
            w.qualityLimitation = byReason.max { ($0.ms, $1.reason) < ($1.ms, $0.reason) }?.reason
            out.append(w)
        }
        for i in xs.indices {
            if i > lo, xs[i].startTs - xs[i - 1].endTs > minimumMs { flush(i) }
            if xs[i].endTs - xs[lo].startTs >= minimumMs { flush(i + 1) }
        }
        flush(xs.endIndex)
        return out
    }

    /// `xs`: the stream's intervals merged into `windows` of `config.windowMs`.
    static func forStream(_ s: StreamSummary, windows xs: [IntervalMetrics], config: AnalysisConfig) -> [Finding] {
        var rules: [Rule] = []
        let inbound = s.direction == .inbound
        if inbound {
            rules.append(Rule(code: "high_loss", test: { i in
                guard let l = i.lossPct, (i.packets ?? 0) + (i.packetsLost ?? 0) >= 10 else { return (false, false, nil) }
                return (l > config.lossWarnPct, l > config.lossPoorPct, l)
            }, describe: { String(format: "%@ loss up to %.1f %%", s.kind.rawValue, $0) }))
            rules.append(Rule(code: "high_jitter", test: { i in
                guard let j = i.jitterMs else { return (false, false, nil) }
                return (j > config.jitterWarnMs, false, j)
            }, describe: { String(format: "%@ jitter up to %.0f ms", s.kind.rawValue, $0) }))
        }
        if inbound && s.kind == .audio {
            rules.append(Rule(code: "high_rtt", test: { i in
                guard let r = i.rttMs else { return (false, false, nil) }
                return (r > config.rttWarnMs, r > config.rttPoorMs, r)
            }, describe: { String(format: "round-trip time up to %.0f ms", $0) }))
            rules.append(Rule(code: "high_concealment", test: { i in
                guard let c = i.concealmentPct else { return (false, false, nil) }
                return (c > config.concealmentWarnPct, false, c)
            }, describe: { String(format: "%.1f %% of audio concealed", $0) }))
        }
        if inbound && s.kind == .video {
            rules.append(Rule(code: "low_fps", test: { i in
                guard let f = i.fps, (i.packets ?? 0) > 0 else { return (false, false, nil) }
                return (f < config.lowFps, false, f)
            }, describe: { String(format: "video at %.1f fps", $0) }))
            rules.append(Rule(code: "long_freeze", test: { i in
                let span = Double(i.endTs - i.startTs)
                guard let ms = i.freezeMs, span > 0 else { return (false, false, nil) }
                let pct = 100 * Double(ms) / span
                return (pct > config.freezeWarnPct, pct > 50, pct)
            }, describe: { String(format: "video frozen %.0f %% of the time", $0) }))
        }
        if !inbound && s.kind == .video {
            for reason in ["bandwidth", "cpu"] {
                rules.append(Rule(code: "\(reason)_limited", test: { i in (i.qualityLimitation == reason, false, nil) },
                                  describe: { _ in "sent video limited by \(reason)" }))
            }
        }
        var out: [Finding] = []
        for rule in rules {
            for e in episodes(xs, config: config, rule.test) {
                let worst = e.worst
                out.append(Finding(callID: s.callID, code: rule.code, severity: e.poor ? .poor : .warn, startTs: e.start,
                                   durationMs: e.end - e.start, streamID: s.streamID, value: worst,
                                   detail: rule.describe(worst ?? 0)))
            }
        }
        if s.counterResets > 0 {
            out.append(Finding(callID: s.callID, code: "counter_reset", severity: .info, startTs: s.startTs, durationMs: 0,
                               streamID: s.streamID, value: Double(s.counterResets), detail: "statistics counters restarted \(s.counterResets)×"))
        }
        return out
    }

    static func forCall(_ c: CallSummary, streams: [StreamSummary], intervals: [IntervalMetrics],
                        material m: CallMaterial, config: AnalysisConfig) -> [Finding] {
        var out: [Finding] = []
        func add(_ code: String, _ severity: Severity, _ start: Int64, _ duration: Int64, _ value: Double?, _ detail: String) {
            out.append(Finding(callID: c.callID, code: code, severity: severity, startTs: start, durationMs: duration, value: value, detail: detail))
        }
        let inboundPackets = streams.filter { $0.direction == .inbound }.reduce(0) { $0 + $1.packets }
        let iceConnected = m.events.contains { $0.action == "iceState" && $0.type == "iceConnected" }
        let failedEnd = ["failed", "timedOut"].contains(c.endReason ?? "")
        // Outgoing calls are answered at callAnswerReceived; incoming ones when accepted (callCreate).
        let accepted = c.direction == "incoming" && m.events.contains { $0.action == "callMetric" && $0.type == "callCreate" }
        let answered = c.answerMs != nil || iceConnected || accepted
        let unansweredEnd = ["rejected", "timedOut", "terminatedLocally", "terminatedRemotely", "undefined"].contains(c.endReason ?? "")
        if inboundPackets == 0 && !answered && !iceConnected && unansweredEnd && c.endReason != nil {
            add("unanswered", .info, c.startTs, c.durationMs, nil, "not answered (\(c.endReason!))")
        } else if inboundPackets == 0 {
            if !streams.isEmpty || failedEnd || (!iceConnected && m.events.contains { $0.action == "callMetric" }) {
                let iceFailed = !iceConnected && (c.iceOutcome == "iceNoRelay" || failedEnd)
                add(iceFailed ? "ice_failure" : "no_media", .poor, c.startTs, c.durationMs, nil,
                    iceFailed ? "ICE never connected; no media" : "no media received")
            }
        }
        // One-way audio: inbound audio stalls while outbound audio flows, persistently.
        let inAudioIDs = streams.filter { $0.direction == .inbound && $0.kind == .audio }.map(\.streamID)
        let outAudioIDs = streams.filter { $0.direction == .outbound && $0.kind == .audio }.map(\.streamID)
        let inAudio = intervals.filter { inAudioIDs.contains($0.streamID) }
        let outAudio = outAudioIDs.isEmpty ? [] : intervals.filter { outAudioIDs.contains($0.streamID) }
        if !outAudio.isEmpty {
            // Align by interval end: inbound packets received in the same period. Inbound
            // intervals by start: those overlapping one outbound interval lie just before the
            // first that starts after it ends, no earlier than the longest interval allows.
            let received = inAudio.map { (start: $0.startTs, end: $0.endTs, packets: $0.packets ?? 0) }.sorted { $0.start < $1.start }
            let longest = received.map { $0.end - $0.start }.max() ?? 0
            let flowing = outAudio.sorted { $0.startTs < $1.startTs }.map { o -> IntervalMetrics in
                var x = o
                var packets: Int64 = 0
                var j = received.partitioningIndex { $0.start >= o.endTs } - 1
                while j >= 0, received[j].start >= o.startTs - longest {
                    if received[j].end > o.startTs { packets += received[j].packets }
                    j -= 1
                }
                x.packetsLost = packets  // reuse: packets received in this period
                return x
            }
            let eps = episodes(flowing, config: config) { o in
                let sent = o.packets ?? 0
                let expectedReceived = Double(o.endTs - o.startTs) / 1000 * 10  // > 10 packets/s of speech
                return (sent > 0 && Double(o.packetsLost ?? 0) < expectedReceived * 0.05, true, nil)
            }
            for e in eps where inboundPackets > 0 || !inAudio.isEmpty {
                add("one_way_audio", .poor, e.start, e.end - e.start, nil, "audio is sent but none is received")
            }
        }
        if let media = c.mediaMs, media > config.setupWarnMs {
            add("slow_setup", media > config.setupPoorMs ? .poor : .warn, c.startTs, media, Double(media),
                String(format: "media after %.1f s", Double(media) / 1000))
        }
        if c.iceOutcome == "iceNoRelay" && iceConnected {
            add("ice_gathering_timeout", .info, c.startTs, 0, nil, "ICE gathering timed out without a relay candidate")
        }
        if c.relayUsed { add("relay_used", .info, c.startTs, c.durationMs, nil, "media relayed through TURN") }
        if c.transport == "tcp" || c.transport == "tls" {
            add("tcp_used", .warn, c.startTs, c.durationMs, nil, "media over \(c.transport!.uppercased())")
        }
        for e in m.events where e.action == "ipChange" && e.type == "ipChangeStarted" {
            let end = m.events.first { $0.action == "ipChange" && $0.type == "ipChangeEnded" && $0.ts >= e.ts }?.ts ?? e.ts
            add("ip_change", .info, e.ts, end - e.ts, nil, "network address changed during the call")
        }
        if c.iceDisconnects > 0 {
            add("ice_disconnected", c.iceDisconnectedMs > 5_000 ? .warn : .info, c.startTs, c.iceDisconnectedMs, Double(c.iceDisconnects),
                String(format: "ICE disconnected %d× for %.1f s", c.iceDisconnects, Double(c.iceDisconnectedMs) / 1000))
        }
        if let skew = c.clockSkewMs {
            add("clock_skew", .info, c.startTs, 0, Double(skew), "statistics clock differs from the agent clock by \(skew) ms")
        }
        return out
    }
}

extension RandomAccessCollection where Index == Int {
    /// The first index whose element satisfies `belongs`, for a predicate false then true
    /// along the collection (binary search).
    func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var lo = startIndex, hi = endIndex
        while lo < hi {
            let mid = lo + (hi - lo) / 2
            if belongs(self[mid]) { hi = mid } else { lo = mid + 1 }
        }
        return lo
    }
}
