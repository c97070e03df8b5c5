import Analysis
import CallLog
import Foundation
import MaterialScanning
import MaterialTestSupport
import TestSupport
import XCTest

@testable import Importers

/// rtcstats-server's own test dumps (`Fixtures/rtcstats-server`, from jitsi/rtcstats-server, MIT)
/// imported as rtcstats-server stores them, and every figure both tools define alike compared
/// with the features rtcstats-server's tests expect (`results/*.json`). The expected figures
/// come from those results and from the dumps' own lines read here with Foundation's JSON
/// parser, never from this project's output.
final class RTCStatsServerDumpTests: XCTestCase {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/rtcstats-server")

    /// The browser dumps: every one must import as stored.
    static let browserDumps = [
        "59c86272-03ea-42e9-a62d-1c8a272e8ab0", "9c93a447-c9f8-489d-87ca-21263dec0642", "chrome-relay",
        "chrome-standard-multiple-p2p", "chrome-standard-pc-failed", "chrome-standard-pc-reconnect",
        "chrome96-standard-stats-p2p-add-transceiver", "firefox-relay", "firefox-standard-stats-sfu",
        "firefox97-standard-stats-sfu", "google-legacy-screenshare-msessions", "google-legacy-screenshare-p2p",
        "google-legacy-stats-multiple-pc", "google-legacy-stats-p2p", "google-legacy-stats-sfu",
        "google-standard-stats-p2p", "google-standard-stats-relay-p2p", "google-standard-stats-sfu", "safari-relay",
        "safari-standard-stats", "undefined-ice-candidate",
    ]

    /// What Jitsi's servers send rtcstats-server, by the application each names.
    static let serverSamples = ["jvb-sample": "JVB", "jicofo-sample": "Jicofo", "jigasi-sample": "Jigasi"]

    var dir: URL!
    override func setUp() { dir = TestPaths.temporaryDirectory("rtcstats-server-dumps") }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    static func dumpPath(_ name: String) -> String { fixtures.appendingPathComponent(name + ".zst").path }

