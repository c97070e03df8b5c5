import CallLog
import Foundation

/// A group call through a forwarding media server (SFU), with a known answer: which
/// participant's uplink and which one's downlink were impaired, and when.
///
/// Every participant is one call (`conf-<seed>-p<k>`) with one peer connection `sfu` to the
/// server and W3C statistics. A participant sends one audio (Opus) and one video (VP8) stream
/// and receives one audio and one video stream from every other participant, under the
/// sender's own SSRCs: the server forwards packets without rewriting them. What the server
/// tells a sender about its streams (`remote-inbound-rtp`) covers the sender's uplink only;
/// what a receiver measures (`inbound-rtp`) covers the sender's uplink and its own downlink.
///
/// Loss model, per conference second `t`: the sender's uplink loses a share `u(S, t)` of its
/// packets, the receiver's downlink a share `d(R, t)` of what the server forwards, so R loses
/// `1 - (1 - u)(1 - d)` of S's packets. Counts are drawn packet by packet with the seeded
/// generator. A clean path loses 0-0.3 % with 2-8 ms of jitter; an impaired one loses 8-12 %
/// with about 40 ms of jitter during its window and is clean outside it. The jitter a receiver
/// measures combines both segments as independent delay variations (the root of the sum of
/// their squares).
///
/// Deterministic: the same configuration writes the same bytes.
public struct ConferenceSimulation: Sendable {
    /// What to simulate.
    public struct Configuration: Sendable {
        /// Participants, 2...32.
        public var participants: Int
        /// Same seed, same bytes.
        public var seed: UInt64 = 1
        /// Length of the conference in seconds; participants join up to 5 s after its start and
        /// all leave at its end.
        public var seconds = 120
        /// Seconds between statistics snapshots.
        public var periodSeconds = 1
        /// The conference's start, epoch milliseconds (2026-11-21T09:00:00Z by default, so the
        /// default run never depends on the clock).
        public var startMs: Int64 = ConferenceSimulation.defaultStartMs
        /// The participant (1-based) whose uplink is impaired, nil for none.
        public var badUplink: Int? = 1
        /// The participant (1-based) whose downlink is impaired, nil for none.
        public var badDownlink: Int? = 2
        /// Full statistics snapshots instead of deltas.
        public var fullSnapshots = false

        public init(participants: Int, seed: UInt64 = 1) {
            self.participants = participants
            self.seed = seed
        }

        /// The share of the conference (from, to) during which the bad uplink is impaired.
        public static let uplinkWindowShare = (from: 0.2, to: 0.8)
        /// The bad downlink's window: it overlaps the uplink's only partly, so that each
        /// cause is alone for a while and both act together in between.
        public static let downlinkWindowShare = (from: 0.4, to: 1.0)

        /// The configuration's mistakes, nil when it can be simulated.
        public func problem() -> String? {
            if !(2...32).contains(participants) { return "participants must be 2...32, got \(participants)" }
            if !(10...86_400).contains(seconds) { return "seconds must be 10...86400, got \(seconds)" }
            if !(1...seconds).contains(periodSeconds) { return "the period must be 1...\(seconds) s, got \(periodSeconds)" }
            for (name, p) in [("bad uplink", badUplink), ("bad downlink", badDownlink)] {
                if let p, !(1...participants).contains(p) {
                    return "the \(name) participant must be 1...\(participants), got \(p)"
                }
            }
            if badUplink != nil, badDownlink != nil, participants < 3 {
                return """
                    a bad uplink and a bad downlink need at least 3 participants (got \(participants)): \
                    with two, no stream would show either cause alone
                    """
            }
            return nil
        }
    }

    /// Why a configuration cannot be simulated.
    public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// 2026-11-21T09:00:00Z.
    public static let defaultStartMs: Int64 = 1_795_251_600_000

    /// Loss of an impaired path, percent: drawn uniformly in `badLossPct` every second.
    public static let badLossPct = 8.0...12.0
    /// Loss of a clean path, percent: each path's own rate, drawn once in this range.
    public static let cleanLossPct = 0.0...0.3
    /// Jitter of an impaired path in ms (its mean; each second varies by about 5 ms).
    public static let badJitterMs = 40.0
    /// Jitter of a clean path in ms, drawn uniformly every second.
    public static let cleanJitterMs = 2.0...8.0

    public let configuration: Configuration
    /// The participants in order (`p1` first).
    public let participants: [Participant]

    /// One participant's leg: fixed before the conference starts.
    public struct Participant: Sendable {
        /// 0-based position; the name is `p<index + 1>`.
        public let index: Int
        public let name: String
        public let callID: String
        public let joinMs: Int64
        /// The first conference second whose media this participant sends and receives (media
        /// flows once ICE and DTLS are done, a few hundred ms after joining).
        public let firstMediaSecond: Int
        public let audioSSRC: UInt32
        public let videoSSRC: UInt32
        let audioTrack: String
        let videoTrack: String
        /// Round trip to the server when the path is clean.
        let baseRoundTripSeconds: Double
        /// Loss rates of the clean uplink and downlink (shares, not percent).
        let cleanUplinkLoss: Double
        let cleanDownlinkLoss: Double
        let localPort: Int
        let publicAddress: String
    }

