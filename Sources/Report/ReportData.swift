import Analysis
import CallLog
import SQLiteDatabase
import Store

/// Everything the HTML report shows, read from a callstats database.
///
/// Sized for millions of calls: quality over time and the breakdowns come from the `rollups`
/// table (one row per bucket and dimension value, never per call); the distributions are one
/// pass over `calls` into fixed bins; only the worst calls are read row by row, with their
/// intervals, events and findings for the drill-down. Conferences are read the same way: the
/// worst few by their participants' rows, and only those few's slots, one conference at a time
/// through the `conference_matrix_id` index, aggregated per participant per slot.
public struct ReportData {
    public struct Options: Sendable {
        /// Calls listed in the worst-calls table (the filters then pick among them).
        public var worstCalls = 200
        /// Calls of that list with a drill-down (intervals, events, findings on one time axis).
        public var drillDowns = 50
        /// Hourly buckets up to this span, daily beyond (keeps the page small on long ranges).
        public var hourlyUpToDays = 14.0
        /// Conferences listed (most poor participant-minutes first), each with its drill-down.
        public var conferences = 50
        /// Columns of a conference drill-down at most: a longer conference draws consecutive
        /// slots merged into one column (the worst of them), so the page stays small.
        public var conferenceColumns = 120
        /// Participants drawn in a conference drill-down at most (those with the most poor
        /// minutes, received or caused).
        public var conferenceParticipants = 32
        /// Senders named in a poor cell's tooltip at most (the rest counted): a receiver whose
        /// downlink fails in a large conference has every sender's streams poor at once.
        public var conferenceSendersPerCell = 3

        public init() {}
    }

    /// The page's data, as JSON (numbers rounded to what people read).
    public private(set) var json: JSONValue = .null
    public private(set) var callCount: Int64 = 0
    public private(set) var poorCount: Int64 = 0
    /// Whether the page has a conferences section: the database has conference tables (schema
    /// version 7) and at least one conference.
    public private(set) var hasConferences = false

    /// Dimensions as named in `rollups.dimension`, in the order the page shows them.
    static let dimensions = ["network", "platform", "sdk", "app_version", "codec", "candidate_type", "media", "end_reason"]

    /// Histogram bins of the distributions: (metric, label, column in `calls`, first bin, width, bins).
    static let histograms: [(name: String, label: String, column: String, low: Double, width: Double, bins: Int)] = [
        ("mos", "MOS-CQ", "mos_cq", 1.0, 0.1, 35),
        ("loss", "Loss (%)", "loss_pct", 0, 0.5, 40),
        ("jitter", "Jitter (ms)", "jitter_ms", 0, 2.5, 40),
        ("rtt", "RTT (ms)", "rtt_ms", 0, 25, 40),
        ("setup", "Time to media (ms)", "media_ms", 0, 250, 40),
        ("sdk", "SDK score (0-100, mean over time)", "sdk_quality_mean", 0, 5, 21),
    ]

    /// `grading`: the settings the calls were graded with, as the header says them; `settings`:
    /// those settings (their warn thresholds colour a conference's fair-but-impaired slots).
    /// `progress`: told each stage as it begins.
    public init(
        database db: some StoreRows, name: String, generatedAt: Int64, grading: String = "defaults",
        settings: AnalysisConfig = AnalysisConfig(), options: Options = Options(), progress: ((String) -> Void)? = nil
    ) throws {
        progress?("counting calls")
        callCount = try db.selectRows("SELECT count(*) FROM calls", []).first?.first?.int64 ?? 0
        poorCount = try db.selectRows("SELECT count(*) FROM calls WHERE grade = 'poor'", []).first?.first?.int64 ?? 0
        let first = try db.selectRows("SELECT min(start_ts) FROM calls", []).first?.first?.int64
        let last = try db.selectRows("SELECT max(start_ts) FROM calls", []).first?.first?.int64
        let spanDays = Double((last ?? 0) - (first ?? 0)) / 86_400_000
        let period = spanDays <= options.hourlyUpToDays ? "hour" : "day"

        var meta = JSONObject()
        meta["db"] = .string(name)
        meta["generated"] = .number(Double(generatedAt))
        meta["calls"] = .number(Double(callCount))
        meta["poor"] = .number(Double(poorCount))
        meta["first"] = first.map { .number(Double($0)) } ?? .null
        meta["last"] = last.map { .number(Double($0)) } ?? .null
        meta["period"] = .string(period)
        meta["grading"] = .string(grading)

        var root = JSONObject()
        root["meta"] = .object(meta)
        root["dimensions"] = .array(ReportData.dimensions.map { .string($0) })
        progress?("\(callCount) calls: quality over time and breakdowns (rollups)")
        root["series"] = try ReportData.series(db, period: period)
        progress?("\(callCount) calls: distributions")
        root["histograms"] = try ReportData.distributions(db)
        progress?("\(callCount) calls: the \(options.worstCalls) worst")
        let worst = try ReportData.worstCalls(db, limit: options.worstCalls)
        root["worst"] = .array(worst.rows)
        progress?("\(callCount) calls: drill-downs of \(min(options.drillDowns, worst.ids.count)) calls")
        root["drill"] = try ReportData.drillDowns(db, calls: Array(worst.ids.prefix(options.drillDowns)))
        progress?("conferences: the \(options.conferences) worst")
        let conferences = try ReportData.conferences(db, options: options, settings: settings)
        hasConferences = conferences != .null
        root["conferences"] = conferences
        json = .object(root)
    }

