import Analysis
import MaterialScanning

/// Conferences: the legs of one group call, linked, and each poor received stream attributed to
/// the network that spoiled it (`ConferenceAttribution`; tables `conference_participants` and
/// `conference_matrix`, views `conferences` and `conference_offenders`, findings
/// `caused_poor_audio_for` and `caused_poor_video_for`).
///
/// A conference is a conversation (`call_conversations`: legs linked by label, SDK call id or
/// crossing SSRCs, which a forwarding server leaves unchanged) whose legs carry the label
/// `conference`, or that has three or more participants. Its id is its smallest `conference`
/// label, else the conversation's id. A leg's participant is its `participant` label, else its
/// call id. Captures are not participants: they send nothing of their own.
///
/// What must stay true: the rows are a function of the calls stored. A conference is computed
/// again whole when its legs changed: a leg joined or left, or was written again (a call gets a
/// new `call_key` each time it is written, and each participant row keeps the key it was made
/// from); the others keep their rows. The store itself says what changed, so a leg imported in
/// a later run, or by another PostgreSQL worker, ends linked as if all came at once, and a run
/// keeps nothing in memory per call it wrote.
enum ConferenceSchema {
    static func tables(postgres: Bool) -> String {
        """
        CREATE TABLE IF NOT EXISTS conference_participants (
            \(ConferenceParticipantsTable.columnDefinitions(postgres: postgres))
        );
        CREATE INDEX IF NOT EXISTS conference_participants_id ON conference_participants(conference_id);
        CREATE TABLE IF NOT EXISTS conference_matrix (
            \(ConferenceMatrixTable.columnDefinitions(postgres: postgres))
        );
        CREATE INDEX IF NOT EXISTS conference_matrix_id ON conference_matrix(conference_id, receiver_call_id);
        """
    }

    static let viewNames = ["conferences", "conference_offenders"]

    /// The views, the same rows in both stores. `create`: SQLite's `CREATE VIEW IF NOT EXISTS`
    /// or PostgreSQL's `CREATE VIEW`; `round(x, places)`: each store's rounding of a REAL.
    static func views(create: String, round: (String, Int) -> String) -> String {
        func causeSlots(_ cause: String) -> String {
            "(SELECT count(*) FROM conference_matrix m WHERE m.conference_id = p.conference_id AND m.cause = '\(cause)') AS \(cause)_slots"
        }
        return """
            \(create) conferences AS
                SELECT p.conference_id, count(DISTINCT p.participant) AS participants, count(*) AS legs,
                       min(p.joined_ts) AS start_ts, max(p.left_ts) AS end_ts,
                       \(round("sum(p.poor_received_minutes)", 2)) AS poor_participant_minutes,
                       \(round("sum(p.spoiled_for_others_minutes)", 2)) AS spoiled_by_uplinks_minutes,
                       \(round("sum(p.own_downlink_minutes)", 2)) AS own_downlink_minutes,
                       (SELECT o.participant FROM conference_participants o
                        WHERE o.conference_id = p.conference_id AND o.spoiled_for_others_minutes > 0
                        ORDER BY o.spoiled_for_others_minutes DESC, o.participant LIMIT 1) AS worst_uplink,
                       (SELECT count(*) FROM conference_matrix m WHERE m.conference_id = p.conference_id) AS stream_slots,
                       (SELECT count(*) FROM conference_matrix m WHERE m.conference_id = p.conference_id AND m.poor = 1) AS poor_slots,
                       \(ConferenceAttribution.causes.map(causeSlots).joined(separator: ",\n               "))
                FROM conference_participants p GROUP BY p.conference_id ORDER BY min(p.joined_ts), p.conference_id;

            \(create) conference_offenders AS
                SELECT conference_id, participant, count(*) AS legs,
                       \(round("sum(spoiled_for_others_minutes)", 2)) AS spoiled_minutes,
                       max(spoiled_participants) AS participants_affected,
                       \(round("sum(own_downlink_minutes)", 2)) AS own_downlink_minutes
                FROM conference_participants GROUP BY conference_id, participant
                HAVING sum(spoiled_for_others_minutes) > 0 OR sum(own_downlink_minutes) > 0
                ORDER BY sum(spoiled_for_others_minutes) DESC, conference_id, participant;
            """
    }

    static let findingCodes = ["caused_poor_audio_for", "caused_poor_video_for"]
}

/// What conference linking needs of a store: its own SQL driver under the same statements.
/// `values` fill the statement's `ID_LIST` (a list for `IN (…)`).
package protocol ConferenceRowAccess: AnyObject {
    func conferenceRows(_ sql: String, values: [String]) throws -> [[String?]]
    func conferenceExecute(_ sql: String, values: [String]) throws
    func insertConference(_ result: ConferenceResult) throws
    /// The SQL of a label's value in `calls.labels`, the table named `c`.
    func labelSQL(_ key: String) -> String
}

enum ConferenceLinking {
    struct Member {
        var conversation: String
        var leg: ConferenceLeg
        var conferenceLabel: String?
    }

