import CallLog

/// A call's timeline: setup events, mid-call episodes (hold, mute, outages, an IP change) and
/// how it ends. The media simulation follows it second by second.
public struct CallScript: Sendable {
    public struct Event: Sendable {
        public var ts: Int64
        public var action: String
        public var type: String
        public var detail: JSONObject = JSONObject()
    }

    public enum EpisodeKind: Sendable {
        case hold, remoteHold, mute, videoOff
        /// The remote side stops sending video (no event on our side; a pause on inbound video).
        case remoteVideoPause
        /// No media either way while the SDK reconnects.
        case outage
        /// Inbound audio stops for good.
        case oneWayAudio
        /// The network changes: outage, then a new peer connection.
        case ipChange
    }

    /// Seconds after `connectMs`, `from` inclusive, `to` exclusive.
    public struct Episode: Sendable {
        public var kind: EpisodeKind
        public var from: Int
        public var to: Int
    }

    public struct End: Sendable {
        public var ts: Int64
        public var reason: String
        public var statusCode: Int?
        public var statusText: String?
        public var sipStatus: Int?
        public var sipReason: String?
        public var durationMs: Int64
    }

    public var startMs: Int64
    /// All events, in time order.
    public var events: [Event] = []
    /// When ICE connected; nil if media never flowed.
    public var connectMs: Int64?
    /// Seconds of media after `connectMs`.
    public var mediaSeconds = 0
    /// For calls whose ICE failed: how long statistics were polled while checking.
    public var checkingUntilMs: Int64?
    public var episodes: [Episode] = []
    /// The network after an IP change, for the second `call` record.
    public var networkAfterChange: String?
    public var end: End

    /// Kandy's ICE collection timeout x: iceOneRelay fires in (x, 2x), iceNoRelay at 2x.
    static let iceCollectionTimeoutMs: Int64 = 2_000
    /// Cisco REM's reconnection schedule (seed excerpts §4).
    static let retryDelaysMs: [Int64] = [500, 1_000, 2_000, 4_000, 4_000, 4_000]

