import CallLog

/// Reads a dump that chrome://webrtc-internals downloads ("Create a WebRTC-Internals dump"):
///
/// ```
/// {"getUserMedia": [{…request or failure…}],
///  "PeerConnections": {"<rid>-<lid>": {"pid", "constraints", "rtcConfiguration", "url",
///      "stats": {"<statsId>-<member>": {"startTime", "endTime", "statsType", "values": "[…]"}},
///      "updateLog": [{"time" | "timestamp", "type", "value"}]}},
///  "UserAgent": "…", "UserAgentData": {…}}
/// ```
///
/// The page keeps every member of every stats object as its own time series (the last 1000
/// samples); `values` is the JSON text of the series' values. Since M117 each object also has
/// a `<statsId>-timestamp` series holding its own timestamps, which places every sample; older
/// dumps only have `startTime` and `endTime` per series, and samples are spread evenly between
/// them, as the page spaced its samples (once a second, or `?statsInterval`).
///
/// The file is read in one pass: one peer connection's series are held (as their text) until
/// its object ends, turned into one `stats` record per sample time, and written; the rest of
/// the dump is never in memory at once.
struct WebRTCInternalsImporter {
    let path: String
    let callID: String
    let write: (LogRecord) throws(DumpError) -> Void

    struct Outcome {
        var timeline: CallTimeline
        var userAgent: String?
        var snapshots: [String: Int] = [:]
        var formats: Set<String> = []
        var notes: [String] = []
        var firstStatsTs: Int64?
        var lastStatsTs: Int64?
        var getUserMedia = 0
        var peerConnections = 0
    }

    /// Reads the dump and writes its records; `outcome` has what was read, even when reading
    /// stops at damage (the error is then thrown after everything before it was written).
    func run(reader: DumpReader, outcome: inout Outcome) throws(DumpError) {
        let json = JSONStream(reader)
        var pendingGetUserMedia: [JSONValue] = []
        try json.members { (key: String) throws(DumpError) in
            switch key {
            case "getUserMedia":
                try json.elements { _ throws(DumpError) in pendingGetUserMedia.append(try json.value()) }
            case "PeerConnections":
                try json.members { (pc: String) throws(DumpError) in
                    outcome.peerConnections += 1
                    try readPeerConnection(pc, json: json, outcome: &outcome)
                }
            case "UserAgent":
                outcome.userAgent = try json.stringValue()
            default:
                try json.skip()
            }
        }
        guard try json.atEnd() else { throw json.error("text after the dump's closing '}'") }
        // getUserMedia requests and failures: the page keeps the browser's `timestamp` (recent
        // versions); older dumps have none, and those are written at the call's start.
        for g in pendingGetUserMedia {
            guard case .object(let o) = g else { continue }
            outcome.getUserMedia += 1
            let ts = DumpTime.epochMs(o["timestamp"]).map { Int64($0.rounded()) }
            let type: String
            if let e = o["error"], e != .null, e != .string("") {
                type = "getUserMediaFailure"
            } else if o["audio_track_info"] != nil || o["video_track_info"] != nil {
                type = "getUserMediaSuccess"
            } else {
                type = "getUserMedia"
            }
            var detail = o
            detail["timestamp"] = nil
            if ts == nil { detail["timeKnown"] = .bool(false) }
            let at = ts ?? outcome.timeline.firstTs ?? outcome.firstStatsTs ?? 0
            try write(.event(call: callID, ts: at, action: "getUserMedia", type: type, detail: detail))
        }
    }

