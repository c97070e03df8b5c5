import CallLog
import Quality

/// Builds the capture's log records. Field names and units are documented in
/// `Data/FORMAT-capture.md`; keep the two in step.
enum CaptureRecords {
    static func number(_ v: Int) -> JSONValue { .number(Double(v)) }
    static func number(_ v: Int64) -> JSONValue { .number(Double(v)) }
    static func number(_ v: UInt32) -> JSONValue { .number(Double(v)) }
    /// Milliseconds and ratios are rounded to microsecond / 1e-6 precision: more digits are
    /// noise and cost log space.
    static func rounded(_ v: Double) -> JSONValue { .number((v * 1_000_000).rounded() / 1_000_000) }

    static func call(_ call: CallState, ts: Int64) -> LogRecord {
        var extra: JSONObject = ["source": .string(call.sipCallID != nil ? "sip" : "flow")]
        if let id = call.sipCallID { extra["callId"] = .string(id) }
        if let e = call.endpoints { extra["endpoints"] = [.string(e.source.description), .string(e.destination.description)] }
        return LogRecord.callInfo(
            call: call.id, ts: ts, direction: "both", sdk: "wire", sdkVersion: CaptureSession.version,
            app: "callstats-capture", appVersion: CaptureSession.version, platform: "capture",
            network: "unknown", media: call.media, extra: extra)
    }

    static func end(_ call: CallState, reason: String, ts: Int64, kernelDrops: UInt32) -> LogRecord {
        var r = LogRecord.end(call: call.id, ts: ts, reason: reason, durationMs: (call.lastActivityNanos - call.firstNanos) / 1_000_000)
        if kernelDrops > 0 { r["kernelDrops"] = number(kernelDrops) }
        return r
    }

    static func rtp(
        _ s: StreamState, call: String, payloadType: UInt8, codec: String?, clockRate: UInt32,
        durationNanos: Int64, final: Bool
    ) -> LogRecord {
        let st = s.statistics
        let base = s.interval
        var b: JSONObject = [
            "ssrc": number(s.key.ssrc),
            "src": .string(s.key.flow.source.description),
            "dst": .string(s.key.flow.destination.description),
            "pt": number(Int(payloadType)),
        ]
        if let codec { b["codec"] = .string(codec) }
        if clockRate > 0 { b["clockRate"] = number(clockRate) }
        b["clockRateSource"] = .string(s.clockRateSource.rawValue)
        if s.secure { b["srtp"] = true }
        if s.viaTURN { b["relayed"] = true }
        b["final"] = .bool(final)
        b["firstTs"] = number(st.firstArrivalNanos / 1_000_000)
        b["packetsReceived"] = number(st.packets)
        b["bytesReceived"] = number(st.payloadBytes)
        b["headerBytesReceived"] = number(st.headerBytes)
        b["packetsExpected"] = number(st.expected)
        b["packetsLost"] = number(st.lost)
        b["packetsDuplicated"] = number(st.duplicates)
        b["packetsOutOfOrder"] = number(st.outOfOrder)
        b["markers"] = number(st.markers)
        if st.jitterComputed {
            b["jitterMs"] = rounded(st.jitterMs)
            b["maxJitterMs"] = rounded(st.maxJitterMs)
            b["meanJitterMs"] = rounded(st.meanJitterMs)
        }
        b["maxDeltaMs"] = rounded(st.maxDeltaMs)

        let packets = st.packets - base.packets
        let expected = st.expected - base.expected
        let lost = st.lost - base.lost
        let bytes = st.payloadBytes - base.payloadBytes + st.headerBytes - base.headerBytes
        var i: JSONObject = [
            "durationMs": rounded(Double(max(0, durationNanos)) / 1e6),
            "packetsReceived": number(packets),
            "bytesReceived": number(st.payloadBytes - base.payloadBytes),
            "packetsExpected": number(expected),
            "packetsLost": number(lost),
            "fractionLost": rounded(expected > 0 ? max(0, Double(lost) / Double(expected)) : 0),
        ]
        if st.jitterComputed { i["maxJitterMs"] = rounded(st.windowMaxJitterMs) }
        i["maxDeltaMs"] = rounded(st.windowMaxDeltaMs)
        if durationNanos > 0 { i["bitrate"] = rounded(Double(bytes * 8) * 1e9 / Double(durationNanos)) }
        b["interval"] = .object(i)
        return LogRecord(kind: .rtpStream, call: call, ts: st.lastArrivalNanos / 1_000_000, body: b)
    }

