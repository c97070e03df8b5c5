import MaterialScanning

/// Conferences: whose network spoiled whose call.
///
/// A conference is the legs (calls) of several participants through one media server, or in a
/// mesh. Each received stream is matched to the leg that sent it (an SSRC the server forwards
/// unchanged is the sender's outbound SSRC), then judged per slot of `windowMs` (slots aligned
/// to the epoch, so every leg's slots coincide), and each poor slot of a received stream is
/// attributed to a cause:
///
/// - `sender_uplink`: the sender's uplink shows the impairment — the server's receiver reports
///   about the sender's stream (`remote-inbound-rtp`, measured on the sender's leg) lost at least
///   `loss_warn_pct` and at least half of what the receiver lost; or, where no server reports
///   the uplink (a mesh, or a stream only one receiver hears), the sender's stream is impaired
///   (past a warn threshold) at two or more receivers and at two thirds or more of those that
///   hear it — and the receiver's streams from other senders are fine.
/// - `receiver_downlink`: the receiver's streams of the same kind from other senders, whose
///   uplinks are fine, are impaired too (two thirds or more of them, at least one), and the
///   sender's uplink is fine.
/// - `both`: the sender's uplink and the receiver's downlink are each impaired.
/// - `server_or_path`: the sender's uplink is measured fine (or its stream is fine at another
///   receiver), and the receiver's other streams are fine: neither end explains it.
/// - `unknown`: the data cannot tell (no uplink report and no other receiver to compare with,
///   or a receiver with no other sender to compare with).
///
/// What must stay true: the result is a function of the legs, streams and intervals given, in
/// any order (everything is sorted before it is judged), so a conference analysed in pieces, by
/// several workers, or again, ends with the same rows.
public enum ConferenceAttribution {
    /// Causes, as stored in `conference_matrix.cause`.
    public static let causes = ["sender_uplink", "receiver_downlink", "both", "server_or_path", "unknown"]

    /// A slot is judged when intervals cover at least this share of it.
    static let minimumCoverage = 0.5

    /// Never inlined: the instruction-count check (`conference-attribution`) counts what runs
    /// inside this function by its symbol.
    @inline(never)
    public static func attribute(_ input: ConferenceInput, config: AnalysisConfig) -> ConferenceResult {
        Attribution(input: input, config: config).run()
    }
}

/// One leg of a conference: a call, and who it belongs to.
public struct ConferenceLeg: Sendable, Equatable {
    public var callID: String
    /// The `participant` label, else the call id: a participant with several legs (a mesh, a
    /// reconnect) is one participant.
    public var participant: String
    public var startTs: Int64
    public var endTs: Int64
    /// How the leg was linked to the conference (`call_conversations.linked_by`).
    public var linkedBy: String
    /// The call's filing number as stored (`calls.call_key`), new each time the call is
    /// written: the store tells a conference whose legs changed by it.
    public var callKey: Int64

    public init(callID: String, participant: String, startTs: Int64, endTs: Int64, linkedBy: String, callKey: Int64 = 0) {
        (self.callID, self.participant, self.startTs, self.endTs, self.linkedBy) = (callID, participant, startTs, endTs, linkedBy)
        self.callKey = callKey
    }
}

/// A stream of a leg, as `streams` stores it.
public struct ConferenceStream: Sendable, Equatable {
    public var callID: String
    public var streamID: String
    public var ssrc: UInt32?
    public var direction: StreamDirection
    public var kind: MediaKind

    public init(callID: String, streamID: String, ssrc: UInt32?, direction: StreamDirection, kind: MediaKind) {
        (self.callID, self.streamID, self.ssrc, self.direction, self.kind) = (callID, streamID, ssrc, direction, kind)
    }
}

/// The interval figures attribution reads, as `intervals` stores them.
public struct ConferenceInterval: Sendable, Equatable {
    public var callID: String
    public var streamID: String
    public var startTs: Int64
    public var endTs: Int64
    public var packets: Int64?
    public var packetsLost: Int64?
    public var lossPct: Double?
    public var jitterMs: Double?
    public var rttMs: Double?
    public var concealmentPct: Double?
    public var mosLQ: Double?
    public var freezeMs: Int64?

    public init(callID: String, streamID: String, startTs: Int64, endTs: Int64) {
        (self.callID, self.streamID, self.startTs, self.endTs) = (callID, streamID, startTs, endTs)
    }
}

public struct ConferenceInput: Sendable {
    public var conferenceID: String
    public var legs: [ConferenceLeg]
    public var streams: [ConferenceStream]
    public var intervals: [ConferenceInterval]

