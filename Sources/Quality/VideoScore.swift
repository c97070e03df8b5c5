import Foundation

/// Per-interval deltas of inbound video stats (W3C webrtc-stats), the inputs of `VideoScore`.
package struct VideoIntervalStats: Sendable, Equatable {
    /// Length of the interval, s.
    package var intervalSeconds: Double
    /// ΔtotalPausesDuration, s: no frame for more than 5 s, usually the sender stopped on purpose.
    package var pausesDurationSeconds: Double
    /// ΔframesRendered (or ΔframesDecoded when rendering is not reported).
    package var framesRendered: Double
    /// ΔfreezeCount.
    package var freezeCount: Double
    /// ΔtotalFreezesDuration, s.
    package var freezesDurationSeconds: Double
    /// frameWidth × frameHeight received.
    package var receivedPixels: Double
    /// Pixels wanted: the rendering element size or the resolution requested. 0 when unknown (no penalty).
    package var expectedPixels: Double
    /// Source frame rate: 30 for cameras, 5–15 for screen share.
    package var expectedFrameRate: Double

    package init(
        intervalSeconds: Double,
        pausesDurationSeconds: Double = 0,
        framesRendered: Double,
        freezeCount: Double = 0,
        freezesDurationSeconds: Double = 0,
        receivedPixels: Double,
        expectedPixels: Double,
        expectedFrameRate: Double = 30
    ) {
        self.intervalSeconds = intervalSeconds
        self.pausesDurationSeconds = pausesDurationSeconds
        self.framesRendered = framesRendered
        self.freezeCount = freezeCount
        self.freezesDurationSeconds = freezesDurationSeconds
        self.receivedPixels = receivedPixels
        self.expectedPixels = expectedPixels
        self.expectedFrameRate = expectedFrameRate
    }
}

/// Coefficients of the freeze factor; configurable because they come from video-on-demand stalling
/// studies (Hoßfeld et al. 2011) and may be too harsh for conversational video.
package struct VideoScoreConfiguration: Sendable, Equatable {
    /// k_time, weight per frozen second (s⁻¹).
    package var freezeTimeWeight: Double = 0.15
    /// k_event, weight per freeze.
    package var freezeEventWeight: Double = 0.19
    /// The score freezes pull towards (the stalling model's asymptote).
    package var freezeFloor: Double = 1.5
    /// Active video the freeze weights are normalised to, s (the stalling study used 30-s clips).
    package var referenceSeconds: Double = 30
    /// Below this much active (non-paused) video the interval gets no score, s.
    package var minimumActiveSeconds: Double = 1

    package init() {}
}

/// A 1–5 video quality score for one interval (reference §4.4).
///
/// Structure: the ITU-T P.1203.1 mode-0 upscaling and frame-rate degradations give a base score V0; a
/// stalling-model factor F then pulls it towards `freezeFloor` as freezes accumulate. Pauses are
/// removed from the active time because they are usually intentional. Monotone: more resolution
/// shortfall, a lower frame rate, more freezes or longer freezes never raise the score.
/// The outbound `qualityLimitationReason` is deliberately not an input: its effect already shows up as
/// lower resolution or frame rate, and subtracting it again would count it twice.
package struct VideoScore: Sendable, Equatable {
    /// The score, 1.05...4.9.
    package var score: Double
    /// V0, before freezes.
    package var baseScore: Double
    /// F in (0, 1]: 1 without freezes.
    package var freezeFactor: Double
    /// Dres, 0...100.
    package var resolutionDegradation: Double
    /// Dfps, 0...100 − Dres.
    package var frameRateDegradation: Double
    /// Frame rate while not frozen, fps.
    package var framesPerSecond: Double
    /// Interval length minus pauses, s.
    package var activeSeconds: Double

    /// Scores an interval; nil when less than `minimumActiveSeconds` of video was active (off or paused).
    package init?(_ stats: VideoIntervalStats, configuration: VideoScoreConfiguration = VideoScoreConfiguration()) {
        let active = stats.intervalSeconds - max(0, stats.pausesDurationSeconds)
        guard active.isFinite, active >= configuration.minimumActiveSeconds, active > 0 else { return nil }

        let resolution = Self.resolutionDegradation(
            expectedPixels: stats.expectedPixels, receivedPixels: stats.receivedPixels)

        // Frame rate over the time frames were expected to flow: frozen time is charged by F instead.
        let frozen = min(max(0, stats.freezesDurationSeconds), active)
        let flowing = active - frozen
        let fps = flowing > 0 ? max(0, stats.framesRendered) / flowing : 0
        let expectedFps = stats.expectedFrameRate > 0 ? stats.expectedFrameRate : 30
        let normalisedFps = 30 * min(1, fps / expectedFps)
        let frameRate = Self.frameRateDegradation(normalisedFps: normalisedFps, resolutionDegradation: resolution)

        let base = min(max(Self.p1203MOS(quality: 100 - resolution - frameRate), 1.05), 4.9)
        let exposure =
            configuration.freezeTimeWeight * frozen
            + configuration.freezeEventWeight * max(0, stats.freezeCount)
        let factor = exp(-exposure * configuration.referenceSeconds / active)
        let floor = configuration.freezeFloor

        score = base > floor ? floor + (base - floor) * factor : base
        baseScore = base
        freezeFactor = factor
        resolutionDegradation = resolution
        frameRateDegradation = frameRate
        framesPerSecond = fps
        activeSeconds = active
    }

    /// Dres = clamp(72.61·log10(0.32·(s − 1) + 1), 0, 100), s = max(1, expected/received pixels)
    /// (P.1203.1 upscaling term). 0 when the expected size is unknown; 100 when nothing was received.
    package static func resolutionDegradation(expectedPixels: Double, receivedPixels: Double) -> Double {
        guard expectedPixels > 0 else { return 0 }
        guard receivedPixels > 0 else { return 100 }
        let scale = max(1, expectedPixels / receivedPixels)
        return min(max(72.61 * log10(0.32 * (scale - 1) + 1), 0), 100)
    }

    /// Dfps = clamp((100 − Dres)·(30.98 − 1.29·f)/(64.65 + f), 0, 100 − Dres) below 24 fps, else 0
    /// (P.1203.1 frame-rate term; f is the frame rate scaled to a 30-fps source).
    package static func frameRateDegradation(normalisedFps f: Double, resolutionDegradation: Double) -> Double {
        guard f < 24 else { return 0 }
        let room = 100 - resolutionDegradation
        return min(max(room * (30.98 - 1.29 * f) / (64.65 + f), 0), room)
    }

    /// The P.1203 quality-to-MOS map: 1.05 + 3.85·Q/100 + Q·(Q − 60)·(100 − Q)·7·10⁻⁶, 1.05 at Q ≤ 0 and
    /// 4.9 at Q ≥ 100.
    package static func p1203MOS(quality q: Double) -> Double {
        if q <= 0 { return 1.05 }
        if q >= 100 { return 4.9 }
        return 1.05 + 3.85 * q / 100 + q * (q - 60) * (100 - q) * 7e-6
    }
}
