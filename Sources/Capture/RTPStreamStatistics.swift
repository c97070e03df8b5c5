import Quality

/// One RTP packet as the statistics need it.
public struct RTPPacketObservation: Sendable {
    public var arrivalNanos: Int64
    public var header: RTPHeader
    /// UDP payload length on the wire (RTP header, payload and padding).
    public var wireLength: Int
    /// Clock rate for this packet's payload type; 0 leaves jitter alone (unknown rate, or
    /// telephone events whose timestamps do not advance).
    public var clockRate: UInt32

    public init(arrivalNanos: Int64, header: RTPHeader, wireLength: Int, clockRate: UInt32) {
        self.arrivalNanos = arrivalNanos
        self.header = header
        self.wireLength = wireLength
        self.clockRate = clockRate
    }
}

/// Sequence accounting the way Wireshark's RTP stream analysis does it, kept beside the
/// RFC 3550 figures so that results can be checked against `tshark -z rtp,streams`.
///
/// The differences: expected packets run from the first to the *last received* sequence
/// number (not the highest), and wrap-arounds are counted by a simple below-the-start flag.
/// Both agree on in-order streams; they part when the last packet is late or the sequence
/// jumps.
public struct WiresharkSequenceView: Equatable, Sendable {
    public var startSequence: UInt16 = 0
    public var stopSequence: UInt16 = 0
    public var cycles: Int = 0
    /// Packets whose sequence number was not the expected next one.
    public var sequenceErrors: Int = 0
    var lastInOrder: UInt16 = 0
    var under = false

    public func expected() -> Int { Int(stopSequence) + cycles * 65536 - Int(startSequence) + 1 }
    public func lost(received: Int) -> Int { expected() - received }
}

/// Running statistics of one RTP stream (RFC 3550 §6.4.1 and Appendix A.1/A.3/A.8).
///
/// Updated once per packet with integer and floating-point arithmetic only; the window of
/// recently seen sequence numbers lives in a fixed tuple so the hot path never allocates.
public struct RTPStreamStatistics: Sendable {
    package static let maxDropout = 3000
    package static let maxMisorder = 100

    public private(set) var packets = 0
    /// Payload octets, without RTP header and padding (W3C `bytesReceived`).
    public private(set) var payloadBytes = 0
    /// RTP header and padding octets (W3C `headerBytesReceived`, less UDP/IP).
    public private(set) var headerBytes = 0
    public private(set) var markers = 0
    public private(set) var duplicates = 0
    /// Packets that arrived after a higher sequence number (late or reordered).
    public private(set) var outOfOrder = 0
    public private(set) var firstArrivalNanos: Int64 = 0
    public private(set) var lastArrivalNanos: Int64 = 0
    public private(set) var lastPayloadType: UInt8 = 0
    public private(set) var lastSequence: UInt16 = 0
    public private(set) var lastTimestamp: UInt32 = 0

    // RFC 3550 A.1 sequence state.
    var baseSequence: Int = 0
    var maxSequence: UInt16 = 0
    var cycles: Int = 0
    var badSequence: Int = -1
    /// Expected packets of earlier sequence runs, when the sender restarted its numbering.
    var expectedBeforeRestart = 0
    /// Which of the 128 sequence numbers at or below the highest were seen (bit 0 = highest).
    var seenWindow: (UInt64, UInt64) = (0, 0)

    // Timing, following Wireshark's rtppacket_analyse so the figures compare directly.
    /// RFC 3550 interarrival jitter, updated in the form tshark uses (see `InterarrivalJitter`).
    var jitter = InterarrivalJitter()
    /// RFC 3550 interarrival jitter, in milliseconds.
    public var jitterMs: Double { jitter.milliseconds }
    public private(set) var maxJitterMs = 0.0
    /// Wireshark's "mean jitter": a running mean over regular packets.
    public private(set) var meanJitterMs = 0.0
    /// Largest gap between consecutive in-order packets, markers and comfort noise excluded.
    public private(set) var maxDeltaMs = 0.0
    /// The same maxima since `startWindow()`, for interval reports.
    public private(set) var windowMaxJitterMs = 0.0
    public private(set) var windowMaxDeltaMs = 0.0
    /// Whether any packet had a known clock rate (otherwise the jitter figures mean nothing).
    public private(set) var jitterComputed = false
    var lastTimeMs = 0.0
    var lastExtendedTimestamp: Int64 = 0
    var firstExtendedTimestamp: Int64 = 0
    /// Timestamp of the last packet that entered the jitter computation.
    var sequenceTimestamp: Int64 = 0
    var lastDeltaMs = 0.0
    var previousPayloadType: UInt8 = 0

