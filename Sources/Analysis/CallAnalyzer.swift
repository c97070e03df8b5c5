import CallLog
import MaterialScanning
import Quality

/// Turns a call's material into its analysis: intervals per stream, summaries, findings, grade.
/// Pure and deterministic: the same material always gives the same rows.
public enum CallAnalyzer {
    public static func analyze(_ input: CallMaterial, config: AnalysisConfig = AnalysisConfig()) -> CallAnalysis {
        var m = input
        m.normalize()
        var call = CallSummary(callID: m.callID, startTs: m.firstTs == .max ? 0 : m.firstTs,
                               endTs: m.lastTs == .min ? 0 : m.lastTs)
        Setup.apply(m, to: &call)

        // Streams: where each stream's readings lie, grouped by stream id, in time order. Positions,
        // not copies: a reading is a large value with strings in it, read in place below.
        // A snapshot lists its streams as the last one of its peer connection did, nearly always:
        // each reading's stream is looked for where that snapshot's reading at its place went,
        // before the id is hashed.
        var seriesByID: [String: Int] = [:]
        var order: [String] = []
        var series: [[ReadingPosition]] = []
        var peerConnections = PeerConnectionIndex()
        var seriesAtPlaceByPC: [[Int]] = []
        var sources = Set<String>()
        for si in m.snapshots.indices {
            if si == 0 || m.snapshots[si].source != m.snapshots[si - 1].source { sources.insert(m.snapshots[si].source) }
            let pc = peerConnections.index(of: m.snapshots[si].peerConnection)
            if pc.isNew { seriesAtPlaceByPC.append([]) }
            var seriesAtPlace: [Int] = []
            swap(&seriesAtPlace, &seriesAtPlaceByPC[pc.index])
            defer { swap(&seriesAtPlace, &seriesAtPlaceByPC[pc.index]) }
            for ri in m.snapshots[si].streams.indices {
                let id = m.snapshots[si].streams[ri].streamID
                let position = ReadingPosition(snapshot: si, stream: ri)
                let k: Int
                if ri < seriesAtPlace.count, order[seriesAtPlace[ri]] == id {
                    k = seriesAtPlace[ri]
                } else if let known = seriesByID[id] {
                    k = known
                } else {
                    k = order.count
                    seriesByID[id] = k
                    order.append(id)
                    series.append([])
                }
                series[k].append(position)
                if ri < seriesAtPlace.count { seriesAtPlace[ri] = k } else { seriesAtPlace.append(k) }
            }
        }
        call.source = sources.isEmpty ? "none" : sources.sorted().joined(separator: "+")
        let period = medianPeriod(m.snapshots)

        var streams: [StreamSummary] = []
        var intervals: [IntervalMetrics] = []
        /// Each stream's intervals in `intervals`, by the stream's index.
        var ranges: [Range<Int>] = []
        intervals.reserveCapacity(series.reduce(0) { $0 + max(0, $1.count - 1) })
        var findings: [Finding] = []
        var worst: (mos: Double?, videoScore: Double?) = (nil, nil)
        func lowest(_ a: Double?, _ b: Double?) -> Double? { a.map { x in b.map { min(x, $0) } ?? x } ?? b }
        for (id, series) in zip(order, series) {
            let first = series[0], last = series[series.count - 1]
            var summary = StreamSummary(callID: m.callID, streamID: id, ssrc: m[first].ssrc, direction: m[first].direction,
                                        kind: m[first].kind, source: sourceName(id, m), startTs: m.snapshots[first.snapshot].ts,
                                        endTs: m.snapshots[last.snapshot].ts)
            summary.codec = series.last { m[$0].codec != nil }.flatMap { m[$0].codec }
            summary.clockRate = series.last { !m[$0].clockRate.isNaN }.flatMap { Int(logValue: m[$0].clockRate) }
            // The stream's intervals go straight into the call's (its slice is read below).
            let firstInterval = intervals.count
            var codecs = Intervals.CodecCache()
            for i in 1..<max(1, series.count) where series.count > 1 {
                let a = series[i - 1], b = series[i]
                let start = m.snapshots[a.snapshot].ts, end = m.snapshots[b.snapshot].ts
                let dt = Double(end - start)
                guard dt > 0, dt <= config.gapFactor * max(period, 1) else { continue }
                if let interval = Intervals.measure(m[a], m[b], start: start, end: end, pair: m.snapshots[b.snapshot].pair,
                                                    call: m.callID, codecs: &codecs, config: config, resets: &summary.counterResets) {
                    intervals.append(interval)
                }
            }
            Intervals.summarize(first: m[first], last: m[last], intervals[firstInterval...], into: &summary)
            // Windows of `windowMs`: the stream's findings persist over them, and its worst
            // sustained score is their worst run.
            let windows = Findings.windows(intervals[firstInterval...], minimumMs: config.windowMs)
            findings += Findings.forStream(summary, windows: windows, config: config)
            if summary.direction == .inbound {
                switch summary.kind {
                case .audio: worst.mos = lowest(worst.mos, Summary.worstSustained(windows, { $0.mosCQ }, window: config.worstWindow))
                case .video: worst.videoScore = lowest(worst.videoScore, Summary.worstSustained(windows, { $0.videoScore }, window: config.worstWindow))
                }
            }
            streams.append(summary)
            ranges.append(firstInterval..<intervals.count)
        }
        if let skew = clockSkew(m.snapshots), abs(skew) > config.clockSkewMs { call.clockSkewMs = skew }
        Summary.apply(streams: streams, intervals: intervals, ranges: ranges, worst: worst, material: m, config: config, to: &call)
        findings += Findings.forCall(call, streams: streams, intervals: intervals, ranges: ranges, material: m, config: config)
        findings.sort { ($0.startTs, $0.code) < ($1.startTs, $1.code) }
        Summary.grade(&call, findings: findings, streams: streams, config: config)
        call.findingCount = findings.count
        return CallAnalysis(call: call, streams: streams, intervals: intervals, events: m.events, findings: findings)
    }