    private func readPeerConnection(_ pc: String, json: JSONStream<DumpReader>, outcome: inout Outcome) throws(DumpError) {
        var collector = SeriesCollector(path: path)
        var log: [JSONValue] = []
        var logBytes = 0
        var logLeftOut = 0
        var damage: DumpError?
        do {
            try json.members { (key: String) throws(DumpError) in
                switch key {
                case "stats":
                    try json.members { (seriesKey: String) throws(DumpError) in
                        // Past `maximumHeldBytes` of series text the rest is stepped over.
                        guard collector.heldBytes < ImportBounds.maximumHeldBytes else {
                            collector.seriesLeftOut += 1
                            try json.skip()
                            return
                        }
                        let line = json.input.line
                        let series = try json.value()
                        collector.add(key: seriesKey, series: series, line: line)
                    }
                case "updateLog":
                    // The trace is held until the pc ends (its times are placed by the
                    // statistics): bounded in entries and text, the rest stepped over.
                    try json.elements { _ throws(DumpError) in
                        guard log.count < ImportBounds.maximumTraceEntries, logBytes < ImportBounds.maximumHeldBytes else {
                            logLeftOut += 1
                            try json.skip()
                            return
                        }
                        let start = json.input.offset
                        log.append(try json.value())
                        logBytes += json.input.offset - start
                    }
                default:
                    try json.skip()
                }
            }
        } catch {
            // A cut or damaged dump: what was read whole of this peer connection is still used.
            damage = error
        }
        if logLeftOut > 0 {
            outcome.notes.append(
                "peer connection \(pc): its updateLog is longer than \(ImportBounds.maximumTraceEntries) entries or "
                    + "\(ImportBounds.maximumHeldBytes >> 20) MiB (the most a dump's trace gives): \(logLeftOut) later entries left out")
        }
        let grid = try collector.finish(notes: &outcome.notes, pc: pc)
        var timeline = outcome.timeline
        try writeConnection(pc, log: log, grid: grid, collector: &collector, timeline: &timeline, outcome: &outcome)
        outcome.timeline = timeline
        if let damage { throw damage }
    }

    /// The peer connection's events and snapshots, merged by time.
    private func writeConnection(
        _ pc: String, log: [JSONValue], grid: [Double], collector: inout SeriesCollector,
        timeline: inout CallTimeline, outcome: inout Outcome
    ) throws(DumpError) {
        // Times of the API trace: `timestamp` (epoch ms) in recent dumps; older ones only have
        // the page's `toLocaleString()`, second-precise and in the page's time zone, placed
        // with the offset (a multiple of 15 min) that puts the trace beside the statistics.
        // Which of `a/b/yyyy` is the day is told by a number over 12; when none is, the
        // reading that puts the trace beside the statistics is taken (a day read as the month
        // moves a call by weeks, far from its statistics).
        var times: [Int64?] = []
        var texts: [String?] = []
        for e in log {
            if let t = e["timestamp"].flatMap({ DumpTime.epochMs($0) }) {
                times.append(Int64(t.rounded()))
                texts.append(nil)
            } else {
                times.append(nil)
                texts.append(e["time"]?.stringValue)
            }
        }
        let localTexts = texts.compactMap { $0 }
        if !localTexts.isEmpty {
            // Statistics of this peer connection, else of those read before it.
            let span = grid.isEmpty ? [outcome.firstStatsTs, outcome.lastStatsTs].compactMap { $0.map { Double($0) } } : grid
            let order = Self.dateOrder(localTexts)
            var best: (local: [Double?], placement: Placement)?
            for dayFirst in order.map({ [$0] }) ?? [false, true] {
                let local = texts.map { $0.flatMap { DumpTime.localeString($0, dayFirst: dayFirst) } }
                let placement = Self.zoneOffset(local.compactMap { $0 }, grid: span)
                if best == nil || placement.isBetter(than: best!.placement) { best = (local, placement) }
            }
            let (local, placement) = best!
            if span.isEmpty {
                outcome.notes.append("peer connection \(pc): its API trace has local clock times and no statistics to place them by; read as UTC")
            } else {
                outcome.notes.append(
                    "peer connection \(pc): API trace times are the page's local clock (1 s precision); placed at UTC\(Self.zoneText(placement.offset)) by the statistics"
                )
            }
            for i in times.indices where times[i] == nil {
                if let l = local[i] { times[i] = Int64((l - placement.offset).rounded()) }
            }
        }
        var events: [LogRecord] = []
        var untimed = 0
        for (e, ts) in zip(log, times) {
            guard let ts, let api = e["type"]?.stringValue else { untimed += 1; continue }
            events += timeline.events(pc: pc, ts: ts, api: api, value: e["value"])
        }
        if untimed > 0 { outcome.notes.append("peer connection \(pc): \(untimed) API trace entries without a time or type were left out") }
        if grid.isEmpty { outcome.notes.append("peer connection \(pc): no statistics in the dump") }

        // Merge by time: events go before a snapshot of the same millisecond.
        var e = 0
        let format = collector.format
        if !grid.isEmpty { outcome.formats.insert(format.rawValue) }
        for j in grid.indices {
            let ts = Int64(grid[j].rounded())
            while e < events.count && events[e].ts <= ts {
                try write(events[e])
                e += 1
            }
            let report = try collector.snapshot(j)
            guard !report.isEmpty else { continue }
            try write(.stats(call: callID, ts: ts, format: format, report: report, peerConnection: pc))
            outcome.snapshots[pc, default: 0] += 1
            outcome.firstStatsTs = min(outcome.firstStatsTs ?? ts, ts)
            outcome.lastStatsTs = max(outcome.lastStatsTs ?? ts, ts)
            timeline.see(ts)
        }
        while e < events.count {
            try write(events[e])
            e += 1
        }
    }

