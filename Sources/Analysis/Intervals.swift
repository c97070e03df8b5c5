import CallLog
import MaterialScanning
import Quality

/// A mean of a metric, each interval weighted by its length; nil when no interval has it.
/// Accumulated one interval at a time, so that several metrics share one pass.
struct TimeWeightedMean {
    private var sum = 0.0, weight = 0.0

    mutating func add(_ value: Double?, _ duration: Double) {
        guard let value else { return }
        sum += value * duration
        weight += duration
    }

    var value: Double? { weight > 0 ? sum / weight : nil }
}

/// Totals and time-weighted means of every interval metric over a set of intervals, added one
/// interval at a time (by index, so that no interval is copied: that retains its strings).
struct IntervalTotals {
    var packets: Int64?, packetsLost: Int64?, freezeMs: Int64 = 0, freezeCount = 0
    /// Packets and losses of the intervals that have a loss figure.
    var reportedPackets: Int64 = 0, reportedLost: Int64 = 0
    var jitterMs = TimeWeightedMean(), rttMs = TimeWeightedMean(), iceRttMs = TimeWeightedMean()
    var bitrateKbps = TimeWeightedMean(), concealmentPct = TimeWeightedMean(), jitterBufferMs = TimeWeightedMean()
    var rFactor = TimeWeightedMean(), mosCQ = TimeWeightedMean(), mosLQ = TimeWeightedMean()
    var fps = TimeWeightedMean(), videoScore = TimeWeightedMean()

    @inline(__always) mutating func add(_ x: IntervalMetrics) {
        if let p = x.packets { packets = (packets ?? 0) + p }
        if let l = x.packetsLost {
            packetsLost = (packetsLost ?? 0) + l
            if let p = x.packets {
                reportedLost += l
                reportedPackets += p
            }
        }
        freezeMs += x.freezeMs ?? 0
        freezeCount += x.freezeCount ?? 0
        let d = Double(x.endTs - x.startTs)
        jitterMs.add(x.jitterMs, d)
        rttMs.add(x.rttMs, d)
        iceRttMs.add(x.iceRttMs, d)
        bitrateKbps.add(x.bitrateKbps, d)
        concealmentPct.add(x.concealmentPct, d)
        jitterBufferMs.add(x.jitterBufferMs, d)
        rFactor.add(x.rFactor, d)
        mosCQ.add(x.mosCQ, d)
        mosLQ.add(x.mosLQ, d)
        fps.add(x.fps, d)
        videoScore.add(x.videoScore, d)
    }
}

/// Per-interval metrics from two consecutive readings of a stream.
enum Intervals {
    static func delta(_ a: Double, _ b: Double) -> Double? {
        guard a.isFinite, b.isFinite else { return nil }
        return b - a
    }

    /// A counter (or its change) as an integer; beyond 2^53 it is damage, not traffic, and
    /// "not measured": stream totals add these up, and the sums must not overflow.
    static func count(_ v: Double) -> Int64? {
        guard v.magnitude < 9_007_199_254_740_992 else { return nil }
        return Int64(logValue: v)
    }

    /// Values outside these are damage, not measurements: they become "not measured".
    static func sane(_ v: Double?, max limit: Double) -> Double? {
        guard let v, v.isFinite, v >= 0, v <= limit else { return nil }
        return v
    }

    /// The impairment of the codec last looked up: a stream's codec rarely changes, and the
    /// lookup (name taken from the MIME type, lowercased, hashed) ran for every interval.
    struct CodecCache {
        private var mime: String?
        private var impairment = CodecImpairment.opus

        mutating func impairment(for codec: String?) -> CodecImpairment {
            if let codec, codec == mime { return impairment }
            mime = codec
            impairment = codec.flatMap { CodecImpairment.lookup(Intervals.codecName($0).map(String.init) ?? $0) } ?? .opus
            return impairment
        }
    }

