import CallLog

/// Builds a legacy libwebrtc (`goog`) report as the Kandy Anonymous Call SDK returns it
/// (seed excerpts, Appendix E): `{id, type, timestamp, values}` with every value a string,
/// object types `googTrack`, `googLibjingleSession`, `googComponent`, `googCandidatePair`,
/// `localcandidate`, `remotecandidate`, `ssrc` (`ssrc_N_send` / `ssrc_N_recv`) and `VideoBwe`.
struct GoogReport {
    private var items: [JSONValue] = []
    private let ts: JSONValue

    init(now: Double) {
        ts = .number((now * 1000).rounded() / 1000)
        items.reserveCapacity(20)
    }

    private mutating func add(_ id: String, _ type: String, _ values: [(key: String, value: JSONValue)]) {
        items.append(
            .object(
                JSONObject([
                    (key: "id", value: .string(id)), (key: "type", value: .string(type)), (key: "timestamp", value: ts),
                    (key: "values", value: .object(JSONObject(values))),
                ])))
    }

    static func build(plan: CallPlan, connection c: Connection, now: Double) -> [JSONValue] {
        var r = GoogReport(now: now)
        r.addAll(plan: plan, c: c)
        return r.items
    }

    @inline(__always) private static func v(_ x: Int) -> JSONValue { .string(String(x)) }
    @inline(__always) private static func v(_ x: Bool) -> JSONValue { .string(x ? "true" : "false") }
    /// Plain decimals with up to 7 places, as libwebrtc prints rates ("0.0055542", never "5e-05").
    private static func v(_ x: Double) -> JSONValue {
        let scaled = Int64((abs(x) * 1e7).rounded())
        let whole = scaled / 10_000_000, frac = scaled % 10_000_000
        var text = (x < 0 && scaled > 0 ? "-" : "") + String(whole)
        if frac > 0 {
            var digits = String(frac)
            digits = String(repeating: "0", count: 7 - digits.count) + digits
            while digits.hasSuffix("0") { digits.removeLast() }
            text += "." + digits
        }
        return .string(text)
    }
    @inline(__always) private static func v(_ x: String) -> JSONValue { .string(x) }

