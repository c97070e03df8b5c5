/// Thresholds for findings and grades. Defaults are the published ones (see the README,
/// "How a call is graded"): Teams CQD and Twilio for jitter, loss and RTT; Teams for
/// concealment and frame rate; ITU-T G.109 categories for MOS. Users set them by name
/// (`AnalysisSettings.swift`): a field added here needs its setting there.
public struct AnalysisConfig: Sendable, Equatable {
    /// Network loss, % per interval.
    public var lossWarnPct = 1.0
    public var lossPoorPct = 5.0
    /// Inbound jitter, ms.
    public var jitterWarnMs = 30.0
    /// RTCP round-trip time, ms.
    public var rttWarnMs = 300.0
    public var rttPoorMs = 500.0
    /// Concealed share of played audio, %.
    public var concealmentWarnPct = 7.0
    /// Received video frame rate while not paused, fps.
    public var lowFps = 7.0
    /// Frozen share of a window's video, %.
    public var freezeWarnPct = 10.0
    public var freezePoorPct = 50.0
    /// Time from call creation to media, ms.
    public var setupWarnMs: Int64 = 5_000
    public var setupPoorMs: Int64 = 10_000
    /// MOS-CQ below these over a sustained window makes the call fair / poor (G.109: R 70 / 60).
    public var mosFair = 3.6
    public var mosPoor = 3.1
    /// Findings and the worst sustained MOS look at windows of at least this long (intervals
    /// merged), so 1 s and 10 s sampling mean the same thing.
    public var windowMs: Int64 = 10_000
    /// A condition counts when it holds in this many of the last `persistenceWindow` windows.
    public var persistenceCount = 3
    public var persistenceWindow = 5
    /// Windows averaged for the worst sustained MOS (3 × 10 s).
    public var worstWindow = 3
    /// Consecutive snapshots further apart than this many median periods are not one interval.
    public var gapFactor = 3.0
    /// Agent and stats clocks differing by more than this is reported, ms.
    public var clockSkewMs: Int64 = 1_000
    /// Added to RTT/2 + jitter buffer + packet time for one-way delay (device, processing), ms.
    public var deviceAllowanceMs = 20.0
    public var packetTimeMs = 20.0
    /// The far end's jitter-buffer delay, ms, in the sent direction's E-model: remote reports
    /// carry loss, jitter and round trip, never the far end's playout delay (Chromium holds about
    /// 40-50 ms on a quiet path).
    public var farEndJitterBufferMs = 40.0
    /// Inbound audio jitter-buffer delay above this, and larger than the network's one-way delay
    /// (RTT/2) and packetisation (packet time + device allowance), raises `playout_delay`, ms
    /// (G.114's whole mouth-to-ear budget is 150 ms).
    public var playoutWarnMs = 150.0
    /// Keys of the `call` record's `labels` (region, tenant, experiment…) that rollups break
    /// results down by, each as the dimension `label.<key>`. The analysis does not read them:
    /// they are here because they are settings of the database as the thresholds are (kept in
    /// `meta.analysis_config`, changed by `regrade`, which rebuilds every rollup), so that no
    /// rollup bucket has a dimension another lacks.
    public var labelDimensions: [String] = []

    public init() {}
}
