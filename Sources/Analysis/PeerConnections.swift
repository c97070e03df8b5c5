#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CallLog
import MaterialScanning

/// A call's peer connections (`PeerConnectionSummary`), and the call's pair, transport,
/// disconnections, reconnects and failure taken from those that carried media.
///
/// What must stay true:
/// - A call whose events name no peer connection (SDK logs, captures, the simulator: one
///   implicit pc) keeps the call figures `Setup` and `Summary` give it: `apply` changes nothing.
///   Its pcs still get their rows.
/// - A pc's disconnections count only after it first connected, from its ICE state or its
///   connection state, one outage once (down while either says disconnected or failed).
/// - The call's figures come from the pcs that carried packets; from all pcs when none did. An
///   auxiliary pc (no packets) that failed is a finding of its own, never the call's failure.
enum PeerConnections {
    /// A pc's state as the events tell it, folded into its figures one event at a time.
    private struct Timeline {
        var ice: String?
        var connection: String?
        var outageStart: Int64?
        var closedTs: Int64?

        static func isUp(_ s: String?) -> Bool { s == "connected" || s == "completed" }
        static func isDown(_ s: String?) -> Bool { s == "disconnected" || s == "failed" }

        /// One state change of the ICE transport (`ice`) or of the connection, at `ts`.
        mutating func take(_ state: String, ice isICE: Bool, at ts: Int64, into pc: inout PeerConnectionSummary) {
            guard closedTs == nil else { return }
            if isICE {
                ice = state
                pc.iceState = state
            } else {
                connection = state
                pc.connectionState = state
            }
            if state == "closed" {
                endOutage(at: ts, reconnected: false, into: &pc)
                closedTs = ts
                return
            }
            if state == "failed" {
                if !pc.failed { pc.failedTs = ts }
                pc.failed = true
            }
            if Self.isUp(state) {
                if pc.connectedTs == nil { pc.connectedTs = ts }
                pc.failed = false
                pc.failedTs = nil
            }
            // Before the first connection nothing can drop: a pc that never connected failed.
            guard pc.connectedTs != nil else { return }
            let down = Self.isDown(ice) || Self.isDown(connection)
            if down && outageStart == nil {
                outageStart = ts
                pc.disconnects += 1
            } else if !down, outageStart != nil, Self.isUp(ice) || Self.isUp(connection) {
                endOutage(at: ts, reconnected: true, into: &pc)
            }
        }

        /// An ICE restart: a reconnect of its own when made while connected; during an outage,
        /// the outage's end (if it comes) is the reconnect.
        func restart(into pc: inout PeerConnectionSummary) {
            guard closedTs == nil, pc.connectedTs != nil, outageStart == nil else { return }
            pc.reconnects += 1
        }

        mutating func endOutage(at ts: Int64, reconnected: Bool, into pc: inout PeerConnectionSummary) {
            guard let start = outageStart else { return }
            pc.outages.append(Outage(start: start, end: max(start, ts)))
            pc.disconnectedMs += max(0, ts - start)
            if reconnected { pc.reconnects += 1 }
            outageStart = nil
        }
    }

    /// What one event says about a pc.
    private enum Signal {
        case ice(String), connection(String), restart, role(String), other
    }

    /// A call's pcs as `build` finds them.
    struct Built {
        /// Ordered by first appearance, then name.
        var pcs: [PeerConnectionSummary]
        /// Whether the call's events name pcs: only then does `apply` take the call's figures from them.
        var named: Bool
        /// When each pc's selected pair was last read (nil: never).
        var pairSeen: [Int64?]
    }