    public init(conferenceID: String, legs: [ConferenceLeg], streams: [ConferenceStream], intervals: [ConferenceInterval]) {
        (self.conferenceID, self.legs, self.streams, self.intervals) = (conferenceID, legs, streams, intervals)
    }
}

/// A row of `conference_participants`: one leg, what it sent and received, and the minutes
/// spoiled for it and by it.
public struct ConferenceParticipant: Sendable, Equatable {
    public var conferenceID: String
    public var callID: String
    public var participant: String
    public var joinedTs: Int64
    public var leftTs: Int64
    public var linkedBy: String
    public var streamsSent: Int
    public var streamsReceived: Int
    /// Received streams whose sender is known.
    public var streamsMatched: Int
    /// Slots in which at least one stream this leg received was poor, in minutes.
    public var poorReceivedMinutes: Double
    /// Of those, the minutes its own downlink explains (`receiver_downlink` or `both`).
    public var ownDownlinkMinutes: Double
    /// Receiver-minutes this leg's uplink spoiled for others (`sender_uplink` or `both`): each
    /// receiver's slot counted once.
    public var spoiledForOthersMinutes: Double
    /// Participants whose received streams this leg's uplink spoiled.
    public var spoiledParticipants: Int
    /// The leg's `calls.call_key` when the row was made.
    public var callKey: Int64
}

/// A row of `conference_matrix`: one received stream in one slot, next to its sender's uplink.
public struct ConferenceCell: Sendable, Equatable {
    public var conferenceID: String
    public var receiverCallID: String
    public var receiverParticipant: String
    public var streamID: String
    public var kind: String
    public var senderCallID: String?
    public var senderParticipant: String?
    public var senderStreamID: String?
    /// How the sender was found: `ssrc`, or `unknown`.
    public var matchedBy: String
    public var slotStartTs: Int64
    public var slotEndTs: Int64
    public var lossPct: Double?
    public var jitterMs: Double?
    public var concealmentPct: Double?
    public var mosLQ: Double?
    public var freezePct: Double?
    /// The server's receiver reports about the sender's stream in the same slot.
    public var uplinkLossPct: Double?
    public var uplinkJitterMs: Double?
    public var uplinkRttMs: Double?
    public var poor: Bool
    /// Why the slot was poor (`ConferenceAttribution.causes`); nil when it was not.
    public var cause: String?
}

public struct ConferenceResult: Sendable {
    public var participants: [ConferenceParticipant] = []
    public var cells: [ConferenceCell] = []
    /// `caused_poor_audio_for` / `caused_poor_video_for` on the legs whose uplink spoiled others'
    /// streams: value the number of participants affected.
    public var findings: [Finding] = []
}

/// A stream's figures over one slot, from the intervals that overlap it (each weighted by its
/// overlap).
struct SlotFigures {
    var covered = 0.0
    var packets = 0.0, lost = 0.0, hasLoss = false
    var lossSum = 0.0, lossWeight = 0.0
    var jitter = TimeWeightedMean(), rtt = TimeWeightedMean(), concealment = TimeWeightedMean(), mos = TimeWeightedMean()
    var freezeMs = 0.0, hasFreeze = false

    mutating func add(_ i: ConferenceInterval, overlap: Double) {
        let length = Double(i.endTs - i.startTs)
        guard length > 0, overlap > 0 else { return }
        let share = overlap / length
        covered += overlap
        if let p = i.packets, let l = i.packetsLost, p + l > 0 || p > 0 {
            packets += Double(p) * share
            lost += Double(max(0, l)) * share
            hasLoss = true
        } else if let pct = i.lossPct {
            lossSum += pct * overlap
            lossWeight += overlap
        }
        jitter.add(i.jitterMs, overlap)
        rtt.add(i.rttMs, overlap)
        concealment.add(i.concealmentPct, overlap)
        mos.add(i.mosLQ, overlap)
        if let f = i.freezeMs {
            freezeMs += Double(f) * share
            hasFreeze = true
        }
    }

    /// Packets lost of those sent (lost + received for an inbound stream, as the intervals count
    /// them), %.
    func lossPct(outbound: Bool) -> Double? {
        if hasLoss {
            let total = outbound ? packets : packets + lost
            return total > 0 ? 100 * lost / total : nil
        }
        return lossWeight > 0 ? lossSum / lossWeight : nil
    }
}

private struct Attribution {
    let input: ConferenceInput
    let config: AnalysisConfig

    /// A received stream and who sent it.
    struct Received {
        var stream: ConferenceStream
        var receiver: String
        var sender: ConferenceStream?
        var senderParticipant: String?
    }