    /// Where a trace's local times go: the time zone offset (ms, local − UTC), how many of its
    /// times that puts within the statistics' span, and how far its first time is from their start.
    struct Placement {
        var offset = 0.0
        var score = -1
        var distance = Double.infinity

        func isBetter(than other: Placement) -> Bool {
            score > other.score || (score == other.score && distance < other.distance)
        }
    }

    /// The time zone offset that places most local trace times within the statistics' span;
    /// ties go to the one nearest the statistics' start.
    static func zoneOffset(_ local: [Double], grid: [Double]) -> Placement {
        guard let first = grid.min(), let last = grid.max(), let l0 = local.min() else { return Placement(score: 0) }
        var best = Placement()
        for k in -56...56 {
            let offset = Double(k) * 900_000
            let score = local.filter { $0 - offset >= first - 120_000 && $0 - offset <= last + 120_000 }.count
            let candidate = Placement(offset: offset, score: score, distance: abs(l0 - offset - first))
            if candidate.isBetter(than: best) { best = candidate }
        }
        return best
    }

    /// Whether the trace's `a/b/yyyy` dates are day first (true), month first (false), or
    /// cannot tell (nil: no number over 12 in either place). Dotted and ISO dates say it themselves.
    static func dateOrder(_ texts: [String]) -> Bool? {
        for s in texts where s.contains("/") {
            let numbers = s.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
            guard numbers.count == 2 else { continue }
            if numbers[0] > 12 && numbers[0] <= 31 { return true }
            if numbers[1] > 12 && numbers[1] <= 31 { return false }
        }
        return texts.contains { $0.contains("/") } ? nil : false
    }

    static func zoneText(_ offset: Double) -> String {
        let minutes = Int((offset / 60_000).rounded())
        let sign = minutes < 0 ? "-" : "+"
        let m = abs(minutes)
        return "\(sign)\(m / 60 < 10 ? "0" : "")\(m / 60):\(m % 60 < 10 ? "0" : "")\(m % 60)"
    }
}

/// One peer connection's series, gathered as the dump lists them and turned into snapshots.
struct SeriesCollector {
    struct Member {
        var name: String
        var start: Double?
        var end: Double?
        var text: [UInt8]
        var line: Int
        var count = 0
        /// For each value, the index of the object's sample it belongs to.
        var points: [Int32] = []
        var cursor: JSONArrayCursor?
        var next = 0
    }

    struct Object {
        var id: String
        var type: String?
        var members: [Member] = []
        var timestampSeries: Member?
        /// The object's sample times, and the grid index each belongs to.
        var times: [Double] = []
        var exact = false
        var gridIndex: [Int] = []
        var sample = 0
    }

    let path: String
    private(set) var objects: [Object] = []
    private var index: [String: Int] = [:]
    private(set) var format: StatsFormat = .w3c
    private var gridToSamples: [[(object: Int, sample: Int)]] = []
    var skippedComputed = 0
    var invalid: [String] = []
    /// Text of the series held (`ImportBounds.maximumHeldBytes` at most, then one more series).
    private(set) var heldBytes = 0
    /// Series not read: past the held bytes, or of objects past the object bound.
    var seriesLeftOut = 0
    /// Series cut to `ImportBounds.maximumSeriesValues`, and samples past the pc's bound.
    private var cut: [String] = []
    private var samplesLeftOut = 0

