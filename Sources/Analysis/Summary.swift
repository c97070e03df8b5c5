import CallLog
import MaterialScanning

/// Call setup, ICE and end from the event timeline.
enum Setup {
    static func apply(_ m: CallMaterial, to c: inout CallSummary) {
        if let info = m.info {
            func s(_ k: String) -> String? { info[k]?.stringValue.flatMap { $0.isEmpty ? nil : $0 } }
            c.direction = s("direction") ?? c.direction
            c.sdk = s("sdk") ?? c.sdk
            c.sdkVersion = s("sdkVersion") ?? c.sdkVersion
            c.app = s("app") ?? c.app
            c.appVersion = s("appVersion") ?? c.appVersion
            c.platform = s("platform") ?? c.platform
            c.network = s("network") ?? c.network
            if case .array(let media)? = info["media"] {
                let kinds = media.compactMap(\.stringValue)
                if !kinds.isEmpty { c.media = kinds.joined(separator: "+") }
            }
            if case .object(let labels)? = info["labels"] { c.labelsJSON = JSONValue.object(labels).serialized() }
        }
        // Two passes over the events, by index (a filtered list walked once per metric copied
        // each event several times: 29 M instructions on 1,000 simulated calls, against 13 M).
        // The first finds what the times count from: the call's creation (`callCreate`: the
        // establish of an outgoing call, the accept of an incoming one; else `incomingCall`,
        // which only rings) and its answer (media counts from it: ringing is the callee's time).
        let events = m.events
        var created: Int64?, incoming: Int64?, firstAnswer: Int64?
        for i in events.indices where events[i].kind == "event" && events[i].action == EventName.callMetric {
            switch events[i].type {
            case "callCreate": if created == nil { created = events[i].ts }
            case "incomingCall": if incoming == nil { incoming = events[i].ts }
            case "callAnswerReceived": if firstAnswer == nil { firstAnswer = events[i].ts }
            default: break
            }
        }
        let create = created ?? incoming
        let answered = firstAnswer ?? create
        var restSent: Int64?, ringing: Int64?, answer: Int64?, connected: Int64?
        var disconnectedAt: Int64?
        var scores: [Double] = []
        for i in events.indices {
            let ts = events[i].ts
            guard events[i].kind == "event" else {
                if events[i].kind == "quality", let score = Double(events[i].type) { scores.append(score) }
                continue
            }
            switch (events[i].action, events[i].type) {
            case (EventName.callMetric, "callRestSent"): if restSent == nil, let create, ts >= create { restSent = ts - create }
            case (EventName.callMetric, "callRinging"): if ringing == nil, let create, ts >= create { ringing = ts - create }
            case (EventName.callMetric, "callAnswerReceived"): if answer == nil, let create, ts >= create { answer = ts - create }
            case (EventName.iceTimeout, let outcome): c.iceOutcome = outcome
            case (EventName.iceState, "iceDisconnected"):
                c.iceDisconnects += 1
                if disconnectedAt == nil { disconnectedAt = ts }
            case (EventName.iceState, "iceConnected"):
                if connected == nil, let answered, ts >= answered { connected = ts - answered }
                if let d = disconnectedAt {
                    c.iceDisconnectedMs += ts - d
                    disconnectedAt = nil
                }
            case (EventName.ipChange, "ipChangeStarted"): c.ipChanges += 1
            case (EventName.callState, "reconnecting"): c.reconnects += 1
            default: break
            }
        }
        c.restSentMs = restSent
        c.ringingMs = ringing
        c.answerMs = answer
        c.mediaMs = connected
        if let d = disconnectedAt { c.iceDisconnectedMs += max(0, m.lastTs - d) }
        if let end = m.end {
            c.endReason = end["reason"]?.stringValue
            c.endStatusCode = end["statusCode"]?.doubleValue.flatMap { Int(logValue: $0) } ?? end["statusCode"]?.stringValue.flatMap { Int($0) }
            c.endStatusText = end["statusText"]?.stringValue
            c.sipStatus = end["sipStatus"]?.doubleValue.flatMap { Int(logValue: $0) }
            c.sipReason = end["sipReason"]?.stringValue
        }
        if !scores.isEmpty {
            c.sdkQualityMean = scores.reduce(0, +) / Double(scores.count)
            c.sdkQualityMin = scores.min()
        }
    }
}

/// Call-level figures and the grade.
enum Summary {
    /// `worst`: the call's worst sustained audio MOS and video score, the lowest of its inbound
    /// streams' (`worstSustained`, from the windows the stream's findings were found in).
    /// `ranges`: each stream's intervals in `intervals` (in order, covering them all).
    static func apply(streams: [StreamSummary], intervals: [IntervalMetrics], ranges: [Range<Int>],
                      worst: (mos: Double?, videoScore: Double?),
                      material m: CallMaterial, config: AnalysisConfig, to c: inout CallSummary) {
        // Inbound audio and video intervals by their streams' ranges, and the means in one pass:
        // copying an interval retains its strings, and this runs for every call.
        var all = IntervalTotals(), inAudio = IntervalTotals(), inVideo = IntervalTotals()
        for (s, range) in zip(streams, ranges) {
            let inbound = s.direction == .inbound
            for i in range {
                all.add(intervals[i])
                if inbound && s.kind == .audio {
                    inAudio.add(intervals[i])
                } else if inbound && s.kind == .video {
                    inVideo.add(intervals[i])
                }
            }
        }
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
        c.iceRttMs = all.iceRttMs.value
        c.concealmentPct = inAudio.concealmentPct.value
        c.audioCodec = streams.first { $0.kind == .audio && $0.codec != nil }?.codec
        c.videoCodec = streams.first { $0.kind == .video && $0.codec != nil }?.codec
        if c.media == "unknown" {
            c.media = streams.contains { $0.kind == .video } ? "audio+video" : (streams.isEmpty ? "unknown" : "audio")
        }
        if let pair = m.snapshots.last(where: { $0.pair != nil })?.pair {
            c.localCandidateType = pair.localType
            c.remoteCandidateType = pair.remoteType
            c.transport = pair.relayProtocol ?? pair.transport
            c.relayUsed = pair.localType == "relay" || pair.remoteType == "relay"
        }
        if c.network == "unknown", let n = m.snapshots.last(where: { $0.pair?.networkType != nil })?.pair?.networkType {
            c.network = n
        }
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

    static func grade(_ c: inout CallSummary, findings: [Finding], streams: [StreamSummary], config: AnalysisConfig) {
        if findings.contains(where: { $0.code == "unanswered" }) {
            c.grade = .unanswered
            c.gradeReason = "not answered (\(c.endReason ?? "no end record"))"
            return
        }
        if let f = findings.first(where: { $0.code == "no_media" || $0.code == "ice_failure" }) {
            c.grade = .noMedia
            c.gradeReason = f.detail
            return
        }
        var reasons: [String] = []
        var grade = Grade.good
        if let worst = c.mosWorst {
            if worst < config.mosPoor {
                grade = .poor
                reasons.append("MOS \(FixedText.decimal(worst, places: 2)) sustained")
            } else if worst < config.mosFair {
                grade = .fair
                reasons.append("MOS \(FixedText.decimal(worst, places: 2)) sustained")
            }
        }
        for f in findings where f.severity >= .warn {
            let g: Grade = f.severity == .poor ? .poor : .fair
            if g > grade { grade = g }
            if reasons.count < 3 && !reasons.contains(f.detail) { reasons.append(f.detail) }
        }
        c.grade = grade
        c.gradeReason = reasons.isEmpty ? "no problems found" : reasons.joined(separator: "; ")
    }
}