    private mutating func addAll(plan: CallPlan, c: Connection) {
        let i = GoogReport.v as (Int) -> JSONValue, b = GoogReport.v as (Bool) -> JSONValue
        let d = GoogReport.v as (Double) -> JSONValue, s = GoogReport.v as (String) -> JSONValue
        let media = c.mediaStarted
        let audioTrackIn = c.inboundAudioTrack, videoTrackIn = c.inboundVideoTrack
        add("googTrack_ARDAMSa0", "googTrack", [("googTrackId", "ARDAMSa0")])
        if plan.hasVideo { add("googTrack_ARDAMSv0", "googTrack", [("googTrackId", "ARDAMSv0")]) }
        add("googLibjingleSession_" + c.googSessionID, "googLibjingleSession", [("googInitiator", b(c.controlling))])

        // Components and the active connection (bundled: video rides on the audio channel).
        let conn = "Conn-audio-1-\(c.epoch)"
        var comp: [(key: String, value: JSONValue)] = []
        if c.selected != nil { comp.append(("selectedCandidatePairId", s(conn))) }
        comp.append(("googComponent", "1"))
        add("Channel-audio-1", "googComponent", comp)
        add("Channel-audio-2", "googComponent", [("googComponent", "2")])
        if plan.hasVideo {
            add("Channel-video-1", "googComponent", [("selectedCandidatePairId", s("Conn-video-1-\(c.epoch)")), ("googComponent", "1")])
            add("Channel-video-2", "googComponent", [("googComponent", "2")])
        }
        let p = c.pairs[c.selected ?? 1]
        let l = c.local[p.local], r = c.remote[p.remote]
        let rttMs = Int(((p.currentRoundTripTime ?? 0) * 1000).rounded())
        add(
            conn, "googCandidatePair",
            [
                ("googActiveConnection", b(c.selected != nil)), ("bytesReceived", i(c.bytesReceived)), ("bytesSent", i(c.bytesSent)),
                ("packetsSent", i(c.packetsSent)), ("googReadable", b(c.selected != nil)), ("googChannelId", "Channel-audio-1"),
                ("googLocalAddress", s("\(l.ip):\(l.port)")), ("localCandidateId", s(l.googID)),
                ("googLocalCandidateType", s(l.googShortType)), ("googRemoteAddress", s("\(r.ip):\(r.port)")),
                ("remoteCandidateId", s(r.googID)), ("googRemoteCandidateType", s(r.googShortType)), ("googRtt", i(rttMs)),
                ("packetsDiscardedOnSend", "0"), ("googTransportType", s(l.proto)), ("googWritable", b(c.selected != nil)),
            ])
        add(
            l.googID, "localcandidate",
            [
                ("ipAddress", s(l.ip)), ("networkType", s(l.networkType)), ("portNumber", i(l.port)),
                ("priority", i(l.priority)), ("transport", s(l.proto)), ("candidateType", s(l.googCandidateType)),
            ])
        add(
            r.googID, "remotecandidate",
            [
                ("ipAddress", s(r.ip)), ("portNumber", i(r.port)), ("priority", i(r.priority)),
                ("transport", s(r.proto)), ("candidateType", s(r.googCandidateType)),
            ])
        guard media else { return }
        let codecName = plan.audioCodec == .opus ? "opus" : plan.audioCodec == .pcmu ? "PCMU" : "PCMA"
        let videoName = plan.videoCodec == .vp8 ? "VP8" : plan.videoCodec == .vp9 ? "VP9" : "H264"

        // Audio send and receive.
        let ao = c.audioOut
        add(
            "ssrc_\(ao.ssrc)_send", "ssrc",
            [
                ("audioInputLevel", i(Int(ao.audioLevel * 32_767))), ("bytesSent", i(ao.bytesSent)),
                ("packetsLost", i(ao.remotePacketsLost)), ("packetsSent", i(ao.packetsSent)), ("ssrc", i(Int(ao.ssrc))),
                ("transportId", "Channel-audio-1"), ("googCodecName", s(codecName)),
                ("googEchoCancellationQualityMin", "0"), ("googEchoCancellationEchoDelayMedian", "0"),
                ("googEchoCancellationEchoDelayStdDev", "0"), ("googEchoCancellationReturnLoss", "0"),
                ("googEchoCancellationReturnLossEnhancement", "0"), ("googJitterReceived", i(Int(ao.remoteJitter * 1000))),
                ("googRtt", i(Int(((ao.roundTripTime ?? 0) * 1000).rounded()))), ("googTrackId", "ARDAMSa0"),
                ("googTypingNoiseState", "false"),
            ])
        let ai = c.audioIn
        // NetEq decode-call counters (10 ms each): normal, expand (PLC), comfort noise.
        let calls = Int(ai.totalSamplesDuration * 100)
        let perCall = max(1, ai.clockRate / 100)
        let plc = ai.concealedSamples / perCall
        let plcCng = ai.silentConcealedSamples / perCall
        let plcSpeech = (ai.concealedSamples - ai.silentConcealedSamples) / perCall
        add("googTrack_" + audioTrackIn, "googTrack", [("googTrackId", s(audioTrackIn))])
        add(
            "ssrc_\(ai.ssrc)_recv", "ssrc",
            [
                ("audioOutputLevel", i(Int(ai.audioLevel * 32_767))), ("bytesReceived", i(ai.bytesReceived)),
                ("packetsLost", i(ai.packetsLost)), ("packetsReceived", i(ai.packetsReceived)), ("ssrc", i(Int(ai.ssrc))),
                ("transportId", "Channel-audio-1"), ("googAccelerateRate", d(ai.expandRate * 0.1)),
                ("googCaptureStartNtpTimeMs", i(3_654_068_213_162 + Int(ai.ssrc % 100_000))), ("googCodecName", s(codecName)),
                ("googCurrentDelayMs", i(Int(ai.currentDelayMs))), ("googDecodingCNG", "0"), ("googDecodingCTN", i(calls)),
                ("googDecodingCTSG", "0"), ("googDecodingNormal", i(max(0, calls - plc))), ("googDecodingPLC", i(plcSpeech)),
                ("googDecodingPLCCNG", i(plcCng)), ("googExpandRate", d(ai.expandRate)),
                ("googJitterBufferMs", i(Int(ai.currentDelayMs * 0.8))), ("googJitterReceived", i(Int(ai.jitter * 1000))),
                ("googPreemptiveExpandRate", d(ai.expandRate * 0.05)), ("googPreferredJitterBufferMs", i(Int(ai.currentDelayMs * 0.7))),
                ("googSecondaryDecodedRate", "0"), ("googSpeechExpandRate", d(ai.expandRate * 0.8)), ("googTrackId", s(audioTrackIn)),
            ])

        // Video send and receive, and the bandwidth estimate.
        if let vo = c.videoOut {
            add(
                "ssrc_\(vo.ssrc)_send", "ssrc",
                [
                    ("bytesSent", i(vo.bytesSent)), ("packetsLost", i(vo.remotePacketsLost)), ("packetsSent", i(vo.packetsSent)),
                    ("ssrc", i(Int(vo.ssrc))), ("transportId", "Channel-audio-1"), ("googAdaptationChanges", i(vo.adaptation.changes)),
                    ("googAvgEncodeMs", i(Int(vo.encodeMs))),
                    ("googBandwidthLimitedResolution", b(vo.qualityLimitationReason == "bandwidth")), ("googCodecName", s(videoName)),
                    ("googCpuLimitedResolution", b(vo.qualityLimitationReason == "cpu")),
                    ("googEncodeUsagePercent", i(Int(vo.encodeMs * vo.framesPerSecond / 10))), ("googFirsReceived", i(vo.firCount)),
                    ("googFrameHeightInput", i(vo.camera.height)), ("googFrameHeightSent", i(vo.framesPerSecond > 0 ? vo.frameHeight : 0)),
                    ("googFrameRateInput", i(Int(vo.sourceFps))), ("googFrameRateSent", i(Int(vo.framesPerSecond))),
                    ("googFrameWidthInput", i(vo.camera.width)), ("googFrameWidthSent", i(vo.framesPerSecond > 0 ? vo.frameWidth : 0)),
                    ("googNacksReceived", i(vo.nackCount)), ("googPlisReceived", i(vo.pliCount)),
                    ("googRtt", i(Int(((vo.roundTripTime ?? 0) * 1000).rounded()))), ("googTrackId", "ARDAMSv0"),
                    ("googViewLimitedResolution", "false"),
                ])
            let kbps = vo.targetBitrate
            add(
                "bweforvideo", "VideoBwe",
                [
                    ("googActualEncBitrate", i(Int(kbps * 0.97))), ("googAvailableReceiveBandwidth", i(Int(c.availableOutgoingBitrate * 0.9))),
                    ("googAvailableSendBandwidth", i(Int(c.availableOutgoingBitrate))), ("googBucketDelay", "0"),
                    ("googRetransmitBitrate", i(vo.retransmittedBytesSent > 0 ? 8_000 : 0)), ("googTargetEncBitrate", i(Int(kbps))),
                    ("googTransmitBitrate", i(Int(kbps * 0.99))),
                ])
        }
        if let vi = c.videoIn {
            add("googTrack_" + videoTrackIn, "googTrack", [("googTrackId", s(videoTrackIn))])
            let rendering = vi.framesPerSecond > 0
            add(
                "ssrc_\(vi.ssrc)_recv", "ssrc",
                [
                    ("bytesReceived", i(vi.bytesReceived)), ("packetsLost", i(vi.packetsLost)), ("packetsReceived", i(vi.packetsReceived)),
                    ("ssrc", i(Int(vi.ssrc))), ("transportId", "Channel-audio-1"), ("googCaptureStartNtpTimeMs", "0"),
                    ("googCurrentDelayMs", i(Int(vi.currentDelayMs))), ("googDecodeMs", i(Int(vi.decodeMs))),
                    ("googFirsSent", i(vi.firCount)), ("googFrameHeightReceived", i(rendering ? vi.frameHeight : -1)),
                    ("googFrameRateDecoded", i(Int(vi.framesPerSecond))), ("googFrameRateOutput", i(Int(vi.framesPerSecond))),
                    ("googFrameRateReceived", i(Int(vi.framesPerSecond))), ("googFrameWidthReceived", i(rendering ? vi.frameWidth : -1)),
                    ("googJitterBufferMs", i(Int(vi.currentDelayMs * 0.7))), ("googMaxDecodeMs", i(Int(vi.decodeMs * 3) + 1)),
                    ("googMinPlayoutDelayMs", i(Int(vi.currentDelayMs * 0.3))), ("googNacksSent", i(vi.nackCount)),
                    ("googPlisSent", i(vi.pliCount)), ("googRenderDelayMs", "10"), ("googTargetDelayMs", i(Int(vi.currentDelayMs))),
                    ("googTrackId", s(videoTrackIn)),
                ])
        }
    }
}