    static func measure(
        _ a: StreamReading, _ b: StreamReading, start: Int64, end: Int64, pair: PairReading?,
        call: String, codecs: inout CodecCache, config: AnalysisConfig, resets: inout Int, received: inout Bool
    ) -> IntervalMetrics? {
        // Counters going backwards: the SDK restarted them (a new RTP object for the SSRC after
        // renegotiation, an ICE restart, an IP change). What `b` counts is what the stream did
        // since the restart, within this interval: measured from zero, so that those packets are
        // counted (the ones between `a` and the restart are unknown, and stay uncounted).
        // (`a` is read where it lies, not copied: a reading is large, with strings in it.)
        guard countersWentBack(a, b) else {
            return measured(a, b, start: start, end: end, pair: pair, call: call, codecs: &codecs, config: config, received: &received)
        }
        resets += 1
        let restarted = a.restarted
        // Below zero even from a restart: damage, not counters. No interval.
        if countersWentBack(restarted, b) { return nil }
        return measured(restarted, b, start: start, end: end, pair: pair, call: call, codecs: &codecs, config: config, received: &received)
    }

    /// `measure` once `a` is where `b`'s counters count from.
    private static func measured(
        _ a: StreamReading, _ b: StreamReading, start: Int64, end: Int64, pair: PairReading?,
        call: String, codecs: inout CodecCache, config: AnalysisConfig, received: inout Bool
    ) -> IntervalMetrics? {
        let seconds = Double(end - start) / 1000
        var i = IntervalMetrics(callID: call, streamID: b.streamID, startTs: start, endTs: end)
        let dPackets = delta(a.packets, b.packets)
        i.packets = dPackets.flatMap(count)
        if let dp = dPackets, let dl = delta(a.lost, b.lost) {
            let lost = max(0, dl)
            i.packetsLost = count(lost)
            if b.direction == .inbound {
                i.lossPct = StatsInputs.networkLossPercent(packetsLost: lost, packetsReceived: dp)
            } else if dp > 0 {
                i.lossPct = sentLossPercent(lost: lost, sent: dp)
            }
        }
        // One column for both directions: what this end measured on a received stream, what the
        // far end reported about a sent one.
        i.jitterMs = sane(b.direction == .inbound ? b.inboundJitterMs : b.remoteReportedJitterMs, max: 10_000)
        if let dTotal = delta(a.rttTotalSeconds, b.rttTotalSeconds), let dCount = delta(a.rttCount, b.rttCount), dCount > 0, dTotal >= 0 {
            i.rttMs = sane(1000 * dTotal / dCount, max: 60_000)
        } else {
            i.rttMs = sane(b.rttMs, max: 60_000)
        }
        i.iceRttMs = sane(pair?.rttMs, max: 60_000)
        if let db = delta(a.bytes, b.bytes), seconds > 0 { i.bitrateKbps = db * 8 / seconds / 1000 }

        if b.kind == .audio && b.direction == .inbound {
            audio(a, b, &i, codec: codecs.impairment(for: b.codec), config: config)
        } else if b.kind == .audio {
            sentAudio(&i, codec: codecs.impairment(for: b.codec), config: config)
        } else if b.kind == .video {
            video(a, b, &i, seconds: seconds)
        }
        if b.direction == .outbound || receivedPayload(a, b) {
            received = true
        } else {
            // Nothing was received to score (an SFU's idle slot, padding, a paused sender): the
            // interval keeps its counters and what the receiver measured (concealment, jitter
            // buffer, freezes, size), and no MOS, frame rate or video score says how it sounded
            // or looked.
            i.rFactor = nil
            i.mosCQ = nil
            i.mosLQ = nil
            i.fps = nil
            i.videoScore = nil
        }
        return i
    }

    /// Whether packets or bytes went down from `a` to `b`: the counters restarted.
    static func countersWentBack(_ a: StreamReading, _ b: StreamReading) -> Bool {
        (delta(a.packets, b.packets).map { $0 < 0 } ?? false) || (delta(a.bytes, b.bytes).map { $0 < 0 } ?? false)
    }

    /// The loss of a sent stream: what the far end reported lost against what this end sent.
    /// `packetsSent` counts every packet sent, the lost ones too (RFC 3550 §6.4.1: the fraction
    /// lost is lost ÷ expected, and what the receiver expected is what was sent), so the
    /// denominator is `sent` alone: 100 lost of 500 sent is 20 %. The far end's report lags the
    /// sender's counter, so an interval can report more lost than it sent: capped at 100 %.
    static func sentLossPercent(lost: Double, sent: Double) -> Double? {
        guard lost.isFinite, sent.isFinite, sent > 0 else { return nil }
        return min(100, 100 * max(0, lost) / sent)
    }

