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
            c.sdkCallID = s("callId")
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
        var scores: [(ts: Int64, score: Double)] = []
        for i in events.indices {
            let ts = events[i].ts
            guard events[i].kind == "event" else {
                if events[i].kind == "quality", let score = Double(events[i].type) { scores.append((ts, score)) }
                continue
            }
            switch (events[i].action, events[i].type) {
            case (EventName.callMetric, "callRestSent"): if restSent == nil, let create, ts >= create { restSent = ts - create }
            case (EventName.callMetric, "callRinging"): if ringing == nil, let create, ts >= create { ringing = ts - create }
            case (EventName.callMetric, "callAnswerReceived"): if answer == nil, let create, ts >= create { answer = ts - create }
            case (EventName.iceTimeout, let outcome):
                c.iceOutcome = outcome
                if c.iceGatheringMs == nil, let create, ts >= create { c.iceGatheringMs = ts - create }
            case ("iceGathering", "complete"), ("iceGatheringState", "complete"):
                // Browsers (the agent, imported dumps) tell gathering's end by its state.
                if c.iceGatheringMs == nil, let create, ts >= create { c.iceGatheringMs = ts - create }
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
        c.sdkQualityMean = timeWeightedScore(scores, until: m.lastTs)
        c.sdkQualityMin = scores.map(\.score).min()
    }

    /// The SDK's score over time: SDKs report it when it changes (Cisco REM's
    /// `onConnectionQualityChanged`), so each value holds until the next one and the last until
    /// the call's last record. Scores in time order; when they span no time, their plain mean.
    static func timeWeightedScore(_ scores: [(ts: Int64, score: Double)], until end: Int64) -> Double? {
        guard !scores.isEmpty else { return nil }
        var sum = 0.0, weight = 0.0
        for (k, s) in scores.enumerated() {
            let next = k + 1 < scores.count ? scores[k + 1].ts : max(end, s.ts)
            let held = Double(max(0, next - s.ts))
            sum += s.score * held
            weight += held
        }
        guard weight > 0 else { return scores.reduce(0) { $0 + $1.score } / Double(scores.count) }
        return sum / weight
    }
}
