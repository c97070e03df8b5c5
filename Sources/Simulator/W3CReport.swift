import CallLog

/// Builds a W3C `getStats()` report the way Chromium returns it: the same object types, the
/// same members per type, ids spelled the same way (`IT01A<ssrc>`, `RIA<ssrc>`, `CF<fingerprint>`…)
/// and objects sorted by id. A test compares the member sets with the real recording.
///
/// Objects are built as ordered key lists directly (no dictionaries), one array per object.
struct W3CReport {
    /// Appends one object: `id`, `timestamp`, `type`, then the members.
    private var items: [(id: String, value: JSONValue)] = []
    private let now: Double
    private let ts: JSONValue

    init(now: Double) {
        self.now = now
        ts = .number(now)
        items.reserveCapacity(40)
    }

    @inline(__always) private static func n(_ v: Int) -> JSONValue { .number(Double(v)) }
    @inline(__always) private static func n(_ v: Double) -> JSONValue { .number(v) }
    @inline(__always) private static func s(_ v: String) -> JSONValue { .string(v) }

    private mutating func add(
        _ id: String, _ type: String, timestamp: JSONValue? = nil,
        _ members: [(key: String, value: JSONValue)]
    ) {
        items.append((id, .object(Self.statsObject(id, type, timestamp: timestamp ?? ts, members))))
    }

    /// One W3C stats object: `id`, `timestamp` and `type` first, as getStats() gives them.
    static func statsObject(_ id: String, _ type: String, timestamp: JSONValue, _ members: [(key: String, value: JSONValue)]) -> JSONObject {
        var o = JSONObject()
        o.entries.reserveCapacity(members.count + 3)
        o.entries.append((key: "id", value: .string(id)))
        o.entries.append((key: "timestamp", value: timestamp))
        o.entries.append((key: "type", value: .string(type)))
        o.entries.append(contentsOf: members)
        return o
    }

