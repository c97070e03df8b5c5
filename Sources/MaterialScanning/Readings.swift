import CallLog

/// Stream ids and codec names, made once per stream rather than once per snapshot (they are
/// the same strings every time; building them cost more than the rest of a reading).
struct StreamNames {
    private struct Key: Hashable {
        var pc: String
        var inbound: Bool
        var kind: MediaKind
        var ssrc: UInt32
    }

    private struct CodecKey: Hashable {
        var kind: MediaKind
        var name: String
    }

    private var ids: [Key: String] = [:]
    private var codecs: [CodecKey: String] = [:]
    /// The ids each chain (by its place in the scanner) named last: a snapshot names its
    /// chain's streams again, found here by comparing before a key is hashed (hashing one per
    /// stream of every snapshot cost about 1 % of the run). An id depends on its key alone, so
    /// an entry left by a chain that had the place before is still right.
    private var byChain: [[(key: Key, id: String)]] = []

    /// As `id(pc:inbound:kind:ssrc:)`, for a stream of the chain at place `chain`.
    mutating func id(chain: Int, pc: String, inbound: Bool, kind: MediaKind, ssrc: UInt32) -> String {
        if chain < byChain.count {
            let known = byChain[chain].withUnsafeBufferPointer { entries -> String? in
                for e in entries.indices
                where entries[e].key.ssrc == ssrc && entries[e].key.inbound == inbound
                    && entries[e].key.kind == kind && entries[e].key.pc == pc
                { return entries[e].id }
                return nil
            }
            if let known { return known }
        } else {
            byChain.append(contentsOf: repeatElement([], count: chain + 1 - byChain.count))
        }
        let id = id(pc: pc, inbound: inbound, kind: kind, ssrc: ssrc)
        if byChain[chain].count >= 16 { byChain[chain].removeAll(keepingCapacity: true) }  // bounded
        byChain[chain].append((Key(pc: pc, inbound: inbound, kind: kind, ssrc: ssrc), id))
        return id
    }

    /// `pc:direction:kind:ssrc`, the id a stream has in the database.
    mutating func id(pc: String, inbound: Bool, kind: MediaKind, ssrc: UInt32) -> String {
        let key = Key(pc: pc, inbound: inbound, kind: kind, ssrc: ssrc)
        if let known = ids[key] { return known }
        let id = "\(pc):\(inbound ? "inbound" : "outbound"):\(kind.rawValue):\(ssrc)"
        if ids.count > 10_000 { ids.removeAll() }  // bounded: an ingestor sees many calls
        ids[key] = id
        return id
    }

    /// A legacy codec name as a MIME type, `kind/name`.
    mutating func googCodec(kind: MediaKind, name: String) -> String {
        let key = CodecKey(kind: kind, name: name)
        if let known = codecs[key] { return known }
        let codec = "\(kind.rawValue)/\(name)"
        if codecs.count > 1_000 { codecs.removeAll() }
        codecs[key] = codec
        return codec
    }
}

/// Turns a chain's state after a snapshot into stream readings, per dialect (the legacy goog
/// dialect's in `GoogStats.swift`).
enum Readings {
    /// `chain`: the chain's place in the scanner (`ScannedStats.chain`).
    static func snapshot(_ state: ChainState, chain: Int, key: StatsChainKey, ts: Int64, names: inout StreamNames) -> Snapshot {
        let pc = key.peerConnection.isEmpty ? "pc" : key.peerConnection
        if key.format == "goog" {
            return Snapshot(
                ts: ts, statsTs: state.t ?? .nan, peerConnection: pc, source: "goog",
                streams: goog(state, chain: chain, pc: pc, names: &names), pair: googPair(state))
        }
        return Snapshot(
            ts: ts, statsTs: state.t ?? .nan, peerConnection: pc, source: "w3c",
            streams: w3c(state, chain: chain, pc: pc, names: &names), pair: w3cPair(state),
            dataChannels: w3cDataChannels(state))
    }

    static func kind(_ s: ChainState, _ i: ChainState.Slot) -> MediaKind? {
        switch s.str(i, .kind) ?? s.str(i, .mediaType) {
        case "audio": .audio
        case "video": .video
        default: nil
        }
    }

