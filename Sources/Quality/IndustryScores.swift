/// Scores computed the way widely used products compute them, stored next to the E-model so dashboards
/// can be compared with numbers users already know. They are not better models: all use an
/// "effective latency" shortcut instead of the E-model delay terms.
public enum IndustryScores {
    /// Twilio Voice/Video SDK MOS (`mos.ts`): R from Ro = 94.768 (the G.107 default Ro), MOS by the Annex B
    /// polynomial.
    ///
    /// Units as Twilio feeds them: the **full** RTT and jitter in ms, the loss in **percent** of the
    /// sample (not a fraction). R is floored at 6.52 (MOS ≈ 1.0) unless the loss wipes it out, where it is 0.
    /// - Returns: nil for negative or non-finite inputs, as Twilio's `calculate()` does.
    public static func twilioMOS(roundTripTimeMs rtt: Double, jitterMs jitter: Double, lossPercent: Double) -> Double? {
        guard rtt.isFinite, jitter.isFinite, lossPercent.isFinite, rtt >= 0, jitter >= 0, lossPercent >= 0 else {
            return nil
        }
        let ro = 94.768
        let effectiveLatency = rtt + 2 * jitter + 10
        var r: Double
        if effectiveLatency < 160 {
            r = ro - effectiveLatency / 40
        } else if effectiveLatency < 1000 {
            r = ro - (effectiveLatency - 120) / 10
        } else {
            r = 0
        }
        r = lossPercent <= r / 2.5 ? max(r - 2.5 * lossPercent, 6.52) : 0
        return MOS.polynomial(r)
    }

    /// R of the "effective latency" model of PingPlotter, NetBeez and baresip:
    /// 93.2 − EL/40 (EL < 160) or 93.2 − (EL − 120)/10, minus 2.5 per percent loss, EL = RTT + 2·jitter + 10,
    /// clamped to 0...100 as baresip does.
    ///
    /// The latency is the ping **RTT**, not one-way. Pair with `MOS.fromR`; baresip itself applies the
    /// unclamped polynomial (`MOS.polynomial`) and so reports values below 1 near R = 4.
    public static func effectiveLatencyRating(roundTripTimeMs rtt: Double, jitterMs jitter: Double, lossPercent: Double) -> Double {
        let effectiveLatency = rtt + 2 * jitter + 10
        var r = effectiveLatency < 160
            ? EModel.simplifiedBaseRating - effectiveLatency / 40
            : EModel.simplifiedBaseRating - (effectiveLatency - 120) / 10
        r -= 2.5 * lossPercent
        return min(max(r, 0), 100)
    }
}