    /// The report: every object of the connection, sorted by id as Chromium lists them.
    static func build(plan: CallPlan, connection c: Connection, now: Double) -> [JSONValue] {
        var r = W3CReport(now: now)
        r.addAll(plan: plan, c: c)
        r.items.sort { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
        return r.items.map(\.value)
    }

    private mutating func addAll(plan: CallPlan, c: Connection) {
        typealias M = [(key: String, value: JSONValue)]
        let n = W3CReport.n as (Int) -> JSONValue, d = W3CReport.n as (Double) -> JSONValue, s = W3CReport.s
        let media = c.mediaStarted
        let audioCodec = W3CReport.codec(plan.audioCodec)
        let videoCodec = W3CReport.codec(plan.videoCodec)

        // Playout, certificates, codecs, peer connection.
        if media {
            add(
                "AP", "media-playout",
                [
                    ("kind", "audio"), ("synthesizedSamplesDuration", 0), ("synthesizedSamplesEvents", 0),
                    ("totalPlayoutDelay", d(c.audioIn.playoutDelay.rounded(toPlaces: 6))),
                    ("totalSamplesCount", n(c.audioIn.playoutSamples)), ("totalSamplesDuration", d(c.audioIn.playoutDuration)),
                ])
        }
        add(
            c.localCertificate.id, "certificate",
            [
                ("base64Certificate", s(c.localCertificate.base64)), ("fingerprint", s(c.localCertificate.fingerprint)),
                ("fingerprintAlgorithm", "sha-256"),
            ])
        if c.dtlsConnected {
            add(
                c.remoteCertificate.id, "certificate",
                [
                    ("base64Certificate", s(c.remoteCertificate.base64)), ("fingerprint", s(c.remoteCertificate.fingerprint)),
                    ("fingerprintAlgorithm", "sha-256"),
                ])
        }
        if media {
            for dir in ["CIT01_", "COT01_"] {
                add(dir + audioCodec.suffix, "codec", audioCodec.members)
                if c.videoIn != nil { add(dir + videoCodec.suffix, "codec", videoCodec.members) }
            }
        }
        add("P", "peer-connection", [("dataChannelsClosed", 0), ("dataChannelsOpened", 0)])

        // ICE.
        let totalSent = c.bytesSent, totalReceived = c.bytesReceived
        for (i, p) in c.pairs.enumerated() {
            let isSelected = i == c.selected
            var m: M = []
            m.reserveCapacity(24)
            if isSelected { m.append(("availableOutgoingBitrate", d(c.availableOutgoingBitrate))) }
            m.append(("bytesDiscardedOnSend", 0))
            m.append(("bytesReceived", n(isSelected ? totalReceived : p.bytesReceived)))
            m.append(("bytesSent", n(isSelected ? totalSent : p.bytesSent)))
            m.append(("consentRequestsSent", n(p.consentRequestsSent)))
            if let rtt = p.currentRoundTripTime { m.append(("currentRoundTripTime", d(rtt))) }
            if isSelected && media && c.packetsReceived > 0 {
                m.append(("lastPacketReceivedTimestamp", d((now - 8).rounded())))
            }
            if isSelected && media { m.append(("lastPacketSentTimestamp", d((now - 11).rounded()))) }
            m.append(("localCandidateId", s(c.local[p.local].id)))
            m.append(("nominated", .bool(p.nominated)))
            m.append(("packetsDiscardedOnSend", 0))
            m.append(("packetsReceived", n(isSelected ? c.packetsReceived : p.packetsReceived)))
            m.append(("packetsSent", n(isSelected ? c.packetsSent : p.packetsSent)))
            m.append(("priority", d(p.priority)))
            m.append(("remoteCandidateId", s(c.remote[p.remote].id)))
            m.append(("requestsReceived", n(p.requestsReceived)))
            m.append(("requestsSent", n(p.requestsSent)))
            m.append(("responsesReceived", n(p.responsesReceived)))
            m.append(("responsesSent", n(p.responsesSent)))
            m.append(("state", s(p.state)))
            m.append(("totalRoundTripTime", d(p.totalRoundTripTime)))
            m.append(("transportId", "T01"))
            m.append(("writable", .bool(p.writable)))
            add(p.id, "candidate-pair", m)
        }
        for cand in c.local {
            var m: M = [
                ("address", s(cand.address)), ("candidateType", s(cand.type)), ("foundation", s(cand.foundation)),
                ("ip", s(cand.ip)), ("isRemote", false), ("networkType", s(cand.networkType)), ("port", n(cand.port)),
                ("priority", n(cand.priority)), ("protocol", s(cand.proto)),
            ]
            if let a = cand.relatedAddress, let p = cand.relatedPort {
                m.append(("relatedAddress", s(a)))
                m.append(("relatedPort", n(p)))
            }
            if let rp = cand.relayProtocol { m.append(("relayProtocol", s(rp))) }
            if let t = cand.tcpType { m.append(("tcpType", s(t))) }
            m.append(("transportId", "T01"))
            if let u = cand.url { m.append(("url", s(u))) }
            m.append(("usernameFragment", s(cand.ufrag)))
            add(cand.id, "local-candidate", m)
        }
        for cand in c.remote {
            add(
                cand.id, "remote-candidate",
                [
                    ("address", s(cand.address)), ("candidateType", s(cand.type)), ("foundation", s(cand.foundation)),
                    ("ip", s(cand.ip)), ("isRemote", true), ("port", n(cand.port)), ("priority", n(cand.priority)),
                    ("protocol", s(cand.proto)), ("transportId", "T01"), ("usernameFragment", s(cand.ufrag)),
                ])
        }
        var t: M = [("bytesReceived", n(totalReceived)), ("bytesSent", n(totalSent))]
        if c.dtlsConnected { t.append(("dtlsCipher", "TLS_AES_128_GCM_SHA256")) }
        t.append(("dtlsRole", s(c.dtlsConnected ? (c.controlling ? "server" : "client") : "unknown")))
        t.append(("dtlsState", s(c.dtlsConnected ? "connected" : "connecting")))
        t.append(("iceLocalUsernameFragment", s(c.localUfrag)))
        t.append(("iceRole", s(c.controlling ? "controlling" : "controlled")))
        t.append(("iceState", s(c.iceState)))
        t.append(("localCertificateId", s(c.localCertificate.id)))
        t.append(("packetsReceived", n(c.packetsReceived)))
        t.append(("packetsSent", n(c.packetsSent)))
        if c.dtlsConnected { t.append(("remoteCertificateId", s(c.remoteCertificate.id))) }
        t.append(("selectedCandidatePairChanges", n(c.selectedCandidatePairChanges)))
        if let sel = c.selected { t.append(("selectedCandidatePairId", s(c.pairs[sel].id))) }
        if c.dtlsConnected {
            t.append(("srtpCipher", "SRTP_AES128_CM_HMAC_SHA1_80"))
            t.append(("tlsVersion", "FEFC"))
        }
        add("T01", "transport", t)

        // Media sources exist from the start (the tracks are attached before ICE completes).
        let ao = c.audioOut
        add(
            c.audioSourceID, "media-source",
            [
                ("kind", "audio"), ("trackIdentifier", s(c.audioSourceTrack)), ("audioLevel", d(ao.audioLevel)),
                ("echoReturnLoss", d(ao.echoReturnLoss)), ("echoReturnLossEnhancement", d(ao.echoReturnLossEnhancement)),
                ("totalAudioEnergy", d(ao.totalAudioEnergy)), ("totalSamplesDuration", d(ao.totalSamplesDuration)),
            ])
        if let vo = c.videoOut {
            add(
                c.videoSourceID, "media-source",
                [
                    ("kind", "video"), ("trackIdentifier", s(c.videoSourceTrack)), ("frames", n(vo.sourceFrames)),
                    ("framesPerSecond", d(vo.sourceFps)), ("height", n(vo.camera.height)), ("width", n(vo.camera.width)),
                ])
        }
        guard media else { return }

        // Audio in.
        let ai = c.audioIn
        let inA = "IT01A\(ai.ssrc)", outA = "OT01A\(ao.ssrc)"
        let cin = "CIT01_" + audioCodec.suffix, cout = "COT01_" + audioCodec.suffix
        var m: M = [
            ("codecId", s(cin)), ("kind", "audio"), ("mediaType", "audio"), ("ssrc", n(Int(ai.ssrc))), ("transportId", "T01"),
            ("jitter", d(ai.jitter)), ("packetsLost", n(ai.packetsLost)), ("packetsReceived", n(ai.packetsReceived)),
            ("packetsReceivedWithCe", 0), ("packetsReceivedWithEct1", 0), ("audioLevel", d(ai.audioLevel)),
            ("bytesReceived", n(ai.bytesReceived)), ("concealedSamples", n(ai.concealedSamples)),
            ("concealmentEvents", n(ai.concealmentEvents)),
        ]
        if ai.reportsSent > 0 { m.append(("estimatedPlayoutTimestamp", d((now + 2_208_988_800_000 - 75).rounded()))) }
        m.append(
            contentsOf: [
                ("fecPacketsDiscarded", 0), ("fecPacketsReceived", n(ai.fecPacketsReceived)),
                ("headerBytesReceived", n(ai.headerBytesReceived)),
                ("insertedSamplesForDeceleration", n(ai.insertedSamplesForDeceleration)),
                ("jitterBufferDelay", d(ai.jitterBufferDelay.rounded(toPlaces: 1))),
                ("jitterBufferEmittedCount", n(ai.jitterBufferEmittedCount)),
                ("jitterBufferMinimumDelay", d(ai.jitterBufferMinimumDelay.rounded(toPlaces: 1))),
                ("jitterBufferTargetDelay", d(ai.jitterBufferTargetDelay.rounded(toPlaces: 1))),
            ] as M)
        if let lp = ai.lastPacketReceivedTimestamp { m.append(("lastPacketReceivedTimestamp", d(lp))) }
        m.append(
            contentsOf: [
                ("mid", "0"), ("packetsDiscarded", n(ai.packetsDiscarded)), ("playoutId", "AP"),
            ] as M)
        if ai.reportsSent > 0 { m.append(("remoteId", s("ROA\(ai.ssrc)"))) }
        m.append(
            contentsOf: [
                ("removedSamplesForAcceleration", n(ai.removedSamplesForAcceleration)),
                ("silentConcealedSamples", n(ai.silentConcealedSamples)), ("totalAudioEnergy", d(ai.totalAudioEnergy)),
                ("totalProcessingDelay", d(ai.totalProcessingDelay.rounded(toPlaces: 3))),
                ("totalSamplesDuration", d(ai.totalSamplesDuration)), ("totalSamplesReceived", n(ai.totalSamplesReceived)),
                ("trackIdentifier", s(c.inboundAudioTrack)),
            ] as M)
        add(inA, "inbound-rtp", m)
        if ai.reportsSent > 0 {
            var ro: M = [
                ("codecId", s(cin)), ("kind", "audio"), ("mediaType", "audio"), ("ssrc", n(Int(ai.ssrc))), ("transportId", "T01"),
                ("bytesSent", n(ai.senderBytesSent)), ("packetsSent", n(ai.senderPacketsSent)), ("localId", s(inA)),
                ("remoteTimestamp", d(ai.senderRemoteTime)), ("reportsSent", n(ai.reportsSent)),
            ]
            if let rtt = ai.senderRtt { ro.append(("roundTripTime", d(rtt))) }
            ro.append(("roundTripTimeMeasurements", n(ai.senderRttCount)))
            ro.append(("totalRoundTripTime", d(ai.senderTotalRtt)))
            add("ROA\(ai.ssrc)", "remote-outbound-rtp", timestamp: d(ai.senderReportTime), ro)
        }

        // Audio out.
        var o: M = [
            ("codecId", s(cout)), ("kind", "audio"), ("mediaType", "audio"), ("ssrc", n(Int(ao.ssrc))), ("transportId", "T01"),
            ("bytesSent", n(ao.bytesSent)), ("packetsSent", n(ao.packetsSent)), ("active", true),
            ("headerBytesSent", n(ao.headerBytesSent)), ("mediaSourceId", s(c.audioSourceID)), ("mid", "0"),
            ("nackCount", 0), ("packetsSentWithEct1", 0),
        ]
        if ao.roundTripTimeMeasurements > 0 { o.append(("remoteId", s("RIA\(ao.ssrc)"))) }
        o.append(
            contentsOf: [
                ("retransmittedBytesSent", 0), ("retransmittedPacketsSent", 0),
                ("targetBitrate", n(plan.audioCodec == .opus ? 32_000 : 64_000)),
                ("totalPacketSendDelay", d(ao.totalPacketSendDelay.rounded(toPlaces: 6))),
            ] as M)
        add(outA, "outbound-rtp", o)
        if ao.roundTripTimeMeasurements > 0 {
            var ri: M = [
                ("codecId", s(cout)), ("kind", "audio"), ("mediaType", "audio"), ("ssrc", n(Int(ao.ssrc))), ("transportId", "T01"),
                ("jitter", d(ao.remoteJitter)), ("packetsLost", n(ao.remotePacketsLost)), ("fractionLost", d(ao.fractionLost)),
                ("localId", s(outA)),
            ]
            if let rtt = ao.roundTripTime { ri.append(("roundTripTime", d(rtt))) }
            ri.append(("roundTripTimeMeasurements", n(ao.roundTripTimeMeasurements)))
            ri.append(("totalRoundTripTime", d(ao.totalRoundTripTime.rounded(toPlaces: 6))))
            add("RIA\(ao.ssrc)", "remote-inbound-rtp", timestamp: d(ao.reportTime), ri)
        }

        // Video in.
        let vcin = "CIT01_" + videoCodec.suffix, vcout = "COT01_" + videoCodec.suffix
        if let vi = c.videoIn {
            let inV = "IT01V\(vi.ssrc)"
            var v: M = [
                ("codecId", s(vcin)), ("kind", "video"), ("mediaType", "video"), ("ssrc", n(Int(vi.ssrc))), ("transportId", "T01"),
                ("jitter", d(vi.jitter)), ("packetsLost", n(vi.packetsLost)), ("packetsReceived", n(vi.packetsReceived)),
                ("packetsReceivedWithCe", 0), ("packetsReceivedWithEct1", 0), ("bytesReceived", n(vi.bytesReceived)),
                ("decoderImplementation", s(W3CReport.decoder(plan.videoCodec))),
            ]
            if vi.reportsSent > 0 { v.append(("estimatedPlayoutTimestamp", d((now + 2_208_988_800_000 - 56).rounded()))) }
            v.append(
                contentsOf: [
                    ("firCount", n(vi.firCount)), ("frameHeight", n(vi.frameHeight)), ("frameWidth", n(vi.frameWidth)),
                    ("framesAssembledFromMultiplePackets", n(vi.framesAssembledFromMultiplePackets)),
                    ("framesDecoded", n(vi.framesDecoded)), ("framesDropped", n(vi.framesDropped)),
                    ("framesPerSecond", d(vi.framesPerSecond)), ("framesReceived", n(vi.framesReceived)),
                    ("freezeCount", n(vi.freezeCount)), ("googTimingFrameInfo", s(W3CReport.timingFrameInfo(vi, now: now))),
                    ("headerBytesReceived", n(vi.headerBytesReceived)),
                    ("jitterBufferDelay", d(vi.jitterBufferDelay.rounded(toPlaces: 6))),
                    ("jitterBufferEmittedCount", n(vi.jitterBufferEmittedCount)),
                    ("jitterBufferMinimumDelay", d(vi.jitterBufferMinimumDelay.rounded(toPlaces: 6))),
                    ("jitterBufferTargetDelay", d(vi.jitterBufferTargetDelay.rounded(toPlaces: 6))),
                    ("keyFramesDecoded", n(vi.keyFramesDecoded)),
                ] as M)
            if let lp = vi.lastPacketReceivedTimestamp { v.append(("lastPacketReceivedTimestamp", d(lp))) }
            v.append(
                contentsOf: [
                    ("mid", "1"), ("nackCount", n(vi.nackCount)), ("pauseCount", n(vi.pauseCount)), ("pliCount", n(vi.pliCount)),
                    ("powerEfficientDecoder", false), ("qpSum", n(vi.qpSum)), ("remoteId", s("ROV\(vi.ssrc)")),
                    ("retransmittedBytesReceived", n(vi.retransmittedBytesReceived)),
                    ("retransmittedPacketsReceived", n(vi.retransmittedPacketsReceived)), ("rtxSsrc", n(Int(vi.rtxSsrc))),
                    ("totalAssemblyTime", d(vi.totalAssemblyTime.rounded(toPlaces: 6))),
                    ("totalDecodeTime", d(vi.totalDecodeTime.rounded(toPlaces: 6))),
                    ("totalFreezesDuration", d(vi.totalFreezesDuration.rounded(toPlaces: 3))),
                    ("totalInterFrameDelay", d(vi.totalInterFrameDelay.rounded(toPlaces: 3))),
                    ("totalPausesDuration", d(vi.totalPausesDuration.rounded(toPlaces: 3))),
                    ("totalProcessingDelay", d(vi.totalProcessingDelay.rounded(toPlaces: 6))),
                    ("totalSquaredInterFrameDelay", d(vi.totalSquaredInterFrameDelay.rounded(toPlaces: 6))),
                    ("trackIdentifier", s(c.inboundVideoTrack)),
                ] as M)
            add(inV, "inbound-rtp", v)
            if vi.reportsSent > 0 {
                var ro: M = [
                    ("codecId", s(vcin)), ("kind", "video"), ("mediaType", "video"), ("ssrc", n(Int(vi.ssrc))), ("transportId", "T01"),
                    ("bytesSent", n(vi.senderBytesSent)), ("packetsSent", n(vi.senderPacketsSent)), ("localId", s(inV)),
                    ("remoteTimestamp", d(vi.senderRemoteTime)), ("reportsSent", n(vi.reportsSent)),
                ]
                if let rtt = vi.senderRtt { ro.append(("roundTripTime", d(rtt))) }
                ro.append(("roundTripTimeMeasurements", n(vi.senderRttCount)))
                ro.append(("totalRoundTripTime", d(vi.senderTotalRtt.rounded(toPlaces: 6))))
                add("ROV\(vi.ssrc)", "remote-outbound-rtp", timestamp: d(vi.senderReportTime), ro)
            }
        }

        // Video out.
        if let vo = c.videoOut {
            let outV = "OT01V\(vo.ssrc)"
            var v: M = [
                ("codecId", s(vcout)), ("kind", "video"), ("mediaType", "video"), ("ssrc", n(Int(vo.ssrc))), ("transportId", "T01"),
                ("bytesSent", n(vo.bytesSent)), ("packetsSent", n(vo.packetsSent)), ("active", true),
                ("encoderImplementation", s(W3CReport.encoder(plan.videoCodec))), ("encodingIndex", 0),
                ("firCount", n(vo.firCount)), ("frameHeight", n(vo.frameHeight)), ("frameWidth", n(vo.frameWidth)),
                ("framesEncoded", n(vo.framesEncoded)), ("framesPerSecond", d(vo.framesPerSecond)),
                ("framesSent", n(vo.framesSent)), ("headerBytesSent", n(vo.headerBytesSent)),
                ("hugeFramesSent", n(vo.hugeFramesSent)), ("keyFramesEncoded", n(vo.keyFramesEncoded)),
                ("mediaSourceId", s(c.videoSourceID)), ("mid", "1"), ("nackCount", n(vo.nackCount)),
                ("packetsSentWithEct1", 0), ("pliCount", n(vo.pliCount)), ("powerEfficientEncoder", false),
                ("qpSum", n(vo.qpSum)),
                (
                    "qualityLimitationDurations",
                    .object([
                        "bandwidth": d(vo.limitation[0]), "cpu": d(vo.limitation[1]), "none": d(vo.limitation[2]),
                        "other": d(vo.limitation[3]),
                    ])
                ),
                ("qualityLimitationReason", s(vo.qualityLimitationReason)),
                ("qualityLimitationResolutionChanges", n(vo.adaptation.changes)),
            ]
            if vo.roundTripTimeMeasurements > 0 { v.append(("remoteId", s("RIV\(vo.ssrc)"))) }
            v.append(
                contentsOf: [
                    ("retransmittedBytesSent", n(vo.retransmittedBytesSent)),
                    ("retransmittedPacketsSent", n(vo.retransmittedPacketsSent)), ("rtxSsrc", n(Int(vo.rtxSsrc))),
                    ("scalabilityMode", "L1T1"), ("targetBitrate", d(vo.targetBitrate)),
                    ("totalEncodeTime", d(vo.totalEncodeTime.rounded(toPlaces: 3))), ("totalEncodedBytesTarget", 0),
                    ("totalPacketSendDelay", d(vo.totalPacketSendDelay.rounded(toPlaces: 6))),
                ] as M)
            add(outV, "outbound-rtp", v)
            if vo.roundTripTimeMeasurements > 0 {
                var ri: M = [
                    ("codecId", s(vcout)), ("kind", "video"), ("mediaType", "video"), ("ssrc", n(Int(vo.ssrc))), ("transportId", "T01"),
                    ("jitter", d(vo.remoteJitter)), ("packetsLost", n(vo.remotePacketsLost)), ("fractionLost", d(vo.fractionLost)),
                    ("localId", s(outV)),
                ]
                if let rtt = vo.roundTripTime { ri.append(("roundTripTime", d(rtt))) }
                ri.append(("roundTripTimeMeasurements", n(vo.roundTripTimeMeasurements)))
                ri.append(("totalRoundTripTime", d(vo.totalRoundTripTime.rounded(toPlaces: 6))))
                add("RIV\(vo.ssrc)", "remote-inbound-rtp", timestamp: d(vo.reportTime), ri)
            }
        }
    }

    /// Codec id suffix and members, as Chromium spells them (`CIT01_111_minptime=10;useinbandfec=1`).
    static func codec(_ c: AudioCodec) -> (suffix: String, members: [(key: String, value: JSONValue)]) {
        switch c {
        case .opus:
            (
                "111_minptime=10;useinbandfec=1",
                [
                    ("channels", 2), ("clockRate", 48_000), ("mimeType", "audio/opus"),
                    ("payloadType", 111), ("sdpFmtpLine", "minptime=10;useinbandfec=1"), ("transportId", "T01"),
                ]
            )
        case .pcmu:
            ("0", [("channels", 1), ("clockRate", 8_000), ("mimeType", "audio/PCMU"), ("payloadType", 0), ("transportId", "T01")])
        case .pcma:
            ("8", [("channels", 1), ("clockRate", 8_000), ("mimeType", "audio/PCMA"), ("payloadType", 8), ("transportId", "T01")])
        }
    }

    static func codec(_ c: VideoCodec) -> (suffix: String, members: [(key: String, value: JSONValue)]) {
        let h264 = "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"
        return switch c {
        case .vp8:
            ("96", [("clockRate", 90_000), ("mimeType", "video/VP8"), ("payloadType", 96), ("transportId", "T01")])
        case .vp9:
            (
                "98_profile-id=0",
                [
                    ("clockRate", 90_000), ("mimeType", "video/VP9"), ("payloadType", 98),
                    ("sdpFmtpLine", "profile-id=0"), ("transportId", "T01"),
                ]
            )
        case .h264:
            (
                "102_" + h264,
                [
                    ("clockRate", 90_000), ("mimeType", "video/H264"), ("payloadType", 102),
                    ("sdpFmtpLine", .string(h264)), ("transportId", "T01"),
                ]
            )
        }
    }

    static func decoder(_ c: VideoCodec) -> String { c == .h264 ? "FFmpeg" : "libvpx" }
    static func encoder(_ c: VideoCodec) -> String { c == .h264 ? "OpenH264" : "libvpx" }

    /// libwebrtc's timing-frame string: RTP timestamp, then capture-to-render milestones (ms).
    static func timingFrameInfo(_ v: VideoInbound, now: Double) -> String {
        let base = Int64(now) % 10_000_000
        let rtp = UInt32(truncatingIfNeeded: Int64(now) &* 90)
        let enc = base + 1, sent = base + 4, recv = base + 34 + Int64(v.jitter * 1000)
        return "\(rtp),\(base),\(enc),\(base + 4),\(sent),\(sent),\(base),\(base),\(recv),\(recv + 8),\(recv + 14),\(recv + 15),\(recv + 21),0,1"
    }
}

extension Double {
    /// Rounded to `places` decimals, as browsers print their accumulated sums.
    func rounded(toPlaces places: Int) -> Double {
        let f = [1.0, 10, 100, 1_000, 10_000, 100_000, 1_000_000][places]
        return (self * f).rounded() / f
    }
}