    init(path: String) { self.path = path }

    /// Names the page derives from other series (rates, differences, its legacy per-second
    /// conversions): not statistics the browser reported, so not carried.
    static let derivedMembers: Set<String> = [
        "packetsSentPerSecond", "bitsSentPerSecond", "packetsReceivedPerSecond", "bitsReceivedPerSecond",
        "googTargetEncBitrateCorrected", "googReceivedPacketGroupPropagationDeltaDebug",
    ]

    mutating func add(key: String, series: JSONValue, line: Int) {
        // "<statsId>-<member>"; computed series are "<statsId>-[<expression>]".
        if key.contains("-[") || key.hasPrefix("[") { skippedComputed += 1; return }
        guard let dash = key.lastIndex(of: "-"), case .object(let o) = series else {
            invalid.append("line \(line): series \"\(key)\" is not <statsId>-<member> with an object")
            return
        }
        let id = String(key[..<dash]), name = String(key[key.index(after: dash)...])
        if Self.derivedMembers.contains(name) { skippedComputed += 1; return }
        guard let values = o["values"]?.stringValue else {
            invalid.append("line \(line): series \"\(key)\" has no values text")
            return
        }
        let i: Int
        if let k = index[id] {
            i = k
        } else {
            guard objects.count < ImportBounds.maximumObjectsPerPeerConnection else {
                seriesLeftOut += 1
                return
            }
            i = objects.count
            index[id] = i
            objects.append(Object(id: id))
        }
        if objects[i].type == nil { objects[i].type = o["statsType"]?.stringValue }
        let member = Member(
            name: name, start: DumpTime.epochMs(o["startTime"]), end: DumpTime.epochMs(o["endTime"]),
            text: Array(values.utf8), line: line)
        heldBytes += member.text.count
        if name == "timestamp" { objects[i].timestampSeries = member } else if name != "id" && name != "type" { objects[i].members.append(member) }
    }

    private func place(_ m: Member, _ what: String) -> DumpError {
        DumpError(file: path, line: m.line, message: what)
    }