    func run() -> ConferenceResult {
        let slotMs = max(1_000, config.windowMs)
        let legs = input.legs.sorted { $0.callID < $1.callID }
        let participantOf = Dictionary(legs.map { ($0.callID, $0.participant) }, uniquingKeysWith: min)
        let streams = input.streams.filter { participantOf[$0.callID] != nil }
            .sorted { ($0.callID, $0.streamID) < ($1.callID, $1.streamID) }

        // Each outbound SSRC sent by exactly one leg: the same rule as conversations' links.
        var sentBy: [UInt32: [ConferenceStream]] = [:]
        for s in streams where s.direction == .outbound { if let ssrc = s.ssrc, ssrc != 0 { sentBy[ssrc, default: []].append(s) } }
        var received: [Received] = []
        for s in streams where s.direction == .inbound {
            let receiver = participantOf[s.callID]!
            var r = Received(stream: s, receiver: receiver)
            if let ssrc = s.ssrc, let senders = sentBy[ssrc], senders.count == 1, senders[0].callID != s.callID,
                participantOf[senders[0].callID] != receiver
            {
                r.sender = senders[0]
                r.senderParticipant = participantOf[senders[0].callID]
            }
            received.append(r)
        }
        // Streams by index: (call, stream id) → position in `streams`.
        var index: [String: [String: Int]] = [:]
        for (n, s) in streams.enumerated() { index[s.callID, default: [:]][s.streamID] = n }
        func key(_ s: ConferenceStream) -> Int { index[s.callID]![s.streamID]! }

        // A stream heard by two or more receivers went through a server: its receiver reports
        // are the server's, about the sender's uplink alone.
        var hearers: [Int: Set<String>] = [:]
        for r in received { if let s = r.sender { hearers[key(s), default: []].insert(r.receiver) } }

        // Slot figures per stream.
        var figures: [Int: [Int64: SlotFigures]] = [:]
        for i in input.intervals where i.endTs > i.startTs {
            guard let n = index[i.callID]?[i.streamID] else { continue }
            var slot = floorDiv(i.startTs, slotMs) * slotMs
            while slot < i.endTs {
                let overlap = Double(min(i.endTs, slot + slotMs) - max(i.startTs, slot))
                figures[n, default: [:]][slot, default: SlotFigures()].add(i, overlap: overlap)
                slot += slotMs
            }
        }

        // Each received stream's judged slots.
        struct Judged {
            var cell: ConferenceCell
            /// Poor, or past a warn threshold (`isImpaired`).
            var impaired: Bool
            var uplinkMeasured: Bool
            var uplinkBad: Bool?
        }
        var judged: [[Judged]] = []
        for r in received {
            var cells: [Judged] = []
            let mine = figures[key(r.stream)] ?? [:]
            for slot in mine.keys.sorted() {
                let f = mine[slot]!
                guard f.covered >= ConferenceAttribution.minimumCoverage * Double(slotMs) else { continue }
                var c = ConferenceCell(
                    conferenceID: input.conferenceID, receiverCallID: r.stream.callID, receiverParticipant: r.receiver,
                    streamID: r.stream.streamID, kind: r.stream.kind.rawValue, senderCallID: r.sender?.callID,
                    senderParticipant: r.senderParticipant, senderStreamID: r.sender?.streamID,
                    matchedBy: r.sender == nil ? "unknown" : "ssrc", slotStartTs: slot, slotEndTs: slot + slotMs,
                    lossPct: f.lossPct(outbound: false), jitterMs: f.jitter.value, concealmentPct: f.concealment.value,
                    mosLQ: r.stream.kind == .audio ? f.mos.value : nil,
                    freezePct: r.stream.kind == .video && f.hasFreeze ? min(100, 100 * f.freezeMs / f.covered) : nil,
                    poor: false, cause: nil)
                c.poor = isPoor(c)
                var measured = false
                var uplinkBad: Bool?
                if let s = r.sender, let u = figures[key(s)]?[slot], (hearers[key(s)]?.count ?? 0) >= 2 {
                    c.uplinkLossPct = u.lossPct(outbound: true)
                    c.uplinkJitterMs = u.jitter.value
                    c.uplinkRttMs = u.rtt.value
                    if c.uplinkLossPct != nil || c.uplinkJitterMs != nil {
                        measured = true
                        uplinkBad = uplinkExplains(c)
                    }
                }
                cells.append(Judged(cell: c, impaired: c.poor || isImpaired(c), uplinkMeasured: measured, uplinkBad: uplinkBad))
            }
            judged.append(cells)
        }

        // Lookups for the cross-checks: by (sender participant, kind, slot) whether each
        // receiver's stream was impaired; by (receiver participant, kind, slot) its streams. The
        // cross-checks ask for impairment (the warn thresholds), not poor: a path's loss shows on
        // every stream it carries, though only some cross the poor line (a video stream's loss
        // share is diluted by retransmissions and padding).
        struct SlotKey: Hashable {
            var participant: String
            var kind: String
            var slot: Int64
        }
        var bySender: [SlotKey: [(receiver: String, impaired: Bool)]] = [:]
        var byReceiver: [SlotKey: [(sender: String, impaired: Bool)]] = [:]
        for cells in judged {
            for j in cells {
                guard let sender = j.cell.senderParticipant else { continue }
                bySender[SlotKey(participant: sender, kind: j.cell.kind, slot: j.cell.slotStartTs), default: []]
                    .append((j.cell.receiverParticipant, j.impaired))
                byReceiver[SlotKey(participant: j.cell.receiverParticipant, kind: j.cell.kind, slot: j.cell.slotStartTs), default: []]
                    .append((sender, j.impaired))
            }
        }
        /// Whether the sender's stream was impaired at most of its receivers (nil: too few to
        /// tell), the uplink's evidence where no server reports it.
        func impairedAtOtherReceivers(_ c: ConferenceCell) -> Bool? {
            guard let sender = c.senderParticipant else { return nil }
            let all = bySender[SlotKey(participant: sender, kind: c.kind, slot: c.slotStartTs)] ?? []
            let others = all.filter { $0.receiver != c.receiverParticipant }
            guard !others.isEmpty else { return nil }
            let impaired = all.filter(\.impaired).count
            return impaired >= 2 && 3 * impaired >= 2 * all.count
        }
        /// The uplink of a sender as the cells of one slot show it: its measured figures, else
        /// its stream at other receivers.
        func uplinkBad(_ j: Judged) -> Bool? {
            if j.uplinkMeasured { return j.uplinkBad }
            return impairedAtOtherReceivers(j.cell)
        }
        var senderUplinkBad: [SlotKey: Bool] = [:]
        for cells in judged {
            for j in cells {
                guard let sender = j.cell.senderParticipant, let bad = uplinkBad(j) else { continue }
                let k = SlotKey(participant: sender, kind: j.cell.kind, slot: j.cell.slotStartTs)
                senderUplinkBad[k] = (senderUplinkBad[k] ?? false) || bad
            }
        }
        /// The receiver's other streams of the kind in the slot, from senders with fine uplinks:
        /// true when most are impaired, false when most are fine, nil when there are none.
        func downlinkBad(_ c: ConferenceCell) -> Bool? {
            let others = (byReceiver[SlotKey(participant: c.receiverParticipant, kind: c.kind, slot: c.slotStartTs)] ?? [])
                .filter { $0.sender != c.senderParticipant }
                .filter { senderUplinkBad[SlotKey(participant: $0.sender, kind: c.kind, slot: c.slotStartTs)] != true }
            guard !others.isEmpty else { return nil }
            return 3 * others.filter(\.impaired).count >= 2 * others.count
        }

        var result = ConferenceResult()
        for cells in judged {
            for j in cells {
                var c = j.cell
                if c.poor {
                    let sender = c.senderParticipant.flatMap { senderUplinkBad[SlotKey(participant: $0, kind: c.kind, slot: c.slotStartTs)] }
                    let receiver = downlinkBad(c)
                    switch (sender, receiver) {
                    case (true, true): c.cause = "both"
                    case (true, _): c.cause = "sender_uplink"
                    case (_, true): c.cause = "receiver_downlink"
                    case (false, false): c.cause = "server_or_path"
                    default: c.cause = "unknown"
                    }
                }
                result.cells.append(c)
            }
        }
        result.cells.sort {
            ($0.receiverCallID, $0.streamID, $0.slotStartTs) < ($1.receiverCallID, $1.streamID, $1.slotStartTs)
        }
        summarise(legs: legs, streams: streams, received: received, slotMs: slotMs, into: &result)
        return result
    }

