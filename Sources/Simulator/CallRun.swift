import CallLog

/// Plays one call's script and yields its records in time order: the `call` record, events,
/// a statistics snapshot every period, quality callbacks, the `end`. Lazy: only the current
/// period's records exist at a time, so thousands of calls can be interleaved cheaply.
public struct CallRun: IteratorProtocol {
    public let plan: CallPlan
    let periodSeconds: Int
    private var rng: Xoshiro256
    private var link: LinkModel
    private var connection: Connection?
    /// Records known in advance (call, events, end), in time order.
    private var scripted: [LogRecord] = []
    private var scriptedIndex = 0
    /// Statistics and quality records of the current period.
    private var generated: [LogRecord] = []
    private var generatedIndex = 0
    private var second = 0
    private var checkingTick = 0
    private var finished = false
    private var lastScore: Int?
    private var smoothedScore: Double?
    private var talkingIn = false, talkingOut = false

    public init(plan: CallPlan, periodSeconds: Int) {
        self.plan = plan
        self.periodSeconds = max(1, periodSeconds)
        rng = Xoshiro256(seed: plan.mediaSeed)
        link = LinkModel(base: plan.link)
        let s = plan.script
        scripted.append(
            .callInfo(
                call: plan.id, ts: s.startMs, direction: plan.direction, sdk: plan.sdk.rawValue,
                sdkVersion: plan.sdkVersion, app: plan.app, appVersion: plan.appVersion,
                platform: plan.platform, network: plan.network, media: plan.media, labels: plan.labels))
        for e in s.events {
            scripted.append(.event(call: plan.id, ts: e.ts, action: e.action, type: e.type, detail: e.detail))
            if e.type == "ipChangeEnded", let network = s.networkAfterChange {
                scripted.append(
                    .callInfo(
                        call: plan.id, ts: e.ts + 5, direction: plan.direction, sdk: plan.sdk.rawValue,
                        sdkVersion: plan.sdkVersion, app: plan.app, appVersion: plan.appVersion,
                        platform: plan.platform, network: network, media: plan.media, labels: plan.labels))
            }
        }
        let end = s.end
        scripted.append(
            .end(
                call: plan.id, ts: end.ts, reason: end.reason, statusCode: end.statusCode,
                statusText: end.statusText, sipStatus: end.sipStatus, sipReason: end.sipReason,
                durationMs: end.durationMs))
        // Stable: a later record with the same time stays after an earlier one.
        scripted = scripted.enumerated().sorted { ($0.element.ts, $0.offset) < ($1.element.ts, $1.offset) }.map(\.element)
        if s.connectMs != nil || s.checkingUntilMs != nil {
            connection = Connection(
                epoch: 0, plan: plan, network: plan.network,
                relay: plan.profile == .iceRelayFallback, &rng)
            if s.connectMs != nil { connection!.connect(&rng) }
        }
    }

    public mutating func next() -> LogRecord? {
        if generatedIndex == generated.count && !finished { generatePeriod() }
        let g = generatedIndex < generated.count ? generated[generatedIndex] : nil
        let p = scriptedIndex < scripted.count ? scripted[scriptedIndex] : nil
        if let p, g == nil || p.ts <= g!.ts {
            scriptedIndex += 1
            return p
        }
        if let g {
            generatedIndex += 1
            return g
        }
        return nil
    }

    /// Advances the media to the next statistics tick and queues that period's records.
    private mutating func generatePeriod() {
        generated.removeAll(keepingCapacity: true)
        generatedIndex = 0
        let s = plan.script
        guard connection != nil else { finished = true; return }
        if let until = s.checkingUntilMs {
            // ICE never connects: snapshots of the failing checks only.
            checkingTick += 1
            let start = s.events.last { $0.type == "callAnswerReceived" || $0.type == "callRestSent" }?.ts ?? s.startMs
            let tick = start + Int64(checkingTick * periodSeconds) * 1_000
            guard tick < until else { finished = true; return }
            connection!.checking(seconds: checkingTick * periodSeconds, &rng)
            appendStats(at: tick)
            return
        }
        guard let connect = s.connectMs else { finished = true; return }
        let target = second + periodSeconds
        guard target <= s.mediaSeconds else { finished = true; return }
        while second < target {
            stepSecond(connect: connect)
            second += 1
            if plan.sdk == .ciscoREM && second % 5 == 0 { qualityCallback(at: connect + Int64(second) * 1_000 + 3) }
        }
        appendStats(at: connect + Int64(second) * 1_000 + Int64(rng.int(0...4)))
        if generated.count > 1 {
            generated = generated.enumerated().sorted { ($0.element.ts, $0.offset) < ($1.element.ts, $1.offset) }.map(\.element)
        }
    }