    /// Places every value and returns the sample times (epoch ms) of the snapshots.
    mutating func finish(notes: inout [String], pc: String) throws(DumpError) -> [Double] {
        if skippedComputed > 0 { notes.append("peer connection \(pc): \(skippedComputed) series the page computes (rates, differences) left out") }
        for s in invalid { notes.append("peer connection \(pc): \(s), left out") }
        if seriesLeftOut > 0 {
            notes.append(
                "peer connection \(pc): more than \(ImportBounds.maximumObjectsPerPeerConnection) statistics objects or "
                    + "\(ImportBounds.maximumHeldBytes >> 20) MiB of series (the most a dump's peer connection gives): \(seriesLeftOut) series left out")
        }
        defer {
            for name in cut.prefix(10) {
                notes.append("peer connection \(pc): series \(name) has more than \(ImportBounds.maximumSeriesValues) values: the later ones left out")
            }
            if cut.count > 10 { notes.append("peer connection \(pc): \(cut.count - 10) more series cut the same way") }
            if samplesLeftOut > 0 {
                notes.append(
                    "peer connection \(pc): more than \(ImportBounds.maximumSamplesPerPeerConnection) samples over its objects: \(samplesLeftOut) later ones left out"
                )
            }
        }
        format = Self.isLegacy(objects) ? .goog : .w3c
        var samples = 0
        for i in objects.indices {
            for m in objects[i].members.indices {
                let n = try JSONArrayCursor.count(
                    objects[i].members[m].text,
                    place: place(objects[i].members[m], "series \(objects[i].id)-\(objects[i].members[m].name)"))
                // Values past the bound are never read: the cursor stops at `count`.
                if n > ImportBounds.maximumSeriesValues { cut.append("\(objects[i].id)-\(objects[i].members[m].name)") }
                objects[i].members[m].count = min(n, ImportBounds.maximumSeriesValues)
            }
            if objects[i].type == nil { objects[i].type = Self.legacyType(objects[i].id) ?? Self.standardType(objects[i].id) }
            // The object's own sample times: its timestamp series, or spread between the
            // start and end of its longest series.
            if let ts = objects[i].timestampSeries {
                var c = try JSONArrayCursor(ts.text, place: place(ts, "series \(objects[i].id)-timestamp"))
                var times: [Double] = []
                while times.count < ImportBounds.maximumSeriesValues, let v = try c.next() { if let d = v.doubleValue { times.append(d) } }
                if !c.finished { cut.append("\(objects[i].id)-timestamp") }
                objects[i].times = times
                objects[i].exact = true
            } else if let longest = objects[i].members.max(by: { $0.count < $1.count }), longest.count > 0,
                let start = longest.start
            {
                objects[i].times = Self.spread(start, longest.end ?? start, longest.count)
            }
            if samples + objects[i].times.count > ImportBounds.maximumSamplesPerPeerConnection {
                let keep = max(0, ImportBounds.maximumSamplesPerPeerConnection - samples)
                samplesLeftOut += objects[i].times.count - keep
                objects[i].times.removeLast(objects[i].times.count - keep)
            }
            samples += objects[i].times.count
            // Each member's values to the object's samples.
            let times = objects[i].times
            for m in objects[i].members.indices {
                objects[i].members[m].points = Self.align(objects[i].members[m], times: times, exact: objects[i].exact)
            }
        }
        try resolveCandidates()
        // The grid: the peer-connection object's samples (one per poll), else the object with
        // the most samples among those timed by the browser's poll (not remote reports).
        let reference =
            objects.firstIndex { $0.type == "peer-connection" && !$0.times.isEmpty }
            ?? objects.indices.filter { !(objects[$0].type ?? "").hasPrefix("remote-") }
            .max { objects[$0].times.count < objects[$1].times.count }
        guard let r = reference, !objects[r].times.isEmpty else { return [] }
        let grid = objects[r].times
        let steps = zip(grid, grid.dropFirst()).map { $1 - $0 }.sorted()
        let step = steps.isEmpty ? 1000 : steps[steps.count / 2]
        gridToSamples = Array(repeating: [], count: grid.count)
        var unplaced = 0
        for i in objects.indices {
            let tolerance = objects[i].exact && objects[r].exact ? 0.5 : step / 2
            var j = -1
            for (k, t) in objects[i].times.enumerated() {
                var next = j + 1
                while next < grid.count && grid[next] < t - tolerance { next += 1 }
                guard next < grid.count else { unplaced += objects[i].times.count - k; break }
                gridToSamples[next].append((i, k))
                j = next
            }
        }
        if unplaced > 0 { notes.append("peer connection \(pc): \(unplaced) samples after the last poll left out") }
        return grid
    }

    /// `n` times from `start` to `end`, evenly spaced.
    static func spread(_ start: Double, _ end: Double, _ n: Int) -> [Double] {
        guard n > 1 else { return n == 1 ? [start] : [] }
        return (0..<n).map { start + (end - start) * Double($0) / Double(n - 1) }
    }

    /// For each of a member's values, the index of its object's sample. A member that is there
    /// in consecutive samples (most are from their first appearance on) is placed by its first
    /// and last times; otherwise each value goes to the sample nearest its evenly spread time.
    static func align(_ m: Member, times: [Double], exact: Bool) -> [Int32] {
        let n = m.count
        guard n > 0, !times.isEmpty else { return [] }
        if n <= times.count, let start = m.start, let end = m.end {
            // The page's startTime/endTime are Dates: the sample's timestamp, truncated to the ms.
            func matches(_ k: Int) -> Bool {
                times[k].rounded(.towardZero) == start && times[k + n - 1].rounded(.towardZero) == end
            }
            // The earliest placement that fits: remote reports repeat their timestamp while no
            // new report came, and a member there late (which is new data, a new timestamp)
            // fits only one way, while one gone before the end fits from the start.
            for k0 in 0...(times.count - n) where matches(k0) { return (0..<n).map { Int32(k0 + $0) } }
            if !exact && n == times.count { return (0..<n).map { Int32($0) } }
        }
        // Each value to the sample nearest its evenly spread time, in order, leaving a sample
        // for each value after it.
        let spread = Self.spread(m.start ?? times[0], m.end ?? times[times.count - 1], n)
        var out: [Int32] = []
        out.reserveCapacity(n)
        var k = 0
        for (i, t) in spread.enumerated() {
            let last = times.count - (n - i)  // the latest sample that leaves one for each later value
            while k < last && abs(times[k + 1] - t) <= abs(times[k] - t) { k += 1 }
            out.append(Int32(min(k, max(last, 0))))
            k += 1
        }
        return out
    }