    /// Whether an audio stream carried silence between `a` and `b`: received packets without
    /// payload (keep-alives of a sender that sends no audio), or audio whose energy did not grow
    /// (W3C `totalAudioEnergy`: digital silence, what a muted or disabled track gives, adds
    /// none, where comfort noise and a quiet room add some), or, without energy figures, a level
    /// of 0 at both readings. Figures not reported: not silent (nothing says it was).
    static func silent(_ a: StreamReading, _ b: StreamReading) -> Bool {
        guard b.kind == .audio else { return false }
        return countersWentBack(a, b) ? silentBetween(a.restarted, b) : silentBetween(a, b)
    }

    private static func silentBetween(_ a: StreamReading, _ b: StreamReading) -> Bool {
        if b.direction == .inbound, let dp = delta(a.packets, b.packets), dp > 0, let db = delta(a.bytes, b.bytes), db == 0 {
            return true
        }
        if let de = delta(a.audioEnergy, b.audioEnergy) { return de <= 0 }
        return a.audioLevel == 0 && b.audioLevel == 0
    }

    /// Whether an inbound stream received media between `a` and `b`: payload bytes (W3C
    /// `bytesReceived` counts payload alone, not headers or padding), else packets where the
    /// bytes are not reported, or decoded frames (a frame is decoded from payload, whatever the
    /// counters say). Not measured at all: taken as received, as before any of these existed.
    static func receivedPayload(_ a: StreamReading, _ b: StreamReading) -> Bool {
        if let df = delta(a.frames, b.frames), df > 0 { return true }
        if let db = delta(a.bytes, b.bytes) { return db > 0 }
        if let dp = delta(a.packets, b.packets) { return dp > 0 }
        return true
    }

    static func audio(_ a: StreamReading, _ b: StreamReading, _ i: inout IntervalMetrics, codec: CodecImpairment, config: AnalysisConfig) {
        let dConcealed = delta(a.audibleConcealed, b.audibleConcealed)
        let dTotal = delta(a.totalSamples, b.totalSamples)
        if let c = dConcealed, let t = dTotal, t > 0, c >= 0 {
            i.concealmentPct = min(100, 100 * c / t)
        } else if let plc = delta(a.plcCalls, b.plcCalls), let calls = delta(a.decodeCalls, b.decodeCalls), calls > 0, plc >= 0 {
            i.concealmentPct = min(100, 100 * plc / calls)
        }
        if let d = delta(a.jitterBufferDelay, b.jitterBufferDelay), let n = delta(a.jitterBufferEmitted, b.jitterBufferEmitted) {
            i.jitterBufferMs = sane(StatsInputs.averageJitterBufferDelayMs(jitterBufferDelaySeconds: d, jitterBufferEmittedCount: n), max: 10_000)
        } else {
            i.jitterBufferMs = sane(b.jitterBufferMs, max: 10_000)
        }
        // Loss as the listener hears it: concealment where the stats have it, else network loss.
        guard let loss = i.concealmentPct ?? i.lossPct else { return }
        let clock = b.clockRate.isFinite && b.clockRate > 0 ? b.clockRate : 48_000
        var burst = 1.0
        if let c = dConcealed, let e = delta(a.concealmentEvents, b.concealmentEvents), e > 0 {
            let run = StatsInputs.meanLossRunPackets(
                concealedSamples: c, silentConcealedSamples: 0, concealmentEvents: e,
                samplesPerPacket: StatsInputs.samplesPerPacket(clockRate: clock, packetTimeMs: config.packetTimeMs))
            burst = StatsInputs.burstRatio(meanLossRunPackets: run, lossPercent: loss)
        }
        i.burstRatio = burst
        let ta = StatsInputs.oneWayDelayMs(
            roundTripTimeMs: i.rttMs ?? i.iceRttMs ?? 0, jitterBufferDelayMs: i.jitterBufferMs ?? 0,
            packetTimeMs: config.packetTimeMs, deviceAllowanceMs: config.deviceAllowanceMs)
        let q = EModel.voip(oneWayDelayMs: ta, packetLossPercent: min(loss, 100), burstRatio: burst, codec: codec)
        i.rFactor = q.rating
        i.mosCQ = q.conversationalMOS
        i.mosLQ = q.listeningMOS
    }

