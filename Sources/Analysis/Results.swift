import MaterialScanning

/// What the analyser produces for one call: the rows the store writes.
///
/// These types are the contract between `Analysis` and `Store`; the SQLite schema
/// (`Data/SCHEMA.md`) mirrors them column for column. Times are epoch milliseconds,
/// durations milliseconds, rates per second; optional means "not measured", never zero.
public struct CallAnalysis: Sendable {
    public var call: CallSummary
    public var streams: [StreamSummary]
    public var intervals: [IntervalMetrics]
    public var events: [CallEvent]
    public var findings: [Finding]
    /// The call's peer connections, in order of first appearance (`PeerConnectionSummary`).
    public var peerConnections: [PeerConnectionSummary]

    public init(
        call: CallSummary, streams: [StreamSummary], intervals: [IntervalMetrics],
        events: [CallEvent], findings: [Finding], peerConnections: [PeerConnectionSummary] = []
    ) {
        self.call = call
        self.streams = streams
        self.intervals = intervals
        self.events = events
        self.findings = findings
        self.peerConnections = peerConnections
    }
}

/// The three-way verdict a person reads at a glance.
public enum Grade: String, Sendable, Comparable, CaseIterable {
    case good, fair, poor
    /// The call was answered (or should have carried media) but none flowed: ICE failure, no statistics.
    case noMedia = "no_media"
    /// Never answered (rejected, timed out, cancelled before media): not a quality failure.
    case unanswered
    /// Nothing measured the media: no stream gave an interval (only events or the SDK's own
    /// score, every statistics record rejected, a wire flow of STUN checks alone), and no
    /// finding says media failed or was poor. Never counted as good: nothing says it was.
    case unmeasured

    private var rank: Int {
        switch self {
        case .unanswered: -2;
        case .unmeasured: -1;
        case .good: 0;
        case .fair: 1;
        case .poor: 2;
        case .noMedia: 3
        }
    }
    public static func < (a: Grade, b: Grade) -> Bool { a.rank < b.rank }
}

public struct CallSummary: Sendable, Equatable {
    public var callID: String
    public var startTs: Int64
    public var endTs: Int64
    public var durationMs: Int64

    // Dimensions (from the `call` record; "unknown" when absent).
    public var direction: String = "unknown"
    public var sdk: String = "unknown"
    public var sdkVersion: String = "unknown"
    public var app: String = "unknown"
    public var appVersion: String = "unknown"
    public var platform: String = "unknown"
    public var network: String = "unknown"
    /// "audio" or "audio+video" (or "video").
    public var media: String = "unknown"
    /// Free-form labels, as compact JSON text.
    public var labelsJSON: String = "{}"
    /// Where the statistics came from: w3c, goog, wire, or a mix joined by "+".
    public var source: String = "unknown"

    // Setup (from `callMetric` / `iceState` events), each relative to callCreate/incomingCall.
    public var restSentMs: Int64?
    public var ringingMs: Int64?
    public var answerMs: Int64?
    /// Time to media: first iceConnected after the answer (callAnswerReceived for outgoing calls,
    /// callCreate — the accept — for incoming ones), so the callee's ringing time is not counted.
    public var mediaMs: Int64?
    /// ICE candidate gathering, from the call's start (callCreate/incomingCall) to its end: the
    /// SDK's `iceTimeout` event (iceNormal/iceOneRelay/iceNoRelay), or the browser's gathering
    /// state `complete`.
    public var iceGatheringMs: Int64?
    /// iceNormal / iceOneRelay / iceNoRelay, or nil when not reported.
    public var iceOutcome: String?
    public var iceDisconnects: Int = 0
    public var iceDisconnectedMs: Int64 = 0
    public var ipChanges: Int = 0
    public var reconnects: Int = 0

    // Selected candidate pair.
    public var localCandidateType: String?
    public var remoteCandidateType: String?
    /// udp, tcp, tls (relay protocol where known).
    public var transport: String?
    public var relayUsed: Bool = false

    // End.
    public var endReason: String?
    public var endStatusCode: Int?
    public var endStatusText: String?
    public var sipStatus: Int?
    public var sipReason: String?

