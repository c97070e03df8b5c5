import CallLog

/// Turns a chain's state after a snapshot into stream readings, per dialect.
enum Readings {
    static func snapshot(_ state: ChainState, key: StatsChainKey, ts: Int64) -> Snapshot {
        let pc = key.peerConnection.isEmpty ? "pc" : key.peerConnection
        if key.format == "goog" {
            return Snapshot(ts: ts, statsTs: state.t ?? .nan, peerConnection: pc, source: "goog",
                            streams: goog(state, pc: pc), pair: googPair(state))
        }
        return Snapshot(ts: ts, statsTs: state.t ?? .nan, peerConnection: pc, source: "w3c",
                        streams: w3c(state, pc: pc), pair: w3cPair(state))
    }

    private static func kind(_ o: StatObject) -> MediaKind? {
        switch o[.kind] ?? o[.mediaType] {
        case "audio": .audio
        case "video": .video
        default: nil
        }
    }

    private static func w3c(_ s: ChainState, pc: String) -> [StreamReading] {
        // Positions in `s.objects`, not copies: this runs for every snapshot of every call.
        var remoteInbound: [UInt32: Dictionary<String, StatObject>.Index] = [:]
        var rtp: [Dictionary<String, StatObject>.Index] = []
        var pathRTTIndex: (index: Dictionary<String, StatObject>.Index, audio: Bool, ssrc: UInt32)?
        var i = s.objects.startIndex
        while i != s.objects.endIndex {
            let o = s.objects.values[i]
            if o.type == .inboundRTP || o.type == .outboundRTP {
                rtp.append(i)
            } else if o.type == .remoteInbound, let ssrc = o[.ssrc].flatMap(UInt32.init(ssrc:)) {
                remoteInbound[ssrc] = i
                // RTCP RTT of the connection: from what the remote reports about our audio (else
                // video); the lowest SSRC when there are several, so the choice is repeatable.
                let audio = kind(o) == .audio
                let better = pathRTTIndex.map { audio != $0.audio ? audio : ssrc < $0.ssrc } ?? true
                if better { pathRTTIndex = (i, audio, ssrc) }
            }
            s.objects.formIndex(after: &i)
        }
        let pathRTT = pathRTTIndex.map { s.objects.values[$0.index] }
        var out: [StreamReading] = []
        rtp.sort { s.objects.keys[$0] < s.objects.keys[$1] }
        for index in rtp {
            let o = s.objects.values[index]
            guard let k = kind(o), let ssrc = o[.ssrc].flatMap(UInt32.init(ssrc:)) else { continue }
            let inbound = o.type == .inboundRTP
            var r = StreamReading(streamID: "\(pc):\(inbound ? "inbound" : "outbound"):\(k.rawValue):\(ssrc)",
                                  direction: inbound ? .inbound : .outbound, kind: k, ssrc: ssrc)
            if let codecID = o[.codecId], let codec = s.objects[codecID] {
                r.codec = codec[.mimeType]
                r.clockRate = codec[.clockRate] ?? .nan
            }
            if inbound {
                r.packets = o[.packetsReceived] ?? .nan
                r.bytes = o[.bytesReceived] ?? .nan
                r.lost = o[.packetsLost] ?? .nan
                r.jitterMs = (o[.jitter] ?? .nan) * 1000
                if let c = o[.concealedSamples] { r.audibleConcealed = c - (o[.silentConcealedSamples] ?? 0) }
                r.totalSamples = o[.totalSamplesReceived] ?? .nan
                r.concealmentEvents = o[.concealmentEvents] ?? .nan
                r.jitterBufferDelay = o[.jitterBufferDelay] ?? .nan
                r.jitterBufferEmitted = o[.jitterBufferEmittedCount] ?? .nan
                r.frames = o[.framesDecoded] ?? .nan
                r.freezeCount = o[.freezeCount] ?? .nan
                r.freezeSeconds = o[.totalFreezesDuration] ?? .nan
                r.pauseSeconds = o[.totalPausesDuration] ?? .nan
                let rtt = pathRTT
                r.rttMs = (rtt?[.roundTripTime] ?? .nan) * 1000
                r.rttTotalSeconds = rtt?[.totalRoundTripTime] ?? .nan
                r.rttCount = rtt?[.roundTripTimeMeasurements] ?? .nan
            } else {
                r.packets = o[.packetsSent] ?? .nan
                r.bytes = o[.bytesSent] ?? .nan
                r.frames = o[.framesDecoded] ?? .nan
                r.qlBandwidth = o[.qlBandwidth] ?? .nan
                r.qlCPU = o[.qlCPU] ?? .nan
                r.qlOther = o[.qlOther] ?? .nan
                r.qualityLimitation = o[.qualityLimitationReason]
                if let ri = remoteInbound[ssrc].map({ s.objects.values[$0] }) {
                    r.lost = ri[.packetsLost] ?? .nan
                    r.jitterMs = (ri[.jitter] ?? .nan) * 1000
                    r.rttMs = (ri[.roundTripTime] ?? .nan) * 1000
                    r.rttTotalSeconds = ri[.totalRoundTripTime] ?? .nan
                    r.rttCount = ri[.roundTripTimeMeasurements] ?? .nan
                }
            }
            r.fps = o[.framesPerSecond] ?? .nan
            r.width = o[.frameWidth] ?? .nan
            r.height = o[.frameHeight] ?? .nan
            out.append(r)
        }
        return out
    }