    /// Brings the conference rows up to date with the stored calls and conversations (which
    /// `linkConversations` has just recomputed).
    static func update(_ store: some ConferenceRowAccess, config: AnalysisConfig) throws {
        var groups: [String: [Member]] = [:]
        let members = try store.conferenceRows(
            """
            SELECT v.conversation_id, c.call_id, \(store.labelSQL("participant")), \(store.labelSQL("conference")),
                   c.start_ts, c.end_ts, v.linked_by, c.call_key
            FROM call_conversations v JOIN calls c ON c.call_id = v.call_id
            WHERE c.platform IS NULL OR c.platform != 'capture'
            ORDER BY 1, 2
            """, values: [])
        for row in members {
            guard let conversation = row[0], let call = row[1] else { continue }
            let leg = ConferenceLeg(
                callID: call, participant: row[2].flatMap { $0.isEmpty ? nil : $0 } ?? call,
                startTs: row[4].flatMap { Int64($0) } ?? 0, endTs: row[5].flatMap { Int64($0) } ?? 0, linkedBy: row[6] ?? "",
                callKey: row[7].flatMap { Int64($0) } ?? 0)
            groups[conversation, default: []].append(Member(conversation: conversation, leg: leg, conferenceLabel: row[3]))
        }
        var conferences: [String: [ConferenceLeg]] = [:]
        for (conversation, legs) in groups {
            let labels = legs.compactMap(\.conferenceLabel).filter { !$0.isEmpty }
            guard !labels.isEmpty || Set(legs.map(\.leg.participant)).count >= 3 else { continue }
            conferences[labels.min() ?? conversation, default: []].append(contentsOf: legs.map(\.leg))
        }

        // Each conference's legs as (call id, call key): equal sets, nothing to do.
        var stored: [String: Set<String>] = [:]
        for row in try store.conferenceRows("SELECT conference_id, call_id, call_key FROM conference_participants", values: []) {
            if let id = row[0], let call = row[1] { stored[id, default: []].insert(call + "\u{1}" + (row[2] ?? "")) }
        }
        var stale = Set(stored.keys).subtracting(conferences.keys)
        var fresh: [String] = []
        for (id, legs) in conferences {
            let current = Set(legs.map { $0.callID + "\u{1}" + String($0.callKey) })
            if stored[id] != current {
                fresh.append(id)
                if stored[id] != nil { stale.insert(id) }
            }
        }
        // Rows of conferences that changed or ended, and the findings they gave their legs.
        let staleLegs = stale.flatMap { (stored[$0] ?? []).map { String($0.prefix { $0 != "\u{1}" }) } }.sorted()
        if !stale.isEmpty {
            let ids = stale.sorted()
            try store.conferenceExecute("DELETE FROM conference_matrix WHERE conference_id IN (ID_LIST)", values: ids)
            try store.conferenceExecute("DELETE FROM conference_participants WHERE conference_id IN (ID_LIST)", values: ids)
        }
        let freshLegs = fresh.flatMap { conferences[$0]!.map(\.callID) }
        let findingLegs = Array(Set(staleLegs).union(freshLegs)).sorted()
        if !findingLegs.isEmpty {
            let codes = ConferenceSchema.findingCodes.map { "'\($0)'" }.joined(separator: ", ")
            try store.conferenceExecute("DELETE FROM findings WHERE code IN (\(codes)) AND call_id IN (ID_LIST)", values: findingLegs)
        }
        for id in fresh.sorted() {
            let legs = conferences[id]!
            let calls = legs.map(\.callID).sorted()
            let input = ConferenceInput(
                conferenceID: id, legs: legs, streams: try streams(store, calls: calls), intervals: try intervals(store, calls: calls))
            try store.insertConference(ConferenceAttribution.attribute(input, config: config))
        }
    }

    static func streams(_ store: some ConferenceRowAccess, calls: [String]) throws -> [ConferenceStream] {
        try store.conferenceRows(
            "SELECT call_id, stream_id, ssrc, direction, kind FROM streams WHERE call_id IN (ID_LIST) AND (source IS NULL OR source != 'wire')",
            values: calls
        ).compactMap { row in
            guard let call = row[0], let stream = row[1], let direction = row[3].flatMap(StreamDirection.init(rawValue:)),
                let kind = row[4].flatMap(MediaKind.init(rawValue:))
            else { return nil }
            return ConferenceStream(callID: call, streamID: stream, ssrc: row[2].flatMap { UInt32($0) }, direction: direction, kind: kind)
        }
    }

    static func intervals(_ store: some ConferenceRowAccess, calls: [String]) throws -> [ConferenceInterval] {
        try store.conferenceRows(
            """
            SELECT call_id, stream_id, start_ts, end_ts, packets, packets_lost, loss_pct, jitter_ms, rtt_ms,
                   concealment_pct, mos_lq, freeze_ms
            FROM intervals WHERE call_id IN (ID_LIST)
            """, values: calls
        ).compactMap { row in
            guard let call = row[0], let stream = row[1], let start = row[2].flatMap({ Int64($0) }), let end = row[3].flatMap({ Int64($0) })
            else { return nil }
            var i = ConferenceInterval(callID: call, streamID: stream, startTs: start, endTs: end)
            i.packets = row[4].flatMap { Int64($0) }
            i.packetsLost = row[5].flatMap { Int64($0) }
            i.lossPct = row[6].flatMap { Double($0) }
            i.jitterMs = row[7].flatMap { Double($0) }
            i.rttMs = row[8].flatMap { Double($0) }
            i.concealmentPct = row[9].flatMap { Double($0) }
            i.mosLQ = row[10].flatMap { Double($0) }
            i.freezeMs = row[11].flatMap { Int64($0) }
            return i
        }
    }
}