    /// The report at grid index `j`: every object sampled then, its members in series order.
    mutating func snapshot(_ j: Int) throws(DumpError) -> [JSONValue] {
        var report: [JSONValue] = []
        for (i, k) in gridToSamples[j] {
            let t = objects[i].times[k]
            var members = JSONObject()
            for m in objects[i].members.indices {
                guard let v = try value(object: i, member: m, sample: k) else { continue }
                members.entries.append((key: objects[i].members[m].name, value: v))
            }
            let type = objects[i].type ?? "unknown"
            if format == .goog {
                var values = JSONObject()
                for e in members.entries { values.entries.append((key: e.key, value: .string(Self.text(e.value)))) }
                report.append(["id": .string(objects[i].id), "type": .string(type), "timestamp": .number(t), "values": .object(values)])
            } else {
                var o: JSONObject = ["id": .string(objects[i].id), "timestamp": .number(t), "type": .string(type)]
                for e in members.entries {
                    o.entries.append(
                        (
                            key: e.key,
                            value: Self.stringMembers.contains(e.key) && e.value.doubleValue != nil
                                ? .string(Self.text(e.value)) : e.value
                        ))
                }
                report.append(.object(o))
            }
        }
        return report
    }

    /// The member's value at the object's sample `k`, reading its values in order.
    private mutating func value(object i: Int, member m: Int, sample k: Int) throws(DumpError) -> JSONValue? {
        var member = objects[i].members[m]
        defer { objects[i].members[m] = member }
        while member.next < member.points.count && Int(member.points[member.next]) < k {
            // A value placed before this sample (two values on one sample): the later one wins.
            _ = try nextValue(&member, i)
        }
        guard member.next < member.points.count, Int(member.points[member.next]) == k else { return nil }
        var v = try nextValue(&member, i)
        while member.next < member.points.count && Int(member.points[member.next]) == k { v = try nextValue(&member, i) }
        if member.next >= member.points.count { member.text = []; member.cursor = nil }
        return v
    }

    private func nextValue(_ member: inout Member, _ i: Int) throws(DumpError) -> JSONValue {
        if member.cursor == nil {
            member.cursor = try JSONArrayCursor(member.text, place: place(member, "series \(objects[i].id)-\(member.name)"))
        }
        member.next += 1
        guard let v = try member.cursor!.next() else {
            throw place(member, "series \(objects[i].id)-\(member.name) has fewer values than counted")
        }
        return v
    }

    /// W3C members that are strings but that the page turned into numbers (it keeps any value
    /// that reads as a number as one): written back as strings.
    static let stringMembers: Set<String> = [
        "mid", "rid", "foundation", "usernameFragment", "iceLocalUsernameFragment", "trackIdentifier", "label",
        "protocol", "scalabilityMode", "contentType", "playoutId", "encoderImplementation", "decoderImplementation",
        "remoteId", "localId", "transportId", "codecId", "mediaSourceId", "sdpFmtpLine", "fingerprint",
    ]

    /// A value as the legacy API gave it: text.
    static func text(_ v: JSONValue) -> String {
        switch v {
        case .string(let s): return s
        case .number(let d):
            if d.rounded() == d && abs(d) < 9_007_199_254_740_992 { return String(Int64(d)) }
            return "\(d)"
        case .bool(let b): return b ? "true" : "false"
        case .null: return ""
        default: return v.serialized()
        }
    }

    /// Types of the legacy (callback) getStats API, which older Chrome dumps hold.
    static let legacyTypes: Set<String> = [
        "ssrc", "googCandidatePair", "googComponent", "googTrack", "googLibjingleSession", "VideoBwe",
        "localcandidate", "remotecandidate", "googCertificate",
    ]