    // MARK: - Over time and breakdowns (rollups)

    static let seriesColumns = [
        "bucket_ts", "dimension", "value", "calls", "good", "fair", "poor", "no_media", "unanswered", "unmeasured",
        "mos_n", "mos_mean", "mos_p50", "mos_p5", "loss_n", "loss_mean", "loss_p95", "jitter_n", "jitter_mean", "jitter_p95",
        "rtt_n", "rtt_mean", "rtt_p95", "setup_n", "setup_mean", "setup_p95",
    ]

    /// Rollup rows of the chosen period: column names once, then rows of values.
    static func series(_ db: some StoreRows, period: String) throws -> JSONValue {
        let dims = (["all"] + dimensions).map { "'\($0)'" }.joined(separator: ", ")
        // A database not yet upgraded to version 4 has no `unmeasured` count: none were graded so.
        let hasUnmeasured = try db.hasColumn("rollups", "unmeasured")
        let columns = seriesColumns.map { $0 == "unmeasured" && !hasUnmeasured ? "0 AS unmeasured" : $0 }
        let rows: [JSONValue] = try db.selectRows(
            "SELECT \(columns.joined(separator: ", ")) FROM rollups WHERE period = ? AND dimension IN (\(dims)) ORDER BY bucket_ts, dimension, value",
            [.text(period)]
        ).map { row in .array(row.map(json)) }
        return .object(["columns": .array(seriesColumns.map { .string($0) }), "rows": .array(rows)])
    }

    // MARK: - Distributions (one pass over calls)