    /// `streamPCs`: the pc of each of `streams` (nil for a captured stream).
    static func build(_ m: CallMaterial, streams: [StreamSummary], streamPCs: [String?]) -> Built {
        var index: [String: Int] = [:]
        var pcs: [PeerConnectionSummary] = []
        var lastPair: [PairReading?] = []
        // The last pair of each dialect (W3C, legacy goog), which change is counted within: a pc
        // reporting both says of one pair what each dialect knows of it.
        var lastByDialect: [(w3c: PairReading?, goog: PairReading?)] = []
        var pairTs: [Int64?] = []
        // Consecutive snapshots are mostly of one pc: it is compared before the name is hashed.
        var last = -1
        func slot(_ name: String, _ ts: Int64) -> Int {
            if last >= 0, pcs[last].pcID == name {
                pcs[last].firstTs = min(pcs[last].firstTs, ts)
                pcs[last].lastTs = max(pcs[last].lastTs, ts)
                return last
            }
            if let i = index[name] {
                last = i
                pcs[i].firstTs = min(pcs[i].firstTs, ts)
                pcs[i].lastTs = max(pcs[i].lastTs, ts)
                return i
            }
            index[name] = pcs.count
            last = pcs.count
            pcs.append(PeerConnectionSummary(callID: m.callID, pcID: name, firstTs: ts, lastTs: ts))
            lastPair.append(nil)
            lastByDialect.append((nil, nil))
            pairTs.append(nil)
            return pcs.count - 1
        }
        // A captured call's flows are not peer connections: they have no rows.
        // By index: a snapshot copied out of the array retains its readings and strings.
        for si in m.snapshots.indices where m.snapshots[si].source != "wire" {
            let i = slot(m.snapshots[si].peerConnection, m.snapshots[si].ts)
            guard let p = m.snapshots[si].pair else { continue }
            let goog = m.snapshots[si].source == "goog"
            if let previous = goog ? lastByDialect[i].goog : lastByDialect[i].w3c, !samePair(previous, p) { pcs[i].pairChanges += 1 }
            if goog { lastByDialect[i].goog = p } else { lastByDialect[i].w3c = p }
            lastPair[i] = p
            pairTs[i] = m.snapshots[si].ts
        }
        // The events that concern pcs, with the pc each names (nil: none).
        var signals: [(ts: Int64, pc: String?, signal: Signal)] = []
        var named = false
        for k in m.events.indices where m.events[k].kind == "event" {
            let (pc, signal) = read(m.events[k])
            if pc != nil { named = true }
            if case .other = signal, pc == nil { continue }
            signals.append((m.events[k].ts, pc, signal))
        }
        for s in signals { if let pc = s.pc { _ = slot(pc, s.ts) } }
        // Events that name no pc belong to the call's one pc, when it has one (an SDK's call).
        let implicit: Int? =
            switch pcs.count {
            case 0 where signals.contains { $0.pc == nil }: slot("pc", signals.first { $0.pc == nil }!.ts)
            case 1: 0
            default: nil
            }
        var timelines = [Timeline](repeating: Timeline(), count: pcs.count)
        for s in signals {
            guard let i = s.pc.flatMap({ index[$0] }) ?? implicit else { continue }
            if s.pc == nil, case .other = s.signal { continue }
            pcs[i].firstTs = min(pcs[i].firstTs, s.ts)
            pcs[i].lastTs = max(pcs[i].lastTs, s.ts)
            switch s.signal {
            case .ice(let state): timelines[i].take(state, ice: true, at: s.ts, into: &pcs[i])
            case .connection(let state): timelines[i].take(state, ice: false, at: s.ts, into: &pcs[i])
            case .restart: timelines[i].restart(into: &pcs[i])
            case .role(let role): pcs[i].role = role
            case .other: break
            }
        }
        for i in pcs.indices {
            // An outage still open lasts until the pc's last record.
            timelines[i].endOutage(at: pcs[i].lastTs, reconnected: false, into: &pcs[i])
            if let p = lastPair[i] {
                pcs[i].localCandidateType = p.localType
                pcs[i].remoteCandidateType = p.remoteType
                pcs[i].transport = p.relayProtocol ?? p.transport
                pcs[i].relayUsed = p.localType == "relay" || p.remoteType == "relay"
            }
            if let connected = pcs[i].connectedTs {
                let end = timelines[i].closedTs ?? pcs[i].lastTs
                pcs[i].connectedMs = max(0, end - connected - pcs[i].disconnectedMs)
            }
        }
        for (s, pc) in zip(streams, streamPCs) {
            guard let pc, let i = index[pc] else { continue }
            pcs[i].packets += s.packets
            pcs[i].streams += 1
        }
        var order = Array(pcs.indices)
        order.sort { (pcs[$0].firstTs, pcs[$0].pcID) < (pcs[$1].firstTs, pcs[$1].pcID) }
        return Built(pcs: order.map { pcs[$0] }, named: named, pairSeen: order.map { pairTs[$0] })
    }

