import CallLog

/// Connectivity checks on one candidate pair (an unordered pair of UDP endpoints).
struct ICEPairState {
    var key: FlowKey
    var call: Int
    /// The endpoint that sent the first Binding request; reported as `local`.
    var initiator: Endpoint
    var controlling: Endpoint?
    var requestsFromInitiator = 0
    var requestsFromPeer = 0
    var successResponses = 0
    var errorResponses = 0
    var lastErrorCode: Int?
    var rttSamples = 0
    var rttSumMs = 0.0
    var rttMinMs = Double.infinity
    var rttMaxMs = 0.0
    var rttLastMs = 0.0
    var firstCheckNanos: Int64
    var firstSuccessNanos: Int64?
    var firstMediaNanos: Int64?
    var nominated = false
    var lastRequestNanos: (fromInitiator: Int64?, fromPeer: Int64?) = (nil, nil)
    var consentChecks = 0
    var maxConsentGapNanos: Int64 = 0
    var lastActivityNanos: Int64
    var lastReportedWindow: Int64 = .min
    var dirty = true
}

struct PendingTransaction {
    var requestNanos: Int64
    var pair: FlowKey
}

extension CaptureSession {
    mutating func handleSTUN(_ m: STUNMessage, flow: FlowKey, at now: Int64) {
        counters.stunMessages += 1
        // Only Binding (ICE connectivity and consent checks); TURN methods are counted only.
        guard m.method == STUNMessage.bindingMethod else { return }
        let key = flow.unordered
        switch m.messageClass {
        case .request:
            if icePairs[key] == nil {
                if icePairs.count >= configuration.maximumICEPairs { evictOldestPair() }
                let call = callFor(flow: flow, signalledCall: (signalled[flow.destination] ?? signalled[flow.source])?.call, at: now)
                calls[call]!.openPairs += 1
                icePairs[key] = ICEPairState(
                    key: key, call: call, initiator: flow.source, firstCheckNanos: now, lastActivityNanos: now)
            }
            var pair = icePairs[key]!
            let fromInitiator = flow.source == pair.initiator
            if fromInitiator { pair.requestsFromInitiator += 1 } else { pair.requestsFromPeer += 1 }
            if m.iceControlling { pair.controlling = flow.source }
            if m.iceControlled && pair.controlling == nil { pair.controlling = flow.destination }
            if m.useCandidate { pair.nominated = true }
            // Consent freshness (RFC 7675): once media flows, checks keep coming every few
            // seconds; the longest silence per direction is what matters.
            if pair.firstMediaNanos != nil {
                pair.consentChecks += 1
                let previous = fromInitiator ? pair.lastRequestNanos.fromInitiator : pair.lastRequestNanos.fromPeer
                if let previous, now - previous > pair.maxConsentGapNanos { pair.maxConsentGapNanos = now - previous }
            }
            if fromInitiator { pair.lastRequestNanos.fromInitiator = now } else { pair.lastRequestNanos.fromPeer = now }
            pair.lastActivityNanos = now
            pair.dirty = true
            icePairs[key] = pair
            if pendingTransactions.count >= configuration.maximumPendingTransactions { expireTransactions(before: now - 1_000_000_000) }
            if pendingTransactions.count < configuration.maximumPendingTransactions {
                pendingTransactions[m.transactionID] = PendingTransaction(requestNanos: now, pair: key)
            }
        case .successResponse, .errorResponse:
            guard let pending = pendingTransactions.removeValue(forKey: m.transactionID),
                pending.pair == key, var pair = icePairs[key]
            else { return }
            if m.messageClass == .successResponse {
                pair.successResponses += 1
                let rtt = Double(now - pending.requestNanos) / 1e6
                pair.rttSamples += 1
                pair.rttSumMs += rtt
                pair.rttMinMs = min(pair.rttMinMs, rtt)
                pair.rttMaxMs = max(pair.rttMaxMs, rtt)
                pair.rttLastMs = rtt
                if pair.firstSuccessNanos == nil { pair.firstSuccessNanos = now }
            } else {
                pair.errorResponses += 1
                pair.lastErrorCode = m.errorCode
            }
            pair.lastActivityNanos = now
            pair.dirty = true
            icePairs[key] = pair
            announceCall(pair.call, at: now)
        case .indication:
            if icePairs[key] != nil { icePairs[key]!.lastActivityNanos = now }
        }
    }

    mutating func housekeepICE(now: Int64, idleBefore: Int64) {
        expireTransactions(before: idleBefore)
        guard !icePairs.isEmpty else { return }
        let window = now - floorMod(now, configuration.intervalNanos)
        for key in Array(icePairs.keys) {
            guard let pair = icePairs[key] else { continue }
            // Media keeps a pair alive even when consent checks are not captured.
            var lastActive = pair.lastActivityNanos
            if pair.firstMediaNanos != nil {
                for slot in streamIndex.values {
                    if let s = streams[slot], s.key.flow.unordered == key { lastActive = max(lastActive, s.lastSeenNanos) }
                }
            }
            if lastActive <= idleBefore {
                closePair(key, reason: "idle")
            } else if pair.dirty && window > pair.lastReportedWindow && pair.lastActivityNanos < window {
                reportPair(key, final: false, window: window)
            }
        }
    }

    mutating func reportPair(_ key: FlowKey, final: Bool, window: Int64) {
        guard var pair = icePairs[key] else { return }
        if pair.successResponses + pair.errorResponses > 0 || final {
            announceCall(pair.call, at: pair.lastActivityNanos)
            emit(CaptureRecords.ice(pair, call: calls[pair.call]?.id ?? "unknown", ts: milliseconds(pair.lastActivityNanos), final: final))
        }
        pair.dirty = false
        pair.lastReportedWindow = window
        icePairs[key] = pair
    }

    mutating func closePair(_ key: FlowKey, reason: String) {
        guard let pair = icePairs[key] else { return }
        // Unanswered pairs are reported too: a failed check is an outcome worth knowing,
        // but only when the call was seen doing something else as well.
        if pair.dirty || pair.successResponses + pair.errorResponses == 0 {
            if calls[pair.call]?.announced == true || pair.successResponses + pair.errorResponses > 0 {
                reportPair(key, final: true, window: .max)
            }
        }
        icePairs[key] = nil
        if calls[pair.call] != nil {
            calls[pair.call]!.openPairs -= 1
            calls[pair.call]!.lastActivityNanos = max(calls[pair.call]!.lastActivityNanos, pair.lastActivityNanos)
            endCallIfIdle(pair.call, reason: reason)
        }
    }

    mutating func evictOldestPair() {
        if let oldest = icePairs.min(by: { $0.value.lastActivityNanos < $1.value.lastActivityNanos }) {
            closePair(oldest.key, reason: "evicted")
        }
    }

    mutating func expireTransactions(before limit: Int64) {
        guard !pendingTransactions.isEmpty else { return }
        pendingTransactions = pendingTransactions.filter { $0.value.requestNanos > limit }
    }
}
