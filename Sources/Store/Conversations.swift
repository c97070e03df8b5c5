import Analysis
import Foundation
import SQLiteDatabase

/// The legs of one conversation: calls that two (or more) agents logged of the same exchange,
/// linked after they are written (`call_conversations`; the views `conversation_legs` and
/// `conversations`).
///
/// Legs are linked when
/// - their `call` records carry the same label `conversation` (the explicit id), or the same
///   label `conference` (the legs of one group call, `Conferences.swift`), or
/// - the same SDK call id (the `call` record's `callId`, `calls.sdk_call_id`), or
/// - one's outbound SSRC (not a capture's) is the other's inbound SSRC while both calls lasted. An SSRC sent by
///   more than one call (a collision, or copies of one recording) links nothing: a link must
///   not depend on chance.
/// Links are transitive (an app, the far app and a capture of them make one conversation).
///
/// What must stay true: the links are a function of the calls stored, whatever order and runs
/// brought them. So they are recomputed whole whenever calls change (the end of `analyze`, a
/// `regrade`, a removal), in the transaction that changed them: a later leg joins the earlier
/// one, a rerun finds the same links, a removed leg leaves its conversation.
/// What links legs, as read from a store: each store reads these with its own SQL and writes
/// `ConversationLinks.legs` back.
package struct ConversationClues {
    /// Calls whose `call` record labels them with a conversation id.
    var labels: [(callID: String, conversation: String)] = []
    /// Calls whose `call` record labels them with a conference id.
    var conferenceLabels: [(callID: String, conference: String)] = []
    /// Calls with an SDK call id.
    var sdkCallIDs: [(callID: String, sdkCallID: String)] = []
    /// (sender, receiver): a call that alone sent an SSRC, and a call that heard it while both lasted.
    var ssrcPairs: [(String, String)] = []
}

/// The SSRC links, the same SQL in both stores. Each SSRC sent by exactly one call, then the
/// calls that received it: both sides materialised, so the receivers are found through an index
/// on the SSRC rather than by scanning every stream for each sent one.
///
/// A capture sends nothing: its `outbound` rows are its streams as their receivers reported them
/// (`wire` source), the same SSRCs it heard; as senders they would make every SSRC a capture saw
/// look sent twice, and link nothing.
let conversationSSRCPairs = """
    WITH sent AS MATERIALIZED (
        SELECT ssrc, min(call_id) AS call_id FROM streams WHERE direction = 'outbound' AND source != 'wire' AND ssrc != 0
        GROUP BY ssrc HAVING min(call_id) = max(call_id)),
    heard AS MATERIALIZED (SELECT ssrc, call_id FROM streams WHERE direction = 'inbound' AND ssrc != 0)
    SELECT DISTINCT a.call_id, b.call_id
    FROM heard b JOIN sent a ON a.ssrc = b.ssrc AND a.call_id != b.call_id
        JOIN calls ca ON ca.call_id = a.call_id JOIN calls cb ON cb.call_id = b.call_id
    WHERE ca.start_ts <= cb.end_ts AND cb.start_ts <= ca.end_ts
    ORDER BY 1, 2
    """

package enum ConversationLinks {
    /// The rows of `call_conversations` the clues give: (call id, conversation id, linked by).
    /// A function of the clues as sets: the order they were read in changes nothing.
    static func legs(_ clues: ConversationClues) -> [(callID: String, conversation: String, linkedBy: String)] {
        var links = UnionFind()
        var labels: [String: String] = [:], sdkIDs: [String: String] = [:]
        var kinds: [String: Set<String>] = [:]
        func link(_ a: String, _ b: String, by kind: String) {
            links.union(a, b)
            kinds[a, default: []].insert(kind)
            kinds[b, default: []].insert(kind)
        }
        func linkAll(_ byValue: [String: [String]], kind: String) {
            for (_, calls) in byValue where calls.count > 1 {
                for c in calls.dropFirst() { link(calls[0], c, by: kind) }
            }
        }
        var byLabel: [String: [String]] = [:]
        for (id, label) in clues.labels where !label.isEmpty {
            labels[id] = label
            links.add(id)
            kinds[id, default: []].insert("label")
            byLabel[label, default: []].append(id)
        }
        linkAll(byLabel, kind: "label")
        var conferences: [String: String] = [:]
        var byConference: [String: [String]] = [:]
        for (id, label) in clues.conferenceLabels where !label.isEmpty {
            conferences[id] = min(label, conferences[id] ?? label)
            links.add(id)
            kinds[id, default: []].insert("conference")
            byConference[label, default: []].append(id)
        }
        linkAll(byConference, kind: "conference")
        var bySDK: [String: [String]] = [:]
        for (id, sdk) in clues.sdkCallIDs {
            sdkIDs[id] = sdk
            bySDK[sdk, default: []].append(id)
        }
        linkAll(bySDK, kind: "sdk_call_id")
        for (a, b) in clues.ssrcPairs { link(a, b, by: "ssrc") }

        var out: [(callID: String, conversation: String, linkedBy: String)] = []
        for (_, legs) in links.groups() {
            // Two or more legs, or one leg with an explicit id whose other legs are not stored yet.
            guard legs.count > 1 || labels[legs[0]] != nil || conferences[legs[0]] != nil else { continue }
            let id =
                legs.compactMap { labels[$0] }.min() ?? legs.compactMap { conferences[$0] }.min() ?? legs.compactMap { sdkIDs[$0] }.min()
                ?? legs[0]
            let by = legs.reduce(into: Set<String>()) { $0.formUnion(kinds[$1] ?? []) }.sorted().joined(separator: "+")
            for leg in legs { out.append((leg, id, by)) }
        }
        return out
    }
}

