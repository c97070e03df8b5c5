import CallLog

/// A stream's media; the raw values are what the database stores.
public enum MediaKind: String, Sendable { case audio, video }
/// Which way a stream flows at this end: received (inbound) or sent (outbound).
public enum StreamDirection: String, Sendable { case inbound, outbound }

/// One stream's counters at one snapshot, in one vocabulary for W3C, goog and wire records.
/// NaN means "not reported". Times in ms, durations in s as W3C gives them.
public struct StreamReading: Sendable, Equatable {
    public var streamID: String
    public var direction: StreamDirection
    public var kind: MediaKind
    public var ssrc: UInt32
    public var codec: String?
    public var clockRate: Double = .nan

    public var packets: Double = .nan  // received (inbound) or sent (outbound)
    public var bytes: Double = .nan
    public var lost: Double = .nan  // inbound: packetsLost; outbound: as the remote reported
    /// Inbound streams: the interarrival jitter this end measured on the stream it receives
    /// (W3C inbound-rtp `jitter`, goog `_recv` googJitterReceived, wire records), ms. NaN on
    /// outbound streams.
    public var inboundJitterMs: Double = .nan
    /// Outbound streams: the jitter the far end reported about the stream we send, from its RTCP
    /// receiver reports (W3C remote-inbound-rtp `jitter`, goog `_send` googJitterReceived), ms.
    /// NaN on inbound streams.
    public var remoteReportedJitterMs: Double = .nan
    public var audibleConcealed: Double = .nan  // concealedSamples − silentConcealedSamples
    public var totalSamples: Double = .nan
    public var concealmentEvents: Double = .nan
    public var jitterBufferDelay: Double = .nan  // s, summed
    public var jitterBufferEmitted: Double = .nan
    public var plcCalls: Double = .nan  // goog: googDecodingPLC (10 ms decode calls)
    public var decodeCalls: Double = .nan  // goog: googDecodingCTN
    public var jitterBufferMs: Double = .nan  // goog: googJitterBufferMs (current)
    public var frames: Double = .nan  // framesDecoded (inbound) / sent
    public var fps: Double = .nan
    public var width: Double = .nan
    public var height: Double = .nan
    public var freezeCount: Double = .nan
    public var freezeSeconds: Double = .nan
    public var pauseSeconds: Double = .nan
    public var qlBandwidth: Double = .nan
    public var qlCPU: Double = .nan
    public var qlOther: Double = .nan
    public var qualityLimitation: String?
    /// RTCP round-trip time: latest, and the running sum and count where given.
    public var rttMs: Double = .nan
    public var rttTotalSeconds: Double = .nan
    public var rttCount: Double = .nan
    /// Wire records carry interval figures directly.
    public var intervalLossPct: Double = .nan
    /// Wire records: the stream's first packet, epoch ms. Their counters count from it, so the
    /// first record's counters are its first interval's (from here to the record's `ts`).
    /// NaN for other sources, and for wire material stored before it was kept.
    public var firstTs: Double = .nan
    /// Wire records: the receiving end's latest RTCP XR VoIP metrics (RFC 3611 §4.7) about this
    /// stream, as `rtcp` records carry them: loss and discard in percent, R-factor, MOS, nominal
    /// jitter-buffer delay in ms.
    public var xrLossPct: Double = .nan
    public var xrDiscardPct: Double = .nan
    public var xrRFactor: Double = .nan
    public var xrMosLQ: Double = .nan
    public var xrMosCQ: Double = .nan
    public var xrJitterBufferMs: Double = .nan
    /// Audio streams: the latest audio level (0-1; W3C `audioLevel`) and the running total of
    /// audio energy (W3C `totalAudioEnergy`), of what was heard (inbound: the stream's, else its
    /// track's) or captured to be sent (outbound: its media source's, else its track's; legacy
    /// statistics: `audioOutputLevel` and `audioInputLevel` over 32,767). A level of 0 and energy
    /// that does not grow: silence, as a muted or disabled track gives.
    public var audioLevel: Double = .nan
    public var audioEnergy: Double = .nan