    /// Per metric, counts per (day, dimension value, bin), sparse: `[day, dim, value, bin, count]`
    /// with dim -1 for all calls. Days and dimension values are indexes into the lists sent
    /// beside them, so the page filters by time and dimension without the rows.
    static func distributions(_ db: some StoreRows) throws -> JSONValue {
        let dimColumns = Schema.rollupDimensions.filter { dimensions.contains($0.name) }
        let ordered = dimensions.map { d in dimColumns.first { $0.name == d }!.column }
        let metricColumns = histograms.map(\.column)
        let sql =
            "SELECT start_ts / 86400000, " + ordered.map { "coalesce(\($0), 'unknown')" }.joined(separator: ", ")
            + ", " + metricColumns.joined(separator: ", ") + " FROM calls"
        var days: [Int64: Int] = [:], dayList: [Int64] = []
        var valueIndex = Array(repeating: [String: Int](), count: dimensions.count)
        var valueLists = Array(repeating: [String](), count: dimensions.count)
        // Counts in blocks, one per (day, dimension value) and one per day for all calls; a
        // block holds every metric's bins (at `binOffsets`). Found by (day, dim + 1, value)
        // once per row and dimension, not once per bin: the histogram of a month of calls
        // counts tens of millions of bins.
        let binOffsets = histograms.indices.map { m in histograms[..<m].map(\.bins).reduce(0, +) }
        let blockSize = histograms.map(\.bins).reduce(0, +)
        var blockIndex: [BlockKey: Int] = [:]
        var blockKeys: [BlockKey] = []
        var counts: [Int32] = []
        func block(_ key: BlockKey) -> Int {
            if let known = blockIndex[key] { return known }
            let b = blockKeys.count
            blockIndex[key] = b
            blockKeys.append(key)
            counts.append(contentsOf: repeatElement(0, count: blockSize))
            return b
        }
        var dimValues = [Int](repeating: 0, count: dimensions.count)
        var bins = [Int](repeating: -1, count: histograms.count)
        try db.forEachRow(sql, []) { row in
            let day = row[0].int64 ?? 0
            let d: Int
            if let known = days[day] {
                d = known
            } else {
                d = dayList.count
                days[day] = d
                dayList.append(day)
            }
            for i in dimensions.indices {
                let text = row[1 + i].description
                if let v = valueIndex[i][text] {
                    dimValues[i] = v
                } else {
                    let v = valueLists[i].count
                    valueIndex[i][text] = v
                    valueLists[i].append(text)
                    dimValues[i] = v
                }
            }
            var any = false
            for (m, h) in histograms.enumerated() {
                guard let x = row[1 + dimensions.count + m].double, x.isFinite else {
                    bins[m] = -1
                    continue
                }
                bins[m] = binOffsets[m] + max(0, min(h.bins - 1, Int(((x - h.low) / h.width).rounded(.down))))
                any = true
            }
            guard any else { return }
            for slot in -1..<dimensions.count {
                let start = block(BlockKey(day: d, dimension: slot, value: slot < 0 ? 0 : dimValues[slot])) * blockSize
                for bin in bins where bin >= 0 { counts[start + bin] += 1 }
            }
        }
        // Each metric's cells in (day, dimension, value, bin) order.
        let blockOrder = blockKeys.indices.sorted { blockKeys[$0] < blockKeys[$1] }
        var cells = Array(repeating: [JSONValue](), count: histograms.count)
        for (m, h) in histograms.enumerated() {
            for b in blockOrder {
                let k = blockKeys[b]
                let place: [JSONValue] = [.number(Double(k.day)), .number(Double(k.dimension)), .number(Double(k.value))]
                for bin in 0..<h.bins {
                    let n = counts[b * blockSize + binOffsets[m] + bin]
                    guard n > 0 else { continue }
                    cells[m].append(.array(place + [.number(Double(bin)), .number(Double(n))]))
                }
            }
        }
        var values = JSONObject()
        for (i, name) in dimensions.enumerated() { values[name] = .array(valueLists[i].map { .string($0) }) }
        return .object([
            "days": .array(dayList.map { .number(Double($0 * 86_400_000)) }),
            "values": .object(values),
            "metrics": .array(
                histograms.enumerated().map { m, h in
                    .object([
                        "name": .string(h.name), "label": .string(h.label), "low": .number(h.low), "width": .number(h.width),
                        "bins": .number(Double(h.bins)), "cells": .array(cells[m]),
                    ])
                }),
        ])
    }

    /// A block of `distributions`' counts: a day (index into its days) and a dimension (-1:
    /// all calls) with one of its values.
    struct BlockKey: Hashable, Comparable {
        var day: Int
        var dimension: Int
        var value: Int

        static func < (a: BlockKey, b: BlockKey) -> Bool { (a.day, a.dimension, a.value) < (b.day, b.dimension, b.value) }
    }

    // MARK: - Worst calls and their drill-downs

    /// Poor calls by lowest sustained MOS, then calls without media (which have no MOS to
    /// show; the `worst_calls` view lists those first).
    static let worstOrder = "WHERE grade IN ('poor', 'no_media') ORDER BY grade = 'no_media', mos_worst IS NULL, mos_worst, call_id"

    /// The ids of the calls the worst-calls table lists, in its order.
    public static func worstCallIDs(_ db: some StoreRows, limit: Int) throws -> [String] {
        try db.selectRows("SELECT call_id FROM calls \(worstOrder) LIMIT ?", [.integer(Int64(limit))]).compactMap { $0[0].string }
    }

