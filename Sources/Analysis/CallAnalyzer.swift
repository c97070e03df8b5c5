import CallLog
import MaterialScanning
import Quality

/// Turns a call's material into its analysis: intervals per stream, summaries, findings, grade.
/// Pure and deterministic: the same material always gives the same rows.
public enum CallAnalyzer {
    /// The version of the quality model (E-model defaults, codec table, video score) that
    /// `analyze` scores with: a database records the one that graded its calls (`meta`), so
    /// that scores of two models are never mixed unknowingly.
    public static let qualityModelVersion = QualityModel.modelVersion

    public static func analyze(_ input: CallMaterial, config: AnalysisConfig = AnalysisConfig()) -> CallAnalysis {
        var m = input
        m.normalize()
        var call = CallSummary(
            callID: m.callID, startTs: m.firstTs == .max ? 0 : m.firstTs,
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
        /// Each stream's peer connection (nil for a captured one), by the stream's index.
        var streamPCs: [String?] = []
        var intervals: [IntervalMetrics] = []
        /// Each stream's intervals in `intervals`, by the stream's index.
        var ranges: [Range<Int>] = []
        /// Per interval of `intervals`: whether its audio was silence (`Intervals.silent`).
        var silent: [Bool] = []
        intervals.reserveCapacity(series.reduce(0) { $0 + max(0, $1.count - 1) })
        var findings: [Finding] = []
        var worst: (mos: Double?, videoScore: Double?, mosSent: Double?) = (nil, nil, nil)
        func lowest(_ a: Double?, _ b: Double?) -> Double? { a.map { x in b.map { min(x, $0) } ?? x } ?? b }
        for (id, series) in zip(order, series) {
            let first = series[0], last = series[series.count - 1]
            var summary = StreamSummary(
                callID: m.callID, streamID: id, ssrc: m[first].ssrc, direction: m[first].direction,
                kind: m[first].kind, source: id.hasPrefix("wire:") ? "wire" : m.snapshots[first.snapshot].source, startTs: m.snapshots[first.snapshot].ts,
                endTs: m.snapshots[last.snapshot].ts)
            summary.codec = series.last { m[$0].codec != nil }.flatMap { m[$0].codec }
            summary.clockRate = series.last { !m[$0].clockRate.isNaN }.flatMap { Int(logValue: m[$0].clockRate) }
            // The stream's intervals go straight into the call's (its slice is read below).
            let firstInterval = intervals.count
            var codecs = Intervals.CodecCache()
            // Whether any interval received media (always, for a sent stream).
            var received = false
            // A wire stream's counters start at its first packet: its first record is an interval
            // of its own, from that packet on (differencing records alone would lose it).
            // A first packet further back than a gap allows is damage, not a first interval.
            if let streamStart = Int64(logValue: m[first].firstTs), streamStart < summary.startTs,
                Double(summary.startTs - streamStart) <= max(config.gapFactor * max(period, 1), 60_000)
            {
                var zero = StreamReading(streamID: id, direction: m[first].direction, kind: m[first].kind, ssrc: m[first].ssrc)
                zero.packets = 0
                zero.bytes = 0
                zero.lost = 0
                if let interval = Intervals.measure(
                    zero, m[first], start: streamStart, end: summary.startTs, pair: m.snapshots[first.snapshot].pair,
                    call: m.callID, codecs: &codecs, config: config, resets: &summary.counterResets,
                    received: &received)
                {
                    intervals.append(interval)
                    silent.append(false)
                }
                summary.startTs = streamStart
            }
            for i in 1..<max(1, series.count) where series.count > 1 {
                let a = series[i - 1], b = series[i]
                let start = m.snapshots[a.snapshot].ts, end = m.snapshots[b.snapshot].ts
                let dt = Double(end - start)
                guard dt > 0, dt <= config.gapFactor * max(period, 1) else { continue }
                if let interval = Intervals.measure(
                    m[a], m[b], start: start, end: end, pair: m.snapshots[b.snapshot].pair,
                    call: m.callID, codecs: &codecs, config: config, resets: &summary.counterResets,
                    received: &received)
                {
                    intervals.append(interval)
                    silent.append(Intervals.silent(m[a], m[b]))
                }
            }
            Intervals.summarize(first: m[first], last: m[last], intervals[firstInterval...], into: &summary)
            if let xr = series.last(where: { !m[$0].xrLossPct.isNaN || !m[$0].xrRFactor.isNaN }) {
                Intervals.takeVoIPMetrics(m[xr], into: &summary)
            }
            // Windows of `windowMs`: the stream's findings persist over them, and its worst
            // sustained score is their worst run.
            let windows = Findings.windows(intervals[firstInterval...], minimumMs: config.windowMs, direction: summary.direction)
            // A received stream that never carried media (an SFU's idle slot, a media server's
            // padding) judges nothing: its loss, jitter and frame rate describe no one's call.
            if received || summary.direction == .outbound {
                findings += Findings.forStream(summary, windows: windows, config: config)
            }
            if summary.direction == .inbound {
                switch summary.kind {
                case .audio: worst.mos = lowest(worst.mos, Summary.worstSustained(windows, { $0.mosCQ }, window: config.worstWindow))
                case .video: worst.videoScore = lowest(worst.videoScore, Summary.worstSustained(windows, { $0.videoScore }, window: config.worstWindow))
                }
            } else if summary.kind == .audio {
                worst.mosSent = lowest(worst.mosSent, Summary.worstSustained(windows, { $0.mosCQ }, window: config.worstWindow))
            }
            streams.append(summary)
            streamPCs.append(m.snapshots[first.snapshot].source == "wire" ? nil : m.snapshots[first.snapshot].peerConnection)
            ranges.append(firstInterval..<intervals.count)
        }
        if let skew = clockSkew(m.snapshots), abs(skew) > config.clockSkewMs { call.clockSkewMs = skew }
        Summary.apply(streams: streams, intervals: intervals, ranges: ranges, worst: worst, material: m, config: config, to: &call)
        let pcs = PeerConnections.build(m, streams: streams, streamPCs: streamPCs)
        findings += PeerConnections.apply(pcs, to: &call)
        let servers = Set(pcs.pcs.filter { $0.role == "media_server" }.map(\.pcID))
        findings += Findings.forCall(
            call, streams: streams, intervals: intervals, ranges: ranges, silent: silent,
            fromMediaServer: streamPCs.map { $0.map(servers.contains) ?? false }, material: m, config: config)
        findings.sort { ($0.startTs, $0.code) < ($1.startTs, $1.code) }
        Summary.grade(&call, findings: findings, streams: streams, measuredIntervals: intervals.count, config: config)
        call.findingCount = findings.count
        return CallAnalysis(
            call: call, streams: streams, intervals: intervals, events: m.events, findings: findings, peerConnections: pcs.pcs)
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
