import MaterialScanning

/// Findings: what went wrong, from when, for how long.
///
/// Interval conditions count only when they persist: a sample is part of an episode when at
/// least `persistenceCount` of the last `persistenceWindow` samples are bad, so one bad sample
/// never marks a good call. An episode runs from its first bad sample to its last.
enum Findings {
    /// One sample judged by a condition: bad, bad enough to be poor, and the value judged.
    typealias Verdict = (bad: Bool, poor: Bool, value: Double?)
    typealias Episode = (start: Int64, end: Int64, poor: Bool, worst: Double?)

    /// The episodes in samples judged `flags`, sample `i` spanning `span(i)`.
    static func episodes(_ flags: [Verdict], config: AnalysisConfig, span: (Int) -> (start: Int64, end: Int64)) -> [Episode] {
        // Most streams of most calls are never bad: nothing to walk.
        guard flags.contains(where: { $0.bad }) else { return [] }
        // A call shorter than the persistence count (a short capture, a call of one window) is
        // judged on all it has: the condition must hold in every one of its samples.
        let needed = min(config.persistenceCount, flags.count)
        var result: [Episode] = []
        var current: (start: Int64, end: Int64, poorCount: Int, worst: Double?)?
        var counted = -1  // samples up to here are already in the episode's tallies
        for i in flags.indices {
            let lo = max(0, i - config.persistenceWindow + 1)
            var badInWindow = 0
            for f in flags[lo...i] where f.bad { badInWindow += 1 }
            if badInWindow >= needed && flags[i].bad {
                let first = (lo...i).first { flags[$0].bad }!
                if current == nil { current = (span(first).start, span(i).end, 0, nil) }
                current!.end = span(i).end
                for j in max(first, counted + 1)...i where flags[j].bad {
                    if flags[j].poor { current!.poorCount += 1 }
                    if let v = flags[j].value { current!.worst = max(current!.worst ?? v, v) }
                }
                counted = i
            } else if let c = current, badInWindow == 0 || !flags[i].bad && i - lo + 1 == config.persistenceWindow && badInWindow < needed {
                result.append((c.start, c.end, c.poorCount >= needed, c.worst))
                current = nil
            }
        }
        if let c = current { result.append((c.start, c.end, c.poorCount >= needed, c.worst)) }
        return result
    }

    /// Consecutive intervals merged into windows of at least `minimumMs`, so that persistence
    /// means the same span of time whatever the sampling period (1 s browsers, 10 s SDKs).
    /// `direction`: the stream's (its loss is figured per direction).
    static func windows(_ xs: ArraySlice<IntervalMetrics>, minimumMs: Int64, direction: StreamDirection) -> [IntervalMetrics] {
        var out: [IntervalMetrics] = []
        out.reserveCapacity(xs.count)
        // The current group is xs[lo..<hi].
        var lo = xs.startIndex
        func flush(_ hi: Int) {
            guard lo < hi else { return }
            let group = lo..<hi
            lo = hi
            // Made in the array and filled where it lies: filled first and then appended, each
            // window was copied into the array and the original destroyed.
            out.append(
                IntervalMetrics(
                    callID: xs[group.lowerBound].callID, streamID: xs[group.lowerBound].streamID,
                    startTs: xs[group.lowerBound].startTs, endTs: xs[hi - 1].endTs))
            fill(&out[out.count - 1], from: xs, group, direction: direction)
        }
        for i in xs.indices {
            if i > lo, xs[i].startTs - xs[i - 1].endTs > minimumMs { flush(i) }
            if xs[i].endTs - xs[lo].startTs >= minimumMs { flush(i + 1) }
        }
        flush(xs.endIndex)
        return out
    }