    /// Past a warn threshold: loss `loss_warn_pct`, MOS-LQ below `mos_fair`, frozen
    /// `freeze_warn_pct` of the slot.
    func isImpaired(_ c: ConferenceCell) -> Bool {
        if let loss = c.lossPct, loss >= config.lossWarnPct { return true }
        if let mos = c.mosLQ, mos < config.mosFair { return true }
        if let freeze = c.freezePct, freeze >= config.freezeWarnPct { return true }
        return false
    }

    func isPoor(_ c: ConferenceCell) -> Bool {
        if let loss = c.lossPct, loss >= config.lossPoorPct { return true }
        if let mos = c.mosLQ, mos < config.mosPoor { return true }
        if let freeze = c.freezePct, freeze >= config.freezePoorPct { return true }
        return false
    }

    /// The uplink explains a received stream's slot when the server lost at least
    /// `loss_warn_pct` of the sender's packets and at least half of what the receiver lost, or
    /// reported its jitter above `jitter_warn_ms`.
    func uplinkExplains(_ c: ConferenceCell) -> Bool {
        if let up = c.uplinkLossPct, up >= config.lossWarnPct, up >= 0.5 * (c.lossPct ?? 0) { return true }
        if let jitter = c.uplinkJitterMs, jitter >= config.jitterWarnMs { return true }
        return false
    }

