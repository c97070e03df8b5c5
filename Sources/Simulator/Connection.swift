/// One peer connection's transport side: certificates, ICE candidates and pairs, and the
/// media streams riding on it. An IP change replaces the whole connection (new candidates,
/// new SSRCs, counters from zero), as the SDKs do when they renegotiate on a new network.
struct Candidate {
    var id: String
    var googID: String
    var type: String  // host, srflx, prflx, relay
    var address: String
    var ip: String
    var port: Int
    var proto: String
    var priority: Int
    var foundation: String
    var relatedAddress: String?
    var relatedPort: Int?
    var tcpType: String?
    var relayProtocol: String?
    var url: String?
    var networkType: String
    var isRemote: Bool
    var ufrag: String

    /// The legacy stats' spelling of the type (Appendix E).
    var googCandidateType: String {
        switch type {
        case "host": "host"
        case "srflx": "serverreflexive"
        case "relay": "relayed"
        default: "peerreflexive"
        }
    }

    var googShortType: String {
        switch type {
        case "host": "local"
        case "srflx": "stun"
        case "relay": "relay"
        default: "prflx"
        }
    }
}

struct CandidatePair {
    var id: String
    var local: Int
    var remote: Int
    var state: String
    var nominated: Bool
    var priority: Double
    var bytesSent = 0, bytesReceived = 0, packetsSent = 0, packetsReceived = 0
    var requestsSent = 0, requestsReceived = 0, responsesSent = 0, responsesReceived = 0, consentRequestsSent = 0
    var currentRoundTripTime: Double?
    var totalRoundTripTime = 0.0
    var lastPacketSentTimestamp: Double?
    var lastPacketReceivedTimestamp: Double?
    var writable = false
}

struct Certificate {
    var fingerprint: String
    var base64: String
    var id: String { "CF" + fingerprint }
}

struct Connection {
    var epoch: Int
    var local: [Candidate] = []
    var remote: [Candidate] = []
    var pairs: [CandidatePair] = []
    var selected: Int?
    var localCertificate: Certificate
    var remoteCertificate: Certificate
    var localUfrag: String
    var controlling: Bool
    var selectedCandidatePairChanges = 0
    var iceState = "checking"
    var dtlsConnected = false
    // RTCP, STUN and DTLS traffic beside the media.
    var overheadBytesSent = 0, overheadBytesReceived = 0, overheadPacketsSent = 0, overheadPacketsReceived = 0
    var availableOutgoingBitrate = 0.0

    var audioIn: AudioInbound
    var audioOut: AudioOutbound
    var videoIn: VideoInbound?
    var videoOut: VideoOutbound?
    /// Whether media objects exist yet (Chrome lists RTP streams once packets flowed).
    var mediaStarted = false
    /// Media source ids grow with each new connection, as Chrome's do (`SA1`, `SV2`, `SA3`…).
    var audioSourceID: String
    var videoSourceID: String
    var audioSourceTrack: String
    var videoSourceTrack: String
    var inboundAudioTrack: String
    var inboundVideoTrack: String
    var googSessionID: String

