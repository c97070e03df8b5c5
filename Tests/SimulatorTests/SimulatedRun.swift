import CallLog
import Simulator

/// One pass over a 200-call run, shared by the tests: the run is generated once, call by call
/// (never all in memory), and everything the tests check is collected on the way.
final class SimulatedRun: @unchecked Sendable {
    static let shared = SimulatedRun(calls: 200, seed: 7)

    struct Call {
        var plan: CallPlan
        var records: Int = 0
        var stats: Int = 0
        /// Inbound audio: (packetsReceived, packetsLost) per snapshot, per SSRC in order of appearance.
        var inboundAudio: [String: [(received: Double, lost: Double)]] = [:]
        var inboundAudioOrder: [String] = []
        var outboundAudioSent: [Double] = []
        var rtpObjects = 0
        var selectedLocalCandidateTypes: Set<String> = []
        var remoteInboundRtt: [Double] = []
        var outboundVideoHeights: [Double] = []
        var limitationReasons: Set<String> = []
        var freezeCount = 0.0
        var qualityScores: [(ts: Int64, score: Double)] = []
        var eventTypes: [String] = []
        var end: LogRecord?
        var networks: [String] = []
        var concealedFraction = 0.0
    }

    let simulator: Simulator
    private(set) var calls: [Call] = []
    private(set) var kinds: Set<String> = []
    private(set) var events: Set<String> = []
    private(set) var w3cFields: [String: Set<String>] = [:]
    private(set) var googFields: [String: Set<String>] = [:]
    private(set) var googTypes: Set<String> = []
    private(set) var formats: Set<String> = []
    private(set) var counterViolations: [String] = []
    private(set) var counterChecks = 0
    private(set) var resetsAtIPChange = 0

    /// Cumulative counters that must never go down within one object (one SSRC).
    static let counters: Set<String> = [
        "packetsReceived", "packetsLost", "bytesReceived", "headerBytesReceived", "packetsSent", "bytesSent",
        "headerBytesSent", "concealedSamples", "silentConcealedSamples", "concealmentEvents", "totalSamplesReceived",
        "jitterBufferDelay", "jitterBufferEmittedCount", "jitterBufferTargetDelay", "jitterBufferMinimumDelay",
        "insertedSamplesForDeceleration", "removedSamplesForAcceleration", "totalSamplesDuration", "totalAudioEnergy",
        "framesDecoded", "framesReceived", "framesDropped", "keyFramesDecoded", "freezeCount", "totalFreezesDuration",
        "pauseCount", "totalPausesDuration", "totalInterFrameDelay", "totalSquaredInterFrameDelay", "framesEncoded",
        "framesSent", "keyFramesEncoded", "nackCount", "pliCount", "qpSum", "totalEncodeTime", "totalDecodeTime",
        "retransmittedPacketsSent", "retransmittedBytesSent", "retransmittedPacketsReceived", "totalRoundTripTime",
        "roundTripTimeMeasurements", "reportsSent", "frames", "totalProcessingDelay", "totalPlayoutDelay",
        "totalSamplesCount", "qualityLimitationResolutionChanges", "requestsSent", "responsesReceived", "consentRequestsSent",
        // legacy names
        "googDecodingCTN", "googDecodingPLC", "googDecodingNormal", "googNacksReceived", "googPlisReceived", "googNacksSent",
    ]

    init(calls n: Int, seed: UInt64) {
        simulator = Simulator(SimulatorConfiguration(calls: n, seed: seed))
        for i in 0..<n { collect(simulator.records(forCall: i), plan: simulator.plan(i)) }
    }

    private func number(_ v: JSONValue?) -> Double? {
        if let d = v?.doubleValue { return d }
        if let s = v?.stringValue { return Double(s) }
        return nil
    }