    func summarise(legs: [ConferenceLeg], streams: [ConferenceStream], received: [Received], slotMs: Int64, into result: inout ConferenceResult) {
        let minutesPerSlot = Double(slotMs) / 60_000
        var poorSlots: [String: Set<Int64>] = [:], ownSlots: [String: Set<Int64>] = [:]
        // Per sending leg and kind: the (receiver, slot) pairs spoiled, and who.
        struct Spoiled {
            var receiverSlots: Set<String> = []
            var receivers: Set<String> = []
            var first = Int64.max, last = Int64.min
            var cells = 0
        }
        var spoiledBy: [String: [String: Spoiled]] = [:]
        for c in result.cells where c.poor {
            poorSlots[c.receiverCallID, default: []].insert(c.slotStartTs)
            if c.cause == "receiver_downlink" || c.cause == "both" { ownSlots[c.receiverCallID, default: []].insert(c.slotStartTs) }
            if let sender = c.senderCallID, c.cause == "sender_uplink" || c.cause == "both" {
                var s = spoiledBy[sender, default: [:]][c.kind, default: Spoiled()]
                s.receiverSlots.insert(c.receiverParticipant + "\u{1}" + String(c.slotStartTs))
                s.receivers.insert(c.receiverParticipant)
                s.first = min(s.first, c.slotStartTs)
                s.last = max(s.last, c.slotEndTs)
                s.cells += 1
                spoiledBy[sender, default: [:]][c.kind] = s
            }
        }
        for leg in legs {
            let sent = streams.filter { $0.callID == leg.callID && $0.direction == .outbound }.count
            let mine = received.filter { $0.stream.callID == leg.callID }
            let byKind = spoiledBy[leg.callID] ?? [:]
            let receiverSlots = byKind.values.reduce(into: Set<String>()) { $0.formUnion($1.receiverSlots) }
            let receivers = byKind.values.reduce(into: Set<String>()) { $0.formUnion($1.receivers) }
            result.participants.append(
                ConferenceParticipant(
                    conferenceID: input.conferenceID, callID: leg.callID, participant: leg.participant,
                    joinedTs: leg.startTs, leftTs: leg.endTs, linkedBy: leg.linkedBy, streamsSent: sent,
                    streamsReceived: mine.count, streamsMatched: mine.filter { $0.sender != nil }.count,
                    poorReceivedMinutes: Double(poorSlots[leg.callID]?.count ?? 0) * minutesPerSlot,
                    ownDownlinkMinutes: Double(ownSlots[leg.callID]?.count ?? 0) * minutesPerSlot,
                    spoiledForOthersMinutes: Double(receiverSlots.count) * minutesPerSlot,
                    spoiledParticipants: receivers.count, callKey: leg.callKey))
            for kind in byKind.keys.sorted() {
                let s = byKind[kind]!
                let minutes = Double(s.receiverSlots.count) * minutesPerSlot
                let who = s.receivers.count == 1 ? "1 participant" : "\(s.receivers.count) participants"
                result.findings.append(
                    Finding(
                        callID: leg.callID, code: "caused_poor_\(kind)_for", severity: .poor, startTs: s.first,
                        durationMs: s.last - s.first, value: Double(s.receivers.count),
                        detail: "this participant's uplink spoiled received \(kind) for \(who), "
                            + "\(FixedText.decimal(minutes, places: 1)) receiver-minutes"))
            }
        }
    }
}

/// a ÷ b rounded down (toward −∞, where Swift's `/` rounds toward zero): the start of the
/// bucket or slot of length `b` that `a` falls in is `floorDiv(a, b) * b`.
@inline(__always) public func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
    let q = a / b
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
}
