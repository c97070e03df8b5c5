import CallLog

extension StatType {
    /// The legacy (goog) object types: their fields are inside `values`, never predicted by deltas.
    var isLegacy: Bool { self == .googSSRC || self == .googCandidatePair || self == .googLocalCandidate || self == .googRemoteCandidate }
}

/// Legacy (goog) statistics, as Chrome's legacy `getStats()` gives them: `ssrc` objects for both
/// directions (`_send` / `_recv` ids) and `googCandidatePair` objects.
enum GoogStats {
    /// Marks an `ssrc` object audio or video (its `kind`): only video ones have frame fields.
    static func classify(_ o: inout StatObject, id: String?) {
        let video =
            o[.googFrameRateReceived] != nil || o[.googFrameWidthReceived] != nil
            || o[.googFrameRateSent] != nil || o[.googFrameWidthSent] != nil
            || o[.mediaType] == "video"
        o.str[StrField.kind.rawValue] = video ? "video" : "audio"
    }
}

/// Stream and pair readings from a legacy (goog) chain.
extension Readings {
    static func goog(_ s: ChainState, chain: Int, pc: String, names: inout StreamNames) -> [StreamReading] {
        var ssrcs: [ChainState.Slot] = []
        ssrcs.reserveCapacity(8)  // as in `w3c`
        for i in s.objects.indices where s.type(i) == .googSSRC { ssrcs.append(i) }
        var out: [StreamReading] = []
        out.reserveCapacity(ssrcs.count)
        let keys = s.objects.keys  // captured alone: capturing `s` would copy the chain's state
        if ssrcs.count > 1 { ssrcs.sort { keys[$0] < keys[$1] } }
        for o in ssrcs {
            let id = s.objects.keys[o]
            guard let k = kind(s, o) else { continue }
            let inbound = id.hasSuffix("_recv")
            guard inbound || id.hasSuffix("_send") else { continue }
            let reported = s.num(o, .ssrc)
            guard let ssrc = UInt32(ssrc: !reported.isNaN ? reported : Double(id.split(separator: "_").dropFirst().first.flatMap { Int64($0) } ?? 0)) else {
                continue
            }
            // Made in the array and filled where it lies, as in `w3c`.
            out.append(
                StreamReading(
                    streamID: names.id(chain: chain, pc: pc, inbound: inbound, kind: k, ssrc: ssrc),
                    direction: inbound ? .inbound : .outbound, kind: k, ssrc: ssrc))
            fillGoog(&out[out.count - 1], from: s, object: o, inbound: inbound, names: &names)
        }
        // goog reports RTT on send objects only: give inbound streams the connection's RTT.
        let rtt =
            out.first { $0.direction == .outbound && $0.kind == .audio && !$0.rttMs.isNaN }?.rttMs
            ?? out.first { $0.direction == .outbound && !$0.rttMs.isNaN }?.rttMs
        if let rtt { for i in out.indices where out[i].direction == .inbound { out[i].rttMs = rtt } }
        return out
    }

    /// A legacy stream reading's numbers and names from its `ssrc` object `o`.
    static func fillGoog(
        _ r: inout StreamReading, from s: ChainState, object o: ChainState.Slot, inbound: Bool,
        names: inout StreamNames
    ) {
        if let name = s.str(o, .googCodecName) { r.codec = names.googCodec(kind: r.kind, name: name) }
        r.lost = s.num(o, .packetsLost)
        // googJitterReceived is what the receiving end measured: here on `_recv` objects, the far
        // end (its RTCP receiver reports) on `_send` ones.
        if inbound {
            r.inboundJitterMs = s.num(o, .googJitterReceived)
            r.packets = s.num(o, .packetsReceived)
            r.bytes = s.num(o, .bytesReceived)
            r.plcCalls = s.num(o, .googDecodingPLC)
            r.decodeCalls = s.num(o, .googDecodingCTN)
            r.jitterBufferMs = s.num(o, .googJitterBufferMs)
            if r.kind == .audio {
                r.audioLevel = s.num(o, .audioOutputLevel) / 32_767
                r.audioEnergy = s.num(o, .totalAudioEnergy)
            }
            r.fps = s.num(o, .googFrameRateReceived)
            // Negative sizes (-1: unknown) are not measurements; NaN compares false, as before.
            let width = s.num(o, .googFrameWidthReceived), height = s.num(o, .googFrameHeightReceived)
            r.width = width >= 0 ? width : .nan
            r.height = height >= 0 ? height : .nan
        } else {
            r.remoteReportedJitterMs = s.num(o, .googJitterReceived)
            r.packets = s.num(o, .packetsSent)
            r.bytes = s.num(o, .bytesSent)
            r.rttMs = s.num(o, .googRtt)
            if r.kind == .audio {
                r.audioLevel = s.num(o, .audioInputLevel) / 32_767
                r.audioEnergy = s.num(o, .totalAudioEnergy)
            }
            r.fps = s.num(o, .googFrameRateSent)
            r.width = s.num(o, .googFrameWidthSent)
            r.height = s.num(o, .googFrameHeightSent)
            if s.str(o, .googBandwidthLimitedResolution) == "true" {
                r.qualityLimitation = "bandwidth"
            } else if s.str(o, .googCpuLimitedResolution) == "true" {
                r.qualityLimitation = "cpu"
            } else if r.kind == .video {
                r.qualityLimitation = "none"
            }
        }
    }

    static func googPair(_ s: ChainState) -> PairReading? {
        var active: ChainState.Slot?
        for i in s.objects.indices where s.type(i) == .googCandidatePair && s.str(i, .googActiveConnection) == "true" {
            active = i
            break
        }
        guard let i = active else { return nil }
        var r = PairReading()
        r.rttMs = s.num(i, .googRtt)
        r.localType = googCandidateType(s.str(i, .googLocalCandidateType))
        r.remoteType = googCandidateType(s.str(i, .googRemoteCandidateType))
        r.transport = s.str(i, .googTransportType)
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
}
