import CallLog

/// Counts of what the session saw, for the command line to report.
public struct CaptureCounters: Equatable, Sendable {
    public var frames = 0
    public var udpDatagrams = 0
    public var rtpPackets = 0
    public var rtcpPackets = 0
    public var stunMessages = 0
    public var channelDataMessages = 0
    public var sipMessages = 0
    public var notUDP = 0
    public var malformed = 0
    public var fragments = 0
    public var reassembled = 0
    public var streamsOpened = 0
    public var streamsEvicted = 0
    public var records = 0
    /// Frames stamped 0 or 2³²−1 seconds inside a capture of real times (see
    /// `CaptureSession.isBrokenStamp`): measured at the latest good time.
    public var implausibleTimestamps = 0
    /// Frames the snapshot length cut inside their link, IP, UDP or RTP header.
    public var framesCutInHeaders = 0
}

/// A closed stream's figures, kept when `CaptureConfiguration.keepsClosedStreams` is set.
public struct RTPStreamSummary: Sendable {
    public var key: StreamKey
    public var call: String
    public var payloadTypes: [UInt8]
    public var codec: String?
    public var clockRate: UInt32
    public var viaTURN: Bool
    public var statistics: RTPStreamStatistics
}

/// What SDP said about one media endpoint.
struct SignalledMedia {
    enum Role { case rtp, rtcp, other }
    var role: Role
    /// The SIP Call-ID (or MGCP call identifier); nil when the carrier names no call.
    var call: String?
    var media: String
    var rtpmap: [UInt8: PayloadFormat]
    var secure: Bool
}

struct StreamState {
    var key: StreamKey
    var call: Int
    var statistics = RTPStreamStatistics()
    var rtpmap: [UInt8: PayloadFormat]
    var secure: Bool
    var viaTURN: Bool
    var cachedPayloadType: Int = -1
    var cachedClockRate: UInt32 = 0
    var clockRateSource = ClockRateSource.unknown
    var payloadTypes: [UInt8] = []
    var lastSeenNanos: Int64 = 0
    var windowStartNanos: Int64 = 0
    var interval = IntervalBaseline()
    var reported = false
}

/// Cumulative figures at the start of the current interval, and the interval's own maxima.
struct IntervalBaseline {
    var packets = 0
    var payloadBytes = 0
    var headerBytes = 0
    var expected = 0
    var lost = 0
    var firstArrivalNanos: Int64 = 0
}

/// The capture engine: frames in, call-log records out.
///
/// Feed it frames in capture order with `process(frame:linkType:timestampNanos:)`; it decodes
/// them, keeps one table entry per RTP stream, ICE candidate pair and call, and hands records
/// to the sink as intervals end and streams go idle. `finish()` flushes everything: call it at
/// end of file and on shutdown. Memory is bounded by the number of active streams.
///
/// A value type with a sink closure: single-threaded by design, one session per capture.
public struct CaptureSession {
    public static let version = "1"

    public let configuration: CaptureConfiguration
    public internal(set) var counters = CaptureCounters()
    public internal(set) var closedStreams: [RTPStreamSummary] = []
    /// Packets the kernel dropped, as `PcapSource` last reported them; shown in `end` records.
    public var kernelDrops: UInt32 = 0

    let sink: (LogRecord) -> Void
    var decoder = PacketDecoder()
    var originNanos: Int64?
    /// Frames stamped with a sentinel (`isSentinelStamp`) before any other: held until a frame
    /// with a real time sets the capture's origin (they are then measured at that time, as
    /// broken), or, when `leadingSentinelLimit` of them come first or the capture ends, read
    /// as stamped (a device without a clock stamps everything from 1970).
    var leadingSentinelFrames: [(bytes: [UInt8], linkType: LinkType, nanos: Int64)] = []
    static let leadingSentinelLimit = 64
    var clockNanos: Int64 = 0
    var nextHousekeepingNanos: Int64 = .min

    var streamIndex: [StreamKey: Int] = [:]
    var streams: [StreamState?] = []
    var freeSlots: [Int] = []
    /// The open streams' slots by last packet, oldest first: the one evicted past the cap.
    var recency = StreamRecency()
    /// Streams looked at to choose the ones evicted (one per eviction).
    public internal(set) var streamsExaminedForEviction = 0

