/// Turns per-interval deltas of W3C `getStats()` counters into E-model inputs.
///
/// All counters are cumulative: callers pass differences between two snapshots. Functions return nil when
/// the interval carries no information (no samples, no packets) rather than inventing a zero.
package enum StatsInputs {
    /// Capture, playout and processing delay not visible in the stats, added to the one-way delay, ms.
    ///
    /// 20 ms is the value of the reference worked example; pjsip uses 30 ms plus the sound-device latency.
    /// Stored scores depend on it, so it is covered by `QualityModel.modelVersion`.
    package static let defaultDeviceAllowanceMs: Double = 20

    /// Effective loss Ppl, percent: `100·Δ(concealedSamples − silentConcealedSamples)/ΔtotalSamplesReceived`.
    ///
    /// Measured after the jitter buffer, so packets recovered by FEC, RED or NACK do not count, and packets
    /// that arrived too late do. Silent concealment (DTX comfort noise) is not a loss.
    package static func effectiveLossPercent(
        concealedSamples: Double, silentConcealedSamples: Double, totalSamplesReceived: Double
    ) -> Double? {
        guard totalSamplesReceived > 0 else { return nil }
        let audible = max(0, concealedSamples - silentConcealedSamples)
        return min(100, 100 * audible / totalSamplesReceived)
    }

    /// Samples carried by one packet: clock rate × packet time (960 for Opus at 48 kHz, 20 ms).
    package static func samplesPerPacket(clockRate: Double, packetTimeMs: Double) -> Double {
        clockRate * packetTimeMs / 1000
    }

    /// Mean length of a loss run in packets: `Δ(concealed − silent)/(samplesPerPacket·ΔconcealmentEvents)`.
    ///
    /// A concealment event starts whenever concealment follows normal playout, so events count loss runs.
    package static func meanLossRunPackets(
        concealedSamples: Double, silentConcealedSamples: Double,
        concealmentEvents: Double, samplesPerPacket: Double
    ) -> Double? {
        guard concealmentEvents > 0, samplesPerPacket > 0 else { return nil }
        let audible = max(0, concealedSamples - silentConcealedSamples)
        return audible / (samplesPerPacket * concealmentEvents)
    }

    /// BurstR = max(1, meanRun·(1 − Ppl/100)).
    ///
    /// In the 2-state Markov model the mean run is 1/q and BurstR = (1 − Ppl/100)/q. Floored at 1 because
    /// the model's range starts at random loss. 1 when there is no run to measure.
    package static func burstRatio(meanLossRunPackets: Double?, lossPercent: Double) -> Double {
        guard let run = meanLossRunPackets, run.isFinite else { return 1 }
        return max(1, run * (1 - min(max(lossPercent, 0), 100) / 100))
    }

    /// Network loss before any recovery, percent: `ΔpacketsLost/(ΔpacketsLost + ΔpacketsReceived)·100`.
    ///
    /// `packetsLost` can go down when duplicates arrive, so negative deltas count as no loss.
    package static func networkLossPercent(packetsLost: Double, packetsReceived: Double) -> Double? {
        let lost = max(0, packetsLost)
        let expected = lost + max(0, packetsReceived)
        guard expected > 0 else { return nil }
        return 100 * lost / expected
    }

    /// Average jitter-buffer delay in ms: `ΔjitterBufferDelay (s) / ΔjitterBufferEmittedCount`.
    package static func averageJitterBufferDelayMs(
        jitterBufferDelaySeconds: Double, jitterBufferEmittedCount: Double
    ) -> Double? {
        guard jitterBufferEmittedCount > 0 else { return nil }
        return 1000 * max(0, jitterBufferDelaySeconds) / jitterBufferEmittedCount
    }

    /// Mouth-to-ear delay Ta = RTT/2 + jitter-buffer delay + packet time + device allowance, ms.
    ///
    /// Half the RTT stands for the network path; the packet time for packetisation at the sender; the
    /// allowance for capture, playout and processing that no stat reports.
    package static func oneWayDelayMs(
        roundTripTimeMs: Double,
        jitterBufferDelayMs: Double,
        packetTimeMs: Double,
        deviceAllowanceMs: Double = defaultDeviceAllowanceMs
    ) -> Double {
        max(0, roundTripTimeMs) / 2 + max(0, jitterBufferDelayMs) + max(0, packetTimeMs) + deviceAllowanceMs
    }
}