    private static func w3cPair(_ s: ChainState) -> PairReading? {
        var pair: StatObject?
        if let id = s.objects.values.first(where: { $0.type == .transport })?[.selectedCandidatePairId] {
            pair = s.objects[id]
        }
        if pair == nil {
            pair = s.objects.values.filter { $0.type == .candidatePair && $0[.nominated] == "true" && $0[.state] == "succeeded" }
                .max { ($0[.responsesReceived] ?? 0) < ($1[.responsesReceived] ?? 0) }
        }
        guard let p = pair else { return nil }
        var r = PairReading()
        r.rttMs = (p[.currentRoundTripTime] ?? .nan) * 1000
        if let l = p[.localCandidateId].flatMap({ s.objects[$0] }) {
            r.localType = l[.candidateType]
            r.transport = l[.protocolName]
            r.relayProtocol = l[.relayProtocol]
            r.networkType = l[.networkType]
        }
        if let rc = p[.remoteCandidateId].flatMap({ s.objects[$0] }) { r.remoteType = rc[.candidateType] }
        return r
    }

    private static func goog(_ s: ChainState, pc: String) -> [StreamReading] {
        var out: [StreamReading] = []
        var ssrcs: [Dictionary<String, StatObject>.Index] = []
        var i = s.objects.startIndex
        while i != s.objects.endIndex {
            if s.objects.values[i].type == .googSSRC { ssrcs.append(i) }
            s.objects.formIndex(after: &i)
        }
        ssrcs.sort { s.objects.keys[$0] < s.objects.keys[$1] }
        for index in ssrcs {
            let (id, o) = (s.objects.keys[index], s.objects.values[index])
            guard let k = kind(o) else { continue }
            let inbound = id.hasSuffix("_recv")
            guard inbound || id.hasSuffix("_send") else { continue }
            guard let ssrc = UInt32(ssrc: o[.ssrc] ?? Double(id.split(separator: "_").dropFirst().first.flatMap { Int64($0) } ?? 0)) else { continue }
            var r = StreamReading(streamID: "\(pc):\(inbound ? "inbound" : "outbound"):\(k.rawValue):\(ssrc)",
                                  direction: inbound ? .inbound : .outbound, kind: k, ssrc: ssrc)
            if let name = o[.googCodecName] { r.codec = "\(k.rawValue)/\(name)" }
            r.lost = o[.packetsLost] ?? .nan
            r.jitterMs = o[.googJitterReceived] ?? .nan
            if inbound {
                r.packets = o[.packetsReceived] ?? .nan
                r.bytes = o[.bytesReceived] ?? .nan
                r.plcCalls = o[.googDecodingPLC] ?? .nan
                r.decodeCalls = o[.googDecodingCTN] ?? .nan
                r.jitterBufferMs = o[.googJitterBufferMs] ?? .nan
                r.fps = o[.googFrameRateReceived] ?? .nan
                r.width = (o[.googFrameWidthReceived] ?? .nan) >= 0 ? (o[.googFrameWidthReceived] ?? .nan) : .nan
                r.height = (o[.googFrameHeightReceived] ?? .nan) >= 0 ? (o[.googFrameHeightReceived] ?? .nan) : .nan
            } else {
                r.packets = o[.packetsSent] ?? .nan
                r.bytes = o[.bytesSent] ?? .nan
                r.rttMs = o[.googRtt] ?? .nan
                r.fps = o[.googFrameRateSent] ?? .nan
                r.width = o[.googFrameWidthSent] ?? .nan
                r.height = o[.googFrameHeightSent] ?? .nan
                if o[.googBandwidthLimitedResolution] == "true" { r.qualityLimitation = "bandwidth" } else if o[.googCpuLimitedResolution] == "true" { r.qualityLimitation = "cpu" } else if k == .video { r.qualityLimitation = "none" }
            }
            out.append(r)
        }
        // goog reports RTT on send objects only: give inbound streams the connection's RTT.
        let rtt = out.first { $0.direction == .outbound && $0.kind == .audio && !$0.rttMs.isNaN }?.rttMs
            ?? out.first { $0.direction == .outbound && !$0.rttMs.isNaN }?.rttMs
        if let rtt { for i in out.indices where out[i].direction == .inbound { out[i].rttMs = rtt } }
        return out
    }