    init(epoch: Int, plan: CallPlan, network: String, relay: Bool, _ rng: inout Xoshiro256) {
        self.epoch = epoch
        controlling = plan.direction == "outgoing"
        localUfrag = rng.base64(4)
        let remoteUfrag = rng.base64(4)
        localCertificate = Connection.certificate(&rng)
        remoteCertificate = Connection.certificate(&rng)
        let clock = plan.audioCodec == .opus ? 48_000 : 8_000
        audioIn = AudioInbound(ssrc: rng.ssrc(), clockRate: clock)
        audioOut = AudioOutbound(ssrc: rng.ssrc())
        if plan.hasVideo {
            videoIn = VideoInbound(ssrc: rng.ssrc(), rtxSsrc: rng.ssrc(), remoteCamera: plan.remoteVideo)
            videoOut = VideoOutbound(
                ssrc: rng.ssrc(), rtxSsrc: rng.ssrc(), camera: plan.camera,
                cpuBound: plan.platform == "android" && rng.chance(0.3))
        }
        let n = epoch * 2
        audioSourceID = "SA\(n + 1)"
        videoSourceID = "SV\(n + 2)"
        audioSourceTrack = rng.trackID()
        videoSourceTrack = rng.trackID()
        inboundAudioTrack = rng.trackID()
        inboundVideoTrack = rng.trackID()
        var digits = "\(rng.int(1...9))"
        for _ in 0..<18 { digits += "\(rng.int(0...9))" }
        googSessionID = digits

        // Local candidates: host UDP, host TCP (active, port 9), server-reflexive, maybe relay.
        let networkType = network == "cellular" ? "cellular" : network == "wifi" ? "wifi" : "ethernet"
        let hostIP = Connection.privateAddress(network, &rng)
        let mdns = plan.platform == "web" ? rng.trackID() + ".local" : nil
        let publicIP = "\(rng.element(["198.51.100", "203.0.113"])).\(rng.int(2...254))"
        let hostPort = rng.int(40_000...65_000)
        func cand(
            _ type: String, _ address: String, _ port: Int, _ proto: String, _ priority: Int,
            remote: Bool, ufrag: String, _ rng: inout Xoshiro256
        ) -> Candidate {
            Candidate(
                id: "I" + rng.base64(8), googID: "Cand-" + rng.base64(8), type: type, address: address, ip: address,
                port: port, proto: proto, priority: priority, foundation: "\(rng.int(100_000...4_294_967_295))",
                networkType: networkType, isRemote: remote, ufrag: ufrag)
        }
        local.append(cand("host", mdns ?? hostIP, hostPort, "udp", 2_122_260_223, remote: false, ufrag: localUfrag, &rng))
        var tcp = cand("host", mdns ?? hostIP, 9, "tcp", 1_518_280_447, remote: false, ufrag: localUfrag, &rng)
        tcp.tcpType = "active"
        local.append(tcp)
        var srflx = cand("srflx", publicIP, rng.int(1_024...65_000), "udp", 1_686_052_607, remote: false, ufrag: localUfrag, &rng)
        srflx.relatedAddress = mdns == nil ? hostIP : "0.0.0.0"
        srflx.relatedPort = mdns == nil ? hostPort : 0
        local.append(srflx)
        let hasRelay = relay || rng.chance(0.4)
        if hasRelay {
            let region = plan.region
            var r = cand(
                "relay", "192.0.2.\(rng.int(10...250))", rng.int(49_152...65_535), "udp", 41_885_439,
                remote: false, ufrag: localUfrag, &rng)
            r.relatedAddress = publicIP
            r.relatedPort = srflx.port
            r.relayProtocol = "udp"
            r.url = "turn:turn-\(region).example.net:3478?transport=udp"
            local.append(r)
        }
        // Remote candidates: host, server-reflexive, a peer-reflexive one learned from checks, and
        // the relay when that is the only way through. Chrome hides a learned address ("").
        let remoteHost = Connection.privateAddress(rng.element(["wifi", "cellular", "ethernet"]), &rng)
        let remotePublic = "\(rng.element(["198.51.100", "203.0.113"])).\(rng.int(2...254))"
        remote.append(cand("host", remoteHost, rng.int(40_000...65_000), "udp", 2_122_260_223, remote: true, ufrag: remoteUfrag, &rng))
        remote.append(cand("srflx", remotePublic, rng.int(1_024...65_000), "udp", 1_686_052_607, remote: true, ufrag: remoteUfrag, &rng))
        remote.append(cand("prflx", "", rng.int(1_024...65_000), "udp", 1_853_824_767, remote: true, ufrag: remoteUfrag, &rng))
        if relay {
            remote.append(
                cand(
                    "relay", "192.0.2.\(rng.int(10...250))", rng.int(49_152...65_535), "udp", 41_885_439,
                    remote: true, ufrag: remoteUfrag, &rng))
        }
        // Pairs: host-host fails across networks; host-srflx is the usual winner; relay when forced.
        func pair(_ l: Int, _ r: Int, _ state: String, nominated: Bool) -> CandidatePair {
            let g = Double(local[l].priority), d = Double(remote[r].priority)
            let (c, o) = controlling ? (g, d) : (d, g)
            let priority = 4_294_967_296 * min(c, o) + 2 * max(c, o) + (c > o ? 1 : 0)
            let id = "CP" + local[l].id.dropFirst() + "_" + remote[r].id.dropFirst()
            return CandidatePair(id: id, local: l, remote: r, state: state, nominated: nominated, priority: priority)
        }
        pairs.append(pair(0, 0, "failed", nominated: false))
        pairs.append(pair(0, 1, relay ? "failed" : "succeeded", nominated: !relay))
        pairs.append(pair(0, 2, relay ? "failed" : "succeeded", nominated: false))
        if relay {
            pairs.append(pair(3, remote.count - 1, "succeeded", nominated: true))
            pairs.append(pair(3, 1, "succeeded", nominated: false))
        } else if hasRelay {
            pairs.append(pair(3, 1, "waiting", nominated: false))
        }
    }

