/// Keeps only chosen members of the objects in a `stats` record, for deployments that want the
/// smallest logs more than the whole report.
///
/// By default the collector writes every report unchanged. A getStats report carries many
/// members that change on every poll and that no call-quality question needs (per-pair consent
/// counters, playout timestamps, timing-frame strings); they are most of what a
/// delta log still costs. With a filter, each object keeps `id`, `type`, `timestamp` and the
/// listed members; objects themselves are kept (an object left with only those three costs
/// nothing after the first snapshot), so references between objects stay intact. In legacy goog
/// objects the filter applies to the members of `values`. A member listed by name is kept whole,
/// nested objects included (`qualityLimitationDurations`).
///
/// What is dropped cannot be restored: the reader restores the filtered snapshots exactly, not
/// the SDK's originals.
public struct StatsMemberFilter: Sendable, Equatable {
    public var kept: Set<String>

    public init(keeping kept: Set<String>) {
        self.kept = kept
    }

    /// Every member `callstats analyze` reads: a log filtered with this gives the same analysis
    /// as the unfiltered log (a test holds the analyser's field table to this list).
    public static let analysed: Set<String> = [
        // RTP streams.
        "ssrc", "kind", "mediaType", "codecId", "mimeType", "clockRate",
        "packetsReceived", "packetsLost", "packetsSent", "bytesReceived", "bytesSent", "jitter",
        "concealedSamples", "silentConcealedSamples", "concealmentEvents", "totalSamplesReceived",
        "jitterBufferDelay", "jitterBufferEmittedCount",
        "framesDecoded", "frameWidth", "frameHeight", "framesPerSecond", "freezeCount", "totalFreezesDuration",
        "totalPausesDuration",
        "qualityLimitationReason", "qualityLimitationDurations",
        "roundTripTime", "totalRoundTripTime", "roundTripTimeMeasurements",
        // Silence (a muted sender), the links to the sources and tracks that report it, data channels.
        "audioLevel", "totalAudioEnergy", "mediaSourceId", "trackId", "messagesSent", "messagesReceived",
        // ICE.
        "state", "nominated", "currentRoundTripTime", "responsesReceived", "localCandidateId", "remoteCandidateId",
        "candidateType", "networkType", "protocol", "relayProtocol", "selectedCandidatePairId",
        "url",  // a relay candidate's TURN server: its protocol where `relayProtocol` is missing
        // Legacy goog `values`.
        "googCodecName", "googJitterReceived", "googRtt", "googDecodingCTN", "googDecodingPLC", "googJitterBufferMs",
        "googFrameRateReceived", "googFrameWidthReceived", "googFrameHeightReceived",
        "googFrameRateSent", "googFrameWidthSent", "googFrameHeightSent",
        "googBandwidthLimitedResolution", "googCpuLimitedResolution",
        "googActiveConnection", "googLocalCandidateType", "googRemoteCandidateType", "googTransportType",
        "audioInputLevel", "audioOutputLevel",
    ]

    /// `analysed` plus what ties objects together and what people look at first when they dig
    /// into one call by hand: addresses, transport states, encoder and decoder, and the
    /// retransmission and keyframe counters.
    public static let essential: Set<String> = analysed.union([
        "transportId", "remoteId", "localId", "mid", "payloadType", "channels",
        "pauseCount", "totalInterFrameDelay", "fractionLost",
        "address", "port", "relatedAddress", "relatedPort", "tcpType",
        "iceState", "dtlsState", "iceRole", "selectedCandidatePairChanges",
        "encoderImplementation", "decoderImplementation",
        "nackCount", "pliCount", "firCount", "framesDropped", "keyFramesDecoded", "keyFramesEncoded",
        "googNacksReceived", "googNacksSent", "googPlisReceived", "googPlisSent", "googFirsReceived", "googFirsSent",
        "googLocalAddress", "googRemoteAddress", "ipAddress", "portNumber", "transport",
    ])

    /// `record` with its report's objects trimmed; other kinds, and stats deltas, unchanged.
    public func apply(to record: LogRecord) -> LogRecord {
        guard record.kind == .stats, case .array(var report)? = record.body["report"] else { return record }
        var record = record
        record.body["report"] = .null  // keep `report` uniquely referenced while it is edited
        for i in report.indices {
            guard case .object(let object) = report[i] else { continue }
            report[i] = .object(trimmed(object))
        }
        record.body["report"] = .array(report)
        return record
    }

    private func trimmed(_ object: JSONObject) -> JSONObject {
        var out = JSONObject()
        out.entries.reserveCapacity(min(object.count, 16))
        for entry in object.entries {
            switch entry.key {
            case "id", "type", "timestamp":
                out.entries.append(entry)
            case "values":
                // Legacy goog: the members are inside `values`.
                if case .object(let values) = entry.value {
                    out.entries.append((key: "values", value: .object(JSONObject(values.entries.filter { kept.contains($0.key) }))))
                } else {
                    out.entries.append(entry)
                }
            default:
                if kept.contains(entry.key) { out.entries.append(entry) }
            }
        }
        return out
    }
}