    static func reportBlock(_ r: RTCPReportBlock, rttMs: Double?, clockRate: UInt32?) -> JSONValue {
        var o: JSONObject = [
            "ssrc": number(r.ssrc),
            "fractionLost": rounded(RTCPMath.fractionLost(r.fractionLost)),
            "packetsLost": number(Int(r.cumulativeLost)),
            "highestSeq": number(r.extendedHighestSequence),
            "jitter": number(r.jitter),
        ]
        if let clockRate, let jitterMs = RTCPMath.jitterMs(timestampUnits: Double(r.jitter), clockRate: Double(clockRate)) {
            o["jitterMs"] = rounded(jitterMs)
        }
        o["lsr"] = number(r.lastSR)
        o["dlsrMs"] = rounded(RTCPMath.compactNTPMs(r.delaySinceLastSR))
        if let rttMs { o["roundTripTimeMs"] = rounded(rttMs) }
        return .object(o)
    }

    static func rtcp(
        _ c: RTCPCompound, call: String, flow: FlowKey, ts: Int64, viaTURN: Bool,
        roundTripsMs: [UInt32: Double], clockRates: [UInt32: UInt32], xrRoundTripsMs: [UInt32: Double] = [:]
    ) -> LogRecord {
        var b: JSONObject = [
            "src": .string(flow.source.description),
            "dst": .string(flow.destination.description),
            "types": .array(c.packets.map { number(Int($0.packetType)) }),
        ]
        if viaTURN { b["relayed"] = true }
        if c.truncated { b["truncated"] = true }
        var reports: [JSONValue] = []
        for packet in c.packets {
            switch packet {
            case let .senderReport(ssrc, ntp, rtpTs, packetCount, octetCount, blocks):
                b["ssrc"] = number(ssrc)
                b["sr"] = .object([
                    "ntpTimestamp": rounded(Double(ntp >> 32) + Double(ntp & 0xFFFF_FFFF) / 4_294_967_296),
                    "rtpTimestamp": number(rtpTs),
                    "packetsSent": number(packetCount),
                    "bytesSent": number(octetCount),
                ])
                reports += blocks.map { reportBlock($0, rttMs: roundTripsMs[$0.ssrc], clockRate: clockRates[$0.ssrc]) }
            case let .receiverReport(ssrc, blocks):
                if b["ssrc"] == nil { b["ssrc"] = number(ssrc) }
                reports += blocks.map { reportBlock($0, rttMs: roundTripsMs[$0.ssrc], clockRate: clockRates[$0.ssrc]) }
            case .sourceDescription(let chunks):
                if let cname = chunks.first(where: { $0.cname != nil })?.cname { b["cname"] = .string(cname) }
            case let .goodbye(ssrcs, reason):
                var o: JSONObject = ["ssrcs": .array(ssrcs.map { number($0) })]
                if let reason { o["reason"] = .string(reason) }
                b["bye"] = .object(o)
            case let .extendedReport(ssrc, metrics, _, times):
                if b["ssrc"] == nil { b["ssrc"] = number(ssrc) }
                if let m = metrics.first { b["voipMetrics"] = voip(m) }
                if let ntp = times.receiverReferenceTime {
                    b["rrtr"] = .object(["ntpTimestamp": rounded(Double(ntp >> 32) + Double(ntp & 0xFFFF_FFFF) / 4_294_967_296)])
                }
                if !times.dlrr.isEmpty {
                    b["dlrr"] = .array(
                        times.dlrr.map { d in
                            var o: JSONObject = [
                                "ssrc": number(d.ssrc), "lrr": number(d.lastRR),
                                "dlrrMs": rounded(RTCPMath.compactNTPMs(d.delaySinceLastRR)),
                            ]
                            if let rtt = xrRoundTripsMs[d.ssrc] { o["roundTripTimeMs"] = rounded(rtt) }
                            return .object(o)
                        })
                }
            case .other(_, let ssrc):
                if b["ssrc"] == nil, let ssrc { b["ssrc"] = number(ssrc) }
            }
        }
        if !reports.isEmpty { b["reports"] = .array(reports) }
        return LogRecord(kind: .rtcp, call: call, ts: ts, body: b)
    }