    public init(streamID: String, direction: StreamDirection, kind: MediaKind, ssrc: UInt32) {
        self.streamID = streamID
        self.direction = direction
        self.kind = kind
        self.ssrc = ssrc
    }
}

/// The selected ICE candidate pair at a snapshot.
public struct PairReading: Sendable, Equatable {
    public var rttMs: Double = .nan
    public var localType: String?
    public var remoteType: String?
    public var transport: String?
    public var relayProtocol: String?
    public var networkType: String?
    public init() {}
}

/// A peer connection's data channels at a snapshot (W3C `data-channel` objects), summed.
public struct DataChannelReading: Sendable, Equatable {
    /// Channels reported, and those `open`.
    public var channels = 0
    public var open = 0
    /// Messages sent and received over them, running totals; NaN when not reported.
    public var messagesSent: Double = .nan
    public var messagesReceived: Double = .nan
    public init() {}
}

/// What one statistics snapshot says, reduced to what the metrics use.
public struct Snapshot: Sendable, Equatable {
    /// Agent time of the record, epoch ms.
    public var ts: Int64
    /// The stats' own clock (the report's common timestamp), epoch ms; NaN when absent.
    public var statsTs: Double
    public var peerConnection: String
    public var source: String
    public var streams: [StreamReading]
    public var pair: PairReading?
    /// Its data channels, nil when it reported none.
    public var dataChannels: DataChannelReading?

    package init(
        ts: Int64, statsTs: Double, peerConnection: String, source: String, streams: [StreamReading], pair: PairReading?,
        dataChannels: DataChannelReading? = nil
    ) {
        self.ts = ts
        self.statsTs = statsTs
        self.peerConnection = peerConnection
        self.source = source
        self.streams = streams
        self.pair = pair
        self.dataChannels = dataChannels
    }
}

/// Everything recorded about one call, compact, mergeable and storable.
///
/// A call's records can arrive in any order, split over files and runs, and some twice;
/// `merge` and the analyser sort and de-duplicate (same snapshot time and peer connection,
/// same event), so the result never depends on how the input was cut.
public struct CallMaterial: Sendable, Equatable {
    public var callID: String
    public var info: JSONObject?
    public var infoTs: Int64 = .max
    /// When the network in `info` was reported. The latest `call` record naming a network wins
    /// (after an IP change the agent writes the call record again with the new network),
    /// whatever order records arrive in and however the call is split over files.
    public var networkTs: Int64 = .min
    public var snapshots: [Snapshot] = []
    public var events: [CallEvent] = []
    public var end: JSONObject?
    public var endTs: Int64?
    public var firstTs: Int64 = .max
    public var lastTs: Int64 = .min
    /// Records of kinds the analyser does not use, counted.
    public var otherRecords = 0
    /// The file the kept `call` record, and the kept `end` record, were read from, as messages
    /// name it (`attribute(to:)`); nil when not known. What a warning about copies of the call
    /// that disagree names.
    public var infoFile: String?
    public var endFile: String?

    public init(callID: String) { self.callID = callID }

    /// Copies of one call whose `call` (or `end`) records have the same time but other fields:
    /// the one whose text sorts first was kept (`kept`), whatever order they were read in.
    public struct Disagreement: Sendable, Equatable {
        /// `call` or `end`.
        public var record: String
        public var ts: Int64
        /// The files of the copy kept and of the one left, when known.
        public var kept: String?
        public var left: String?
    }

    /// Names `file` as where this material's `call` and `end` records were read.
    public mutating func attribute(to file: String) {
        if info != nil { infoFile = file }
        if end != nil { endFile = file }
    }

    public var hasEnded: Bool { end != nil }

