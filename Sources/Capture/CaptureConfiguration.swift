/// How a `CaptureSession` finds streams and when it reports them.
public struct CaptureConfiguration: Sendable {
    /// How RTP is recognised.
    public enum RTPDetection: Sendable {
        /// Any UDP payload that passes the RTP header checks, plus signalled ports.
        /// This is `tshark --enable-heuristic rtp_udp`.
        case heuristic
        /// Only ports announced in SDP (and `rtpPorts`). This is plain `tshark`.
        case signalledOnly
    }

    public var rtpDetection: RTPDetection = .heuristic
    /// UDP ports whose traffic is RTP whatever it looks like (tshark's `-d udp.port==N,rtp`).
    public var rtpPorts: Set<UInt16> = []
    /// Ports never taken for RTP by the heuristic: well-known services whose payloads can start
    /// like RTP (NTP, DNS, QUIC, SSDP…). Wireshark has their dissectors run first.
    public var heuristicExcludedPorts: Set<UInt16> = [53, 67, 68, 69, 123, 137, 138, 161, 162, 443, 500, 514, 1900, 4500, 5353, 5355]
    /// Also analyse RTP and RTCP relayed in TURN ChannelData. Wireshark does not by default.
    public var analyseTURNChannelData = true
    /// Clock rate assumed for a dynamic payload type that no SDP describes. 48 kHz is Opus,
    /// the usual WebRTC audio codec; nil computes no jitter for such streams (as Wireshark).
    public var defaultDynamicClockRate: UInt32? = 48_000

    /// Length of a reporting interval; boundaries are multiples of it in epoch time.
    public var intervalNanos: Int64 = 10_000_000_000
    /// A stream, ICE pair or call with no packets for this long is closed and flushed.
    public var idleTimeoutNanos: Int64 = 30_000_000_000
    /// Streams with fewer packets are not reported: single stray packets that happen to pass
    /// the RTP heuristic are common in real traffic.
    public var minimumStreamPackets = 2
    /// Bound on tracked RTP streams; past it the least recently active stream is closed.
    public var maximumStreams = 50_000
    /// Bound on tracked ICE candidate pairs and on STUN transactions awaiting a response.
    public var maximumICEPairs = 10_000
    public var maximumPendingTransactions = 10_000
    /// Keep a summary of every closed stream in `CaptureSession.closedStreams` (tests and
    /// benchmarks; unbounded, so off for long live captures).
    public var keepsClosedStreams = false

    public init() {}
}