    private func collect(_ records: [LogRecord], plan: CallPlan) {
        var call = Call(plan: plan)
        var previous: [String: [String: Double]] = [:]
        var ipChangeEnded = false
        for r in records {
            call.records += 1
            kinds.insert(r.kind.rawValue)
            switch r.kind {
            case .call: call.networks.append(r["network"]?.stringValue ?? "")
            case .event:
                let key = "\(r["action"]!.stringValue!)/\(r["type"]!.stringValue!)"
                events.insert(key)
                call.eventTypes.append(r["type"]!.stringValue!)
                if key == "ipChange/ipChangeEnded" { ipChangeEnded = true }
            case .quality: call.qualityScores.append((r.ts, r["score"]!.doubleValue!))
            case .end: call.end = r
            case .stats:
                call.stats += 1
                let format = r["format"]!.stringValue!
                formats.insert(format)
                for v in r["report"]!.arrayValue! {
                    let o = v.objectValue!
                    let id = o["id"]!.stringValue!, type = o["type"]!.stringValue!
                    let values = format == "goog" ? o["values"]!.objectValue! : o
                    if format == "w3c" {
                        w3cFields[type, default: []].formUnion(o.keys)
                    } else {
                        googTypes.insert(type)
                        let key =
                            type == "ssrc"
                            ? "ssrc" + (id.hasSuffix("_send") ? "_send" : "_recv")
                                + (values["audioInputLevel"] != nil || values["audioOutputLevel"] != nil ? "_audio" : "_video") : type
                        googFields[key, default: []].formUnion(values.keys)
                    }
                    // Counters never decrease within an object (the transport restarts at an IP change).
                    var now: [String: Double] = [:]
                    for e in values.entries where SimulatedRun.counters.contains(e.key) {
                        guard let x = number(e.value) else { continue }
                        now[e.key] = x
                        counterChecks += 1
                        if let before = previous[id]?[e.key], x < before {
                            if (type == "transport" || type == "media-playout") && ipChangeEnded {
                                resetsAtIPChange += 1
                            } else {
                                counterViolations.append("\(plan.id) \(id).\(e.key): \(before) -> \(x)")
                            }
                        }
                    }
                    previous[id] = now
                    facts(&call, format: format, id: id, type: type, o: o, values: values, report: r["report"]!.arrayValue!)
                }
                if ipChangeEnded { ipChangeEnded = false }
            default: break
            }
        }
        calls.append(call)
    }

    private func facts(
        _ call: inout Call, format: String, id: String, type: String, o: JSONObject, values: JSONObject,
        report: [JSONValue]
    ) {
        let kind = o["kind"]?.stringValue
        if type == "inbound-rtp" || type == "outbound-rtp" || type == "ssrc" { call.rtpObjects += 1 }
        let audioIn = (type == "inbound-rtp" && kind == "audio") || (type == "ssrc" && values["audioOutputLevel"] != nil)
        let audioOut = (type == "outbound-rtp" && kind == "audio") || (type == "ssrc" && values["audioInputLevel"] != nil)
        if audioIn {
            if call.inboundAudio[id] == nil { call.inboundAudioOrder.append(id) }
            call.inboundAudio[id, default: []].append((number(values["packetsReceived"]) ?? 0, number(values["packetsLost"]) ?? 0))
            if let c = number(values["concealedSamples"]), let t = number(values["totalSamplesReceived"]), t > 0 {
                call.concealedFraction = c / t
            }
        }
        if audioOut { call.outboundAudioSent.append(number(values["packetsSent"]) ?? 0) }
        if type == "remote-inbound-rtp", let rtt = number(values["roundTripTime"]) { call.remoteInboundRtt.append(rtt) }
        if type == "outbound-rtp" && kind == "video" {
            if let h = number(values["frameHeight"]) { call.outboundVideoHeights.append(h) }
            if let q = values["qualityLimitationReason"]?.stringValue { call.limitationReasons.insert(q) }
        }
        if type == "inbound-rtp" && kind == "video" { call.freezeCount = number(values["freezeCount"]) ?? 0 }
        if type == "transport", let sel = values["selectedCandidatePairId"]?.stringValue {
            let pair = report.first { $0["id"]?.stringValue == sel }
            let local = pair?["localCandidateId"]?.stringValue
            if let t = report.first(where: { $0["id"]?.stringValue == local })?["candidateType"]?.stringValue {
                call.selectedLocalCandidateTypes.insert(t)
            }
        }
        if type == "localcandidate", let t = values["candidateType"]?.stringValue {
            call.selectedLocalCandidateTypes.insert(t == "relayed" ? "relay" : t)
        }
    }

    func calls(_ profile: NetworkProfile, connected: Bool = true) -> [Call] {
        calls.filter { $0.plan.profile == profile && (!connected || $0.plan.script.connectMs != nil) }
    }
}