    init(
        profile: NetworkProfile, direction: String, hasVideo: Bool, sdk: SDKKind, startMs: Int64,
        rng: inout Xoshiro256
    ) {
        self.startMs = startMs
        end = End(ts: startMs, reason: "undefined", durationMs: 0)
        var t = startMs
        func add(_ ts: Int64, _ action: String, _ type: String, _ detail: JSONObject = JSONObject()) {
            events.append(Event(ts: ts, action: action, type: type, detail: detail))
        }
        func ms(_ lo: Double, _ hi: Double) -> Int64 { Int64(rng.uniform(lo, hi)) }

        // Unanswered calls: rejected, not answered, or refused by the server.
        let unanswered: String? =
            profile == .iceFailure
            ? nil
            : rng.pick([(nil, 90.0), ("rejected", 4), ("timedOut", 4), ("failed", 2)])

        let x = CallScript.iceCollectionTimeoutMs
        func gather() {
            let kind: String
            switch profile {
            case .iceRelayFallback: kind = rng.chance(0.6) ? "iceOneRelay" : "iceNoRelay"
            case .iceFailure: kind = rng.chance(0.8) ? "iceNoRelay" : "iceNormal"
            default: kind = rng.chance(0.96) ? "iceNormal" : "iceOneRelay"
            }
            t += kind == "iceNormal" ? ms(150, 1_500) : kind == "iceOneRelay" ? ms(Double(x) + 50, Double(2 * x) - 50) : 2 * x
            add(t, EventName.iceTimeout, kind)
            t += ms(10, 80)
            add(t, EventName.callMetric, "callRestSent")
        }

        var answerMs: Int64
        if direction == "outgoing" {
            add(t, EventName.callMetric, "callCreate")
            gather()
            if unanswered == "failed" {
                finishUnanswered(at: t + ms(800, 8_000), reason: "failed", sdk: sdk, rng: &rng)
                return
            }
            t += ms(200, 1_500)
            add(t, EventName.callMetric, "callRinging")
            if let reason = unanswered {
                let wait = reason == "rejected" ? ms(2_000, 15_000) : ms(30_000, 60_000)
                finishUnanswered(at: t + wait, reason: reason, sdk: sdk, rng: &rng)
                return
            }
            t += Int64(min(40, max(1, rng.logNormal(median: 6, sigma: 0.6))) * 1_000)
            add(t, EventName.callMetric, "callAnswerReceived")
            answerMs = t
        } else {
            add(t, EventName.callMetric, "incomingCall")
            if let reason = unanswered {
                let wait = reason == "rejected" ? ms(1_500, 10_000) : ms(30_000, 45_000)
                finishUnanswered(at: t + wait, reason: reason, sdk: sdk, rng: &rng)
                return
            }
            t += Int64(min(25, max(0.8, rng.logNormal(median: 4, sigma: 0.6))) * 1_000)
            add(t, EventName.callMetric, "callCreate")
            gather()
            answerMs = t
        }

        if profile == .iceFailure {
            let failAt = answerMs + ms(8_000, 30_000)
            checkingUntilMs = failAt
            add(failAt, EventName.iceState, "iceDisconnected", ["state": "failed"])
            let endAt = failAt + ms(200, 2_000)
            end = CallScript.failedEnd(at: endAt, connectedMs: 0, sdk: sdk, sip: 488, rng: &rng)
            return
        }

        let connect = answerMs + (profile == .iceRelayFallback ? ms(2_000, 8_000) : ms(80, 600))
        connectMs = connect
        add(connect, EventName.iceState, "iceConnected")
        var seconds = Int(min(1_200, max(20, rng.logNormal(median: 150, sigma: 0.9))))
        func sec(_ s: Int) -> Int64 { connect + Int64(s) * 1_000 }

        // Mid-call episodes, placed without overlapping each other.
        var wanted: [(EpisodeKind, Int)] = []
        if profile == .ipChange { wanted.append((.ipChange, rng.int(2...5))) }
        if rng.chance(profile.reconnectChance) { wanted.append((.outage, 0)) }
        if rng.chance(0.08) { wanted.append((.hold, rng.int(10...90))) }
        if rng.chance(0.06) { wanted.append((.remoteHold, rng.int(10...60))) }
        if rng.chance(0.22) { wanted.append((.mute, rng.int(5...60))) }
        if hasVideo && rng.chance(0.35) { wanted.append((.videoOff, rng.int(10...120))) }
        if hasVideo && rng.chance(0.15) { wanted.append((.remoteVideoPause, rng.int(6...40))) }
        var lost = false
        for (kind, length0) in wanted {
            var length = length0
            var outcome: (attempts: Int, lost: Bool) = (0, false)
            if kind == .outage {
                // Reconnects after a few attempts, or gives up after all six (connectionLost).
                let giveUp = rng.chance(0.25)
                let attempts = giveUp ? 6 : rng.int(1...4)
                let total = CallScript.retryDelaysMs.prefix(attempts).reduce(0, +)
                length = Int((total + 999) / 1_000)
                outcome = (attempts, giveUp)
            }
            // The network change lands mid-call, so statistics show both connections.
            let slot =
                kind == .ipChange && seconds > 40
                ? Int(Double(seconds) * rng.uniform(0.3, 0.7)) : place(length: length, within: seconds, rng: &rng)
            guard let from = slot else { continue }
            let to = from + length
            episodes.append(Episode(kind: kind, from: from, to: to))
            let t0 = sec(from) + ms(0, 900)
            switch kind {
            case .hold: add(t0, EventName.callState, "hold"); add(sec(to), EventName.callState, "unhold")
            case .remoteHold: add(t0, EventName.callState, "remoteHold"); add(sec(to), EventName.callState, "remoteUnhold")
            case .mute: add(t0, EventName.callState, "mute"); add(sec(to), EventName.callState, "unmute")
            case .videoOff: add(t0, EventName.callState, "videoOff"); add(sec(to), EventName.callState, "videoOn")
            case .remoteVideoPause, .oneWayAudio: break
            case .ipChange:
                add(t0, EventName.ipChange, "ipChangeStarted", ["from": "wifi", "to": "cellular"])
                add(t0 + ms(50, 300), EventName.iceState, "iceDisconnected")
                let back = sec(to) + ms(0, 400)
                add(back, EventName.ipChange, "ipChangeEnded", ["from": "wifi", "to": "cellular"])
                add(back + ms(40, 200), EventName.iceState, "iceConnected")
                networkAfterChange = "cellular"
            case .outage:
                add(t0, EventName.iceState, "iceDisconnected")
                var at = t0 + ms(20, 120)
                for attempt in 1...outcome.attempts {
                    let delay = CallScript.retryDelaysMs[attempt - 1]
                    add(at, EventName.callState, "reconnecting", ["attempt": .number(Double(attempt)), "delayMs": .number(Double(delay))])
                    at += delay
                }
                if outcome.lost {
                    add(at, EventName.callState, "connectionLost")
                    seconds = to
                    lost = true
                } else {
                    add(at, EventName.callState, "reconnected")
                    add(at + ms(20, 150), EventName.iceState, "iceConnected")
                }
            }
            if lost { break }
        }
        if profile == .oneWayAudio {
            let from = Int(Double(seconds) * rng.uniform(0.15, 0.5))
            episodes.append(Episode(kind: .oneWayAudio, from: from, to: seconds))
        }
        episodes.removeAll { $0.from >= seconds }
        events.removeAll { $0.ts > sec(seconds) + 3_000 }
        mediaSeconds = seconds
        let endAt = sec(seconds) + ms(50, 400)
        let durationMs = endAt - connect
        if lost {
            end = CallScript.failedEnd(at: endAt, connectedMs: durationMs, sdk: sdk, sip: 408, rng: &rng)
        } else {
            end = CallScript.normalEnd(at: endAt, connectedMs: durationMs, local: rng.chance(0.5), sdk: sdk)
        }
        events.sort { $0.ts < $1.ts }
    }