    // Quality.
    public var audioCodec: String?
    public var videoCodec: String?
    /// Time-weighted mean over inbound audio intervals.
    public var mosCQ: Double?
    public var mosLQ: Double?
    public var rFactor: Double?
    /// The worst sustained MOS-CQ (lowest over a sliding window of intervals), what the grade uses.
    public var mosWorst: Double?
    public var videoScore: Double?
    public var videoScoreWorst: Double?
    /// Inbound audio network loss, %, whole call.
    public var lossPct: Double?
    /// Inbound audio jitter as this end measured it, time-weighted mean, ms.
    public var jitterMs: Double?
    /// RTCP round-trip time (remote-inbound-rtp / googRtt), mean, ms.
    public var rttMs: Double?
    /// ICE (candidate-pair) round-trip time, mean, ms: kept apart from RTCP RTT.
    public var iceRttMs: Double?
    public var concealmentPct: Double?
    /// Inbound audio jitter-buffer delay, ms: the time-weighted mean of the intervals'
    /// `jitterBufferMs` (`jitterBufferDelay / jitterBufferEmittedCount`), as `jitterMs` is of theirs.
    public var jitterBufferMs: Double?
    // The sent direction: what the far end reported receiving of this end's audio
    // (`remote-inbound-rtp`, RTCP receiver reports), scored as the received direction is, with
    // the far end's unreported jitter buffer taken as `AnalysisConfig.farEndJitterBufferMs`.
    /// Time-weighted MOS-CQ and MOS-LQ over outbound audio intervals.
    public var mosCQSent: Double?
    public var mosLQSent: Double?
    /// The worst sustained MOS-CQ of the sent direction, as `mosWorst` is of the received one.
    public var mosWorstSent: Double?
    /// Outbound audio loss as the far end reported it, %, whole call.
    public var lossPctSent: Double?
    /// Outbound audio jitter as the far end reported it, time-weighted mean, ms.
    public var jitterMsSent: Double?
    /// The `callId` of the `call` record: the SDK's (or SIP) call id, shared by the legs of one
    /// conversation when each agent names its own log `call` otherwise.
    public var sdkCallID: String?
    /// The SDK's own 0-100 score: mean and minimum.
    public var sdkQualityMean: Double?
    public var sdkQualityMin: Double?
    /// Stats clock minus agent clock, ms, when they disagree by more than a second.
    public var clockSkewMs: Int64?

    public var grade: Grade = .noMedia
    /// Why the grade is what it is, e.g. "mos 3.2 for 40 s; one-way audio".
    public var gradeReason: String = ""
    public var findingCount: Int = 0

    public init(callID: String, startTs: Int64, endTs: Int64) {
        self.callID = callID
        self.startTs = startTs
        self.endTs = endTs
        self.durationMs = max(0, endTs - startTs)
    }
}

/// One RTP stream (an SSRC in one direction) of a call.
public struct StreamSummary: Sendable, Equatable {
    public var callID: String
    /// Stable within the call: "<pc>:<direction>:<kind>:<ssrc>".
    public var streamID: String
    public var ssrc: UInt32
    public var direction: StreamDirection
    public var kind: MediaKind
    public var codec: String?
    public var clockRate: Int?
    public var source: String
    public var startTs: Int64
    public var endTs: Int64

    public var packets: Int64 = 0
    public var bytes: Int64 = 0
    /// Packets lost as seen by the receiver (for outbound streams: from the remote's RTCP).
    public var packetsLost: Int64 = 0
    public var lossPct: Double?
    /// Jitter over the stream's intervals (see `IntervalMetrics.jitterMs`: measured here on an
    /// inbound stream, reported by the far end on an outbound one), mean and maximum, ms.
    public var jitterMeanMs: Double?
    public var jitterMaxMs: Double?
    public var rttMeanMs: Double?
    public var bitrateKbps: Double?
    public var concealmentPct: Double?
    public var mosMean: Double?
    public var mosMin: Double?
    /// Where the row's loss, jitter and MOS come from: `local` (this end measured the stream it
    /// received) or `remote_report` (the far end's reports about the stream this end sent).
    public var scoreSource: String {
        direction == .inbound ? "local" : "remote_report"
    }

    // Video.
    public var fpsMean: Double?
    public var widthMax: Int?
    public var heightMax: Int?
    public var freezeCount: Int = 0
    public var freezeMs: Int64 = 0
    public var videoScoreMean: Double?
    /// The dominant qualityLimitationReason over the stream (outbound video).
    public var qualityLimitation: String?
    /// Counter resets seen (new SSRC with the same id, counters going backwards).
    public var counterResets: Int = 0
    /// The receiving end's own RFC 3611 VoIP metrics about this stream (RTCP XR, captured calls),
    /// from its latest report: loss and jitter-buffer discard (%), R-factor, MOS-LQ, MOS-CQ,
    /// nominal jitter-buffer delay (ms). Nil without an XR report.
    public var xrLossPct: Double?, xrDiscardPct: Double?, xrRFactor: Double?
    public var xrMosLQ: Double?, xrMosCQ: Double?, xrJitterBufferMs: Double?

    public init(
        callID: String, streamID: String, ssrc: UInt32, direction: StreamDirection,
        kind: MediaKind, source: String, startTs: Int64, endTs: Int64
    ) {
        self.callID = callID
        self.streamID = streamID
        self.ssrc = ssrc
        self.direction = direction
        self.kind = kind
        self.source = source
        self.startTs = startTs
        self.endTs = endTs
    }
}