extension SQLiteStore {
    public func linkConversations() throws {
        var clues = ConversationClues()
        for row in try db.rows(
            "SELECT call_id, json_extract(labels, '$.conversation') FROM calls WHERE labels LIKE '%\"conversation\"%'")
        {
            guard let id = row[0].string, let label = row[1].string else { continue }
            clues.labels.append((id, label))
        }
        for row in try db.rows(
            "SELECT call_id, json_extract(labels, '$.conference') FROM calls WHERE labels LIKE '%\"conference\"%'")
        {
            guard let id = row[0].string, let label = row[1].string else { continue }
            clues.conferenceLabels.append((id, label))
        }
        for row in try db.rows("SELECT call_id, sdk_call_id FROM calls WHERE sdk_call_id IS NOT NULL") {
            guard let id = row[0].string, let sdk = row[1].string else { continue }
            clues.sdkCallIDs.append((id, sdk))
        }
        for row in try db.rows(conversationSSRCPairs) {
            guard let a = row[0].string, let b = row[1].string else { continue }
            clues.ssrcPairs.append((a, b))
        }
        try db.execute("DELETE FROM call_conversations")
        for leg in ConversationLinks.legs(clues) {
            try db.run(
                "INSERT INTO call_conversations(call_id, conversation_id, linked_by) VALUES (?, ?, ?)",
                [.text(leg.callID), .text(leg.conversation), .text(leg.linkedBy)])
        }
        try ConferenceLinking.update(self, config: recordedSettings())
    }
}

extension SQLiteStore: ConferenceRowAccess {
    /// `ID_LIST` as one placeholder a value.
    private func listed(_ sql: String, _ values: [String]) -> String {
        sql.replacingOccurrences(of: "ID_LIST", with: Array(repeating: "?", count: max(1, values.count)).joined(separator: ", "))
    }

    package func conferenceRows(_ sql: String, values: [String]) throws -> [[String?]] {
        try db.rows(listed(sql, values), values.isEmpty && sql.contains("ID_LIST") ? [.null] : values.map { .text($0) }).map { row in
            row.map { v in
                switch v {
                case .null, .blob: nil
                case .integer(let i): String(i)
                case .real(let d): String(d)
                case .text(let s): s
                }
            }
        }
    }

    package func conferenceExecute(_ sql: String, values: [String]) throws {
        try db.run(listed(sql, values), values.isEmpty ? [.null] : values.map { .text($0) })
    }

    package func insertConference(_ result: ConferenceResult) throws {
        try insertRows(ConferenceParticipantsTable.self, result.participants)
        try insertRows(ConferenceMatrixTable.self, result.cells, most: Self.intervalsPerStatement)
        try insertRows(FindingsTable.self, result.findings)
    }

    package func labelSQL(_ key: String) -> String { "json_extract(c.labels, '$.\(key)')" }
}

/// Disjoint sets of call ids; `groups` lists each set's members sorted, the sets by their first.
struct UnionFind {
    private var parent: [String: String] = [:]

    mutating func add(_ x: String) { if parent[x] == nil { parent[x] = x } }

    mutating func root(_ x: String) -> String {
        add(x)
        var r = x
        while let p = parent[r], p != r { r = p }
        var y = x
        while let p = parent[y], p != r {
            parent[y] = r
            y = p
        }
        return r
    }

    mutating func union(_ a: String, _ b: String) {
        let ra = root(a), rb = root(b)
        // The smaller id is the root, so the result does not depend on the order of the links.
        if ra < rb { parent[rb] = ra } else if rb < ra { parent[ra] = rb }
    }

    mutating func groups() -> [(String, [String])] {
        var out: [String: [String]] = [:]
        for x in parent.keys.sorted() { out[root(x), default: []].append(x) }
        return out.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }
}
