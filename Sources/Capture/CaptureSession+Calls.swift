import CallLog

/// A call as the capture sees it: named by SIP Call-ID when signalling was captured,
/// otherwise by the pair of UDP endpoints its media flows between.
struct CallState {
    var id: String
    var sipCallID: String?
    var endpoints: FlowKey?
    var media: [String] = []
    var flows: [FlowKey] = []
    var firstNanos: Int64
    var lastActivityNanos: Int64
    var announced = false
    var ended = false
    var openStreams = 0
    var openPairs = 0
    var byeNanos: Int64?
}

extension CaptureSession {
    /// Finds or makes the call for a flow: SDP first, then the flow's 5-tuple pair, then the
    /// pair one port below (RTCP beside RTP, RFC 3550 §11).
    mutating func callFor(flow: FlowKey, signalledCall: String?, at now: Int64) -> Int {
        if let id = signalledCall {
            return sipCall(id, at: now)
        }
        let pair = flow.unordered
        if let c = flowCalls[pair], calls[c] != nil { return c }
        if pair.source.port > 0, pair.destination.port > 0 {
            var below = pair
            below.source.port -= 1
            below.destination.port -= 1
            if let c = flowCalls[below], calls[c] != nil {
                flowCalls[pair] = c
                calls[c]!.flows.append(pair)
                return c
            }
        }
        let number = newCall(id: "wire:\(pair.source)-\(pair.destination)", at: now)
        calls[number]!.endpoints = pair
        calls[number]!.flows.append(pair)
        flowCalls[pair] = number
        return number
    }

    mutating func sipCall(_ callID: String, at now: Int64) -> Int {
        if let c = callIndex[callID], calls[c] != nil { return c }
        let number = newCall(id: callID, at: now)
        calls[number]!.sipCallID = callID
        return number
    }

    mutating func newCall(id: String, at now: Int64) -> Int {
        let number = nextCallNumber
        nextCallNumber += 1
        calls[number] = CallState(id: id, firstNanos: now, lastActivityNanos: now)
        callIndex[id] = number
        return number
    }

    mutating func announceCall(_ number: Int, at now: Int64) {
        guard var call = calls[number] else { return }
        call.lastActivityNanos = max(call.lastActivityNanos, now)
        if call.announced && !call.ended { calls[number] = call; return }
        call.announced = true
        call.ended = false
        calls[number] = call
        emit(CaptureRecords.call(call, ts: milliseconds(now)))
    }

    /// Emits `end` once nothing of the call is open any more, and forgets the call.
    mutating func endCallIfIdle(_ number: Int, reason: String) {
        guard let call = calls[number], call.openStreams <= 0, call.openPairs <= 0 else { return }
        if call.announced && !call.ended {
            let why = call.byeNanos != nil ? "bye" : reason
            emit(CaptureRecords.end(call, reason: why, ts: milliseconds(call.lastActivityNanos), kernelDrops: kernelDrops))
        }
        calls[number] = nil
        if callIndex[call.id] == number { callIndex[call.id] = nil }
        for f in call.flows where flowCalls[f] == number { flowCalls[f] = nil }
        if call.byeNanos != nil, let id = call.sipCallID as String? {
            signalled = signalled.filter { $0.value.call != id }
        }
    }

    // MARK: SIP

    mutating func handleSIP(_ sip: SIPMessage, flow: FlowKey, at now: Int64) {
        counters.sipMessages += 1
        let callID = sip.callID
        if sip.method == "BYE", let callID, let c = callIndex[callID], calls[c] != nil {
            calls[c]!.byeNanos = now
            calls[c]!.lastActivityNanos = now
        }
        guard !sip.media.isEmpty else { return }
        let number = callID.map { sipCall($0, at: now) }
        if signalled.count > 20_000 { signalled.removeAll() }  // bound; SDP is re-sent on re-INVITE
        for m in sip.media where m.port != 0 {
            guard let address = m.address else { continue }
            if let number, !calls[number]!.media.contains(m.media) { calls[number]!.media.append(m.media) }
            let rtp = Endpoint(address: address, port: m.port)
            signalled[rtp] = SignalledMedia(
                role: m.isRTP ? .rtp : .other, call: callID, media: m.media, rtpmap: m.rtpmap, secure: m.isSecure)
            if m.isRTP && !m.rtcpMux {
                let rtcp = Endpoint(address: address, port: m.rtcpPort ?? m.port &+ 1)
                signalled[rtcp] = SignalledMedia(role: .rtcp, call: callID, media: m.media, rtpmap: m.rtpmap, secure: m.isSecure)
            }
        }
    }

    // MARK: Intervals and idle streams

    /// Runs once per second of capture time: closes idle streams and pairs, ends intervals.
    mutating func housekeeping() {
        let now = clockNanos
        nextHousekeepingNanos = now + 1_000_000_000
        let idleBefore = now - configuration.idleTimeoutNanos
        for slot in Array(streamIndex.values) {
            guard let s = streams[slot] else { continue }
            if s.lastSeenNanos <= idleBefore {
                closeStream(slot, reason: "idle")
            } else if s.interval.firstArrivalNanos != 0 && now >= s.windowStartNanos + configuration.intervalNanos {
                flushInterval(slot, final: false)
            }
        }
        housekeepICE(now: now, idleBefore: idleBefore)
    }

    /// Emits the stream's `rtp` record for the interval (or its final one) and starts anew.
    mutating func flushInterval(_ slot: Int, final: Bool) {
        guard var s = streams[slot] else { return }
        if s.reported, s.statistics.packets > s.interval.packets || final {
            let pt = mainPayloadType(s)
            let windowEnd = s.windowStartNanos + configuration.intervalNanos
            let start = max(s.windowStartNanos, s.statistics.firstArrivalNanos)
            let end = final ? s.statistics.lastArrivalNanos : windowEnd
            emit(
                CaptureRecords.rtp(
                    s, call: calls[s.call]?.id ?? "unknown", payloadType: pt, codec: codecName(s, payloadType: pt),
                    clockRate: ssrcClockRates[s.key.ssrc] ?? s.cachedClockRate, durationNanos: end - start, final: final))
        }
        let st = s.statistics
        s.interval = IntervalBaseline(
            packets: st.packets, payloadBytes: st.payloadBytes, headerBytes: st.headerBytes,
            expected: st.expected, lost: st.lost, firstArrivalNanos: 0)
        s.statistics.startWindow()
        s.windowStartNanos += configuration.intervalNanos
        streams[slot] = s
    }

    /// Closes every stream, pair and call: end of file, or the process is stopping.
    public mutating func finish() {
        releaseLeadingSentinelFrames(at: nil)
        for slot in Array(streamIndex.values) { closeStream(slot, reason: "captureEnd") }
        for key in Array(icePairs.keys) { closePair(key, reason: "captureEnd") }
        for number in Array(calls.keys) where calls[number]?.announced == true {
            calls[number]!.openStreams = 0
            calls[number]!.openPairs = 0
            endCallIfIdle(number, reason: "captureEnd")
        }
        pendingTransactions.removeAll()
        senderReports.removeAll()
        receiverReferences.removeAll()
    }

    mutating func emit(_ record: LogRecord) {
        counters.records += 1
        sink(record)
    }

    func milliseconds(_ nanos: Int64) -> Int64 { nanos / 1_000_000 }
}