    /// The true cause of a receiver's poor stream from a sender at some time.
    public enum Cause: String, Sendable {
        case senderUplink = "sender_uplink"
        case receiverDownlink = "receiver_downlink"
        case both
    }

    public init(_ configuration: Configuration) throws {
        if let problem = configuration.problem() { throw ConfigurationError(description: problem) }
        self.configuration = configuration
        var rng = Xoshiro256(seed: configuration.seed ^ 0x434F_4E46, stream: 0)
        var ssrcs = Set<UInt32>()
        func uniqueSSRC() -> UInt32 {
            while true {
                let s = rng.ssrc()
                if ssrcs.insert(s).inserted { return s }
            }
        }
        var list = [Participant]()
        for k in 0..<configuration.participants {
            // The first participant opens the conference; the others arrive within 5 s.
            let stagger = k == 0 ? 0 : Int64(rng.int(0...5_000))
            let setup = Int64(rng.int(250...600))
            let firstMedia = Int((stagger + setup + 999) / 1_000)
            list.append(
                Participant(
                    index: k, name: "p\(k + 1)", callID: "conf-\(configuration.seed)-p\(k + 1)",
                    joinMs: configuration.startMs + stagger, firstMediaSecond: firstMedia,
                    audioSSRC: uniqueSSRC(), videoSSRC: uniqueSSRC(), audioTrack: rng.trackID(),
                    videoTrack: rng.trackID(), baseRoundTripSeconds: rng.uniform(0.02, 0.06),
                    cleanUplinkLoss: rng.uniform(ConferenceSimulation.cleanLossPct.lowerBound, ConferenceSimulation.cleanLossPct.upperBound) / 100,
                    cleanDownlinkLoss: rng.uniform(ConferenceSimulation.cleanLossPct.lowerBound, ConferenceSimulation.cleanLossPct.upperBound) / 100,
                    localPort: rng.int(40_000...60_000), publicAddress: "203.0.113.\(10 + k)"))
        }
        participants = list
    }

    /// The conference's id, the `conference` label of every leg.
    public var conferenceID: String { "conf-\(configuration.seed)" }

    public var startMs: Int64 { configuration.startMs }
    public var endMs: Int64 { configuration.startMs + Int64(configuration.seconds) * 1_000 }

    /// Conference seconds [from, to) of an impairment window of the given shares.
    static func windowSeconds(_ share: (from: Double, to: Double), seconds: Int) -> Range<Int> {
        Int((Double(seconds) * share.from).rounded())..<Int((Double(seconds) * share.to).rounded())
    }

    /// Conference seconds during which participant `index`'s uplink is impaired (empty if never).
    public func uplinkBadSeconds(_ index: Int) -> Range<Int> {
        guard configuration.badUplink == index + 1 else { return 0..<0 }
        return ConferenceSimulation.windowSeconds(Configuration.uplinkWindowShare, seconds: configuration.seconds)
    }

    /// Conference seconds during which participant `index`'s downlink is impaired (empty if never).
    public func downlinkBadSeconds(_ index: Int) -> Range<Int> {
        guard configuration.badDownlink == index + 1 else { return 0..<0 }
        return ConferenceSimulation.windowSeconds(Configuration.downlinkWindowShare, seconds: configuration.seconds)
    }

    /// The conference second holding epoch time `ms`, nil outside the conference.
    public func second(atMs ms: Int64) -> Int? {
        guard ms >= startMs, ms < endMs else { return nil }
        return Int((ms - startMs) / 1_000)
    }

    /// Why `receiver`'s stream from `sender` (0-based indices) was poor during conference second
    /// `second`, nil when neither path was impaired then.
    public func trueCause(receiver: Int, sender: Int, second: Int) -> Cause? {
        let up = uplinkBadSeconds(sender).contains(second), down = downlinkBadSeconds(receiver).contains(second)
        switch (up, down) {
        case (true, true): return .both
        case (true, false): return .senderUplink
        case (false, true): return .receiverDownlink
        case (false, false): return nil
        }
    }

    // MARK: - The answer file

    /// The answer file's name, beside the logs.
    public static let answerFileName = "conference-answer.json"