    var signalled: [Endpoint: SignalledMedia] = [:]
    var calls: [Int: CallState] = [:]
    var nextCallNumber = 0
    var callIndex: [String: Int] = [:]
    var flowCalls: [FlowKey: Int] = [:]

    var senderReports: [UInt32: [(ntpMiddle: UInt32, arrivalNanos: Int64)]] = [:]
    /// RRTRs (RFC 3611 §4.4) by their sender's SSRC, matched by a later DLRR as SRs are by RRs.
    var receiverReferences: [UInt32: [(ntpMiddle: UInt32, arrivalNanos: Int64)]] = [:]
    var ssrcClockRates: [UInt32: UInt32] = [:]

    var icePairs: [FlowKey: ICEPairState] = [:]
    var pendingTransactions: [STUNTransactionID: PendingTransaction] = [:]

    public init(configuration: CaptureConfiguration = CaptureConfiguration(), sink: @escaping (LogRecord) -> Void) {
        self.configuration = configuration
        self.sink = sink
    }

    /// Streams currently open, for live displays and tests.
    public var activeStreamCount: Int { streamIndex.count }

    /// Times a broken stamp takes: 0 (or any time in 1970's first day) and 2³²−1 seconds
    /// (which libpcap reads from a classic record as −1 s, and from pcapng as the year 2106).
    /// Real captures jump years (files merged from several recordings), so only these
    /// sentinels are refused, and only once the capture's first frame was stamped after them.
    static let firstDayNanos: Int64 = 86_400 * 1_000_000_000
    static let lastStampNanos: Int64 = Int64(UInt32.max) * 1_000_000_000

    static func isBrokenStamp(_ nanos: Int64, origin: Int64) -> Bool {
        nanos < 0 || (!isSentinelStamp(origin) && isSentinelStamp(nanos))
    }

    static func isSentinelStamp(_ nanos: Int64) -> Bool { nanos < firstDayNanos || nanos >= lastStampNanos }

    /// The number (1-based) and time of the first frame whose time was not used, if any.
    public internal(set) var firstImplausibleTimestamp: (frame: Int, nanos: Int64)?

    /// Decodes one captured frame. `frame` need only stay valid for the duration of the call.
    ///
    /// A broken stamp (`isBrokenStamp`) is counted in `counters.implausibleTimestamps` and
    /// replaced by the latest good time, so that one such packet neither moves a call to 1970
    /// nor stretches it over 54 years. Sentinel stamps at the capture's start are held until a
    /// real time comes (`leadingSentinelFrames`).
    public mutating func process(frame: UnsafeRawBufferPointer, linkType: LinkType, timestampNanos: Int64) {
        counters.frames += 1
        if originNanos == nil, Self.isSentinelStamp(timestampNanos) {
            leadingSentinelFrames.append((Array(frame), linkType, timestampNanos))
            if leadingSentinelFrames.count >= Self.leadingSentinelLimit { releaseLeadingSentinelFrames(at: nil) }
            return
        }
        if originNanos == nil, !leadingSentinelFrames.isEmpty { releaseLeadingSentinelFrames(at: timestampNanos) }
        decode(frame: frame, linkType: linkType, timestampNanos: timestampNanos, number: counters.frames)
    }

    /// Decodes the held leading frames: at `time` (a real time after them: each counted as
    /// broken), or, with nil, as stamped.
    mutating func releaseLeadingSentinelFrames(at time: Int64?) {
        let held = leadingSentinelFrames
        leadingSentinelFrames = []
        let first = counters.frames - held.count - (time == nil ? 0 : 1) + 1
        for (i, f) in held.enumerated() {
            if let time {
                counters.implausibleTimestamps += 1
                if firstImplausibleTimestamp == nil { firstImplausibleTimestamp = (first + i, f.nanos) }
                if originNanos == nil { originNanos = time }
            }
            f.bytes.withUnsafeBytes { decode(frame: $0, linkType: f.linkType, timestampNanos: time ?? f.nanos, number: first + i) }
        }
    }