    /// ICE connected: the nominated pair carries the media from now on.
    mutating func connect(_ rng: inout Xoshiro256) {
        iceState = "connected"
        dtlsConnected = true
        selected = pairs.firstIndex { $0.nominated }
        selectedCandidatePairChanges += 1
        for i in pairs.indices where pairs[i].state == "succeeded" {
            pairs[i].writable = true
            pairs[i].requestsSent = rng.int(1...3)
            pairs[i].responsesReceived = pairs[i].requestsSent
            pairs[i].requestsReceived = rng.int(1...4)
            pairs[i].responsesSent = pairs[i].requestsReceived
        }
        for i in pairs.indices where pairs[i].state == "failed" {
            pairs[i].requestsSent = rng.int(5...9)
        }
    }

    /// ICE checks that never succeed (the whole call, for an ICE failure).
    mutating func checking(seconds: Int, _ rng: inout Xoshiro256) {
        for i in pairs.indices {
            pairs[i].state = seconds > 10 ? "failed" : "in-progress"
            pairs[i].nominated = false
            pairs[i].requestsSent += rng.int(1...3)
        }
        iceState = seconds > 10 ? "failed" : "checking"
    }

    /// One second of STUN consent checks and RTCP beside the media.
    mutating func stepTransport(now: Double, linkUp: Bool, link: LinkConditions, _ rng: inout Xoshiro256) {
        guard let s = selected, linkUp else { return }
        overheadPacketsSent += 2
        overheadBytesSent += 2 * rng.int(60...120)
        overheadPacketsReceived += 2
        overheadBytesReceived += 2 * rng.int(60...120)
        availableOutgoingBitrate = (link.bandwidthKbps * 1000 * rng.uniform(0.9, 1.1)).rounded()
        for i in pairs.indices where pairs[i].state == "succeeded" {
            guard i == s || rng.chance(0.15) else { continue }
            guard rng.chance(0.4) else { continue }
            let rtt = ((link.rttMs + rng.uniform(-3, 3)) / 1000 * 1000).rounded() / 1000
            pairs[i].currentRoundTripTime = max(0.001, rtt)
            pairs[i].totalRoundTripTime = ((pairs[i].totalRoundTripTime + max(0.001, rtt)) * 1000).rounded() / 1000
            pairs[i].requestsSent += 1
            pairs[i].consentRequestsSent += 1
            pairs[i].responsesReceived += 1
            if rng.chance(0.5) {
                pairs[i].requestsReceived += 1
                pairs[i].responsesSent += 1
            }
        }
    }

    /// Transport totals: media plus overhead.
    var bytesSent: Int {
        audioOut.bytesSent + audioOut.headerBytesSent + (videoOut.map { $0.bytesSent + $0.headerBytesSent + $0.retransmittedBytesSent } ?? 0)
            + overheadBytesSent
    }
    var bytesReceived: Int {
        audioIn.bytesReceived + audioIn.headerBytesReceived
            + (videoIn.map { $0.bytesReceived + $0.headerBytesReceived + $0.retransmittedBytesReceived } ?? 0) + overheadBytesReceived
    }
    var packetsSent: Int { audioOut.packetsSent + (videoOut?.packetsSent ?? 0) + overheadPacketsSent }
    var packetsReceived: Int { audioIn.packetsReceived + (videoIn?.packetsReceived ?? 0) + overheadPacketsReceived }

    static func certificate(_ rng: inout Xoshiro256) -> Certificate {
        var parts = [String]()
        for _ in 0..<32 { parts.append(rng.hex(2)) }
        return Certificate(fingerprint: parts.joined(separator: ":"), base64: "MIIBFjCBvaADAgECAgkA" + rng.base64(352) + "wo")
    }

    static func privateAddress(_ network: String, _ rng: inout Xoshiro256) -> String {
        switch network {
        case "wifi": "192.168.\(rng.int(0...10)).\(rng.int(2...250))"
        case "cellular": "10.\(rng.int(64...200)).\(rng.int(0...255)).\(rng.int(2...250))"
        default: "172.\(rng.int(16...31)).\(rng.int(0...255)).\(rng.int(2...250))"
        }
    }
}