    mutating func touch(_ ts: Int64) {
        firstTs = min(firstTs, ts)
        lastTs = max(lastTs, ts)
    }

    /// Adds a cold-path record (call, event, quality, end, agent, unknown kinds).
    public mutating func add(_ r: LogRecord) {
        touch(r.ts)
        switch r.kind {
        case .call:
            // The earliest call record names the dimensions; the latest one names the network.
            takeInfo(r.body, at: r.ts)
            if let network = r["network"] { takeNetwork(network, at: r.ts) }
        case .event:
            addEvent(
                at: r.ts, action: r["action"]?.stringValue ?? "", type: r["type"]?.stringValue ?? "",
                detailJSON: detail(r, without: ["action", "type"]))
        case .quality:
            let score = r["score"]?.doubleValue.flatMap { Int(logValue: $0.rounded()) }.map(String.init) ?? ""
            events.append(
                CallEvent(
                    callID: callID, ts: r.ts, kind: "quality", action: "quality", type: score,
                    detailJSON: detail(r, without: [])))
        case .end:
            takeEnd(r.body, at: r.ts)
            events.append(
                CallEvent(
                    callID: callID, ts: r.ts, kind: "end", action: "end",
                    type: r["reason"]?.stringValue ?? "", detailJSON: detail(r, without: ["reason"])))
        default:
            otherRecords += 1
        }
    }

    /// An `event` record's event (`detailJSON`: its members besides the envelope, action and type).
    mutating func addEvent(at ts: Int64, action: String, type: String, detailJSON: String) {
        events.append(CallEvent(callID: callID, ts: ts, kind: "event", action: action, type: type, detailJSON: detailJSON))
    }

    /// Keeps the earliest call record's fields, and the network already known (see `networkTs`).
    /// Two different call records at the same time (copies of a call that disagree): the one
    /// whose text sorts first, so that the result never depends on which was read first; the
    /// disagreement is returned.
    @discardableResult
    private mutating func takeInfo(_ body: JSONObject, at ts: Int64, from file: String? = nil) -> Disagreement? {
        var disagreement: Disagreement?
        if let info, ts == infoTs {
            let order = Self.order(body, info, without: "network")
            guard order != .same else { return nil }
            disagreement = Disagreement(
                record: "call", ts: ts, kept: order == .before ? file : infoFile, left: order == .before ? infoFile : file)
            guard order == .before else { return disagreement }
        } else if info != nil, ts > infoTs {
            return nil
        }
        let network = info?["network"]
        info = body
        infoTs = ts
        infoFile = file
        if let network { info?["network"] = network }
        return disagreement
    }

    /// Keeps the earliest `end` record; at the same time, the one whose text sorts first (as
    /// `takeInfo`).
    @discardableResult
    private mutating func takeEnd(_ body: JSONObject, at ts: Int64, from file: String? = nil) -> Disagreement? {
        var disagreement: Disagreement?
        if let end, let endTs, ts == endTs {
            let order = Self.order(body, end, without: nil)
            guard order != .same else { return nil }
            disagreement = Disagreement(record: "end", ts: ts, kept: order == .before ? file : endFile, left: order == .before ? endFile : file)
            guard order == .before else { return disagreement }
        } else if end != nil, ts > (endTs ?? .max) {
            return nil
        }
        end = body
        endTs = ts
        endFile = file
        return disagreement
    }

    private enum TextOrder { case before, same, after }

    /// How `a`'s JSON text (less `without`) sorts against `b`'s: the order of copies that
    /// disagree, the same whatever order they were read in.
    private static func order(_ a: JSONObject, _ b: JSONObject, without: String?) -> TextOrder {
        var a = a, b = b
        if let without {
            a[without] = nil
            b[without] = nil
        }
        let (x, y) = (JSONValue.object(a).serialized(), JSONValue.object(b).serialized())
        return x < y ? .before : x == y ? .same : .after
    }