    /// RFC 3611 §4.7 values in natural units; "unavailable" codes (127, 0) are left out.
    static func voip(_ m: RTCPVoIPMetrics) -> JSONValue {
        var o: JSONObject = [
            "ssrc": number(m.ssrc),
            "lossRate": rounded(Double(m.lossRate) / 256),
            "discardRate": rounded(Double(m.discardRate) / 256),
            "burstDensity": rounded(Double(m.burstDensity) / 256),
            "gapDensity": rounded(Double(m.gapDensity) / 256),
            "burstDurationMs": number(Int(m.burstDuration)),
            "gapDurationMs": number(Int(m.gapDuration)),
            "roundTripDelayMs": number(Int(m.roundTripDelay)),
            "endSystemDelayMs": number(Int(m.endSystemDelay)),
        ]
        if m.signalLevel != 127 { o["signalLevelDb"] = number(Int(m.signalLevel)) }
        if m.noiseLevel != 127 { o["noiseLevelDb"] = number(Int(m.noiseLevel)) }
        if m.residualEchoReturnLoss != 127 { o["rerlDb"] = number(Int(m.residualEchoReturnLoss)) }
        o["gmin"] = number(Int(m.gmin))
        if m.rFactor != 127 { o["rFactor"] = number(Int(m.rFactor)) }
        if m.externalRFactor != 127 { o["externalRFactor"] = number(Int(m.externalRFactor)) }
        if m.mosLQ != 127 { o["mosLq"] = rounded(Double(m.mosLQ) / 10) }
        if m.mosCQ != 127 { o["mosCq"] = rounded(Double(m.mosCQ) / 10) }
        o["jitterBufferNominalMs"] = number(Int(m.jitterBufferNominal))
        o["jitterBufferMaxMs"] = number(Int(m.jitterBufferMaximum))
        o["jitterBufferAbsMaxMs"] = number(Int(m.jitterBufferAbsoluteMaximum))
        return .object(o)
    }

    static func ice(_ p: ICEPairState, call: String, ts: Int64, final: Bool) -> LogRecord {
        let remote = p.key.source == p.initiator ? p.key.destination : p.key.source
        let state = p.successResponses > 0 ? "succeeded" : (p.errorResponses > 0 ? "failed" : (final ? "noResponse" : "inProgress"))
        var b: JSONObject = [
            "local": .string(p.initiator.description),
            "remote": .string(remote.description),
            "state": .string(state),
            "final": .bool(final),
        ]
        if let c = p.controlling { b["controlling"] = .string(c.description) }
        b["nominated"] = .bool(p.nominated)
        b["requestsSent"] = number(p.requestsFromInitiator)
        b["requestsReceived"] = number(p.requestsFromPeer)
        b["responsesReceived"] = number(p.successResponses)
        b["errorResponses"] = number(p.errorResponses)
        if let code = p.lastErrorCode { b["lastErrorCode"] = number(code) }
        if p.rttSamples > 0 {
            b["rttSamples"] = number(p.rttSamples)
            b["currentRoundTripTimeMs"] = rounded(p.rttLastMs)
            b["minRoundTripTimeMs"] = rounded(p.rttMinMs)
            b["meanRoundTripTimeMs"] = rounded(p.rttSumMs / Double(p.rttSamples))
            b["maxRoundTripTimeMs"] = rounded(p.rttMaxMs)
        }
        b["firstCheckTs"] = number(p.firstCheckNanos / 1_000_000)
        if let s = p.firstSuccessNanos { b["firstSuccessTs"] = number(s / 1_000_000) }
        if let m = p.firstMediaNanos {
            b["firstMediaTs"] = number(m / 1_000_000)
            b["checkToMediaMs"] = rounded(Double(m - p.firstCheckNanos) / 1e6)
        }
        if p.consentChecks > 0 {
            b["consentChecks"] = number(p.consentChecks)
            b["maxConsentGapMs"] = rounded(Double(p.maxConsentGapNanos) / 1e6)
        }
        return LogRecord(kind: .ice, call: call, ts: ts, body: b)
    }
}
