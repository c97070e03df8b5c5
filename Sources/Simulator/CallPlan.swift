import CallLog

/// Everything decided about one call before any of it is simulated: who, what, where, and the
/// timeline. Derived from the run's seed and the call's index alone, so any call can be
/// rebuilt on its own (by another thread, or for the second file of a split call).
public struct CallPlan: Sendable {
    public var index: Int
    public var id: String
    public var direction: String
    public var sdk: SDKKind
    public var sdkVersion: String
    public var app: String
    public var appVersion: String
    public var platform: String
    /// The network at the start (an IP change moves the call to cellular).
    public var network: String
    public var hasVideo: Bool
    public var profile: NetworkProfile
    public var region: String
    public var audioCodec: AudioCodec
    public var videoCodec: VideoCodec
    /// Camera capture size of our side, and what the remote side sends us.
    public var camera: (width: Int, height: Int)
    public var remoteVideo: (width: Int, height: Int)
    public var script: CallScript
    var link: LinkBaseline
    /// Where the media simulation's random stream starts (after the plan's draws).
    var mediaSeed: UInt64

    public var format: StatsFormat { sdk.format }
    public var media: [String] { hasVideo ? ["audio", "video"] : ["audio"] }
    public var labels: JSONObject { ["profile": .string(profile.rawValue), "region": .string(region)] }
    /// First and last record times (ms).
    public var startMs: Int64 { script.startMs }
    public var lastMs: Int64 { script.end.ts }
}

/// The calling SDKs whose output is simulated (seed excerpts §1-4).
public enum SDKKind: String, CaseIterable, Sendable {
    /// Kandy Mobile SDK: W3C statistics, Kandy status codes.
    case kandyMobile = "kandy-mobile"
    /// Kandy Anonymous Call SDK: legacy `goog` statistics, Kandy status codes.
    case kandyAnonymous = "kandy-anonymous"
    /// AudioCodes WebRTC SDK: W3C statistics, termination reason with SIP status.
    case audioCodes = "audiocodes-webrtc"
    /// Cisco Remote Expert Mobile: W3C statistics, 0-100 quality callbacks.
    case ciscoREM = "cisco-rem"

    var weight: Double {
        switch self {
        case .kandyMobile: 35
        case .kandyAnonymous: 30
        case .audioCodes: 17
        case .ciscoREM: 18
        }
    }

    public var format: StatsFormat { self == .kandyAnonymous ? .goog : .w3c }

    var versions: [String] {
        switch self {
        case .kandyMobile: ["5.12.0", "5.14.0", "5.15.2"]
        case .kandyAnonymous: ["4.8.3", "4.9.1"]
        case .audioCodes: ["2.3.0", "2.4.1"]
        case .ciscoREM: ["11.6.2", "12.0.1"]
        }
    }

    var platforms: [(String, Double)] {
        switch self {
        case .kandyMobile, .kandyAnonymous: [("ios", 55), ("android", 45)]
        case .audioCodes: [("ios", 70), ("macos", 30)]
        case .ciscoREM: [("web", 55), ("ios", 20), ("android", 15), ("macos", 10)]
        }
    }

    var videoShare: Double {
        switch self {
        case .kandyMobile: 0.35
        case .kandyAnonymous: 0.25
        case .audioCodes: 0.15
        case .ciscoREM: 0.6
        }
    }
}

public enum AudioCodec: String, Sendable {
    case opus, pcmu, pcma
}

public enum VideoCodec: String, Sendable {
    case vp8, vp9, h264
}

extension CallPlan {
    static let apps: [(String, [String])] = [
        ("acme-phone", ["3.1.4", "3.2.1"]), ("contoso-care", ["1.8.0", "1.9.2"]), ("fabrikam-field", ["2.0.4"]),
    ]
    static let regions: [(String, Double)] = [("eu-west", 40), ("us-east", 35), ("ap-south", 25)]

    /// Builds call `index` of a run. `startMs` is when the call is created.
    init(index: Int, seed: UInt64, startMs: Int64) {
        var rng = Xoshiro256(seed: seed, stream: UInt64(index))
        self.index = index
        id = rng.uuid()
        direction = rng.chance(0.55) ? "outgoing" : "incoming"
        sdk = rng.pick(SDKKind.allCases.map { ($0, $0.weight) })
        sdkVersion = rng.element(sdk.versions)
        let app = rng.pick(CallPlan.apps.map { ($0, 1.0) })
        self.app = app.0
        appVersion = rng.element(app.1)
        platform = rng.pick(sdk.platforms)
        profile = rng.pick(NetworkProfile.allCases.map { ($0, $0.weight) })
        region = rng.pick(CallPlan.regions)
        if let fixed = profile.fixedNetwork {
            network = fixed
        } else if platform == "web" || platform == "macos" {
            network = rng.chance(0.55) ? "ethernet" : "wifi"
        } else {
            network = rng.chance(0.6) ? "wifi" : "cellular"
        }
        hasVideo = rng.chance(sdk.videoShare)
        audioCodec = sdk == .audioCodes && rng.chance(0.3) ? (rng.chance(0.5) ? .pcmu : .pcma) : .opus
        videoCodec = rng.pick([(.vp8, 50), (.vp9, 20), (.h264, 30)])
        let mobile = platform == "ios" || platform == "android"
        camera = mobile ? (640, 480) : (1280, 720)
        remoteVideo = rng.chance(0.5) ? (1280, 720) : (640, 480)
        link = profile.baseline(&rng)
        script = CallScript(
            profile: profile, direction: direction, hasVideo: hasVideo, sdk: sdk,
            startMs: startMs, rng: &rng)
        mediaSeed = rng.next()
    }
}