/// One peer connection of a call: its selected candidate pair, its ICE and connection-state
/// timeline reduced to figures, and the packets its streams carried.
///
/// A peer connection's disconnections count only after it first connected (a pc that never
/// connected failed, it did not drop), from its ICE state or its connection state, one outage
/// once however many of the two reported it. The call's pair, transport, disconnections,
/// reconnects and failure come from the pcs that carried media (`PeerConnections.apply`).
public struct PeerConnectionSummary: Sendable, Equatable {
    public var callID: String
    /// The pc's name as the material has it (pseudonymised with the call's key when given);
    /// `pc` for a record that names none.
    public var pcID: String
    public var firstTs: Int64
    public var lastTs: Int64
    /// `p2p` or `media_server` when the trace says so (rtcstats' `rtcStatsSFUP2P` constraint),
    /// else `unknown`.
    public var role: String = "unknown"
    /// The selected candidate pair at the pc's last snapshot that named one.
    public var localCandidateType: String?
    public var remoteCandidateType: String?
    /// udp, tcp or tls: the relay's protocol for a relayed pair (`relayProtocol`, else the TURN
    /// URL of the local relay candidate), else the local candidate's protocol.
    public var transport: String?
    public var relayUsed: Bool = false
    /// How often the selected pair changed (as far as candidate types, protocols and network
    /// type tell pairs apart).
    public var pairChanges: Int = 0
    /// Whether the pc's streams carried any packet (either direction).
    public var carriedMedia: Bool { packets > 0 }
    /// Packets received and sent over the pc's streams.
    public var packets: Int64 = 0
    public var streams: Int = 0
    /// The latest ICE connection state and connection state reported (nil: never reported).
    public var iceState: String?
    public var connectionState: String?
    /// When it first connected (ICE connected/completed, or connection state connected).
    public var connectedTs: Int64?
    /// Time connected: from `connectedTs` to its close (or last record), less disconnected time.
    public var connectedMs: Int64 = 0
    /// Whether it ended failed (ICE or connection state `failed`, not connected again), and when.
    public var failed: Bool = false
    public var failedTs: Int64?
    /// Outages after it had connected, and their total length (an open one lasts until the pc
    /// closed, or its last record).
    public var disconnects: Int = 0
    public var disconnectedMs: Int64 = 0
    /// Outages that ended connected again, and ICE restarts made while connected.
    public var reconnects: Int = 0
    /// The outages themselves, for the call's figures (not stored).
    public var outages: [Outage] = []

    public init(callID: String, pcID: String, firstTs: Int64, lastTs: Int64) {
        self.callID = callID
        self.pcID = pcID
        self.firstTs = firstTs
        self.lastTs = lastTs
    }
}

/// A span in which a peer connection was disconnected (or failed), epoch ms.
public struct Outage: Sendable, Equatable {
    public var start: Int64
    public var end: Int64
    public init(start: Int64, end: Int64) {
        self.start = start
        self.end = end
    }
}

/// Quality of one stream over one sampling interval (between two consecutive snapshots).
public struct IntervalMetrics: Sendable, Equatable {
    public var callID: String
    public var streamID: String
    public var startTs: Int64
    public var endTs: Int64

    public var packets: Int64?
    public var packetsLost: Int64?
    public var lossPct: Double?
    /// Interarrival jitter, ms, by the stream's direction: on an inbound stream what this end
    /// measured (`StreamReading.inboundJitterMs`), on an outbound one what the far end reported
    /// about it (`StreamReading.remoteReportedJitterMs`). One column holds both; the row's
    /// stream says which.
    public var jitterMs: Double?
    public var rttMs: Double?
    public var iceRttMs: Double?
    public var bitrateKbps: Double?

    // Audio.
    public var concealmentPct: Double?
    public var jitterBufferMs: Double?
    public var burstRatio: Double?
    public var rFactor: Double?
    public var mosCQ: Double?
    public var mosLQ: Double?

    // Video.
    public var fps: Double?
    public var width: Int?
    public var height: Int?
    public var freezeCount: Int?
    public var freezeMs: Int64?
    public var videoScore: Double?
    public var qualityLimitation: String?

    public init(callID: String, streamID: String, startTs: Int64, endTs: Int64) {
        self.callID = callID
        self.streamID = streamID
        self.startTs = startTs
        self.endTs = endTs
    }
}

public enum Severity: String, Sendable, Comparable {
    case info, warn, poor
    private var rank: Int {
        switch self {
        case .info: 0;
        case .warn: 1;
        case .poor: 2
        }
    }
    public static func < (a: Severity, b: Severity) -> Bool { a.rank < b.rank }
}

/// Something wrong (or notable) with a call, when it started and how long it lasted.
public struct Finding: Sendable, Equatable {
    public var callID: String
    /// Stable identifier, e.g. `one_way_audio`, `high_loss`, `ice_failure` (see SCHEMA.md).
    public var code: String
    public var severity: Severity
    public var startTs: Int64
    public var durationMs: Int64
    /// The stream it concerns, when it concerns one.
    public var streamID: String?
    /// The worst value seen while it lasted (unit depends on the code).
    public var value: Double?
    public var detail: String

    public init(
        callID: String, code: String, severity: Severity, startTs: Int64, durationMs: Int64,
        streamID: String? = nil, value: Double? = nil, detail: String
    ) {
        self.callID = callID
        self.code = code
        self.severity = severity
        self.startTs = startTs
        self.durationMs = durationMs
        self.streamID = streamID
        self.value = value
        self.detail = detail
    }
}