    public private(set) var wireshark = WiresharkSequenceView()

    public init() {}

    /// RFC 3550 A.3: highest extended sequence number received.
    public var extendedHighestSequence: Int { cycles + Int(maxSequence) }
    public var expected: Int { packets == 0 ? 0 : expectedBeforeRestart + extendedHighestSequence - baseSequence + 1 }
    /// RFC 3550 cumulative loss: expected minus received, negative when duplicates outnumber losses.
    public var lost: Int { expected - packets }

    /// Updates every figure with one packet. `originNanos` is the capture's first packet
    /// time: Wireshark works in milliseconds relative to it, and so do the timing figures here,
    /// which keeps doubles precise.
    public mutating func add(_ p: RTPPacketObservation, originNanos: Int64) {
        let h = p.header
        let timeMs = Double(p.arrivalNanos - originNanos) / 1_000_000
        let payload = max(0, p.wireLength - h.headerLength - h.paddingLength)
        headerBytes += p.wireLength - payload
        payloadBytes += payload
        if h.marker { markers += 1 }

        if packets == 0 {
            packets = 1
            firstArrivalNanos = p.arrivalNanos
            lastArrivalNanos = p.arrivalNanos
            baseSequence = Int(h.sequenceNumber)
            maxSequence = h.sequenceNumber
            seenWindow = (1, 0)
            lastExtendedTimestamp = 0x1_0000_0000 + Int64(h.timestamp)
            sequenceTimestamp = lastExtendedTimestamp
            firstExtendedTimestamp = lastExtendedTimestamp
            lastTimeMs = timeMs
            previousPayloadType = h.payloadType
            wireshark = WiresharkSequenceView(
                startSequence: h.sequenceNumber, stopSequence: h.sequenceNumber, lastInOrder: h.sequenceNumber)
            remember(h)
            return
        }
        lastArrivalNanos = p.arrivalNanos
        updateRFCSequence(h.sequenceNumber)

        // Extended timestamp: the 32-bit value taken within ±2^31 of the previous packet's.
        let step = Int64(Int32(bitPattern: h.timestamp &- UInt32(truncatingIfNeeded: lastExtendedTimestamp)))
        let extendedTimestamp = lastExtendedTimestamp + step
        lastExtendedTimestamp = extendedTimestamp
        // Packets stamped before the stream's first packet (a sender restart, a stray late
        // packet) are left out of the timing figures, as in Wireshark 4.0.
        let inTimeSequence = firstExtendedTimestamp <= extendedTimestamp
        updateWiresharkSequence(h.sequenceNumber, inTimeSequence: inTimeSequence)

        let isComfortNoise = StaticPayloadTypes.isComfortNoise(h.payloadType)
        let followsComfortNoise = StaticPayloadTypes.isComfortNoise(previousPayloadType)
        previousPayloadType = h.payloadType

        var currentJitter = 0.0
        if inTimeSequence {
            lastDeltaMs = timeMs - lastTimeMs
            if p.clockRate != 0 {
                jitterComputed = true
                // D(i,j) of RFC 3550 §6.4.1, in ms, against the last packet with a known clock
                // rate: telephone events and unknown payload types do not move the reference.
                let difference = InterarrivalJitter.transitDifferenceMs(
                    arrivalMs: timeMs, previousArrivalMs: lastTimeMs,
                    timestampStep: extendedTimestamp - sequenceTimestamp, clockRate: p.clockRate)
                currentJitter = jitter.add(transitDifferenceMs: difference)
                sequenceTimestamp = extendedTimestamp
            }
            lastTimeMs = timeMs
        }
        // "Regular" packets: not the first of a talkspurt, not comfort noise or right after it,
        // not out of timestamp order. Only these count towards the maxima and the mean.
        if !h.marker && !isComfortNoise && !followsComfortNoise && inTimeSequence {
            if lastDeltaMs > maxDeltaMs { maxDeltaMs = lastDeltaMs }
            if lastDeltaMs > windowMaxDeltaMs { windowMaxDeltaMs = lastDeltaMs }
            if p.clockRate != 0 {
                if jitterMs > maxJitterMs { maxJitterMs = jitterMs }
                if jitterMs > windowMaxJitterMs { windowMaxJitterMs = jitterMs }
                meanJitterMs = (meanJitterMs * Double(packets - 1) + currentJitter) / Double(packets)
            }
        }
        wireshark.stopSequence = h.sequenceNumber
        packets += 1
        remember(h)
    }