    private static func w3c(_ s: ChainState, chain: Int, pc: String, names: inout StreamNames) -> [StreamReading] {
        // Objects are read where they lie (by slot), never copied: this runs for every snapshot.
        // A list, not a dictionary: a snapshot has one or two (a dictionary was allocated and
        // hashed into for every snapshot). The last one of an SSRC counts.
        var remoteInbound: [(ssrc: UInt32, slot: ChainState.Slot)] = []
        var rtp: [ChainState.Slot] = []
        // Room for a call's usual streams at once: grown one append at a time, these two arrays
        // were allocated about three times per snapshot.
        remoteInbound.reserveCapacity(4)
        rtp.reserveCapacity(8)
        var pathRTT: (slot: ChainState.Slot, audio: Bool, ssrc: UInt32)?
        for i in s.objects.indices {
            let type = s.type(i)
            if type == .inboundRTP || type == .outboundRTP {
                rtp.append(i)
            } else if type == .remoteInbound, let ssrc = UInt32(ssrc: s.num(i, .ssrc)) {
                remoteInbound.append((ssrc, i))
                // RTCP RTT of the connection: from what the remote reports about our audio (else
                // video); the lowest SSRC when there are several, so the choice is repeatable.
                let audio = kind(s, i) == .audio
                let better = pathRTT.map { audio != $0.audio ? audio : ssrc < $0.ssrc } ?? true
                if better { pathRTT = (i, audio, ssrc) }
            }
        }
        var out: [StreamReading] = []
        out.reserveCapacity(rtp.count)
        // Closures below capture the keys alone: capturing `s` would copy the chain's state.
        let keys = s.objects.keys
        if rtp.count > 1 { rtp.sort { keys[$0] < keys[$1] } }
        for o in rtp {
            guard let k = kind(s, o), let ssrc = UInt32(ssrc: s.num(o, .ssrc)) else { continue }
            let inbound = s.type(o) == .inboundRTP
            // Made in the array and filled where it lies: filled first and then appended, each
            // reading was copied into the array and the original destroyed.
            out.append(
                StreamReading(
                    streamID: names.id(chain: chain, pc: pc, inbound: inbound, kind: k, ssrc: ssrc),
                    direction: inbound ? .inbound : .outbound, kind: k, ssrc: ssrc))
            fillW3C(&out[out.count - 1], from: s, object: o, inbound: inbound, pathRTT: pathRTT?.slot, remoteInbound: remoteInbound)
        }
        return out
    }

    /// A W3C stream reading's numbers and names from its RTP object `o` (and its codec and
    /// remote report).
    private static func fillW3C(
        _ r: inout StreamReading, from s: ChainState, object o: ChainState.Slot, inbound: Bool,
        pathRTT: ChainState.Slot?, remoteInbound: [(ssrc: UInt32, slot: ChainState.Slot)]
    ) {
        if let codecID = s.str(o, .codecId), let codec = s.slot(codecID) {
            r.codec = s.str(codec, .mimeType)
            r.clockRate = s.num(codec, .clockRate)
        }
        if inbound {
            r.packets = s.num(o, .packetsReceived)
            r.bytes = s.num(o, .bytesReceived)
            r.lost = s.num(o, .packetsLost)
            r.inboundJitterMs = s.num(o, .jitter) * 1000
            let concealed = s.num(o, .concealedSamples)
            if !concealed.isNaN {
                let silent = s.num(o, .silentConcealedSamples)
                r.audibleConcealed = concealed - (silent.isNaN ? 0 : silent)
            }
            r.totalSamples = s.num(o, .totalSamplesReceived)
            r.concealmentEvents = s.num(o, .concealmentEvents)
            r.jitterBufferDelay = s.num(o, .jitterBufferDelay)
            r.jitterBufferEmitted = s.num(o, .jitterBufferEmittedCount)
            r.frames = s.num(o, .framesDecoded)
            r.freezeCount = s.num(o, .freezeCount)
            r.freezeSeconds = s.num(o, .totalFreezesDuration)
            r.pauseSeconds = s.num(o, .totalPausesDuration)
            // What was heard: the stream's own level (Chromium 88 on), else its track's.
            audioLevel(&r, from: s, o, link: .trackId)
            if let rtt = pathRTT {
                r.rttMs = s.num(rtt, .roundTripTime) * 1000
                r.rttTotalSeconds = s.num(rtt, .totalRoundTripTime)
                r.rttCount = s.num(rtt, .roundTripTimeMeasurements)
            }
        } else {
            r.packets = s.num(o, .packetsSent)
            r.bytes = s.num(o, .bytesSent)
            r.frames = s.num(o, .framesDecoded)
            r.qlBandwidth = s.num(o, .qlBandwidth)
            r.qlCPU = s.num(o, .qlCPU)
            r.qlOther = s.num(o, .qlOther)
            r.qualityLimitation = s.str(o, .qualityLimitationReason)
            // What was captured to send: the media source's level, else the sender's track's.
            audioLevel(&r, from: s, o, link: .mediaSourceId, fallback: .trackId)
            if let ri = remoteInbound.last(where: { $0.ssrc == r.ssrc })?.slot {
                r.lost = s.num(ri, .packetsLost)
                r.remoteReportedJitterMs = s.num(ri, .jitter) * 1000
                r.rttMs = s.num(ri, .roundTripTime) * 1000
                r.rttTotalSeconds = s.num(ri, .totalRoundTripTime)
                r.rttCount = s.num(ri, .roundTripTimeMeasurements)
            }
        }
        r.fps = s.num(o, .framesPerSecond)
        r.width = s.num(o, .frameWidth)
        r.height = s.num(o, .frameHeight)
    }