    private static func sourceName(_ streamID: String, _ m: CallMaterial) -> String {
        streamID.hasPrefix("wire:") ? "wire" : (m.snapshots.first { $0.streams.contains { $0.streamID == streamID } }?.source ?? "w3c")
    }

    /// The usual gap between snapshots of one peer connection, ms.
    static func medianPeriod(_ snapshots: [Snapshot]) -> Double {
        var peerConnections = PeerConnectionIndex(), lastTs: [Int64] = [], gaps: [Int64] = []
        for s in snapshots {
            let pc = peerConnections.index(of: s.peerConnection)
            if pc.isNew {
                lastTs.append(s.ts)
                continue
            }
            if s.ts > lastTs[pc.index] { gaps.append(s.ts - lastTs[pc.index]) }
            lastTs[pc.index] = s.ts
        }
        guard !gaps.isEmpty else { return 10_000 }
        gaps.sort()
        return Double(gaps[gaps.count / 2])
    }

    /// Median of (stats clock − agent clock), ms.
    static func clockSkew(_ snapshots: [Snapshot]) -> Int64? {
        var d = snapshots.compactMap { s -> Double? in s.statsTs.isFinite && s.statsTs > 0 ? s.statsTs - Double(s.ts) : nil }
        guard !d.isEmpty else { return nil }
        d.sort()
        return Int64(logValue: d[d.count / 2].rounded())
    }
}

/// A call's peer connections numbered in order of appearance. A call has one or two, and their
/// snapshots alternate: the few first ones are compared before a name is hashed.
struct PeerConnectionIndex {
    private var names: [String] = []
    private var byName: [String: Int] = [:]
    private static let comparedFirst = 4

    mutating func index(of name: String) -> (index: Int, isNew: Bool) {
        for i in 0..<min(names.count, Self.comparedFirst) where names[i] == name { return (i, false) }
        if names.count > Self.comparedFirst, let known = byName[name] { return (known, false) }
        names.append(name)
        byName[name] = names.count - 1
        return (names.count - 1, true)
    }
}

/// Where one reading lies in a call's material: `snapshots[snapshot].streams[stream]`.
struct ReadingPosition {
    var snapshot: Int
    var stream: Int
}