    /// rtcstats-server's expected features for a dump, as its results file holds them.
    static func results(_ name: String) throws -> [[String: Any]]? {
        for file in [name + ".json", name + "-result.json"] {
            let url = fixtures.appendingPathComponent("results").appendingPathComponent(file)
            guard let data = FileManager.default.contents(atPath: url.path) else { continue }
            return try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [[String: Any]], file)
        }
        return nil
    }

    /// Imports a dump into a log file; returns the result, the records read back and the log.
    func importDump(_ name: String) throws -> (DumpImport.Result, [LogRecord], String) {
        let out = dir.appendingPathComponent(name + ".ndjson.zst").path
        let writer = try LogWriter(path: out)
        let result = DumpImport(path: Self.dumpPath(name)).run { try writer.append($0) }
        try writer.close()
        let (records, issues) = LogReader(path: out).readAll()
        XCTAssertEqual(issues, [], name)
        return (result, records, out)
    }

    /// The analysis of a log file as `callstats analyze` reads it.
    func analyze(_ path: String) throws -> CallAnalysis {
        CallAnalyzer.analyze(try Harness.material(ofLog: path), config: AnalysisConfig())
    }

    // MARK: - Importing as stored

    func testEveryBrowserDumpImportsAsStored() throws {
        for name in Self.browserDumps {
            let raw = try RawDump(path: Self.dumpPath(name))
            XCTAssertEqual(try DumpImport.detect(path: Self.dumpPath(name)), .rtcstats, name)
            let (result, records, _) = try importDump(name)
            XCTAssertNil(result.failure, name)
            XCTAssertEqual(result.skipped, [], name)
            XCTAssertEqual(result.format, .rtcstats, name)

            // One snapshot per getstats line, placed at the line's own time (the fourth
            // element, whatever follows it).
            let getstats = raw.entries.filter { $0.method == "getstats" }
            XCTAssertEqual(result.snapshots, Dictionary(grouping: getstats, by: { $0.pc ?? "" }).mapValues(\.count), name)
            let stats = records.filter { $0.kind == .stats }
            XCTAssertEqual(stats.map(\.ts), getstats.map { Int64($0.time!.rounded()) }, name)
            XCTAssertEqual(result.peerConnections, Set(raw.entries.compactMap(\.pc)).count, name)

            // Every record within the dump's own span: a sequence number is never a time.
            let times = raw.entries.compactMap(\.time)
            let (first, last) = (Int64(times.min()!.rounded()), Int64(times.max()!.rounded()))
            for r in records where r.ts < first || r.ts > last {
                XCTFail("\(name): a \(r.kind) record at \(r.ts), outside the dump's \(first)…\(last)")
            }

            // The browser from the header's user agent; a headerless stream names none.
            let call = try XCTUnwrap(records.first { $0.kind == .call }, name)
            switch raw.userAgent {
            case let ua? where ua.contains("Firefox/"): XCTAssertEqual(call["sdk"], "firefox", name)
            case let ua? where ua.contains("Chrome/"): XCTAssertEqual(call["sdk"], "chrome", name)
            case let ua? where ua.contains("Safari/"): XCTAssertEqual(call["sdk"], "safari", name)
            case let ua?: XCTFail("\(name): an unexpected user agent \(ua)")
            case nil: XCTAssertNil(call["sdk"], name)
            }
        }
    }

    /// The three-element line of a Chrome 96 dump (`["e2eRtt", null, {…}]`) takes the time of
    /// the line before it; the lines of the relay dump carry a sequence number after the time.
    func testLinesWithoutATimeOrWithASequenceNumber() throws {
        let name = "chrome96-standard-stats-p2p-add-transceiver"
        let raw = try RawDump(path: Self.dumpPath(name))
        let index = try XCTUnwrap(raw.entries.firstIndex { $0.method == "e2eRtt" })
        XCTAssertNil(raw.entries[index].time, "the dump's line has no time")
        let before = try XCTUnwrap(raw.entries[..<index].last { $0.time != nil }?.time)
        let (_, records, _) = try importDump(name)
        let event = try XCTUnwrap(records.first { $0["type"] == "e2eRtt" })
        XCTAssertEqual(event.ts, Int64(before.rounded()))

        let relay = try RawDump(path: Self.dumpPath("google-standard-stats-relay-p2p"))
        XCTAssertGreaterThan(relay.entries.filter { $0.elements == 5 }.count, 90, "time then sequence number")
        let (result, relayRecords, out) = try importDump("google-standard-stats-relay-p2p")
        XCTAssertEqual(result.skipped, [])
        let analysis = try analyze(out)
        let span = relay.entries.compactMap(\.time)
        XCTAssertEqual(Double(analysis.call.durationMs), span.max()! - span.min()!, accuracy: 1, "58 s, not the sequence numbers' span")
        XCTAssertFalse(analysis.findings.contains { $0.code == "clock_skew" }, "\(analysis.findings.map(\.code))")
        XCTAssertEqual(relayRecords.first { $0.kind == .call }?["sdkVersion"], "116.0.0.0")
    }

    func testServerSideSamplesAreRefusedInOneLine() throws {
        for (name, application) in Self.serverSamples.sorted(by: { $0.key < $1.key }) {
            let path = Self.dumpPath(name)
            let expected = "\(path): a \(application) server-side rtcstats sample, not a browser dump: callstats imports browser dumps"
            XCTAssertThrowsError(try DumpImport.detect(path: path), name) { error in
                XCTAssertEqual((error as? DumpError)?.description, expected)
            }
            var written = 0
            let result = DumpImport(path: path).run { _ in written += 1 }
            XCTAssertEqual(result.failure?.description, expected)
            XCTAssertFalse(expected.contains("\n"))
            XCTAssertEqual(written, 0, name)
            XCTAssertEqual(result.records, 0, name)
        }
    }

    // MARK: - The delta rule

    /// jitsi's rtcstats protocol 3 (`clientProtocol` "3.1_STANDARD") lists every object it still
    /// has, an unchanged one as `{"timestamp": …}`; one it leaves out is gone. Safari's dump loses
    /// six inbound-rtp objects mid-call: their streams end at the last report that has them, as
    /// rtcstats-server's tracks do, not at the end of the call, and a video stream's frame rate
    /// is the frames it decoded over its own life, with no stale intervals after it.
    func testObjectsLeftOutOfAProtocol3DeltaAreRemoved() throws {
        let name = "safari-standard-stats"
        let raw = try RawDump(path: Self.dumpPath(name))
        XCTAssertEqual(raw.metadata?["clientProtocol"] as? String, "3.1_STANDARD")
        let lastSeen = raw.lastListed(pc: "PC_0", type: "inbound-rtp")
        let callEnd = raw.entries.filter { $0.method == "getstats" }.compactMap(\.time).max()!
        let ended = lastSeen.filter { $0.value.time < callEnd }
        XCTAssertEqual(ended.count, 6, "inbound-rtp objects the client stopped listing")

        let (_, _, out) = try importDump(name)
        let analysis = try analyze(out)
        var videos = 0
        for (ssrc, seen) in ended {
            let stream = try XCTUnwrap(analysis.streams.first { $0.ssrc == ssrc && $0.direction == .inbound }, "\(ssrc)")
            XCTAssertEqual(Double(stream.endTs), seen.time, accuracy: 1, "\(ssrc) ends at its last report")
            XCTAssertLessThan(Double(stream.endTs), callEnd)
            guard stream.kind == .video else { continue }
            let frames = raw.listed(pc: "PC_0", id: seen.id, member: "framesDecoded")
            let (first, last) = (try XCTUnwrap(frames.first), try XCTUnwrap(frames.last))
            let fps = (last.value - first.value) / ((last.time - first.time) / 1000)
            XCTAssertGreaterThan(fps, 15, "\(ssrc) carried video")
            XCTAssertEqual(try XCTUnwrap(stream.fpsMean, "\(ssrc)"), fps, accuracy: 0.5, "\(ssrc)")
            videos += 1
        }
        XCTAssertEqual(videos, 2)
    }

    /// Before protocol 3 an object whose only change was its timestamp was left out whole: the
    /// headerless 2020 stream `google-legacy-screenshare-p2p` never lists an object without a
    /// change, and its sending streams, left out of many deltas, last to the end.
    func testObjectsLeftOutOfAnOlderDeltaAreUnchanged() throws {
        let name = "google-legacy-screenshare-p2p"
        let raw = try RawDump(path: Self.dumpPath(name))
        XCTAssertNil(raw.metadata)
        let deltas = raw.entries.filter { $0.method == "getstats" }.compactMap { $0.value as? [String: Any] }
        XCTAssertFalse(
            deltas.dropFirst().contains { d in
                d.contains { $0.key != "timestamp" && (($0.value as? [String: Any]).map { Set($0.keys).isSubset(of: ["timestamp"]) } ?? false) }
            }, "no object listed without a change")
        let (_, _, out) = try importDump(name)
        let analysis = try analyze(out)
        let end = raw.entries.filter { $0.method == "getstats" }.compactMap(\.time).max()!
        let sending = analysis.streams.filter { $0.direction == .outbound }
        XCTAssertEqual(sending.count, 2)
        for s in sending { XCTAssertEqual(Double(s.endTs), end, accuracy: 1, s.streamID) }
    }

    // MARK: - Comparison with rtcstats-server's results

    /// One figure both tools give.
    struct Figure: CustomStringConvertible {
        var dump: String
        var place: String
        /// packets, packetsLost, end (ms), mean RTT (s), session (ms).
        var kind: String
        var theirs: Double
        var ours: Double?
        var agrees: Bool
        var description: String {
            "\(dump) \(place) \(kind): rtcstats-server \(theirs), callstats \(ours.map { "\($0)" } ?? "none")"
        }
    }

    /// Every figure both tools define alike, with whether they agree, and the figures
    /// rtcstats-server gets wrong or defines otherwise (said with their numbers).
    struct Comparison {
        var figures: [Figure] = []
        var rtcstatsServerWrong: [String] = []
        var definedOtherwise: [String] = []
    }

    func compareWithResults() throws -> Comparison {
        var c = Comparison()
        for name in Self.browserDumps {
            guard let expected = try Self.results(name)?.first else { continue }
            let raw = try RawDump(path: Self.dumpPath(name))
            let (_, _, out) = try importDump(name)
            let analysis = try analyze(out)
            if let features = expected["features"] as? [String: Any] {
                try compare(name, features, raw, analysis, into: &c)
            } else {
                compareLegacy(name, try Self.results(name)!, analysis, into: &c)
            }
        }
        return c
    }

    /// rtcstats-server's current extractor: per pc and track (`aggregates`), and the session.
    func compare(_ name: String, _ features: [String: Any], _ raw: RawDump, _ analysis: CallAnalysis, into c: inout Comparison) throws {
        func stream(_ pc: String, _ direction: StreamDirection, _ ssrc: UInt32) -> StreamSummary? {
            analysis.streams.first { $0.streamID.hasPrefix(pc + ":") && $0.direction == direction && $0.ssrc == ssrc }
        }
        let aggregates = try XCTUnwrap(features["aggregates"] as? [String: [String: Any]], name)
        let firefox = (raw.metadata?["statsFormat"] as? String) == "firefox"
        for (pc, aggregate) in aggregates.sorted(by: { $0.key < $1.key }) {
            let objects = raw.merged(pc: pc)
            func rawObjects(ssrc: UInt32, type: String) -> [[String: Any]] {
                objects.values.filter { RawDump.number($0["ssrc"]) == Double(ssrc) && $0["type"] as? String == type }
            }
            let tracks = try XCTUnwrap(aggregate["tracks"] as? [String: [[String: Any]]], "\(name) \(pc)")
            for (side, direction) in [("receiverTracks", StreamDirection.inbound), ("senderTracks", .outbound)] {
                let bySSRC = Dictionary(grouping: tracks[side] ?? [], by: { UInt32(RawDump.number($0["ssrc"])!) })
                for (ssrc, group) in bySSRC.sorted(by: { $0.key < $1.key }) {
                    let place = "\(pc) \(side == "receiverTracks" ? "received" : "sent") \(ssrc)"
                    // Split at a video-type change: the counters are the SSRC's, cumulative,
                    // so the last track holds the whole and the earlier ones are counted twice.
                    let packets = group.map { RawDump.number($0["packets"])! }
                    let last = packets.indices.max { packets[$0] < packets[$1] }!
                    let track = group[last]
                    if group.count > 1 {
                        let earlier = packets.indices.filter { $0 != last }.map { packets[$0] }
                        c.rtcstatsServerWrong.append(
                            "\(name) \(place): one SSRC split at a video-type change into \(group.count) tracks whose packets "
                                + "(\(packets.map { Int($0) })) are all counted in the pc's total, "
                                + "though the SSRC's counter is cumulative: \(Int(earlier.reduce(0, +))) packets twice")
                    }
                    let theirPackets = RawDump.number(track["packets"])!
                    let theirLost = RawDump.number(track["packetsLost"])!
                    let isW3C = !objects.values.contains { $0["type"] as? String == "ssrc" }
                    if isW3C && direction == .outbound && rawObjects(ssrc: ssrc, type: "outbound-rtp").isEmpty,
                        let far = rawObjects(ssrc: ssrc, type: "remote-outbound-rtp").first
                    {
                        c.rtcstatsServerWrong.append(
                            "\(name) \(place): the far end's remote-outbound-rtp (packetsSent \(RawDump.number(far["packetsSent"]).map { Int($0) } ?? -1)) "
                                + "counted as a sent track of \(Int(theirPackets)) packets; this end received "
                                + "\(stream(pc, .inbound, ssrc).map { "\($0.packets)" } ?? "none") on it")
                        continue
                    }
                    if firefox && direction == .outbound, let remote = rawObjects(ssrc: ssrc, type: "remote-inbound-rtp").first,
                        remote["packetsSent"] == nil
                    {
                        // Firefox: rtcstats-server reads sent tracks from remote-inbound-rtp, which
                        // has no packetsSent (0 sent); the loss it reads there is alike.
                        let ours = stream(pc, .outbound, ssrc)
                        c.rtcstatsServerWrong.append(
                            "\(name) \(place): sent packets read from Firefox's remote-inbound-rtp, which has no packetsSent: "
                                + "\(Int(theirPackets)); this end sent \(ours.map { "\($0.packets)" } ?? "none") (outbound-rtp)")
                        c.figures.append(
                            Figure(
                                dump: name, place: place, kind: "packetsLost", theirs: theirLost, ours: ours.map { Double($0.packetsLost) },
                                agrees: ours.map { Double($0.packetsLost) == theirLost } ?? false))
                        continue
                    }
                    if isW3C && direction == .inbound && rawObjects(ssrc: ssrc, type: "inbound-rtp").isEmpty,
                        let remote = rawObjects(ssrc: ssrc, type: "remote-inbound-rtp").first
                    {
                        c.rtcstatsServerWrong.append(
                            "\(name) \(place): Firefox's remote-inbound-rtp (the far end's report on a stream this end sends, "
                                + "packetsReceived \(RawDump.number(remote["packetsReceived"]).map { Int($0) } ?? -1)) counted as a received "
                                + "track of \(Int(theirPackets)) packets; this end sent \(stream(pc, .outbound, ssrc).map { "\($0.packets)" } ?? "none") on it")
                        continue
                    }
                    let ours = stream(pc, direction, ssrc)
                    for (what, theirs, mine) in [
                        ("packets", theirPackets, ours.map { Double($0.packets) }),
                        ("packetsLost", theirLost, ours.map { Double($0.packetsLost) }),
                    ] {
                        c.figures.append(Figure(dump: name, place: place, kind: what, theirs: theirs, ours: mine, agrees: mine == theirs))
                    }
                    // A track ends at the last report that has it (rtcstats-server takes the
                    // line's time, as the import does); a split track ends at the split instead.
                    if group.count == 1, let end = RawDump.number(track["endTime"]) {
                        let mine = ours.map { Double($0.endTs) }
                        c.figures.append(
                            Figure(dump: name, place: place, kind: "end", theirs: end, ours: mine, agrees: mine.map { abs($0 - end) <= 1 } ?? false))
                    }
                }
            }
            // The pc's mean round-trip time, s: the selected candidate pair's (Chrome, Safari) or
            // remote-inbound-rtp's (Firefox) over its reports. rtcstats-server rounds it to 10 ms.
            let theirRTT = RawDump.number((aggregate["transportAggregates"] as? [String: Any])?["meanRtt"]) ?? 0
            let pcIntervals = analysis.intervals.filter { $0.streamID.hasPrefix(pc + ":") }
            var samples: [Double] = []
            if firefox {
                samples = pcIntervals.filter { $0.streamID.hasPrefix(pc + ":outbound:") }.compactMap(\.rttMs)
            } else {
                var byStart: [Int64: Double] = [:]
                for i in pcIntervals { if let r = i.iceRttMs { byStart[i.startTs] = r } }
                samples = Array(byStart.values)
            }
            let ourRTT = samples.isEmpty ? nil : samples.reduce(0, +) / Double(samples.count) / 1000
            if ourRTT == nil && theirRTT == 0 { continue }  // no statistics on this pc: no figure
            var theirs = theirRTT
            if objects.values.contains(where: { $0["type"] as? String == "googCandidatePair" }) && theirRTT > 5 {
                theirs = theirRTT / 1000
                c.rtcstatsServerWrong.append(
                    "\(name) \(pc): mean RTT \(theirRTT) s from legacy googRtt, which is in milliseconds (\(theirs) s)")
            }
            c.figures.append(
                Figure(
                    dump: name, place: pc, kind: "mean RTT", theirs: theirs, ours: ourRTT,
                    agrees: ourRTT.map { abs($0 - theirs) <= 0.1 * theirs + 0.005 } ?? false))
        }
        // The session: from the first line's time to the last's (rtcstats-server leaves the
        // connectionInfo and identity lines out). The import starts a call at its earliest line:
        // alike only where the first line is the earliest.
        let metrics = try XCTUnwrap(features["metrics"] as? [String: Any])
        let theirs = RawDump.number(metrics["sessionDurationMs"])!
        let timed = raw.entries.filter { $0.method != "identity" }.compactMap(\.time)
        if timed.first == timed.min() {
            c.figures.append(
                Figure(
                    dump: name, place: "call", kind: "session", theirs: theirs, ours: Double(analysis.call.durationMs),
                    agrees: abs(Double(analysis.call.durationMs) - theirs) <= 1))
        } else {
            c.definedOtherwise.append(
                "\(name): session \(Int(theirs)) ms from the first line, which is not the earliest; "
                    + "the call lasts \(analysis.call.durationMs) ms from the earliest, \(Int(timed.first! - timed.min()!)) ms before it")
        }
    }

    /// rtcstats-server's deprecated extractor (the `google-legacy-*` results): per pc and kind,
    /// the packets sent and lost on every sending SSRC; per pc the active candidate pair's mean
    /// round-trip time (`googRtt`), s, rounded to 10 ms.
    func compareLegacy(_ name: String, _ connections: [[String: Any]], _ analysis: CallAnalysis, into c: inout Comparison) {
        for connection in connections {
            guard let pc = connection["connId"] as? String, let f = connection["connectionFeatures"] as? [String: Any] else { continue }
            if let theirs = RawDump.number(f["statsMeanRoundTripTime"]) {
                var byStart: [Int64: Double] = [:]
                for i in analysis.intervals where i.streamID.hasPrefix(pc + ":") { if let r = i.iceRttMs { byStart[i.startTs] = r } }
                let ours = byStart.isEmpty ? nil : byStart.values.reduce(0, +) / Double(byStart.count) / 1000
                if ours != nil || theirs != 0 {
                    c.figures.append(
                        Figure(
                            dump: name, place: pc, kind: "mean RTT", theirs: theirs, ours: ours,
                            agrees: ours.map { abs($0 - theirs) <= 0.1 * theirs + 0.005 } ?? false))
                }
            }
            for kind in [MediaKind.audio, .video] {
                let key = kind == .audio ? "Audio" : "Video"
                guard let sent = RawDump.number(f["stats\(key)PacketsSentTotal"]),
                    let lost = RawDump.number(f["stats\(key)PacketsLostTotal"])
                else { continue }
                let ours = analysis.streams.filter { $0.streamID.hasPrefix(pc + ":") && $0.direction == .outbound && $0.kind == kind }
                let ourSent = Double(ours.reduce(0) { $0 + $1.packets })
                let ourLost = Double(ours.reduce(0) { $0 + $1.packetsLost })
                let place = "\(pc) sent \(kind.rawValue)"
                if ours.contains(where: { $0.counterResets > 0 }) {
                    // A counter restart (the screen share's new encoder): rtcstats-server keeps the
                    // largest value, the import counts the packets after the restart too.
                    c.definedOtherwise.append(
                        "\(name) \(place): packets sent across a counter restart: rtcstats-server \(Int(sent)) (the largest value), "
                            + "callstats \(Int(ourSent)) (before and after it)")
                } else {
                    c.figures.append(Figure(dump: name, place: place, kind: "packets", theirs: sent, ours: ourSent, agrees: ourSent == sent))
                }
                c.figures.append(Figure(dump: name, place: place, kind: "packetsLost", theirs: lost, ours: ourLost, agrees: ourLost == lost))
            }
        }
    }

    /// The selected candidate pairs rtcstats-server's TURN tests expect (`src/test/jest/turn.test.js`)
    /// of the dumps with one peer connection: a TURN relay reached over TLS from Chrome and
    /// Firefox, a server-reflexive media server. Safari names no `relayProtocol`, and
    /// rtcstats-server expects an empty protocol for it: no transport is compared there.
    func testRelayedCandidatePairsAsRTCStatsServersTURNTestsExpect() throws {
        for (name, transport) in [("chrome-relay", "tls"), ("firefox-relay", "tls"), ("safari-relay", nil)] {
            let (result, _, out) = try importDump(name)
            XCTAssertEqual(result.snapshots.count, 1, "\(name): one peer connection with statistics")
            let call = try analyze(out).call
            XCTAssertEqual(call.localCandidateType, "relay", name)
            XCTAssertEqual(call.remoteCandidateType, "srflx", name)
            XCTAssertTrue(call.relayUsed, name)
            if let transport { XCTAssertEqual(call.transport, transport, name) }
        }
    }

    /// Where rtcstats-server's expected figures are wrong, the dumps' own counters say so.
    func testWhereRTCStatsServerIsWrongTheDumpsSaySo() throws {
        func track(_ name: String, _ pc: String, _ side: String, _ ssrc: Double) throws -> [[String: Any]] {
            let features = try XCTUnwrap(try Self.results(name)?.first?["features"] as? [String: Any])
            let aggregate = try XCTUnwrap((features["aggregates"] as? [String: [String: Any]])?[pc])
            let tracks = try XCTUnwrap((aggregate["tracks"] as? [String: [[String: Any]]])?[side])
            return tracks.filter { RawDump.number($0["ssrc"]) == ssrc }
        }

        // The far end's remote-outbound-rtp read as a stream this end sends: chrome-standard-
        // multiple-p2p's PC_0 lists a sent audio track of 8586 packets on SSRC 2889766682, the
        // packetsSent of the far end's report on the stream this end receives (8918 received).
        var name = "chrome-standard-multiple-p2p"
        var raw = try RawDump(path: Self.dumpPath(name))
        var objects = raw.merged(pc: "PC_0").values.filter { RawDump.number($0["ssrc"]) == 2_889_766_682 }
        XCTAssertEqual(objects.compactMap { $0["type"] as? String }.sorted(), ["inbound-rtp", "remote-outbound-rtp"])
        let farEnd = try XCTUnwrap(objects.first { $0["type"] as? String == "remote-outbound-rtp" })
        XCTAssertEqual(RawDump.number(farEnd["packetsSent"]), 8586)
        XCTAssertEqual(try track(name, "PC_0", "senderTracks", 2_889_766_682).compactMap { RawDump.number($0["packets"]) }, [8586])
        var analysis = try analyze(try importDump(name).2)
        var streams = analysis.streams.filter { $0.streamID.hasPrefix("PC_0:") && $0.ssrc == 2_889_766_682 }
        XCTAssertEqual(streams.map(\.direction), [.inbound], "received, not sent")
        let inbound = try XCTUnwrap(objects.first { $0["type"] as? String == "inbound-rtp" })
        XCTAssertEqual(streams.first.map { Double($0.packets) }, RawDump.number(inbound["packetsReceived"]))
        XCTAssertEqual(streams.first?.packets, 8918)

        // Firefox's remote-inbound-rtp (the far end's receiver report on a stream this end
        // sends) read as a received track: 4580 packets on SSRC 271883463, which this end sent
        // (4676 packets, outbound-rtp); its sent track of that SSRC has 0 packets, remote-
        // inbound-rtp having no packetsSent.
        name = "firefox-standard-stats-sfu"
        raw = try RawDump(path: Self.dumpPath(name))
        objects = raw.merged(pc: "PC_0").values.filter { RawDump.number($0["ssrc"]) == 271_883_463 }
        XCTAssertEqual(objects.compactMap { $0["type"] as? String }.sorted(), ["outbound-rtp", "remote-inbound-rtp"])
        let report = try XCTUnwrap(objects.first { $0["type"] as? String == "remote-inbound-rtp" })
        XCTAssertEqual(RawDump.number(report["packetsReceived"]), 4580)
        XCTAssertNil(report["packetsSent"])
        XCTAssertEqual(try track(name, "PC_0", "receiverTracks", 271_883_463).compactMap { RawDump.number($0["packets"]) }, [4580])
        XCTAssertEqual(try track(name, "PC_0", "senderTracks", 271_883_463).compactMap { RawDump.number($0["packets"]) }, [0])
        analysis = try analyze(try importDump(name).2)
        streams = analysis.streams.filter { $0.ssrc == 271_883_463 }
        XCTAssertEqual(streams.map(\.direction), [.outbound], "sent, not received")
        let outbound = try XCTUnwrap(objects.first { $0["type"] as? String == "outbound-rtp" })
        XCTAssertEqual(streams.first.map { Double($0.packets) }, RawDump.number(outbound["packetsSent"]))
        XCTAssertEqual(streams.first?.packets, 4676)

        // A track split at a video-type change, counted twice: SSRC 2683469917 of 9c93a447's
        // PC_1 becomes a camera track of 354 packets and a desktop track of 464, and the pc's
        // total (1775) adds both, though the SSRC's counter was 464 in all: 354 packets twice.
        name = "9c93a447-c9f8-489d-87ca-21263dec0642"
        let split = try track(name, "PC_1", "receiverTracks", 2_683_469_917)
        XCTAssertEqual(split.compactMap { RawDump.number($0["packets"]) }, [354, 464])
        let features = try XCTUnwrap(try Self.results(name)?.first?["features"] as? [String: Any])
        let pc1 = try XCTUnwrap((features["aggregates"] as? [String: [String: Any]])?["PC_1"])
        let received = try XCTUnwrap((pc1["tracks"] as? [String: [[String: Any]]])?["receiverTracks"])
        let total = RawDump.number((pc1["trackAggregates"] as? [String: Any])?["totalPacketsReceived"])
        XCTAssertEqual(total, 1775)
        XCTAssertEqual(total, received.compactMap { RawDump.number($0["packets"]) }.reduce(0, +))
        raw = try RawDump(path: Self.dumpPath(name))
        let counter = raw.merged(pc: "PC_1").values.first { RawDump.number($0["ssrc"]) == 2_683_469_917 && $0["type"] as? String == "inbound-rtp" }
        XCTAssertEqual(RawDump.number(counter?["packetsReceived"]), 464, "the SSRC's counter, cumulative")
        analysis = try analyze(try importDump(name).2)
        let listed = Set(received.compactMap { RawDump.number($0["ssrc"]) })
        let ours = analysis.streams.filter { $0.streamID.hasPrefix("PC_1:inbound:") && listed.contains(Double($0.ssrc)) }
        XCTAssertEqual(ours.reduce(0) { $0 + $1.packets }, 1775 - 354)
    }

    func testFiguresAgreeWithRTCStatsServersResults() throws {
        let c = try compareWithResults()
        let disagreements = c.figures.filter { !$0.agrees }
        let share = Double(c.figures.count - disagreements.count) / Double(c.figures.count)
        print("rtcstats-server comparison: \(c.figures.count - disagreements.count) of \(c.figures.count) figures agree (\(share * 100) %)")
        let kinds = Dictionary(grouping: c.figures, by: \.kind)
        for (kind, figures) in kinds.sorted(by: { $0.key < $1.key }) {
            print("  \(kind): \(figures.filter(\.agrees).count) of \(figures.count) agree")
        }
        for d in disagreements { print("  disagrees: \(d)") }
        for w in c.rtcstatsServerWrong { print("  rtcstats-server is wrong: \(w)") }
        for o in c.definedOtherwise { print("  defined otherwise: \(o)") }
        XCTAssertGreaterThanOrEqual(c.figures.count, 250, "every dump with results compared")
        XCTAssertGreaterThanOrEqual(share, 0.98, "\(disagreements)")
        XCTAssertEqual(Set(c.figures.map(\.dump)).count, 17, "all seventeen results files")
    }
}