    static func worstCalls(_ db: some StoreRows, limit: Int) throws -> (rows: [JSONValue], ids: [String]) {
        // The sent direction and the conversation came with schema version 4: a database not yet
        // upgraded is reported as it is, without them.
        let current = try db.hasColumn("calls", "mos_worst_sent") && db.hasColumn("call_conversations", "call_id")
        let columns = [
            "call_id", "start_ts", "duration_ms", "grade", "mos_worst", "mos_cq", "loss_pct", "jitter_ms", "rtt_ms",
            "network", "platform", "sdk || ' ' || sdk_version", "app || ' ' || app_version", "audio_codec",
            "local_candidate_type", "grade_reason", "sdk_quality_mean", "sdk_quality_min",
            current ? "mos_worst_sent" : "NULL",
            current ? "(SELECT conversation_id FROM call_conversations v WHERE v.call_id = calls.call_id)" : "NULL",
            current
                ? "(SELECT count(*) FROM call_conversations v JOIN call_conversations w USING (conversation_id) WHERE v.call_id = calls.call_id)"
                : "0",
        ]
        let names = [
            "id", "start", "duration", "grade", "mos_worst", "mos", "loss", "jitter", "rtt",
            "network", "platform", "sdk", "app_version", "codec", "candidate_type", "reason", "sdk_score", "sdk_score_min",
            "mos_worst_sent", "conversation", "legs",
        ]
        let rows = try db.selectRows("SELECT \(columns.joined(separator: ", ")) FROM calls \(worstOrder) LIMIT ?", [.integer(Int64(limit))])
        let ids = rows.compactMap { $0[0].string }
        var findings: [String: [JSONValue]] = [:]
        if !ids.isEmpty {
            for id in ids {
                findings[id] = try db.selectRows(
                    "SELECT call_id, code, severity, start_ts, duration_ms, detail FROM findings WHERE call_id = ? AND severity != 'info' ORDER BY start_ts",
                    [.text(id)]
                ).map { row in .array(row[1..<6].map(json)) }
            }
        }
        let out: [JSONValue] = rows.map { r in
            var o = JSONObject()
            for (i, name) in names.enumerated() { o[name] = json(r[i]) }
            o["findings"] = .array(findings[r[0].string ?? ""] ?? [])
            return .object(o)
        }
        return (out, ids)
    }

    /// Per call: its inbound audio and video intervals, events and findings.
    static func drillDowns(_ db: some StoreRows, calls ids: [String]) throws -> JSONValue {
        var out = JSONObject()
        let intervals = """
            SELECT i.end_ts, s.kind, i.mos_cq, i.loss_pct, i.jitter_ms, i.rtt_ms, i.bitrate_kbps, i.fps, i.freeze_ms
            FROM intervals i JOIN streams s ON s.call_id = i.call_id AND s.stream_id = i.stream_id
            WHERE i.call_id = ? AND s.direction = 'inbound' ORDER BY i.end_ts
            """
        let events = "SELECT ts, kind, action, type FROM events WHERE call_id = ? ORDER BY ts"
        let findings = "SELECT start_ts, duration_ms, code, severity FROM findings WHERE call_id = ? ORDER BY start_ts"
        for id in ids {
            var audio: [JSONValue] = [], video: [JSONValue] = []
            for row in try db.selectRows(intervals, [.text(id)]) {
                if row[1].string == "video" {
                    video.append(.array([0, 6, 7, 8].map { json(row[$0]) }))
                } else {
                    audio.append(.array([0, 2, 3, 4, 5, 6].map { json(row[$0]) }))
                }
            }
            let ev: [JSONValue] = try db.selectRows(events, [.text(id)]).map { .array($0.map(json)) }
            let fi: [JSONValue] = try db.selectRows(findings, [.text(id)]).map { .array($0.map(json)) }
            out[id] = .object(["audio": .array(audio), "video": .array(video), "events": .array(ev), "findings": .array(fi)])
        }
        return .object(out)
    }

    // MARK: - Conferences