    /// A window's figures from its intervals `xs[group]`.
    private static func fill(
        _ w: inout IntervalMetrics, from xs: ArraySlice<IntervalMetrics>, _ group: Range<Int>, direction: StreamDirection
    ) {
        var t = IntervalTotals()
        for i in group { t.add(xs[i]) }
        w.packets = t.packets
        w.packetsLost = t.packetsLost
        if let p = w.packets, let l = w.packetsLost {
            // Received: lost ÷ (lost + received); sent: lost ÷ sent, as per interval.
            w.lossPct = Intervals.lossPercent(lost: l, packets: p, direction: direction)
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
    }

    /// The conditions judged on a stream's windows, in the order their findings are listed.
    /// Plain cases rather than closures: a stream's rules were built, with their captures, for
    /// every stream of every call.
    private enum StreamRule: CaseIterable {
        case highLoss, highJitter, highRTT, highConcealment, playoutDelay, lowFPS, longFreeze, bandwidthLimited, cpuLimited

        var code: String {
            switch self {
            case .highLoss: "high_loss"
            case .highJitter: "high_jitter"
            case .highRTT: "high_rtt"
            case .highConcealment: "high_concealment"
            case .playoutDelay: "playout_delay"
            case .lowFPS: "low_fps"
            case .longFreeze: "long_freeze"
            case .bandwidthLimited: "bandwidth_limited"
            case .cpuLimited: "cpu_limited"
            }
        }

        func applies(to s: StreamSummary) -> Bool {
            let inbound = s.direction == .inbound
            switch self {
            case .highLoss, .highJitter: return inbound
            case .highRTT, .highConcealment, .playoutDelay: return inbound && s.kind == .audio
            case .lowFPS, .longFreeze: return inbound && s.kind == .video
            case .bandwidthLimited, .cpuLimited: return !inbound && s.kind == .video
            }
        }

        func verdict(_ i: IntervalMetrics, _ config: AnalysisConfig) -> Verdict {
            switch self {
            case .highLoss:
                guard let l = i.lossPct, (i.packets ?? 0) + (i.packetsLost ?? 0) >= 10 else { return (false, false, nil) }
                return (l > config.lossWarnPct, l > config.lossPoorPct, l)
            case .highJitter:
                guard let j = i.jitterMs else { return (false, false, nil) }
                return (j > config.jitterWarnMs, false, j)
            case .highRTT:
                guard let r = i.rttMs else { return (false, false, nil) }
                return (r > config.rttWarnMs, r > config.rttPoorMs, r)
            case .highConcealment:
                guard let c = i.concealmentPct else { return (false, false, nil) }
                return (c > config.concealmentWarnPct, false, c)
            case .playoutDelay:
                // The buffer dominates the delay budget: above the threshold, and larger than the
                // network's one-way delay and than packetisation.
                guard let jb = i.jitterBufferMs else { return (false, false, nil) }
                let network = (i.rttMs ?? i.iceRttMs ?? 0) / 2
                let bad = jb > config.playoutWarnMs && jb > network && jb > config.packetTimeMs + config.deviceAllowanceMs
                return (bad, false, jb)
            case .lowFPS:
                guard let f = i.fps, (i.packets ?? 0) > 0 else { return (false, false, nil) }
                return (f < config.lowFps, false, f)
            case .longFreeze:
                let span = Double(i.endTs - i.startTs)
                guard let ms = i.freezeMs, span > 0 else { return (false, false, nil) }
                let pct = 100 * Double(ms) / span
                return (pct > config.freezeWarnPct, pct > config.freezePoorPct, pct)
            case .bandwidthLimited: return (i.qualityLimitation == "bandwidth", false, nil)
            case .cpuLimited: return (i.qualityLimitation == "cpu", false, nil)
            }
        }

        func describe(_ v: Double, kind: MediaKind) -> String {
            switch self {
            case .highLoss: "\(kind.rawValue) loss up to \(FixedText.decimal(v, places: 1)) %"
            case .highJitter: "\(kind.rawValue) jitter up to \(FixedText.decimal(v, places: 0)) ms"
            case .highRTT: "round-trip time up to \(FixedText.decimal(v, places: 0)) ms"
            case .highConcealment: "\(FixedText.decimal(v, places: 1)) % of audio concealed"
            case .playoutDelay: "jitter buffer holds audio up to \(FixedText.decimal(v, places: 0)) ms, more than the network delays it"
            case .lowFPS: "video at \(FixedText.decimal(v, places: 1)) fps"
            case .longFreeze: "video frozen \(FixedText.decimal(v, places: 0)) % of the time"
            case .bandwidthLimited: "sent video limited by bandwidth"
            case .cpuLimited: "sent video limited by cpu"
            }
        }
    }

    /// `xs`: the stream's intervals merged into `windows` of `config.windowMs`.
    static func forStream(_ s: StreamSummary, windows xs: [IntervalMetrics], config: AnalysisConfig) -> [Finding] {
        var out: [Finding] = []
        var flags: [Verdict] = []
        flags.reserveCapacity(xs.count)
        for rule in StreamRule.allCases where rule.applies(to: s) {
            flags.removeAll(keepingCapacity: true)
            for i in xs.indices { flags.append(rule.verdict(xs[i], config)) }
            for e in episodes(flags, config: config, span: { (xs[$0].startTs, xs[$0].endTs) }) {
                let worst = e.worst
                out.append(
                    Finding(
                        callID: s.callID, code: rule.code, severity: e.poor ? .poor : .warn, startTs: e.start,
                        durationMs: e.end - e.start, streamID: s.streamID, value: worst,
                        detail: rule.describe(worst ?? 0, kind: s.kind)))
            }
        }
        if s.counterResets > 0 {
            out.append(
                Finding(
                    callID: s.callID, code: "counter_reset", severity: .info, startTs: s.startTs, durationMs: 0,
                    streamID: s.streamID, value: Double(s.counterResets), detail: "statistics counters restarted \(s.counterResets)×"))
        }
        return out
    }

    /// `ranges`: each stream's intervals in `intervals`; `silent`: per interval, whether its
    /// audio was silence (`Intervals.silent`).
    /// `fromMediaServer`: per stream, whether its peer connection is to a media server (as the
    /// dump says: `PeerConnectionSummary.role`).
    static func forCall(
        _ c: CallSummary, streams: [StreamSummary], intervals: [IntervalMetrics], ranges: [Range<Int>], silent: [Bool],
        fromMediaServer: [Bool] = [], material m: CallMaterial, config: AnalysisConfig
    ) -> [Finding] {
        var out: [Finding] = []
        func add(_ code: String, _ severity: Severity, _ start: Int64, _ duration: Int64, _ value: Double?, _ detail: String) {
            out.append(Finding(callID: c.callID, code: code, severity: severity, startTs: start, durationMs: duration, value: value, detail: detail))
        }
        let inboundPackets = streams.filter { $0.direction == .inbound }.reduce(0) { $0 + $1.packets }
        // A call of data channels alone (no stream carried a packet either way, its channels
        // opened or carried messages) has no media to miss: it is not "no media".
        if let data = dataChannelUse(m), !streams.contains(where: { $0.packets > 0 }) {
            add(
                "data_channels_only", .info, c.startTs, c.durationMs, data.messages,
                "data channels only (\(data.channels) channel(s), \(FixedText.decimal(data.messages, places: 0)) messages); no audio or video")
            return out + laterFindings(c, material: m, config: config)
        }
        let iceConnected = m.events.contains { $0.action == "iceState" && $0.type == "iceConnected" }
        let failedEnd = ["failed", "timedOut"].contains(c.endReason ?? "")
        // Outgoing calls are answered at callAnswerReceived; incoming ones when accepted (callCreate).
        let accepted = c.direction == "incoming" && m.events.contains { $0.action == "callMetric" && $0.type == "callCreate" }
        // The SDK scores a call's media only once it flows (Cisco REM: from about 5 s after remote
        // media starts): a call with quality callbacks was answered.
        let scored = c.sdkQualityMin != nil
        let answered = c.answerMs != nil || iceConnected || accepted || scored
        let unansweredEnd = ["rejected", "timedOut", "terminatedLocally", "terminatedRemotely", "undefined"].contains(c.endReason ?? "")
        if inboundPackets == 0 && !answered && !iceConnected && unansweredEnd && c.endReason != nil {
            add("unanswered", .info, c.startTs, c.durationMs, nil, "not answered (\(c.endReason!))")
        } else if inboundPackets == 0 {
            if !streams.isEmpty || failedEnd || (!iceConnected && m.events.contains { $0.action == "callMetric" }) {
                let iceFailed = !iceConnected && (c.iceOutcome == "iceNoRelay" || failedEnd)
                add(
                    iceFailed ? "ice_failure" : "no_media", .poor, c.startTs, c.durationMs, nil,
                    iceFailed ? "ICE never connected; no media" : "no media received")
            }
        }
        // One-way audio: inbound audio stalls while outbound audio flows, persistently. A
        // capture's outbound rows are its captured streams as their receivers reported them:
        // they echo its inbound rows and say nothing of what flows one way.
        if streams.contains(where: { $0.direction == .outbound && $0.kind == .audio && $0.source != "wire" }) {
            // The two directions' audio intervals, as spans and packets (not copies of whole intervals).
            var received: [(start: Int64, end: Int64, packets: Int64)] = []
            var sent: [(start: Int64, end: Int64, packets: Int64)] = []
            for (s, range) in zip(streams, ranges) where s.kind == .audio && !(s.direction == .outbound && s.source == "wire") {
                for i in range {
                    let span = (start: intervals[i].startTs, end: intervals[i].endTs, packets: intervals[i].packets ?? 0)
                    if s.direction == .inbound { received.append(span) } else { sent.append(span) }
                }
            }
            // Align by interval end: inbound packets received in the same period. Inbound
            // intervals by start: those overlapping one outbound interval lie just before the
            // first that starts after it ends, no earlier than the longest interval allows.
            received.sort { $0.start < $1.start }
            sent.sort { $0.start < $1.start }
            let longest = received.map { $0.end - $0.start }.max() ?? 0
            let flags = sent.map { o -> Verdict in
                var packets: Int64 = 0
                var j = received.partitioningIndex { $0.start >= o.end } - 1
                while j >= 0, received[j].start >= o.start - longest {
                    if received[j].end > o.start { packets += received[j].packets }
                    j -= 1
                }
                let expectedReceived = Double(o.end - o.start) / 1000 * 10  // > 10 packets/s of speech
                return (o.packets > 0 && Double(packets) < expectedReceived * 0.05, true, nil)
            }
            let farEndQuiet = FarEndQuiet(
                streams: streams, intervals: intervals, ranges: ranges, fromMediaServer: fromMediaServer, material: m)
            for e in episodes(flags, config: config, span: { (sent[$0].start, sent[$0].end) })
            where inboundPackets > 0 || !received.isEmpty {
                if let why = farEndQuiet.reason(from: e.start, to: e.end) {
                    add("remote_muted", .info, e.start, e.end - e.start, nil, "no audio received while \(why): the far end sends none (muted)")
                } else {
                    add("one_way_audio", .poor, e.start, e.end - e.start, nil, "audio is sent but none is received")
                }
            }
        }
        // Silence: a stream's audio that is persistently silence while its packets flow (the far
        // end's muted or disabled track, keep-alives without payload; this end's muted source).
        for (s, range) in zip(streams, ranges) where s.kind == .audio && s.source != "wire" && !range.isEmpty {
            let inbound = s.direction == .inbound
            let flags = range.map { i -> Verdict in
                (silent[i] && (!inbound || (intervals[i].packets ?? 0) > 0), false, nil)
            }
            for e in episodes(flags, config: config, span: { (intervals[range.lowerBound + $0].startTs, intervals[range.lowerBound + $0].endTs) }) {
                out.append(
                    Finding(
                        callID: c.callID, code: inbound ? "remote_muted" : "local_muted", severity: .info, startTs: e.start,
                        durationMs: e.end - e.start, streamID: s.streamID, value: nil,
                        detail: inbound
                            ? "received audio is silence: the far end muted, or this end never played it out (its level is measured where it plays)"
                            : "sent audio is silence (muted here)"))
            }
        }
        return out + laterFindings(c, material: m, config: config)
    }

    /// The call-level findings that do not judge its media: setup, ICE, network, clock.
    private static func laterFindings(_ c: CallSummary, material m: CallMaterial, config: AnalysisConfig) -> [Finding] {
        var out: [Finding] = []
        func add(_ code: String, _ severity: Severity, _ start: Int64, _ duration: Int64, _ value: Double?, _ detail: String) {
            out.append(Finding(callID: c.callID, code: code, severity: severity, startTs: start, durationMs: duration, value: value, detail: detail))
        }
        let iceConnected = m.events.contains { $0.action == "iceState" && $0.type == "iceConnected" }
        if let media = c.mediaMs, media > config.setupWarnMs {
            add(
                "slow_setup", media > config.setupPoorMs ? .poor : .warn, c.startTs, media, Double(media),
                "media after \(FixedText.decimal(Double(media) / 1000, places: 1)) s")
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
            add(
                "ice_disconnected", c.iceDisconnectedMs > 5_000 ? .warn : .info, c.startTs, c.iceDisconnectedMs, Double(c.iceDisconnects),
                "ICE disconnected \(c.iceDisconnects)× for \(FixedText.decimal(Double(c.iceDisconnectedMs) / 1000, places: 1)) s")
        }
        if let skew = c.clockSkewMs {
            add("clock_skew", .info, c.startTs, 0, Double(skew), "statistics clock differs from the agent clock by \(skew) ms")
        }
        return out
    }

    /// The call's data channels, if any opened or carried messages: how many (the most a peer
    /// connection reported, summed over them) and their messages both ways (the latest totals,
    /// summed over peer connections).
    static func dataChannelUse(_ m: CallMaterial) -> (channels: Int, messages: Double)? {
        var byPC: [String: (channels: Int, open: Int, messages: Double)] = [:]
        for s in m.snapshots {
            guard let d = s.dataChannels else { continue }
            let messages = (d.messagesSent.isFinite ? d.messagesSent : 0) + (d.messagesReceived.isFinite ? d.messagesReceived : 0)
            var pc = byPC[s.peerConnection] ?? (0, 0, 0)
            pc = (max(pc.channels, d.channels), max(pc.open, d.open), max(pc.messages, messages))
            byPC[s.peerConnection] = pc
        }
        guard byPC.values.contains(where: { $0.open > 0 || $0.messages > 0 }) else { return nil }
        return (byPC.values.reduce(0) { $0 + $1.channels }, byPC.values.reduce(0) { $0 + $1.messages })
    }
}

/// What says the far end sent no audio on purpose while this end heard none. The statistics
/// cannot tell a sender that stops sending from a stream lost on the way: only an announcement,
/// or a signalled audio slot that never carried a packet while the far end's video arrives (an
/// SFU forwards nothing for a participant who joined muted), says so. Audio that flowed and then
/// stopped while video goes on stays one-way audio: a mute and a failure look the same there.
struct FarEndQuiet {
    /// Spans in which received video carried payload (the path delivers media).
    private var video: [(start: Int64, end: Int64)] = []
    /// Spans of received audio streams that carried packets at some time.
    private var heardAudio: [(start: Int64, end: Int64)] = []
    /// Spans the far end said it held the call (`callState` `remoteHold` to `remoteUnhold`).
    private var announced: [(start: Int64, end: Int64)] = []
    /// Spans of received audio slots from a media server that never carried a packet.
    private var idleServerSlots: [(start: Int64, end: Int64)] = []