    /// The E-model of audio this end sent, from what the far end reported receiving: its loss
    /// (network loss: the far end's concealment is not reported, so loss is taken as random,
    /// BurstR 1), the round trip, and, for the far end's jitter buffer, which no report carries,
    /// `farEndJitterBufferMs`. No loss reported (no remote report): no score.
    static func sentAudio(_ i: inout IntervalMetrics, codec: CodecImpairment, config: AnalysisConfig) {
        guard let loss = i.lossPct else { return }
        let ta = StatsInputs.oneWayDelayMs(
            roundTripTimeMs: i.rttMs ?? i.iceRttMs ?? 0, jitterBufferDelayMs: config.farEndJitterBufferMs,
            packetTimeMs: config.packetTimeMs, deviceAllowanceMs: config.deviceAllowanceMs)
        let q = EModel.voip(oneWayDelayMs: ta, packetLossPercent: min(loss, 100), burstRatio: 1, codec: codec)
        i.rFactor = q.rating
        i.mosCQ = q.conversationalMOS
        i.mosLQ = q.listeningMOS
    }

    /// The last non-empty `/`-separated part of a codec's MIME type ("audio/opus" → "opus"), as
    /// `split(separator: "/").last` gives it but without building the array (every interval).
    static func codecName(_ mime: String) -> Substring? {
        var end = mime.endIndex
        while end > mime.startIndex, mime[mime.index(before: end)] == "/" { end = mime.index(before: end) }
        guard end > mime.startIndex else { return nil }
        let start = mime[..<end].lastIndex(of: "/").map { mime.index(after: $0) } ?? mime.startIndex
        return mime[start..<end]
    }

    static func video(_ a: StreamReading, _ b: StreamReading, _ i: inout IntervalMetrics, seconds: Double) {
        if let df = delta(a.frames, b.frames), df >= 0, seconds > 0, b.direction == .inbound {
            i.fps = df / seconds
        } else {
            i.fps = sane(b.fps, max: 1_000)
        }
        i.width = sane(b.width, max: 100_000).map { Int($0) }
        i.height = sane(b.height, max: 100_000).map { Int($0) }
        let freezes = sane(delta(a.freezeCount, b.freezeCount), max: 1e6) ?? 0
        let frozen = min(seconds, sane(delta(a.freezeSeconds, b.freezeSeconds), max: 1e6) ?? 0)
        i.freezeCount = Int(freezes)
        i.freezeMs = Int64(frozen * 1000)
        if b.direction == .inbound, let fps = i.fps {
            let paused = min(seconds, sane(delta(a.pauseSeconds, b.pauseSeconds), max: 1e6) ?? 0)
            let pixels = Double((i.width ?? 0) * (i.height ?? 0))
            // Expected size unknown to the stats: judge against 720p, a common conversational target.
            let stats = VideoIntervalStats(
                intervalSeconds: seconds, pausesDurationSeconds: paused, framesRendered: fps * seconds,
                freezeCount: freezes, freezesDurationSeconds: frozen,
                receivedPixels: pixels, expectedPixels: pixels > 0 ? max(pixels, 1280 * 720) : 0)
            i.videoScore = VideoScore(stats)?.score
        }
        if b.direction == .outbound {
            let d: [(String, Double?)] = [
                ("bandwidth", delta(a.qlBandwidth, b.qlBandwidth)), ("cpu", delta(a.qlCPU, b.qlCPU)),
                ("other", delta(a.qlOther, b.qlOther)),
            ]
            let dominant = d.compactMap { k, v in v.map { (k, $0) } }.max { $0.1 < $1.1 }
            if let dominant, dominant.1 > 0.5 * seconds {
                i.qualityLimitation = dominant.0
            } else if let q = b.qualityLimitation {
                i.qualityLimitation = q
            } else if dominant != nil {
                i.qualityLimitation = "none"
            }
        }
    }