    /// The `conferences` view's columns the page shows, and the names it reads them by.
    static let conferenceColumns: [(column: String, name: String)] = [
        ("conference_id", "id"), ("participants", "participants"), ("legs", "legs"), ("start_ts", "start"), ("end_ts", "end"),
        ("poor_participant_minutes", "poor_minutes"), ("spoiled_by_uplinks_minutes", "uplink_minutes"),
        ("own_downlink_minutes", "downlink_minutes"), ("worst_uplink", "worst_uplink"), ("stream_slots", "stream_slots"),
        ("poor_slots", "poor_slots"), ("sender_uplink_slots", "sender_uplink"), ("receiver_downlink_slots", "receiver_downlink"),
        ("both_slots", "both"), ("server_or_path_slots", "server_or_path"), ("unknown_slots", "unknown"),
    ]

    /// The letter a cause is drawn with in a drill-down cell (the page's legend says them).
    static let causeLetters = [
        "sender_uplink": "U", "receiver_downlink": "D", "both": "B", "server_or_path": "S", "unknown": "?",
    ]

    /// The worst conferences (most poor participant-minutes first) and a drill-down of each;
    /// `.null` for a database without conferences, or older than the conference tables (it
    /// is reported as it is, without the section).
    ///
    /// Bounded on big databases: the worst are chosen from `conference_participants` (one row
    /// per leg), and each chosen conference is read by its id alone, which the
    /// `conference_matrix_id` index (`conference_id` first) finds without a scan.
    static func conferences(_ db: some StoreRows, options: Options, settings: AnalysisConfig) throws -> JSONValue {
        guard options.conferences > 0, try db.hasColumn("conference_matrix", "cause"), try db.hasColumn("conferences", "unknown_slots")
        else { return .null }
        let ids = try db.selectRows(
            """
            SELECT conference_id FROM conference_participants GROUP BY conference_id
            ORDER BY sum(poor_received_minutes) DESC, min(joined_ts), conference_id LIMIT ?
            """, [.integer(Int64(options.conferences))]
        ).compactMap { $0[0].string }
        guard !ids.isEmpty else { return .null }
        let select = "SELECT \(conferenceColumns.map(\.column).joined(separator: ", ")) FROM conferences WHERE conference_id = ?"
        var rows: [JSONValue] = []
        var drill = JSONObject()
        for id in ids {
            guard let row = try db.selectRows(select, [.text(id)]).first else { continue }
            var o = JSONObject()
            for (i, c) in conferenceColumns.enumerated() { o[c.name] = json(row[i]) }
            rows.append(.object(o))
            drill[id] = try conferenceDrillDown(db, id: id, options: options, settings: settings)
        }
        return .object(["rows": .array(rows), "drill": .object(drill)])
    }