extension CallMaterial {
    /// The reading at `p`, borrowed in place.
    subscript(p: ReadingPosition) -> StreamReading {
        _read { yield snapshots[p.snapshot].streams[p.stream] }
    }
}

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
    var jitterMs = TimeWeightedMean(), rttMs = TimeWeightedMean(), iceRttMs = TimeWeightedMean()
    var bitrateKbps = TimeWeightedMean(), concealmentPct = TimeWeightedMean(), jitterBufferMs = TimeWeightedMean()
    var rFactor = TimeWeightedMean(), mosCQ = TimeWeightedMean(), mosLQ = TimeWeightedMean()
    var fps = TimeWeightedMean(), videoScore = TimeWeightedMean()

    @inline(__always) mutating func add(_ x: IntervalMetrics) {
        if let p = x.packets { packets = (packets ?? 0) + p }
        if let l = x.packetsLost { packetsLost = (packetsLost ?? 0) + l }
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

    static func measure(_ a: StreamReading, _ b: StreamReading, start: Int64, end: Int64, pair: PairReading?,
                        call: String, codecs: inout CodecCache, config: AnalysisConfig, resets: inout Int) -> IntervalMetrics? {
        let seconds = Double(end - start) / 1000
        // Counters going backwards: the SDK restarted them (ICE restart, IP change). No interval.
        if let dp = delta(a.packets, b.packets), dp < 0 { resets += 1; return nil }
        if let db = delta(a.bytes, b.bytes), db < 0 { resets += 1; return nil }
        var i = IntervalMetrics(callID: call, streamID: b.streamID, startTs: start, endTs: end)
        let dPackets = delta(a.packets, b.packets)
        i.packets = dPackets.flatMap(count)
        if let dp = dPackets, let dl = delta(a.lost, b.lost) {
            let lost = max(0, dl)
            i.packetsLost = count(lost)
            if b.direction == .inbound {
                i.lossPct = StatsInputs.networkLossPercent(packetsLost: lost, packetsReceived: dp)
            } else if dp > 0 {
                // Outbound: the remote's cumulative loss against what we sent meanwhile.
                i.lossPct = min(100, 100 * lost / (lost + dp))
            }
        }
        i.jitterMs = sane(b.jitterMs, max: 10_000)
        if let dTotal = delta(a.rttTotalSeconds, b.rttTotalSeconds), let dCount = delta(a.rttCount, b.rttCount), dCount > 0, dTotal >= 0 {
            i.rttMs = sane(1000 * dTotal / dCount, max: 60_000)
        } else {
            i.rttMs = sane(b.rttMs, max: 60_000)
        }
        i.iceRttMs = sane(pair?.rttMs, max: 60_000)
        if let db = delta(a.bytes, b.bytes), seconds > 0 { i.bitrateKbps = db * 8 / seconds / 1000 }

        if b.kind == .audio && b.direction == .inbound {
            audio(a, b, &i, codec: codecs.impairment(for: b.codec), config: config)
        } else if b.kind == .video {
            video(a, b, &i, seconds: seconds)
        }
        return i
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
            let run = StatsInputs.meanLossRunPackets(concealedSamples: c, silentConcealedSamples: 0, concealmentEvents: e,
                                                    samplesPerPacket: StatsInputs.samplesPerPacket(clockRate: clock, packetTimeMs: config.packetTimeMs))
            burst = StatsInputs.burstRatio(meanLossRunPackets: run, lossPercent: loss)
        }
        i.burstRatio = burst
        let ta = StatsInputs.oneWayDelayMs(roundTripTimeMs: i.rttMs ?? i.iceRttMs ?? 0, jitterBufferDelayMs: i.jitterBufferMs ?? 0,
                                           packetTimeMs: config.packetTimeMs, deviceAllowanceMs: config.deviceAllowanceMs)
        let q = EModel.voip(oneWayDelayMs: ta, packetLossPercent: min(loss, 100), burstRatio: burst, codec: codec)
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
            let stats = VideoIntervalStats(intervalSeconds: seconds, pausesDurationSeconds: paused, framesRendered: fps * seconds,
                                           freezeCount: freezes, freezesDurationSeconds: frozen,
                                           receivedPixels: pixels, expectedPixels: pixels > 0 ? max(pixels, 1280 * 720) : 0)
            i.videoScore = VideoScore(stats)?.score
        }
        if b.direction == .outbound {
            let d: [(String, Double?)] = [("bandwidth", delta(a.qlBandwidth, b.qlBandwidth)), ("cpu", delta(a.qlCPU, b.qlCPU)),
                                          ("other", delta(a.qlOther, b.qlOther))]
            let dominant = d.compactMap { k, v in v.map { (k, $0) } }.max { $0.1 < $1.1 }
            if let dominant, dominant.1 > 0.5 * seconds { i.qualityLimitation = dominant.0 } else if let q = b.qualityLimitation {
                i.qualityLimitation = q
            } else if dominant != nil { i.qualityLimitation = "none" }
        }
    }

    static func summarize(first: StreamReading, last: StreamReading, _ intervals: ArraySlice<IntervalMetrics>, into s: inout StreamSummary) {
        // Totals: sums of interval deltas, so counter resets never make them negative or double.
        var t = IntervalTotals()
        for i in intervals.indices { t.add(intervals[i]) }
        s.packets = t.packets ?? 0
        s.packetsLost = t.packetsLost ?? 0
        if first.packets.isFinite, s.counterResets == 0, last.packets.isFinite {
            // Sums below must not overflow either: counters beyond 2^53 are damage, not traffic.
            if let packets = count(last.packets) { s.packets = packets }
            if let lost = count(max(0, last.lost)) { s.packetsLost = lost }
            if let bytes = count(last.bytes) { s.bytes = bytes }
        }
        if s.packets + s.packetsLost > 0 {
            s.lossPct = 100 * Double(s.packetsLost) / Double(s.packets + s.packetsLost)
        }
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