    init(
        streams: [StreamSummary], intervals: [IntervalMetrics], ranges: [Range<Int>], fromMediaServer: [Bool] = [],
        material m: CallMaterial
    ) {
        for (k, (s, range)) in zip(streams, ranges).enumerated() where s.direction == .inbound {
            if s.kind == .audio, s.packets > 0 { heardAudio.append((s.startTs, s.endTs)) }
            if s.kind == .audio, s.packets == 0, k < fromMediaServer.count, fromMediaServer[k] {
                idleServerSlots.append((s.startTs, s.endTs))
            }
            guard s.kind == .video else { continue }
            for i in range where (intervals[i].bitrateKbps ?? 0) > 0 && (intervals[i].packets ?? 0) > 0 {
                video.append((intervals[i].startTs, intervals[i].endTs))
            }
        }
        var open: Int64?
        for e in m.events where e.action == "callState" {
            switch e.type {
            case "remoteHold": open = open ?? e.ts
            case "remoteUnhold":
                if let from = open { announced.append((from, e.ts)) }
                open = nil
            default: break
            }
        }
        if let from = open { announced.append((from, .max)) }
    }

    /// Why the far end is taken as muted over `start..<end`, or nil: an announcement covering
    /// at least half of it; or no received audio stream that ever carried a packet overlaps it
    /// while video arrives over at least half of it, or while a media server's audio slots
    /// overlap it that never carried one (a server forwards audio only from participants who
    /// send it: each silent slot is a participant muted or gone, not a path that fails one way).
    func reason(from start: Int64, to end: Int64) -> String? {
        let span = Double(max(1, end - start))
        func covered(_ spans: [(start: Int64, end: Int64)]) -> Double {
            spans.reduce(0.0) { $0 + Double(max(0, min(end, $1.end) - max(start, $1.start))) } / span
        }
        if covered(announced) >= 0.5 { return "the far end holds the call" }
        // Spans that only touch the episode do not overlap it (a pc closed as it began).
        let audioEverHeard = heardAudio.contains { $0.start < end && $0.end > start }
        if !audioEverHeard && covered(video) >= 0.5 { return "its video arrives and its audio never did" }
        if !audioEverHeard && idleServerSlots.contains(where: { $0.start <= end && $0.end >= start }) {
            return "the media server forwards audio on none of its slots"
        }
        return nil
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