    private mutating func appendStats(at tick: Int64) {
        let now = (Double(tick) - rng.uniform(0.5, 2.5)).rounded(toPlaces: 3)
        let report =
            plan.format == .w3c
            ? W3CReport.build(plan: plan, connection: connection!, now: now)
            : GoogReport.build(plan: plan, connection: connection!, now: now)
        generated.append(.stats(call: plan.id, ts: tick, format: plan.format, report: report))
    }

    private mutating func stepSecond(connect: Int64) {
        let s = plan.script
        let sec = second
        if s.episodes.contains(where: { $0.kind == .ipChange && $0.to == sec }) {
            // A new peer connection on the new network: new candidates, new SSRCs, counters from 0.
            let epoch = connection!.epoch + 1
            link = LinkModel(base: NetworkProfile.cellularAfterChange(&rng))
            connection = Connection(epoch: epoch, plan: plan, network: s.networkAfterChange ?? "cellular", relay: false, &rng)
            connection!.connect(&rng)
        }
        let now = Double(connect + Int64(sec + 1) * 1_000)
        let conditions = link.next(&rng)
        let hold = s.active(.hold, at: sec) || s.active(.remoteHold, at: sec)
        let linkUp = !(s.active(.outage, at: sec) || s.active(.ipChange, at: sec))
        // Speech alternates: each side talks about 40 % of the time, in spurts.
        if rng.chance(0.25) { talkingIn = rng.chance(0.45) }
        if rng.chance(0.25) { talkingOut = rng.chance(0.45) }
        let opus = plan.audioCodec == .opus
        var c = connection.take()!
        c.mediaStarted = true
        c.audioIn.step(
            now: now, flowing: !hold && linkUp && !s.active(.oneWayAudio, at: sec), playing: !hold,
            talking: talkingIn, opus: opus, link: conditions, &rng)
        c.audioOut.step(
            now: now, sending: !hold, linkUp: linkUp, muted: s.active(.mute, at: sec), talking: talkingOut,
            opus: opus, link: conditions, &rng)
        if c.videoIn != nil {
            c.videoIn!.step(now: now, flowing: !hold && linkUp && !s.active(.remoteVideoPause, at: sec), link: conditions, &rng)
        }
        if c.videoOut != nil {
            c.videoOut!.step(
                now: now, sending: !hold, cameraOn: !s.active(.videoOff, at: sec), linkUp: linkUp,
                link: conditions, &rng)
        }
        c.stepTransport(now: now, linkUp: linkUp, link: conditions, &rng)
        c.iceState = linkUp ? "connected" : "disconnected"
        connection = c
        lastConditions = conditions
    }

    private var lastConditions: LinkConditions?

    /// Cisco REM style: a 0-100 score every 5 s from the remote stream, sent only when it changes.
    private mutating func qualityCallback(at ts: Int64) {
        guard let link = lastConditions, var c = connection.take() else { return }
        let expected = c.audioIn.windowExpected
        guard expected > 0 else { connection = c; return }
        let loss = Double(c.audioIn.windowLost) / Double(expected)
        // Losses under 0.5 % go unnoticed; the score moves smoothly, as a 5 s average would.
        var q = 100 - max(0, loss - 0.005) * 600 - max(0, link.rttMs - 150) / 12 - max(0, link.jitterDownMs - 20) * 0.4
        q = min(100, max(0, q))
        let smoothed = smoothedScore.map { 0.5 * $0 + 0.5 * q } ?? q
        smoothedScore = smoothed
        let score = Int(smoothed.rounded())
        c.audioIn.windowExpected = 0
        c.audioIn.windowLost = 0
        connection = c
        guard score != lastScore else { return }
        lastScore = score
        generated.append(.quality(call: plan.id, ts: ts, score: Double(score), direction: "inbound", source: "cisco-rem"))
    }
}