    /// Starts a new reporting interval for the windowed maxima.
    package mutating func startWindow() {
        windowMaxJitterMs = 0
        windowMaxDeltaMs = 0
    }

    @inline(__always)
    mutating func remember(_ h: RTPHeader) {
        lastPayloadType = h.payloadType
        lastSequence = h.sequenceNumber
        lastTimestamp = h.timestamp
    }

    /// RFC 3550 A.1 `update_seq`, extended with duplicate and reorder counting. A jump beyond
    /// `maxDropout` is believed only when the next packet follows it (the sender restarted);
    /// then the old run's expected count is kept so cumulative loss stays meaningful.
    @inline(__always)
    mutating func updateRFCSequence(_ seq: UInt16) {
        let delta = Int(seq &- maxSequence)
        if delta == 0 {
            duplicates += 1
        } else if delta < RTPStreamStatistics.maxDropout {
            if seq < maxSequence { cycles += 65536 }
            maxSequence = seq
            shiftWindow(by: delta)
        } else if delta <= 65536 - RTPStreamStatistics.maxMisorder {
            if Int(seq) == badSequence {
                expectedBeforeRestart += extendedHighestSequence - baseSequence + 1
                // The packet before this one was the first of the new run.
                baseSequence = Int(seq &- 1)
                cycles = 0
                maxSequence = seq
                seenWindow = (3, 0)
                badSequence = -1
            } else {
                badSequence = Int(seq &+ 1)
            }
        } else {
            // Behind the highest: a duplicate if already seen, otherwise late.
            let behind = 65536 - delta
            if behind < 128 {
                let seen = behind < 64 ? seenWindow.0 >> UInt64(behind) & 1 : seenWindow.1 >> UInt64(behind - 64) & 1
                if seen != 0 {
                    duplicates += 1
                } else {
                    outOfOrder += 1
                    if behind < 64 { seenWindow.0 |= 1 << UInt64(behind) } else { seenWindow.1 |= 1 << UInt64(behind - 64) }
                }
            } else {
                outOfOrder += 1
            }
        }
    }

    @inline(__always)
    mutating func shiftWindow(by n: Int) {
        if n >= 128 {
            seenWindow = (1, 0)
        } else if n >= 64 {
            seenWindow = (1, seenWindow.0 << UInt64(n - 64))
        } else {
            seenWindow.1 = seenWindow.1 << UInt64(n) | seenWindow.0 >> UInt64(64 - n)
            seenWindow.0 = seenWindow.0 << UInt64(n) | 1
        }
    }

    /// Wireshark's wrap-around and sequence-error bookkeeping (see `WiresharkSequenceView`).
    @inline(__always)
    mutating func updateWiresharkSequence(_ seq: UInt16, inTimeSequence: Bool) {
        var w = wireshark
        if seq < w.startSequence && inTimeSequence && !w.under {
            w.cycles += 1
            w.under = true
        } else if seq == 0 && w.stopSequence == 65535 && inTimeSequence && !w.under {
            w.cycles += 1
            w.under = true
        } else if seq > w.startSequence && inTimeSequence && w.under {
            w.under = false
        }
        let last = Int(w.lastInOrder)
        let s = Int(seq)
        if inTimeSequence && last + 1 == s {
            w.lastInOrder = seq
        } else if inTimeSequence && last == 65535 && s == 0 {
            w.lastInOrder = seq
        } else if inTimeSequence && (last + 1 < s || last - s > 0xFF00) {
            w.lastInOrder = seq
            w.sequenceErrors += 1
        } else if last + 1 > s {
            w.sequenceErrors += 1
        }
        wireshark = w
    }
}