    /// An audio stream's level and energy from object `o`, else from the object its `link`
    /// names, else from the one `fallback` names, whichever first has them. Two links, not a
    /// list: this runs for every audio stream of every snapshot.
    private static func audioLevel(
        _ r: inout StreamReading, from s: ChainState, _ o: ChainState.Slot, link: StrField, fallback: StrField? = nil
    ) {
        guard r.kind == .audio else { return }
        func hasLevel(_ i: ChainState.Slot) -> Bool { !s.num(i, .audioLevel).isNaN || !s.num(i, .totalAudioEnergy).isNaN }
        var source = o
        if !hasLevel(o) {
            if let id = s.str(o, link), let linked = s.slot(id), hasLevel(linked) {
                source = linked
            } else if let fallback, let id = s.str(o, fallback), let linked = s.slot(id), hasLevel(linked) {
                source = linked
            } else {
                return
            }
        }
        r.audioLevel = s.num(source, .audioLevel)
        r.audioEnergy = s.num(source, .totalAudioEnergy)
    }

    /// The peer connection's data channels, summed; nil when it has none.
    private static func w3cDataChannels(_ s: ChainState) -> DataChannelReading? {
        var d = DataChannelReading()
        for i in s.objects.indices where s.type(i) == .dataChannel {
            d.channels += 1
            if s.str(i, .state) == "open" { d.open += 1 }
            let sent = s.num(i, .messagesSent), received = s.num(i, .messagesReceived)
            if !sent.isNaN { d.messagesSent = (d.messagesSent.isNaN ? 0 : d.messagesSent) + sent }
            if !received.isNaN { d.messagesReceived = (d.messagesReceived.isNaN ? 0 : d.messagesReceived) + received }
        }
        return d.channels > 0 ? d : nil
    }

    private static func w3cPair(_ s: ChainState) -> PairReading? {
        var pair: ChainState.Slot?
        for i in s.objects.indices where s.type(i) == .transport {
            if let id = s.str(i, .selectedCandidatePairId) { pair = s.slot(id) }
            break
        }
        if pair == nil {
            // The nominated, succeeded pair with the most responses (first of equals).
            var best = -Double.infinity
            for i in s.objects.indices where s.type(i) == .candidatePair {
                if s.str(i, .nominated) == "true", s.str(i, .state) == "succeeded" {
                    let responses = s.num(i, .responsesReceived)
                    let n = responses.isNaN ? 0 : responses
                    if pair == nil || n > best { pair = i; best = n }
                }
            }
        }
        guard let p = pair else { return nil }
        var r = PairReading()
        r.rttMs = s.num(p, .currentRoundTripTime) * 1000
        if let id = s.str(p, .localCandidateId), let l = s.slot(id) {
            r.localType = s.str(l, .candidateType)
            r.transport = s.str(l, .protocolName)
            // Safari names no `relayProtocol`: the TURN server's URL the relay came from says it.
            r.relayProtocol = s.str(l, .relayProtocol) ?? (r.localType == "relay" ? s.str(l, .url).flatMap(relayProtocol(turnURL:)) : nil)
            r.networkType = s.str(l, .networkType)
        }
        if let id = s.str(p, .remoteCandidateId), let rc = s.slot(id) { r.remoteType = s.str(rc, .candidateType) }
        return r
    }