    /// One conference as participants × time: per participant, a state per column (`0` no
    /// received stream, `1` fine, `2` warn, `3` poor: a string of digits, one per column) and,
    /// for its poor columns only, `[column, cause letters, [[sender, kinds, cause letters]],
    /// senders not named]`; and the participants whose uplink or downlink spoiled minutes
    /// (`conference_offenders`).
    static func conferenceDrillDown(_ db: some StoreRows, id: String, options: Options, settings: AnalysisConfig) throws -> JSONValue {
        let participants = try db.selectRows(
            """
            SELECT participant, sum(poor_received_minutes) + sum(spoiled_for_others_minutes), min(joined_ts)
            FROM conference_participants WHERE conference_id = ? GROUP BY participant
            ORDER BY 2 DESC, 3, participant LIMIT ?
            """, [.text(id), .integer(Int64(max(1, options.conferenceParticipants)))]
        ).compactMap { $0[0].string }
        let shown = Set(participants)
        // Per receiver and slot: the worst of its received streams. Warn: not poor, yet a
        // stream lost `loss_warn_pct`, froze `freeze_warn_pct` or fell below MOS `mos_fair`.
        let slots = try db.selectRows(
            """
            SELECT receiver_participant, slot_start_ts, max(slot_end_ts - slot_start_ts), max(poor),
                   max(CASE WHEN loss_pct >= ? OR freeze_pct >= ? OR mos_lq < ? THEN 1 ELSE 0 END)
            FROM conference_matrix WHERE conference_id = ? GROUP BY receiver_participant, slot_start_ts
            """,
            [.real(settings.lossWarnPct), .real(settings.freezeWarnPct), .real(settings.mosFair), .text(id)])
        let poorStreams = try db.selectRows(
            """
            SELECT receiver_participant, slot_start_ts, sender_participant, kind, cause
            FROM conference_matrix WHERE conference_id = ? AND poor = 1
            GROUP BY receiver_participant, slot_start_ts, sender_participant, kind, cause
            """, [.text(id)])
        let offenders: [JSONValue] = try db.selectRows(
            """
            SELECT participant, spoiled_minutes, participants_affected, own_downlink_minutes
            FROM conference_offenders WHERE conference_id = ? ORDER BY spoiled_minutes DESC, participant LIMIT 10
            """, [.text(id)]
        ).map { .array($0.map(json)) }
        let starts = slots.compactMap { $0[1].int64 }
        guard let first = starts.min(), let last = starts.max() else {
            // Legs without a slot of media: each participant a row without columns.
            let rows: [JSONValue] = participants.map { .object(["name": .string($0), "states": .string(""), "poor": .array([])]) }
            return .object([
                "start": .null, "slot_ms": .null, "column_ms": .null, "columns": 0, "rows": .array(rows), "offenders": .array(offenders),
            ])
        }
        let slotMs = max(1, slots.compactMap { $0[2].int64 }.max() ?? settings.windowMs)
        let slotCount = Int((last - first) / slotMs) + 1
        let merge = (slotCount + max(1, options.conferenceColumns) - 1) / max(1, options.conferenceColumns)
        let columnMs = slotMs * Int64(merge)
        let columns = Int((last - first) / columnMs) + 1
        func column(_ ts: Int64) -> Int { min(columns - 1, Int((ts - first) / columnMs)) }

        var states: [String: [UInt8]] = [:]
        for row in slots {
            guard let p = row[0].string, shown.contains(p), let ts = row[1].int64 else { continue }
            let state: UInt8 = row[3].int64 == 1 ? 3 : row[4].int64 == 1 ? 2 : 1
            var s = states[p] ?? Array(repeating: 0, count: columns)
            s[column(ts)] = max(s[column(ts)], state)
            states[p] = s
        }
        // Per receiver and poor column: each sender's poor kinds under each cause.
        var poor: [String: [Int: [String: (kinds: Set<String>, causes: Set<String>)]]] = [:]
        for row in poorStreams {
            guard let p = row[0].string, shown.contains(p), let ts = row[1].int64 else { continue }
            let sender = row[2].string ?? "an unmatched sender"
            var entry = poor[p, default: [:]][column(ts), default: [:]][sender] ?? ([], [])
            if let kind = row[3].string { entry.kinds.insert(kind) }
            entry.causes.insert(causeLetters[row[4].string ?? "unknown"] ?? "?")
            poor[p, default: [:]][column(ts), default: [:]][sender] = entry
        }
        let letterOrder = ["U", "D", "B", "S", "?"]
        func ordered(_ letters: Set<String>) -> String { letterOrder.filter(letters.contains).joined() }
        let rows: [JSONValue] = participants.map { p in
            let cells: [JSONValue] = (poor[p] ?? [:]).sorted { $0.key < $1.key }.map { column, senders in
                let named = senders.sorted { $0.key < $1.key }.prefix(max(1, options.conferenceSendersPerCell))
                let list: [JSONValue] = named.map { sender, e in
                    .array([.string(sender), .string(e.kinds.sorted().joined(separator: "+")), .string(ordered(e.causes))])
                }
                let causes = senders.values.reduce(into: Set<String>()) { $0.formUnion($1.causes) }
                return .array([.number(Double(column)), .string(ordered(causes)), .array(list), .number(Double(senders.count - named.count))])
            }
            return .object([
                "name": .string(p), "states": .string((states[p] ?? Array(repeating: 0, count: columns)).map(String.init).joined()),
                "poor": .array(cells),
            ])
        }
        return .object([
            "start": .number(Double(first)), "slot_ms": .number(Double(slotMs)), "column_ms": .number(Double(columnMs)),
            "columns": .number(Double(columns)), "rows": .array(rows), "offenders": .array(offenders),
        ])
    }

    /// A database value as JSON, reals rounded to 3 decimals (the page shows at most 2).
    static func json(_ v: SQLValue) -> JSONValue {
        switch v {
        case .null, .blob: .null
        case .integer(let n): .number(Double(n))
        case .real(let d): d.isFinite ? .number((d * 1000).rounded() / 1000) : .null
        case .text(let s): .string(s)
        }
    }
}
