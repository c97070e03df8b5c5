/// Network profiles: what a call's network looks like, chosen per call by weight.
///
/// The profile's name goes into the call's labels (`{"profile":"lossy_wifi"}`), so tests and
/// demos can check that the analyser finds what was put in.
public enum NetworkProfile: String, CaseIterable, Sendable {
    case good
    /// 2-6 % loss in bursts, 20-60 ms jitter, occasional reconnections.
    case lossyWifi = "lossy_wifi"
    /// RTT 200-600 ms, some loss, too little bandwidth for full-size video.
    case congestedCellular = "congested_cellular"
    /// RTT around 600 ms, otherwise clean.
    case satellite
    /// Inbound audio stops part-way through; outbound keeps flowing.
    case oneWayAudio = "one_way_audio"
    /// Direct paths fail; a relay (TURN) candidate is selected after a longer setup.
    case iceRelayFallback = "ice_relay_fallback"
    /// No path at all: no media, the call ends `failed`.
    case iceFailure = "ice_failure"
    /// Wi-Fi to cellular mid-call: a new peer connection, new SSRCs, counters from 0.
    case ipChange = "ip_change"

    /// Relative frequency among simulated calls.
    public var weight: Double {
        switch self {
        case .good: 44
        case .lossyWifi: 14
        case .congestedCellular: 10
        case .satellite: 4
        case .oneWayAudio: 5
        case .iceRelayFallback: 10
        case .iceFailure: 4
        case .ipChange: 9
        }
    }

    /// The network the call starts on; nil leaves it to the platform.
    var fixedNetwork: String? {
        switch self {
        case .lossyWifi, .ipChange: "wifi"
        case .congestedCellular: "cellular"
        case .satellite: "ethernet"
        default: nil
        }
    }

    /// Per-call baseline, drawn once: the link wanders around it during the call.
    func baseline(_ rng: inout Xoshiro256) -> LinkBaseline {
        switch self {
        case .good, .oneWayAudio, .ipChange:
            LinkBaseline(
                rttMs: rng.uniform(20, 90), loss: rng.uniform(0, 0.003), burst: 1.2,
                jitterMs: rng.uniform(2, 8), bandwidthKbps: rng.uniform(2500, 6000))
        case .iceRelayFallback:
            LinkBaseline(
                rttMs: rng.uniform(60, 160), loss: rng.uniform(0, 0.005), burst: 1.3,
                jitterMs: rng.uniform(4, 12), bandwidthKbps: rng.uniform(1500, 4000))
        case .lossyWifi:
            LinkBaseline(
                rttMs: rng.uniform(30, 100), loss: rng.uniform(0.02, 0.06), burst: rng.uniform(2.5, 4.5),
                jitterMs: rng.uniform(20, 60), bandwidthKbps: rng.uniform(1200, 3000))
        case .congestedCellular:
            LinkBaseline(
                rttMs: rng.uniform(200, 600), loss: rng.uniform(0.01, 0.04), burst: rng.uniform(1.5, 3),
                jitterMs: rng.uniform(15, 45), bandwidthKbps: rng.uniform(220, 600))
        case .satellite:
            LinkBaseline(
                rttMs: rng.uniform(560, 680), loss: rng.uniform(0.002, 0.012), burst: 1.5,
                jitterMs: rng.uniform(8, 25), bandwidthKbps: rng.uniform(1000, 2500))
        case .iceFailure:
            LinkBaseline(rttMs: 0, loss: 1, burst: 1, jitterMs: 0, bandwidthKbps: 0)
        }
    }

    /// The cellular leg after an IP change.
    static func cellularAfterChange(_ rng: inout Xoshiro256) -> LinkBaseline {
        LinkBaseline(
            rttMs: rng.uniform(70, 180), loss: rng.uniform(0.002, 0.012), burst: 1.6,
            jitterMs: rng.uniform(8, 20), bandwidthKbps: rng.uniform(800, 2500))
    }

    /// Probability of a reconnection episode (media outage with `reconnecting` events).
    var reconnectChance: Double {
        switch self {
        case .lossyWifi: 0.4
        case .congestedCellular: 0.3
        case .iceFailure, .ipChange: 0
        default: 0.03
        }
    }
}

/// What a call's network is like on average.
struct LinkBaseline: Sendable {
    var rttMs: Double
    /// Packet loss as a fraction, each direction.
    var loss: Double
    /// Mean loss-burst length in packets (1 = independent losses).
    var burst: Double
    var jitterMs: Double
    var bandwidthKbps: Double
}

/// The link during one second.
struct LinkConditions {
    var rttMs: Double
    var lossDown: Double
    var lossUp: Double
    var burst: Double
    var jitterDownMs: Double
    var jitterUpMs: Double
    var bandwidthKbps: Double
}

/// The link over time: a slow random walk around the baseline plus short bad spells, so
/// that per-interval values vary the way real ones do (not white noise around a constant).
struct LinkModel {
    var base: LinkBaseline
    private var drift = 0.0
    private var spell = 0

    init(base: LinkBaseline) { self.base = base }

    mutating func next(_ rng: inout Xoshiro256) -> LinkConditions {
        drift = 0.9 * drift + 0.1 * rng.normal()
        if spell > 0 { spell -= 1 } else if rng.chance(base.loss > 0.015 ? 0.03 : 0.005) { spell = rng.int(2...8) }
        let bad = spell > 0 ? 2.5 : 1.0
        let f = max(0.4, 1 + 0.35 * drift)
        func lossNow(_ rng: inout Xoshiro256) -> Double {
            min(0.5, base.loss * f * bad * rng.uniform(0.6, 1.4))
        }
        return LinkConditions(
            rttMs: max(5, base.rttMs * (1 + 0.12 * drift) + (spell > 0 ? base.rttMs * 0.3 : 0) + rng.uniform(0, 6)),
            lossDown: lossNow(&rng), lossUp: lossNow(&rng),
            burst: base.burst,
            jitterDownMs: max(0.5, base.jitterMs * f * (spell > 0 ? 1.6 : 1) * rng.uniform(0.8, 1.2)),
            jitterUpMs: max(0.5, base.jitterMs * f * rng.uniform(0.8, 1.2)),
            bandwidthKbps: max(80, base.bandwidthKbps * (1 + 0.15 * drift) / (spell > 0 ? 1.8 : 1)))
    }
}
