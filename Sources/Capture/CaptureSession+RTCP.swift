import CallLog
import Quality

extension CaptureSession {
    /// How many recent sender reports per SSRC are remembered for round-trip matching.
    static let senderReportMemory = 8

    mutating func handleRTCP(_ p: UnsafeRawBufferPointer, flow: FlowKey, at now: Int64, viaTURN: Bool) {
        guard let compound = RTCPCompound.parse(p) else { return }
        counters.rtcpPackets += 1
        let media = signalled[flow.destination] ?? signalled[flow.source]
        let call = callFor(flow: flow, signalledCall: media?.call, at: now)
        calls[call]!.lastActivityNanos = now
        var roundTrips: [UInt32: Double] = [:]
        var xrRoundTrips: [UInt32: Double] = [:]
        var jitterRates: [UInt32: UInt32] = [:]
        for packet in compound.packets {
            switch packet {
            case .senderReport(let ssrc, let ntp, _, _, _, let reports):
                rememberSenderReport(ssrc: ssrc, ntp: ntp, at: now)
                measure(reports, at: now, roundTrips: &roundTrips, rates: &jitterRates)
            case .receiverReport(_, let reports):
                measure(reports, at: now, roundTrips: &roundTrips, rates: &jitterRates)
            case .extendedReport(let ssrc, _, _, let times):
                if let ntp = times.receiverReferenceTime { rememberReceiverReference(ssrc: ssrc, ntp: ntp, at: now) }
                for d in times.dlrr { if let rtt = xrRoundTrip(d, at: now) { xrRoundTrips[d.ssrc] = rtt } }
            default:
                break
            }
        }
        // RTCP alone (no RTP yet, or RTP not recognised) still makes the call known.
        announceCall(call, at: now)
        emit(
            CaptureRecords.rtcp(
                compound, call: calls[call]!.id, flow: flow, ts: milliseconds(now), viaTURN: viaTURN,
                roundTripsMs: roundTrips, clockRates: jitterRates, xrRoundTripsMs: xrRoundTrips))
        // A BYE does not close the stream at once: packets in flight may follow. The stream
        // closes on idle, and its call's `end` then says "bye" if SIP said so.
    }

    mutating func rememberSenderReport(ssrc: UInt32, ntp: UInt64, at now: Int64) {
        Self.remember(ntp: ntp, of: ssrc, at: now, in: &senderReports, streams: configuration.maximumStreams)
    }

    /// An RRTR (RFC 3611 §4.4), kept as SRs are: a later DLRR names it by its NTP middle 32 bits.
    mutating func rememberReceiverReference(ssrc: UInt32, ntp: UInt64, at now: Int64) {
        Self.remember(ntp: ntp, of: ssrc, at: now, in: &receiverReferences, streams: configuration.maximumStreams)
    }

    /// Keeps the last few references of `ssrc` (its NTP middle 32 bits and arrival) that a later
    /// report names; the table is emptied past the stream cap, so it never outgrows the streams.
    private static func remember(
        ntp: UInt64, of ssrc: UInt32, at now: Int64, in table: inout [UInt32: [(ntpMiddle: UInt32, arrivalNanos: Int64)]], streams: Int
    ) {
        var list = table[ssrc] ?? []
        if list.count >= CaptureSession.senderReportMemory { list.removeFirst() }
        list.append((UInt32(truncatingIfNeeded: ntp >> 16), now))
        table[ssrc] = list
        if table.count > streams { table.removeAll() }
    }

    /// XR round-trip time (RFC 3611 §4.5), the arithmetic of RR's LSR/DLSR: the DLRR's arrival,
    /// less the arrival of the RRTR it names (LRR), less the delay the replier held it (DLRR).
    /// Both arrivals are on the capture clock; nil when the RRTR was not captured.
    func xrRoundTrip(_ d: RTCPDLRR, at now: Int64) -> Double? {
        guard d.lastRR != 0, let rrtr = receiverReferences[d.ssrc]?.last(where: { $0.ntpMiddle == d.lastRR }) else { return nil }
        let rttMs = RTCPMath.roundTripTimeMs(sinceSenderReportNanos: now - rrtr.arrivalNanos, delaySinceLastSenderReport: d.delaySinceLastRR)
        // As for RR: DLRR's 1/65536 s steps beside the replier read as 0; further below, not the one meant.
        guard rttMs > -1 else { return nil }
        return max(0, rttMs)
    }

    /// Round-trip time seen from the capture point (RFC 3550 §6.4.1): the report's arrival,
    /// less the arrival of the SR it names (matched by the NTP middle 32 bits in LSR), less
    /// the receiver's DLSR. Measured on the wire, so both arrivals use the capture clock and
    /// no clock synchronisation is needed; the figure covers the path from the capture
    /// point to the reporting receiver and back.
    mutating func measure(_ reports: [RTCPReportBlock], at now: Int64, roundTrips: inout [UInt32: Double], rates: inout [UInt32: UInt32]) {
        for r in reports {
            if let rate = ssrcClockRates[r.ssrc] { rates[r.ssrc] = rate }
            guard r.lastSR != 0, let list = senderReports[r.ssrc],
                let sr = list.last(where: { $0.ntpMiddle == r.lastSR })
            else { continue }
            let rttMs = RTCPMath.roundTripTimeMs(
                sinceSenderReportNanos: now - sr.arrivalNanos, delaySinceLastSenderReport: r.delaySinceLastSR)
            // Captured beside the reporting receiver the path is ~0 and DLSR's 1/65536 s steps can
            // make it slightly negative: that is 0. Further below zero the SR was not the one meant.
            guard rttMs > -1 else { continue }
            roundTrips[r.ssrc] = max(0, rttMs)
        }
    }
}