/// A dump's lines as Foundation's JSON parser reads them: the reading of the raw file the
/// expected figures come from, independent of the importer.
struct RawDump {
    struct Entry {
        var method: String
        var pc: String?
        var value: Any
        /// The fourth element when it is a number.
        var time: Double?
        var elements: Int
    }

    var metadata: [String: Any]?
    var entries: [Entry] = []

    var userAgent: String? { metadata?["userAgent"] as? String }

    init(path: String) throws {
        let reader = DumpReader(source: try DumpSource(path: path))
        while let line = try reader.nextLine() {
            guard !line.isEmpty, let a = try JSONSerialization.jsonObject(with: Data(line)) as? [Any], let method = a.first as? String
            else { continue }
            if method == "connectionInfo" {
                metadata = a[2] as? [String: Any] ?? (a[2] as? String).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                continue
            }
            entries.append(
                Entry(method: method, pc: a[1] as? String, value: a[2], time: a.count >= 4 ? Self.number(a[3]) : nil, elements: a.count))
        }
    }

    static func number(_ v: Any?) -> Double? {
        if let n = v as? NSNumber { return n.doubleValue }
        if let s = v as? String { return Double(s) }
        return nil
    }

    /// Every object a pc ever reported, its members merged over all deltas (last values).
    func merged(pc: String) -> [String: [String: Any]] {
        var objects: [String: [String: Any]] = [:]
        for e in entries where e.method == "getstats" && e.pc == pc {
            guard let report = e.value as? [String: Any] else { continue }
            for (id, v) in report {
                guard let o = v as? [String: Any] else { continue }
                objects[id, default: [:]].merge(o) { $1 }
            }
        }
        return objects
    }

    /// A member's values over the getstats lines whose delta carries it, with their times.
    func listed(pc: String, id: String, member: String) -> [(time: Double, value: Double)] {
        entries.compactMap { e in
            guard e.method == "getstats", e.pc == pc, let time = e.time,
                let value = Self.number(((e.value as? [String: Any])?[id] as? [String: Any])?[member])
            else { return nil }
            return (time, value)
        }
    }

    /// Per SSRC of a type, the time of the last getstats line that lists its object.
    func lastListed(pc: String, type: String) -> [UInt32: (id: String, time: Double)] {
        var typeOf: [String: String] = [:]
        var ssrcOf: [String: UInt32] = [:]
        var out: [UInt32: (id: String, time: Double)] = [:]
        for e in entries where e.method == "getstats" && e.pc == pc {
            guard let report = e.value as? [String: Any], let time = e.time else { continue }
            for (id, v) in report {
                guard let o = v as? [String: Any] else { continue }
                if let t = o["type"] as? String { typeOf[id] = t }
                if let s = Self.number(o["ssrc"]) { ssrcOf[id] = UInt32(s) }
                if typeOf[id] == type, let ssrc = ssrcOf[id] { out[ssrc] = (id, time) }
            }
        }
        return out
    }
}