    /// The answer: what a test needs to know the true cause of any receiver's poor stream from
    /// any sender at any time. One JSON object:
    ///
    /// ```
    /// {"conference": "conf-<seed>", "seed": 7, "startMs": …, "endMs": …, "seconds": 120, "periodSeconds": 1,
    ///  "participants": [{"participant": "p1", "call": "conf-<seed>-p1", "joinMs": …, "leaveMs": …,
    ///                    "audioSsrc": …, "videoSsrc": …,
    ///                    "uplink": "bad", "downlink": "clean",
    ///                    "uplinkWindow": [fromMs, toMs], "downlinkWindow": null}, …],
    ///  "lossPct": {"bad": 10, "badMin": 8, "badMax": 12, "cleanMin": 0, "cleanMax": 0.3},
    ///  "jitterMs": {"bad": 40, "cleanMin": 2, "cleanMax": 8},
    ///  "causes": {"uplinkAndDownlink": "both", "uplinkOnly": "sender_uplink",
    ///             "downlinkOnly": "receiver_downlink", "neither": null}}
    /// ```
    ///
    /// Windows are epoch milliseconds, half-open `[fromMs, toMs)`, on whole conference seconds;
    /// `null` when that path is clean throughout. For receiver R, sender S ≠ R and time t: S's
    /// `uplinkWindow` holding t and R's `downlinkWindow` holding t → `both`; only S's uplink →
    /// `sender_uplink`; only R's downlink → `receiver_downlink`; neither → the stream was not
    /// poor. Streams reach R under S's `audioSsrc` and `videoSsrc` unchanged. No cause lies in the
    /// server or the path beyond the two access links: this simulation has no `server_or_path`.
    public func answer() -> JSONValue {
        func window(_ seconds: Range<Int>) -> JSONValue {
            guard !seconds.isEmpty else { return .null }
            return .array([
                .number(Double(startMs + Int64(seconds.lowerBound) * 1_000)),
                .number(Double(startMs + Int64(seconds.upperBound) * 1_000)),
            ])
        }
        let list: [JSONValue] = participants.map { p in
            let up = uplinkBadSeconds(p.index), down = downlinkBadSeconds(p.index)
            return .object([
                "participant": .string(p.name), "call": .string(p.callID), "joinMs": .number(Double(p.joinMs)),
                "leaveMs": .number(Double(endMs)), "audioSsrc": .number(Double(p.audioSSRC)),
                "videoSsrc": .number(Double(p.videoSSRC)), "uplink": .string(up.isEmpty ? "clean" : "bad"),
                "downlink": .string(down.isEmpty ? "clean" : "bad"), "uplinkWindow": window(up),
                "downlinkWindow": window(down),
            ])
        }
        let bad = ConferenceSimulation.badLossPct, clean = ConferenceSimulation.cleanLossPct
        let jitter = ConferenceSimulation.cleanJitterMs
        return .object([
            "conference": .string(conferenceID), "seed": .number(Double(configuration.seed)),
            "startMs": .number(Double(startMs)), "endMs": .number(Double(endMs)),
            "seconds": .number(Double(configuration.seconds)), "periodSeconds": .number(Double(configuration.periodSeconds)),
            "participants": .array(list),
            "lossPct": .object([
                "bad": .number((bad.lowerBound + bad.upperBound) / 2), "badMin": .number(bad.lowerBound),
                "badMax": .number(bad.upperBound), "cleanMin": .number(clean.lowerBound), "cleanMax": .number(clean.upperBound),
            ]),
            "jitterMs": .object([
                "bad": .number(ConferenceSimulation.badJitterMs), "cleanMin": .number(jitter.lowerBound),
                "cleanMax": .number(jitter.upperBound),
            ]),
            "causes": .object([
                "uplinkAndDownlink": .string(Cause.both.rawValue), "uplinkOnly": .string(Cause.senderUplink.rawValue),
                "downlinkOnly": .string(Cause.receiverDownlink.rawValue), "neither": .null,
            ]),
        ])
    }

    // MARK: - Records and files

    /// Every record of the conference in time order (ties: lower participant first), with the
    /// 0-based index of the participant whose log it belongs to.
    public func forEachRecord(_ body: (Int, LogRecord) throws -> Void) rethrows {
        var run = ConferenceRun(self)
        try run.play(body)
    }

    /// Every participant's records, in time order (small conferences and tests).
    public func recordsByParticipant() -> [[LogRecord]] {
        var out = [[LogRecord]](repeating: [], count: participants.count)
        forEachRecord { out[$0].append($1) }
        return out
    }

    /// What `write` wrote.
    public struct Summary: Sendable {
        public var files: [String] = []
        public var answerPath = ""
        public var records = 0
        public var bytes = 0
    }

    /// Writes one log per participant (`<directory>/<call id>.ndjson.zst`) and the answer file.
    public func write(to directory: String) throws -> Summary {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let base = directory.hasSuffix("/") ? directory : directory + "/"
        var options = LogWriter.Options()
        options.deltaStats = !configuration.fullSnapshots
        options.compressionLevel = 3
        var summary = Summary()
        var writers = [LogWriter]()
        for p in participants {
            let path = base + p.callID + ".ndjson.zst"
            unlink(path)  // the writer appends; a re-run must not
            writers.append(try LogWriter(path: path, options: options))
            summary.files.append(path)
        }
        try forEachRecord { try writers[$0].append($1) }
        for w in writers {
            try w.close()
            summary.records += w.records
            summary.bytes += w.bytesWritten
        }
        summary.answerPath = base + ConferenceSimulation.answerFileName
        try Data((answer().serialized() + "\n").utf8).write(to: URL(fileURLWithPath: summary.answerPath), options: .atomic)
        return summary
    }
}