    /// The call's pair, transport, relay use, disconnections, reconnects and failure from the
    /// pcs that carried media (all pcs when none did), when its events name pcs; and a finding
    /// for each auxiliary pc (no media, beside one that carried it) that failed.
    static func apply(_ built: Built, to c: inout CallSummary) -> [Finding] {
        guard built.named, !built.pcs.isEmpty else { return [] }
        let pcs = built.pcs
        let carried = pcs.indices.filter { pcs[$0].carriedMedia }
        let basis = carried.isEmpty ? Array(pcs.indices) : carried
        // The pair of the basis pc that read one last (ties: the later name, as the snapshots'
        // order has them): the rule the call followed over all its snapshots, kept to these pcs.
        let chosen = basis.filter { built.pairSeen[$0] != nil }
            .max { (built.pairSeen[$0]!, pcs[$0].pcID) < (built.pairSeen[$1]!, pcs[$1].pcID) }
        c.localCandidateType = chosen.flatMap { pcs[$0].localCandidateType }
        c.remoteCandidateType = chosen.flatMap { pcs[$0].remoteCandidateType }
        c.transport = chosen.flatMap { pcs[$0].transport }
        c.relayUsed = chosen.map { pcs[$0].relayUsed } ?? false
        // Disconnections: the outages of the basis pcs merged, so that pcs dropping together
        // (one network outage) count once, for as long as any of them was down.
        let outages = basis.flatMap { pcs[$0].outages }.sorted { ($0.start, $0.end) < ($1.start, $1.end) }
        var count = 0, total: Int64 = 0
        var current: Outage?
        for o in outages {
            if let cur = current, o.start <= cur.end {
                current!.end = max(cur.end, o.end)
            } else {
                if let cur = current { total += cur.end - cur.start }
                current = o
                count += 1
            }
        }
        if let cur = current { total += cur.end - cur.start }
        c.iceDisconnects = count
        c.iceDisconnectedMs = total
        // An SDK's own `reconnecting` events (counted by `Setup`) may tell of the same ones.
        c.reconnects = max(c.reconnects, basis.reduce(0) { $0 + pcs[$1].reconnects })
        // Failure: a trace's end says `failed` when any of its pcs failed. The call failed when
        // the pcs that carried media did, not when an auxiliary one did.
        let auxiliaryFailed = carried.isEmpty ? [] : pcs.filter { !$0.carriedMedia && $0.failed }
        if c.endReason == "failed", !carried.isEmpty, !carried.contains(where: { pcs[$0].failed }), !auxiliaryFailed.isEmpty {
            c.endReason = "undefined"
            c.endStatusText = nil
        } else if !carried.isEmpty, carried.allSatisfy({ pcs[$0].failed }), c.endReason == nil || c.endReason == "undefined" {
            c.endReason = "failed"
        }
        return auxiliaryFailed.map { pc in
            Finding(
                callID: c.callID, code: "auxiliary_pc_failed", severity: .info, startTs: pc.failedTs ?? pc.firstTs,
                durationMs: max(0, pc.lastTs - (pc.failedTs ?? pc.firstTs)),
                detail: "peer connection \(pc.pcID.prefix(64)) failed without carrying media; the call's media went over another")
        }
    }

    /// Whether two pair readings name the same pair, as far as the material tells pairs apart.
    private static func samePair(_ a: PairReading, _ b: PairReading) -> Bool {
        a.localType == b.localType && a.remoteType == b.remoteType && a.transport == b.transport
            && a.relayProtocol == b.relayProtocol && a.networkType == b.networkType
    }

    /// The pc an event names (its `pc`, or its `detail`'s), and what it says of it. Only events
    /// whose detail mentions a pc, a state, a restart or a role are parsed.
    private static func read(_ e: CallEvent) -> (pc: String?, signal: Signal) {
        let d = e.detailJSON
        var root: JSONValue??
        // A member of the event's `detail` object, else of the event itself.
        func member(_ key: String) -> String? {
            if root == nil { root = .some(try? JSONValue.parse(d)) }
            guard let r = root! else { return nil }
            return r["detail"]?[key]?.stringValue ?? r[key]?.stringValue
        }
        // Most events' details (an SDK's) are empty or small and name no pc: searched in place,
        // at most once per name, before anything is parsed.
        let pc = mentions(d, "\"pc\"") ? member("pc") : nil
        let signal: Signal
        switch (e.action, e.type) {
        case (EventName.iceState, "iceConnected"):
            signal = .ice(mentions(d, "\"state\"") ? member("state") ?? "connected" : "connected")
        case (EventName.iceState, "iceDisconnected"):
            signal = .ice(mentions(d, "\"state\"") ? member("state") ?? "disconnected" : "disconnected")
        case ("iceConnectionState", let state): signal = .ice(state)
        case ("connectionState", let state): signal = .connection(state)
        case ("webrtc", "restartIce"): signal = .restart
        case ("webrtc", "createOffer") where mentions(d, "iceRestart\":true") || mentions(d, "iceRestart\\\":true"):
            signal = .restart
        default:
            // rtcstats' constraint, in the entry's value as an object or as JSON text.
            guard mentions(d, "rtcStatsSFUP2P") else {
                signal = .other
                break
            }
            if mentions(d, "rtcStatsSFUP2P\":true") || mentions(d, "rtcStatsSFUP2P\\\":true") {
                signal = .role("p2p")
            } else if mentions(d, "rtcStatsSFUP2P\":false") || mentions(d, "rtcStatsSFUP2P\\\":false") {
                signal = .role("media_server")
            } else {
                signal = .other
            }
        }
        return (pc, signal)
    }

    /// Whether `text` holds `needle`, compared as bytes where the text lies.
    private static func mentions(_ text: String, _ needle: StaticString) -> Bool {
        let n = needle.utf8CodeUnitCount
        guard text.utf8.count >= n else { return false }
        var text = text  // `withUTF8` reads a native string in place
        return text.withUTF8 { t in
            needle.withUTF8Buffer { nb in
                guard let base = t.baseAddress, let nbase = nb.baseAddress else { return false }
                let last = t.count - n
                var i = 0
                // Each place the first byte occurs (memchr), compared whole there (memcmp).
                while i <= last {
                    guard let hit = memchr(base + i, Int32(nb[0]), last - i + 1) else { return false }
                    let j = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    if memcmp(base + j, nbase, n) == 0 { return true }
                    i = j + 1
                }
                return false
            }
        }
    }
}