    /// The network reported at `ts`, if it is the latest (ties: the larger value, so that the
    /// result never depends on arrival order).
    private mutating func takeNetwork(_ network: JSONValue, at ts: Int64) {
        let current = info?["network"]
        guard ts > networkTs || (ts == networkTs && network.serialized() > (current?.serialized() ?? "")) else { return }
        networkTs = ts
        info?["network"] = network
    }

    private func detail(_ r: LogRecord, without: Set<String>) -> String {
        var o = r.body
        o.entries.removeAll { without.contains($0.key) }
        return JSONValue.object(o).serialized()
    }

    public mutating func add(_ s: consuming Snapshot) {
        touch(s.ts)
        snapshots.append(s)
    }

    /// Combines two partial views of the same call; duplicates collapse. Returns where their
    /// `call` or `end` records disagree (the kept one chosen as `takeInfo` says).
    @discardableResult
    public mutating func merge(_ other: CallMaterial) -> [Disagreement] {
        var disagreements: [Disagreement] = []
        if let i = other.info, let d = takeInfo(i, at: other.infoTs, from: other.infoFile) { disagreements.append(d) }
        if let network = other.info?["network"] { takeNetwork(network, at: other.networkTs) }
        if let e = other.end, let t = other.endTs, let d = takeEnd(e, at: t, from: other.endFile) { disagreements.append(d) }
        snapshots += other.snapshots
        events += other.events
        firstTs = min(firstTs, other.firstTs)
        lastTs = max(lastTs, other.lastTs)
        otherRecords += other.otherRecords
        normalize()
        return disagreements
    }

    /// Sorts by time and drops exact repeats (the same record read twice). Material that is
    /// already in order (records arrive in order, and the analyser normalises more than once)
    /// is checked in one pass and left untouched, so it is not copied.
    public mutating func normalize() {
        if !CallMaterial.strictlyIncreasing(snapshots, by: CallMaterial.precedes) {
            snapshots.sort(by: CallMaterial.precedes)
            var kept: [Snapshot] = []
            kept.reserveCapacity(snapshots.count)
            for s in snapshots {
                if let last = kept.last, last.ts == s.ts, last.peerConnection == s.peerConnection, last.source == s.source {
                    continue
                }
                kept.append(s)
            }
            snapshots = kept
        }
        if !CallMaterial.strictlyIncreasing(events, by: CallMaterial.precedes) {
            events.sort(by: CallMaterial.precedes)
            var uniqueEvents: [CallEvent] = []
            for e in events where uniqueEvents.last != e { uniqueEvents.append(e) }
            events = uniqueEvents
        }
    }

    /// Snapshot order: by (ts, peer connection, source). Field by field rather than as tuples:
    /// a tuple of Strings made for each item, and destroyed through its generic value witness,
    /// cost more than the rest of the check.
    private static func precedes(_ a: Snapshot, _ b: Snapshot) -> Bool {
        if a.ts != b.ts { return a.ts < b.ts }
        if a.peerConnection != b.peerConnection { return a.peerConnection < b.peerConnection }
        return a.source < b.source
    }

    /// Event order: by (ts, kind, action, type, detail).
    private static func precedes(_ a: CallEvent, _ b: CallEvent) -> Bool {
        if a.ts != b.ts { return a.ts < b.ts }
        if a.kind != b.kind { return a.kind < b.kind }
        if a.action != b.action { return a.action < b.action }
        if a.type != b.type { return a.type < b.type }
        return a.detailJSON < b.detailJSON
    }

    /// Whether every item precedes the next, compared where they lie (no copies).
    private static func strictlyIncreasing<T>(_ items: [T], by precedes: (T, T) -> Bool) -> Bool {
        items.withUnsafeBufferPointer { b in
            guard b.count > 1 else { return true }
            for i in 1..<b.count where !precedes(b[i - 1], b[i]) { return false }
            return true
        }
    }
}