    /// The W3C type an id names, for the dumps of Chrome M80–M106 (standard statistics, ids
    /// that name their type, no `statsType` in the dump). An ICE candidate's id does not say
    /// which side it is: `RTCIceCandidate_` is settled by `resolveCandidates`.
    static func standardType(_ id: String) -> String? {
        let lower = id.lowercased()
        for (prefix, type) in standardIDPrefixes where lower.hasPrefix(prefix.lowercased()) { return type }
        return id == "RTCPeerConnection" ? "peer-connection" : nil
    }

    /// Longest first where one prefix begins another (`RTCIceCandidatePair_`, `RTCIceCandidate_`;
    /// `RTCMediaStreamTrack_`, `RTCMediaStream_`).
    static let standardIDPrefixes: [(String, String)] = [
        ("RTCInboundRTPAudioStream_", "inbound-rtp"), ("RTCInboundRTPVideoStream_", "inbound-rtp"),
        ("RTCOutboundRTPAudioStream_", "outbound-rtp"), ("RTCOutboundRTPVideoStream_", "outbound-rtp"),
        ("RTCRemoteInboundRtpAudioStream_", "remote-inbound-rtp"), ("RTCRemoteInboundRtpVideoStream_", "remote-inbound-rtp"),
        ("RTCRemoteOutboundRTPAudioStream_", "remote-outbound-rtp"), ("RTCRemoteOutboundRTPVideoStream_", "remote-outbound-rtp"),
        ("RTCIceCandidatePair_", "candidate-pair"), ("RTCLocalIceCandidate_", "local-candidate"),
        ("RTCRemoteIceCandidate_", "remote-candidate"), ("RTCIceCandidate_", "candidate"),
        ("RTCTransport_", "transport"), ("RTCCodec_", "codec"), ("RTCMediaStreamTrack_", "track"),
        ("RTCMediaStream_", "stream"), ("RTCAudioSource_", "media-source"), ("RTCVideoSource_", "media-source"),
        ("RTCDataChannel_", "data-channel"), ("RTCCertificate_", "certificate"), ("RTCAudioPlayout_", "media-playout"),
    ]

    /// Candidates named only `RTCIceCandidate_…`: remote when their own `isRemote` says so or a
    /// candidate pair names them as its remote candidate, local otherwise (a local candidate is
    /// what this end gathered; it is the one every such dump has).
    private mutating func resolveCandidates() throws(DumpError) {
        let unresolved = objects.indices.filter { objects[$0].type == "candidate" }
        guard !unresolved.isEmpty else { return }
        var remoteIDs = Set<String>()
        for o in objects where o.type == "candidate-pair" {
            for m in o.members where m.name == "remoteCandidateId" {
                var c = try JSONArrayCursor(m.text, place: place(m, "series \(o.id)-\(m.name)"))
                while let v = try c.next() { if let s = v.stringValue { remoteIDs.insert(s) } }
            }
        }
        for i in unresolved {
            var remote = remoteIDs.contains(objects[i].id)
            if let m = objects[i].members.first(where: { $0.name == "isRemote" }) {
                var c = try JSONArrayCursor(m.text, place: place(m, "series \(objects[i].id)-isRemote"))
                if let v = try c.next() { remote = v == .bool(true) || v.stringValue == "true" }
            }
            objects[i].type = remote ? "remote-candidate" : "local-candidate"
        }
    }

    static func isLegacy(_ objects: [Object]) -> Bool {
        let types = objects.compactMap { $0.type ?? legacyType($0.id) }
        return !types.isEmpty && types.filter { legacyTypes.contains($0) }.count * 2 > types.count
    }

    /// The legacy type an id names, for dumps too old to say (`statsType` came later).
    static func legacyType(_ id: String) -> String? {
        if id.hasPrefix("ssrc_") { return "ssrc" }
        if id.hasPrefix("Conn-") { return "googCandidatePair" }
        if id.hasPrefix("Channel-") { return "googComponent" }
        if id.hasPrefix("googTrack_") { return "googTrack" }
        if id.hasPrefix("googLibjingleSession") { return "googLibjingleSession" }
        if id == "bweforvideo" { return "VideoBwe" }
        if id.hasPrefix("googCertificate_") { return "googCertificate" }
        return nil
    }
}