    /// A total's loss: received streams lose lost ÷ (lost + received) (the packets that never
    /// arrived are not in `packetsReceived`), sent ones lost ÷ sent (`sentLossPercent`). Nil
    /// when there is nothing to divide by.
    static func lossPercent(lost: Int64, packets: Int64, direction: StreamDirection) -> Double? {
        if direction == .outbound { return sentLossPercent(lost: Double(lost), sent: Double(packets)) }
        return packets + lost > 0 ? 100 * Double(lost) / Double(packets + lost) : nil
    }

    /// The far end's own figures (RTCP XR VoIP metrics) about the stream, from one reading.
    static func takeVoIPMetrics(_ r: StreamReading, into s: inout StreamSummary) {
        s.xrLossPct = sane(r.xrLossPct, max: 100)
        s.xrDiscardPct = sane(r.xrDiscardPct, max: 100)
        s.xrRFactor = sane(r.xrRFactor, max: 120)
        s.xrMosLQ = sane(r.xrMosLQ, max: 5)
        s.xrMosCQ = sane(r.xrMosCQ, max: 5)
        s.xrJitterBufferMs = sane(r.xrJitterBufferMs, max: 65_535)
    }

    static func summarize(first: StreamReading, last: StreamReading, _ intervals: ArraySlice<IntervalMetrics>, into s: inout StreamSummary) {
        // Totals: sums of interval deltas, so counter resets never make them negative or double.
        var t = IntervalTotals()
        for i in intervals.indices { t.add(intervals[i]) }
        s.packets = t.packets ?? 0
        s.packetsLost = t.packetsLost ?? 0
        // The last counters are the stream's totals unless they restarted: also when its first
        // report had none yet (Firefox reports an outbound stream before its first packet).
        if s.counterResets == 0, last.packets.isFinite {
            // Sums below must not overflow either: counters beyond 2^53 are damage, not traffic.
            if let packets = count(last.packets) { s.packets = packets }
            if let lost = count(max(0, last.lost)) { s.packetsLost = lost }
            if let bytes = count(last.bytes) { s.bytes = bytes }
        }
        s.lossPct = lossPercent(lost: s.packetsLost, packets: s.packets, direction: s.direction)
        let w = intervals.map { Double($0.endTs - $0.startTs) }
        s.jitterMeanMs = t.jitterMs.value
        s.jitterMaxMs = intervals.compactMap { $0.jitterMs }.max()
        s.rttMeanMs = t.rttMs.value
        s.bitrateKbps = t.bitrateKbps.value
        s.concealmentPct = t.concealmentPct.value
        s.mosMean = t.mosCQ.value
        s.mosMin = intervals.compactMap { $0.mosCQ }.min()
        s.fpsMean = t.fps.value
        s.widthMax = intervals.compactMap { $0.width }.max()
        s.heightMax = intervals.compactMap { $0.height }.max()
        s.freezeCount = t.freezeCount
        s.freezeMs = t.freezeMs
        s.videoScoreMean = t.videoScore.value
        var byReason: [String: Double] = [:]
        for (i, x) in intervals.enumerated() { if let q = x.qualityLimitation { byReason[q, default: 0] += w[i] } }
        s.qualityLimitation = byReason.max { ($0.value, $1.key) < ($1.value, $0.key) }?.key
    }
}

extension StreamReading {
    /// The reading a stream's counters restart from: every counter that `self` has at 0, the
    /// rest (codec, sizes, latest values) as they were. The interval from here to the first
    /// reading after a restart counts what the stream did since the restart.
    var restarted: StreamReading {
        var r = self
        for path in StreamReading.cumulative where !r[keyPath: path].isNaN { r[keyPath: path] = 0 }
        return r
    }

    /// The counters: values that only grow while the stream's statistics object lives.
    nonisolated(unsafe) static let cumulative: [WritableKeyPath<StreamReading, Double>] = [
        \.packets, \.bytes, \.lost, \.audibleConcealed, \.totalSamples, \.concealmentEvents, \.jitterBufferDelay,
        \.jitterBufferEmitted, \.plcCalls, \.decodeCalls, \.frames, \.freezeCount, \.freezeSeconds, \.pauseSeconds,
        \.qlBandwidth, \.qlCPU, \.qlOther, \.rttTotalSeconds, \.rttCount, \.audioEnergy,
    ]
}