    /// A free slot of `length` seconds in [5, seconds - 5), or nil.
    private func place(length: Int, within seconds: Int, rng: inout Xoshiro256) -> Int? {
        guard seconds - 10 > length else { return nil }
        for _ in 0..<6 {
            let from = rng.int(5...(seconds - 5 - length))
            let clash = episodes.contains { from < $0.to + 2 && $0.from < from + length + 2 }
            if !clash { return from }
        }
        return nil
    }

    private mutating func finishUnanswered(at ts: Int64, reason: String, sdk: SDKKind, rng: inout Xoshiro256) {
        let sip: (Int, String, String) =
            switch reason {
            case "rejected": rng.chance(0.7) ? (486, "Busy Here", "Q.850;cause=17") : (603, "Decline", "Q.850;cause=21")
            case "timedOut": rng.chance(0.7) ? (480, "Temporarily Unavailable", "Q.850;cause=18") : (408, "Request Timeout", "Q.850;cause=102")
            default: (503, "Service Unavailable", "Q.850;cause=38")
            }
        switch sdk {
        case .kandyMobile, .kandyAnonymous:
            // SIP codes are forwarded as Kandy's statusCode (seed excerpts §2).
            end = End(ts: ts, reason: reason, statusCode: sip.0, statusText: sip.1, durationMs: 0)
        case .audioCodes:
            end = End(ts: ts, reason: reason, sipStatus: sip.0, sipReason: sip.2, durationMs: 0)
        case .ciscoREM:
            end = End(ts: ts, reason: reason, durationMs: 0)
        }
        events.sort { $0.ts < $1.ts }
    }

    static func normalEnd(at ts: Int64, connectedMs: Int64, local: Bool, sdk: SDKKind) -> End {
        let reason = local ? "terminatedLocally" : "terminatedRemotely"
        switch sdk {
        case .kandyMobile, .kandyAnonymous:
            return local
                ? End(ts: ts, reason: reason, statusCode: 9901, statusText: "Ended by local user", durationMs: connectedMs)
                : End(ts: ts, reason: reason, statusCode: 9900, statusText: "Reason not provided", durationMs: connectedMs)
        case .audioCodes:
            return End(
                ts: ts, reason: reason, sipReason: local ? nil : "Q.850;cause=16;text=\"Normal call clearing\"",
                durationMs: connectedMs)
        case .ciscoREM:
            return End(ts: ts, reason: reason, durationMs: connectedMs)
        }
    }

    static func failedEnd(at ts: Int64, connectedMs: Int64, sdk: SDKKind, sip: Int, rng: inout Xoshiro256) -> End {
        switch sdk {
        case .kandyMobile, .kandyAnonymous:
            End(ts: ts, reason: "failed", statusCode: 9906, statusText: "Ended by error", durationMs: connectedMs)
        case .audioCodes:
            sip == 488
                ? End(ts: ts, reason: "failed", sipStatus: 488, sipReason: "Q.850;cause=88;text=\"ICE failed\"", durationMs: connectedMs)
                : End(ts: ts, reason: "failed", sipStatus: 408, sipReason: "Q.850;cause=41", durationMs: connectedMs)
        case .ciscoREM:
            End(ts: ts, reason: "failed", durationMs: connectedMs)
        }
    }

    /// Whether an episode of `kind` covers second `s`.
    func active(_ kind: EpisodeKind, at s: Int) -> Bool {
        for e in episodes where e.kind == kind && s >= e.from && s < e.to { return true }
        return false
    }
}