    /// `process` once the frame's place in time is settled; `number`: its frame number.
    private mutating func decode(frame: UnsafeRawBufferPointer, linkType: LinkType, timestampNanos: Int64, number: Int) {
        var timestampNanos = timestampNanos
        if let origin = originNanos, Self.isBrokenStamp(timestampNanos, origin: origin) {
            counters.implausibleTimestamps += 1
            if firstImplausibleTimestamp == nil { firstImplausibleTimestamp = (number, timestampNanos) }
            timestampNanos = max(clockNanos, origin)
        }
        if originNanos == nil { originNanos = timestampNanos }
        if timestampNanos > clockNanos { clockNanos = timestampNanos }
        if clockNanos >= nextHousekeepingNanos { housekeeping() }

        switch decoder.decode(linkType: linkType, frame: frame, timestampNanos: timestampNanos) {
        case .udp(let datagram):
            handleUDP(datagram, at: timestampNanos)
        case .reassembled(let source, let destination, let isIPv6, let bytes):
            counters.fragments += 1
            counters.reassembled += 1
            bytes.withUnsafeBytes { raw in
                if case .udp(let datagram) = PacketDecoder.udp(raw, source: source, destination: destination, isIPv6: isIPv6) {
                    handleUDP(datagram, at: timestampNanos)
                }
            }
        case .fragmentHeld:
            counters.fragments += 1
        case .notUDP:
            counters.notUDP += 1
        case .malformed:
            counters.malformed += 1
        }
    }

    /// Advances the session's clock without a packet, so that a quiet live capture still
    /// ends intervals and closes idle streams. Call it when a read times out, with the
    /// current time in epoch nanoseconds.
    public mutating func tick(nowNanos: Int64) {
        // Held leading frames wait no longer: measured at a real time, or read as stamped.
        if originNanos == nil, !leadingSentinelFrames.isEmpty {
            releaseLeadingSentinelFrames(at: Self.isSentinelStamp(nowNanos) ? nil : nowNanos)
        }
        guard originNanos != nil else { return }
        if nowNanos > clockNanos { clockNanos = nowNanos }
        if clockNanos >= nextHousekeepingNanos { housekeeping() }
    }

    mutating func handleUDP(_ d: UDPDatagram, at now: Int64) {
        counters.udpDatagrams += 1
        let p = d.payload
        guard p.count >= 4 else { return }
        let flow = d.flow

        if flow.source.port == 5060 || flow.destination.port == 5060 || SIPMessage.startsLikeSIP(p) {
            if let sip = SIPMessage.parse(p) { handleSIP(sip, flow: flow, at: now) }
            return
        }
        if SIPMessage.gatewayControlPorts.contains(flow.source.port) || SIPMessage.gatewayControlPorts.contains(flow.destination.port) {
            if let message = SIPMessage.parse(p, anyText: true) { handleSIP(message, flow: flow, at: now) }
            return
        }
        if !signalled.isEmpty, let media = signalled[flow.destination] ?? signalled[flow.source] {
            switch media.role {
            case .rtp, .rtcp:
                // Signalled ports: trust the SDP, check only the version (RFC 5761 for mux).
                guard p.u8(0) & 0xC0 == 0x80 else { break }
                let b1 = p.u8(1)
                if b1 >= 192 && b1 <= 223 || media.role == .rtcp {
                    handleRTCP(p, flow: flow, at: now, viaTURN: false)
                } else if let header = RTPHeader.parseSignalled(p, wireLength: d.wireLength) {
                    handleRTP(header, flow: flow, wireLength: d.wireLength, at: now, viaTURN: false)
                }
                return
            case .other:
                return
            }
        }
        if !configuration.rtpPorts.isEmpty,
            configuration.rtpPorts.contains(flow.destination.port) || configuration.rtpPorts.contains(flow.source.port)
        {
            if p.u8(0) & 0xC0 == 0x80 {
                let b1 = p.u8(1)
                if b1 >= 192 && b1 <= 223 {
                    handleRTCP(p, flow: flow, at: now, viaTURN: false)
                } else if let header = RTPHeader.parseSignalled(p, wireLength: d.wireLength) {
                    handleRTP(header, flow: flow, wireLength: d.wireLength, at: now, viaTURN: false)
                }
            }
            return
        }
        switch PayloadClassifier.classify(p, wireLength: d.wireLength) {
        case .rtp:
            guard configuration.rtpDetection == .heuristic,
                !configuration.heuristicExcludedPorts.contains(flow.source.port),
                !configuration.heuristicExcludedPorts.contains(flow.destination.port),
                let header = RTPHeader.parse(p, wireLength: d.wireLength)
            else { return }
            handleRTP(header, flow: flow, wireLength: d.wireLength, at: now, viaTURN: false)
        case .rtcp:
            handleRTCP(p, flow: flow, at: now, viaTURN: false)
        case .stun:
            if let message = STUNMessage.parse(p) { handleSTUN(message, flow: flow, at: now) }
        case .channelData:
            counters.channelDataMessages += 1
            guard configuration.analyseTURNChannelData else { return }
            let inner = p.slice(from: 4, count: Int(p.u16(2)))
            let innerWire = min(Int(p.u16(2)), d.wireLength - 4)
            switch PayloadClassifier.classify(inner, wireLength: innerWire) {
            case .rtp:
                if let header = RTPHeader.parse(inner, wireLength: innerWire) {
                    handleRTP(header, flow: flow, wireLength: innerWire, at: now, viaTURN: true)
                }
            case .rtcp:
                handleRTCP(inner, flow: flow, at: now, viaTURN: true)
            default:
                break
            }
        case .sip:
            if let sip = SIPMessage.parse(p) { handleSIP(sip, flow: flow, at: now) }
        case .dtls, .other:
            break
        }
    }