    /// The protocol between this end and its TURN server, from the server's URL (RFC 7065):
    /// `turns:` is TLS, `turn:` with `?transport=tcp` TCP, any other `turn:` UDP; nil for a URL
    /// of another scheme.
    static func relayProtocol(turnURL url: String) -> String? {
        let lower = url.lowercased()
        if lower.hasPrefix("turns:") { return "tls" }
        guard lower.hasPrefix("turn:") else { return nil }
        return lower.contains("transport=tcp") ? "tcp" : "udp"
    }

    /// An RTCP report block about a captured stream, from the stream's receiver (the `rtcp`
    /// record's `reports[]`): what arrived at the far end of the path, where the capture measures
    /// what passed the capture point.
    struct WireReport {
        /// Cumulative, since the receiver's first packet of the stream (RFC 3550, signed).
        var packetsLost: Double
        var jitterMs: Double
        /// The capture point's round trip to the receiver (LSR/DLSR), NaN when no SR matched.
        var roundTripTimeMs: Double
    }

    /// A wire-measured `rtp` record (from `callstats capture`) as a reading; with `report`, the
    /// latest report block its receiver sent about the stream, also the stream as that receiver
    /// heard it.
    ///
    /// The capture sees both directions and has no "this end": each stream it measures is a
    /// received (`inbound`) reading, what passed the capture point. The receiver's report is
    /// the stream at the end of its path, the figures a browser's `remote-inbound-rtp` gives
    /// about a stream it sends: it becomes an `outbound` reading of the same stream, paired as
    /// remote-inbound-rtp pairs with outbound-rtp (packets that passed the capture point, which
    /// a capture at the sender sees all of, against the receiver's cumulative loss; its jitter;
    /// its round trip), and is scored as the sent direction is. A capture at the sender shows no
    /// loss on its streams while the far end reports what the network lost; at the receiver the
    /// two agree.
    static func wire(_ r: LogRecord, lastRTTMs: Double?, voipMetrics: JSONValue? = nil, report: WireReport? = nil) -> Snapshot? {
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
        s.inboundJitterMs = r["jitterMs"]?.doubleValue ?? .nan
        s.firstTs = r["firstTs"]?.doubleValue ?? .nan
        if let x = voipMetrics {
            // Rates are ratios in the record; 0-100 % here, as every loss in the database.
            s.xrLossPct = x["lossRate"]?.doubleValue.map { $0 * 100 } ?? .nan
            s.xrDiscardPct = x["discardRate"]?.doubleValue.map { $0 * 100 } ?? .nan
            s.xrRFactor = x["rFactor"]?.doubleValue ?? .nan
            s.xrMosLQ = x["mosLq"]?.doubleValue ?? .nan
            s.xrMosCQ = x["mosCq"]?.doubleValue ?? .nan
            s.xrJitterBufferMs = x["jitterBufferNominalMs"]?.doubleValue ?? .nan
        }
        if let rtt = lastRTTMs { s.rttMs = rtt }
        var streams = [s]
        if let report {
            var far = StreamReading(
                streamID: "wire:\(flow):receiver-report:\(kind.rawValue):\(ssrc)", direction: .outbound, kind: kind, ssrc: ssrc)
            far.codec = s.codec
            far.clockRate = clock
            far.packets = s.packets
            far.bytes = s.bytes
            // Negative when the receiver counted duplicates: none lost, as on the capture's side.
            far.lost = max(0, report.packetsLost)
            far.remoteReportedJitterMs = report.jitterMs
            far.rttMs = report.roundTripTimeMs.isFinite ? report.roundTripTimeMs : s.rttMs
            // The receiver's counts start at its first packet of the stream, as the capture's do.
            far.firstTs = s.firstTs
            streams.append(far)
        }
        return Snapshot(ts: r.ts, statsTs: .nan, peerConnection: "wire:\(flow):\(ssrc)", source: "wire", streams: streams, pair: nil)
    }

    /// A wire-measured `ice` record (a candidate pair's STUN checks, from `callstats capture`) as
    /// a snapshot without streams: its pair's round-trip time is the call's ICE round-trip time
    /// (`Summary`). Nil when no check of the pair was answered.
    static func wireICE(_ r: LogRecord) -> Snapshot? {
        guard let rtt = r["currentRoundTripTimeMs"]?.doubleValue, rtt.isFinite else { return nil }
        var pair = PairReading()
        pair.rttMs = rtt
        let name = "wire-ice:\(r["local"]?.stringValue ?? "?")>\(r["remote"]?.stringValue ?? "?")"
        return Snapshot(ts: r.ts, statsTs: .nan, peerConnection: name, source: "wire", streams: [], pair: pair)
    }
}