    private static func googPair(_ s: ChainState) -> PairReading? {
        guard let p = s.objects.values.first(where: { $0.type == .googCandidatePair && $0[.googActiveConnection] == "true" }) else { return nil }
        var r = PairReading()
        r.rttMs = p[.googRtt] ?? .nan
        r.localType = googCandidateType(p[.googLocalCandidateType])
        r.remoteType = googCandidateType(p[.googRemoteCandidateType])
        r.transport = p[.googTransportType]
        return r
    }

    /// Legacy candidate type names → W3C.
    static func googCandidateType(_ t: String?) -> String? {
        switch t {
        case "local"?, "host"?: "host"
        case "stun"?, "serverreflexive"?, "srflx"?: "srflx"
        case "prflx"?, "peerreflexive"?: "prflx"
        case "relay"?, "relayed"?: "relay"
        default: t
        }
    }

    /// A wire-measured `rtp` record (from `callstats capture`) as a reading.
    static func wire(_ r: LogRecord, lastRTTMs: Double?) -> Snapshot? {
        guard let ssrc = r["ssrc"]?.doubleValue.flatMap(UInt32.init(ssrc:)) else { return nil }
        let clock = r["clockRate"]?.doubleValue ?? .nan
        let codec = r["codec"]?.stringValue
        let video = clock == 90_000 || ["VP8", "VP9", "H264", "AV1", "H265"].contains(codec?.uppercased() ?? "")
        let kind: MediaKind = video ? .video : .audio
        let flow = "\(r["src"]?.stringValue ?? "?")>\(r["dst"]?.stringValue ?? "?")"
        var s = StreamReading(streamID: "wire:\(flow):\(kind.rawValue):\(ssrc)", direction: .inbound, kind: kind, ssrc: ssrc)
        s.codec = codec.map { "\(kind.rawValue)/\($0)" }
        s.clockRate = clock
        s.packets = r["packetsReceived"]?.doubleValue ?? .nan
        s.bytes = r["bytesReceived"]?.doubleValue ?? .nan
        // Wire loss is expected − received; duplicates make it negative, which means none lost.
        s.lost = max(0, r["packetsLost"]?.doubleValue ?? .nan)
        s.jitterMs = r["jitterMs"]?.doubleValue ?? .nan
        if let rtt = lastRTTMs { s.rttMs = rtt }
        return Snapshot(ts: r.ts, statsTs: .nan, peerConnection: "wire:\(flow):\(ssrc)", source: "wire", streams: [s], pair: nil)
    }
}