    // MARK: RTP

    mutating func handleRTP(_ header: RTPHeader, flow: FlowKey, wireLength: Int, at now: Int64, viaTURN: Bool) {
        counters.rtpPackets += 1
        let key = StreamKey(flow: flow, ssrc: header.ssrc)
        let slot: Int
        if let existing = streamIndex[key] {
            slot = existing
            recency.touch(slot)
        } else {
            slot = openStream(key, at: now, viaTURN: viaTURN)
        }
        // Close the stream's interval first if this packet belongs to a later one.
        if streams[slot]!.interval.firstArrivalNanos != 0, now >= streams[slot]!.windowStartNanos + configuration.intervalNanos {
            flushInterval(slot, final: false)
        }
        var rate = streams[slot]!.cachedClockRate
        if Int(header.payloadType) != streams[slot]!.cachedPayloadType {
            rate = resolveClockRate(slot, payloadType: header.payloadType)
        }
        let observation = RTPPacketObservation(arrivalNanos: now, header: header, wireLength: wireLength, clockRate: rate)
        streams[slot]!.statistics.add(observation, originNanos: originNanos ?? now)
        streams[slot]!.lastSeenNanos = now
        if streams[slot]!.interval.firstArrivalNanos == 0 {
            streams[slot]!.interval.firstArrivalNanos = now
            streams[slot]!.windowStartNanos = now - floorMod(now, configuration.intervalNanos)
        }
        let s = streams[slot]!.statistics
        if !streams[slot]!.reported && s.packets >= configuration.minimumStreamPackets {
            streams[slot]!.reported = true
            announceCall(streams[slot]!.call, at: now)
        }
    }

    mutating func openStream(_ key: StreamKey, at now: Int64, viaTURN: Bool) -> Int {
        if streamIndex.count >= configuration.maximumStreams { evictOldestStream() }
        counters.streamsOpened += 1
        let media = signalled[key.flow.destination] ?? signalled[key.flow.source]
        let call = callFor(flow: key.flow, signalledCall: media?.call, at: now)
        var state = StreamState(key: key, call: call, rtpmap: media?.rtpmap ?? [:], secure: media?.secure ?? false, viaTURN: viaTURN)
        state.lastSeenNanos = now
        calls[call]!.openStreams += 1
        calls[call]!.lastActivityNanos = now
        if !icePairs.isEmpty, icePairs[key.flow.unordered] != nil, icePairs[key.flow.unordered]!.firstMediaNanos == nil {
            icePairs[key.flow.unordered]!.firstMediaNanos = now
            icePairs[key.flow.unordered]!.dirty = true
        }
        let slot: Int
        if let free = freeSlots.popLast() {
            streams[free] = state
            slot = free
        } else {
            streams.append(state)
            slot = streams.count - 1
        }
        streamIndex[key] = slot
        recency.append(slot)
        return slot
    }

    /// Static table for PT < 96; SDP, then the configured default, for dynamic ones.
    mutating func resolveClockRate(_ slot: Int, payloadType pt: UInt8) -> UInt32 {
        var rate: UInt32 = 0
        var source = ClockRateSource.unknown
        if pt < 96 {
            if let f = StaticPayloadTypes.format(pt) { rate = f.clockRate; source = .static }
        } else if let f = streams[slot]!.rtpmap[pt] {
            rate = f.isTelephoneEvent ? 0 : f.clockRate
            source = .sdp
        } else if let assumed = configuration.defaultDynamicClockRate {
            rate = assumed
            source = .assumed
        }
        streams[slot]!.cachedPayloadType = Int(pt)
        streams[slot]!.cachedClockRate = rate
        if !streams[slot]!.payloadTypes.contains(pt) { streams[slot]!.payloadTypes.append(pt) }
        // Telephone events and comfort noise ride along with the main codec; keep its rate.
        let isSideband = StaticPayloadTypes.isComfortNoise(pt) || streams[slot]!.rtpmap[pt]?.isTelephoneEvent == true
        if rate != 0 && !isSideband {
            streams[slot]!.clockRateSource = source
            ssrcClockRates[streams[slot]!.key.ssrc] = rate
        }
        return rate
    }

    func codecName(_ stream: StreamState, payloadType pt: UInt8) -> String? {
        if pt >= 96 { return stream.rtpmap[pt]?.name }
        return StaticPayloadTypes.format(pt)?.name
    }

    /// The stream's main payload type: the last one that is neither comfort noise nor an event.
    func mainPayloadType(_ stream: StreamState) -> UInt8 {
        stream.payloadTypes.last(where: { !StaticPayloadTypes.isComfortNoise($0) && stream.rtpmap[$0]?.isTelephoneEvent != true })
            ?? stream.statistics.lastPayloadType
    }

    /// Closes the stream whose last packet is the oldest (the one that arrived first among
    /// equals), in constant time.
    mutating func evictOldestStream() {
        guard recency.oldest >= 0 else { return }
        streamsExaminedForEviction += 1
        counters.streamsEvicted += 1
        closeStream(Int(recency.oldest), reason: "evicted")
    }

    mutating func closeStream(_ slot: Int, reason: String) {
        guard let state = streams[slot] else { return }
        if state.reported { flushInterval(slot, final: true) }
        if configuration.keepsClosedStreams {
            let pt = mainPayloadType(state)
            closedStreams.append(
                RTPStreamSummary(
                    key: state.key, call: calls[state.call]!.id, payloadTypes: state.payloadTypes,
                    codec: codecName(state, payloadType: pt), clockRate: state.cachedClockRate,
                    viaTURN: state.viaTURN, statistics: state.statistics))
        }
        streamIndex.removeValue(forKey: state.key)
        recency.remove(slot)
        streams[slot] = nil
        freeSlots.append(slot)
        calls[state.call]!.openStreams -= 1
        calls[state.call]!.lastActivityNanos = max(calls[state.call]!.lastActivityNanos, state.lastSeenNanos)
        endCallIfIdle(state.call, reason: reason)
    }
}

@inline(__always)
func floorMod(_ a: Int64, _ n: Int64) -> Int64 {
    let r = a % n
    return r < 0 ? r + n : r
}

extension RTPHeader {
    /// On a port that signalling or configuration made RTP, only structure is checked, as
    /// Wireshark does for SDP-established conversations: PT 72-76 are accepted there.
    @inline(__always)
    static func parseSignalled(_ p: UnsafeRawBufferPointer, wireLength: Int) -> RTPHeader? {
        guard p.count >= 12, p.u8(0) & 0xC0 == 0x80 else { return nil }
        if let h = parse(p, wireLength: wireLength) { return h }
        let b0 = p.u8(0)
        let b1 = p.u8(1)
        let length = 12 + Int(b0 & 0x0F) * 4
        guard wireLength >= length else { return nil }
        return RTPHeader(
            marker: b1 & 0x80 != 0, payloadType: b1 & 0x7F, sequenceNumber: p.u16(2),
            timestamp: p.u32(4), ssrc: p.u32(8), headerLength: length, paddingLength: 0)
    }
}
