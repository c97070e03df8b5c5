import Analysis
import MaterialScanning

/// The tables written for every call, each column declared once: name, constraint, and where
/// its value comes from (see `StoredTable`). `Data/SCHEMA.md` documents every column; a test
/// checks that it does.
///
/// Adding a column: add it at the end of its table's list with `addedIn:` one more than the
/// newest schema version (`Schema.version` follows, and the upgrade of an older file adds it:
/// `Schema.migrations`), then document it in `Data/SCHEMA.md`.

/// A call's row: its summary, whether its `end` record was seen, and its filing number.
package struct CallRow {
    package var summary: CallSummary
    package var complete: Bool
    package var key: Int64
}

package enum CallsTable: StoredTable {
    package typealias Row = CallRow
    package static let name = "calls"

    package static func columns<Visitor: ColumnVisitor<Row>>(_ t: inout Visitor) throws {
        try t.column("call_id", .primaryKey) { $0.summary.callID }
        try t.column("start_ts", .notNull) { $0.summary.startTs }
        try t.column("end_ts", .notNull) { $0.summary.endTs }
        try t.column("duration_ms", .notNull) { $0.summary.durationMs }
        try t.column("direction") { $0.summary.direction }
        try t.column("sdk") { $0.summary.sdk }
        try t.column("sdk_version") { $0.summary.sdkVersion }
        try t.column("app") { $0.summary.app }
        try t.column("app_version") { $0.summary.appVersion }
        try t.column("platform") { $0.summary.platform }
        try t.column("network") { $0.summary.network }
        try t.column("media") { $0.summary.media }
        try t.column("labels") { $0.summary.labelsJSON }
        try t.column("source") { $0.summary.source }
        try t.column("rest_sent_ms") { $0.summary.restSentMs }
        try t.column("ringing_ms") { $0.summary.ringingMs }
        try t.column("answer_ms") { $0.summary.answerMs }
        try t.column("media_ms") { $0.summary.mediaMs }
        try t.column("ice_outcome") { $0.summary.iceOutcome }
        try t.column("ice_disconnects") { $0.summary.iceDisconnects }
        try t.column("ice_disconnected_ms") { $0.summary.iceDisconnectedMs }
        try t.column("ip_changes") { $0.summary.ipChanges }
        try t.column("reconnects") { $0.summary.reconnects }
        try t.column("local_candidate_type") { $0.summary.localCandidateType }
        try t.column("remote_candidate_type") { $0.summary.remoteCandidateType }
        try t.column("transport") { $0.summary.transport }
        try t.column("relay_used") { $0.summary.relayUsed }
        try t.column("end_reason") { $0.summary.endReason }
        try t.column("end_status_code") { $0.summary.endStatusCode }
        try t.column("end_status_text") { $0.summary.endStatusText }
        try t.column("sip_status") { $0.summary.sipStatus }
        try t.column("sip_reason") { $0.summary.sipReason }
        try t.column("audio_codec") { $0.summary.audioCodec }
        try t.column("video_codec") { $0.summary.videoCodec }
        try t.column("mos_cq") { $0.summary.mosCQ }
        try t.column("mos_lq") { $0.summary.mosLQ }
        try t.column("r_factor") { $0.summary.rFactor }
        try t.column("mos_worst") { $0.summary.mosWorst }
        try t.column("video_score") { $0.summary.videoScore }
        try t.column("video_score_worst") { $0.summary.videoScoreWorst }
        try t.column("loss_pct") { $0.summary.lossPct }
        try t.column("jitter_ms") { $0.summary.jitterMs }
        try t.column("rtt_ms") { $0.summary.rttMs }
        try t.column("ice_rtt_ms") { $0.summary.iceRttMs }
        try t.column("concealment_pct") { $0.summary.concealmentPct }
        try t.column("sdk_quality_mean") { $0.summary.sdkQualityMean }
        try t.column("sdk_quality_min") { $0.summary.sdkQualityMin }
        try t.column("clock_skew_ms") { $0.summary.clockSkewMs }
        try t.column("grade", .notNull) { $0.summary.grade.rawValue }
        try t.column("grade_reason") { $0.summary.gradeReason }
        try t.column("finding_count", .notNull) { $0.summary.findingCount }
        try t.column("complete", .notNull) { $0.complete }
        // Version 2's migration adds it by hand (it also numbers the stored calls).
        try t.column("call_key") { $0.key }
        try t.column("jitter_buffer_ms", .none, addedIn: 3) { $0.summary.jitterBufferMs }
        try t.column("mos_cq_sent", .none, addedIn: 4) { $0.summary.mosCQSent }
        try t.column("mos_lq_sent", .none, addedIn: 4) { $0.summary.mosLQSent }
        try t.column("mos_worst_sent", .none, addedIn: 4) { $0.summary.mosWorstSent }
        try t.column("loss_pct_sent", .none, addedIn: 4) { $0.summary.lossPctSent }
        try t.column("jitter_ms_sent", .none, addedIn: 4) { $0.summary.jitterMsSent }
        try t.column("sdk_call_id", .none, addedIn: 4) { $0.summary.sdkCallID }
        try t.column("ice_gathering_ms", .none, addedIn: 4) { $0.summary.iceGatheringMs }
    }
}

package enum StreamsTable: StoredTable {
    package typealias Row = StreamSummary
    package static let name = "streams"

    package static func columns<Visitor: ColumnVisitor<Row>>(_ t: inout Visitor) throws {
        try t.column("call_id", .notNull) { $0.callID }
        try t.column("stream_id", .notNull) { $0.streamID }
        try t.column("ssrc") { $0.ssrc }
        try t.column("direction") { $0.direction.rawValue }
        try t.column("kind") { $0.kind.rawValue }
        try t.column("codec") { $0.codec }
        try t.column("clock_rate") { $0.clockRate }
        try t.column("source") { $0.source }
        try t.column("start_ts") { $0.startTs }
        try t.column("end_ts") { $0.endTs }
        try t.column("packets") { $0.packets }
        try t.column("bytes") { $0.bytes }
        try t.column("packets_lost") { $0.packetsLost }
        try t.column("loss_pct") { $0.lossPct }
        try t.column("jitter_mean_ms") { $0.jitterMeanMs }
        try t.column("jitter_max_ms") { $0.jitterMaxMs }
        try t.column("rtt_mean_ms") { $0.rttMeanMs }
        try t.column("bitrate_kbps") { $0.bitrateKbps }
        try t.column("concealment_pct") { $0.concealmentPct }
        try t.column("mos_mean") { $0.mosMean }
        try t.column("mos_min") { $0.mosMin }
        try t.column("fps_mean") { $0.fpsMean }
        try t.column("width_max") { $0.widthMax }
        try t.column("height_max") { $0.heightMax }
        try t.column("freeze_count") { $0.freezeCount }
        try t.column("freeze_ms") { $0.freezeMs }
        try t.column("video_score_mean") { $0.videoScoreMean }
        try t.column("quality_limitation") { $0.qualityLimitation }
        try t.column("counter_resets") { $0.counterResets }
        try t.column("score_source", .none, addedIn: 4) { $0.scoreSource }
        try t.column("xr_loss_pct", .none, addedIn: 4) { $0.xrLossPct }
        try t.column("xr_discard_pct", .none, addedIn: 4) { $0.xrDiscardPct }
        try t.column("xr_r_factor", .none, addedIn: 4) { $0.xrRFactor }
        try t.column("xr_mos_lq", .none, addedIn: 4) { $0.xrMosLQ }
        try t.column("xr_mos_cq", .none, addedIn: 4) { $0.xrMosCQ }
        try t.column("xr_jitter_buffer_ms", .none, addedIn: 4) { $0.xrJitterBufferMs }
    }
}

/// A call's intervals, filed under its `call_key` (read through the view `intervals`, which
/// names the call by its id).
package enum IntervalsTable: StoredTable {
    package typealias Row = IntervalMetrics
    package static let name = "interval_rows"
    package static let keyColumn: String? = "call_key"

    package static func columns<Visitor: ColumnVisitor<Row>>(_ t: inout Visitor) throws {
        try t.column("stream_id", .notNull) { $0.streamID }
        try t.column("start_ts", .notNull) { $0.startTs }
        try t.column("end_ts", .notNull) { $0.endTs }
        try t.column("packets") { $0.packets }
        try t.column("packets_lost") { $0.packetsLost }
        try t.column("loss_pct") { $0.lossPct }
        try t.column("jitter_ms") { $0.jitterMs }
        try t.column("rtt_ms") { $0.rttMs }
        try t.column("ice_rtt_ms") { $0.iceRttMs }
        try t.column("bitrate_kbps") { $0.bitrateKbps }
        try t.column("concealment_pct") { $0.concealmentPct }
        try t.column("jitter_buffer_ms") { $0.jitterBufferMs }
        try t.column("burst_ratio") { $0.burstRatio }
        try t.column("r_factor") { $0.rFactor }
        try t.column("mos_cq") { $0.mosCQ }
        try t.column("mos_lq") { $0.mosLQ }
        try t.column("fps") { $0.fps }
        try t.column("width") { $0.width }
        try t.column("height") { $0.height }
        try t.column("freeze_count") { $0.freezeCount }
        try t.column("freeze_ms") { $0.freezeMs }
        try t.column("video_score") { $0.videoScore }
        try t.column("quality_limitation") { $0.qualityLimitation }
    }
}

/// A call's timeline, filed under its `call_key` (read through the view `events`).
package enum EventsTable: StoredTable {
    package typealias Row = CallEvent
    package static let name = "event_rows"
    package static let keyColumn: String? = "call_key"

    package static func columns<Visitor: ColumnVisitor<Row>>(_ t: inout Visitor) throws {
        try t.column("ts", .notNull) { $0.ts }
        try t.column("kind", .notNull) { $0.kind }
        try t.column("action") { $0.action }
        try t.column("type") { $0.type }
        try t.column("detail") { $0.detailJSON }
    }
}

package enum FindingsTable: StoredTable {
    package typealias Row = Finding
    package static let name = "findings"

    package static func columns<Visitor: ColumnVisitor<Row>>(_ t: inout Visitor) throws {
        try t.column("call_id", .notNull) { $0.callID }
        try t.column("code", .notNull) { $0.code }
        try t.column("severity", .notNull) { $0.severity.rawValue }
        try t.column("start_ts", .notNull) { $0.startTs }
        try t.column("duration_ms", .notNull) { $0.durationMs }
        try t.column("stream_id") { $0.streamID }
        try t.column("value") { $0.value }
        try t.column("detail") { $0.detail }
    }
}

/// A call's peer connections (schema version 6, made by its migration `v6-peer-connections`):
/// one row each, keyed by call id and pc as `streams` are.
package enum PeerConnectionsTable: StoredTable {
    package typealias Row = PeerConnectionSummary
    package static let name = "peer_connections"

    package static func columns<Visitor: ColumnVisitor<Row>>(_ t: inout Visitor) throws {
        try t.column("call_id", .notNull) { $0.callID }
        try t.column("pc_id", .notNull) { $0.pcID }
        try t.column("first_ts", .notNull) { $0.firstTs }
        try t.column("last_ts", .notNull) { $0.lastTs }
        try t.column("role", .notNull) { $0.role }
        try t.column("local_candidate_type") { $0.localCandidateType }
        try t.column("remote_candidate_type") { $0.remoteCandidateType }
        try t.column("transport") { $0.transport }
        try t.column("relay_used", .notNull) { $0.relayUsed }
        try t.column("pair_changes", .notNull) { $0.pairChanges }
        try t.column("streams", .notNull) { $0.streams }
        try t.column("packets", .notNull) { $0.packets }
        try t.column("carried_media", .notNull) { $0.carriedMedia }
        try t.column("ice_state") { $0.iceState }
        try t.column("connection_state") { $0.connectionState }
        try t.column("connected_ts") { $0.connectedTs }
        try t.column("connected_ms", .notNull) { $0.connectedMs }
        try t.column("failed", .notNull) { $0.failed }
        try t.column("failed_ts") { $0.failedTs }
        try t.column("disconnects", .notNull) { $0.disconnects }
        try t.column("disconnected_ms", .notNull) { $0.disconnectedMs }
        try t.column("reconnects", .notNull) { $0.reconnects }
    }
}

/// A call's compact accumulated inputs (zstd), merged with records of the call that come later.
package struct MaterialRow {
    package var callID: String
    package var material: [UInt8]
}

package enum MaterialTable: StoredTable {
    package typealias Row = MaterialRow
    package static let name = "call_material"

    package static func columns<Visitor: ColumnVisitor<Row>>(_ t: inout Visitor) throws {
        try t.column("call_id", .primaryKey) { $0.callID }
        try t.column("material", .notNull) { $0.material }
    }
}

/// The legs of conferences (schema version 7, migration `v7-conferences`), recomputed for a
/// conference whenever its legs change (`Conferences.swift`).
package enum ConferenceParticipantsTable: StoredTable {
    package typealias Row = ConferenceParticipant
    package static let name = "conference_participants"

    package static func columns<Visitor: ColumnVisitor<Row>>(_ t: inout Visitor) throws {
        try t.column("conference_id", .notNull) { $0.conferenceID }
        try t.column("call_id", .primaryKey) { $0.callID }
        try t.column("participant", .notNull) { $0.participant }
        try t.column("joined_ts", .notNull) { $0.joinedTs }
        try t.column("left_ts", .notNull) { $0.leftTs }
        try t.column("linked_by", .notNull) { $0.linkedBy }
        try t.column("streams_sent", .notNull) { $0.streamsSent }
        try t.column("streams_received", .notNull) { $0.streamsReceived }
        try t.column("streams_matched", .notNull) { $0.streamsMatched }
        try t.column("poor_received_minutes", .notNull) { $0.poorReceivedMinutes }
        try t.column("own_downlink_minutes", .notNull) { $0.ownDownlinkMinutes }
        try t.column("spoiled_for_others_minutes", .notNull) { $0.spoiledForOthersMinutes }
        try t.column("spoiled_participants", .notNull) { $0.spoiledParticipants }
        try t.column("call_key", .notNull) { $0.callKey }
    }
}

/// Every received stream of a conference per slot, beside its sender's uplink, and the cause of
/// each poor slot (version 7).
package enum ConferenceMatrixTable: StoredTable {
    package typealias Row = ConferenceCell
    package static let name = "conference_matrix"

    package static func columns<Visitor: ColumnVisitor<Row>>(_ t: inout Visitor) throws {
        try t.column("conference_id", .notNull) { $0.conferenceID }
        try t.column("receiver_call_id", .notNull) { $0.receiverCallID }
        try t.column("receiver_participant", .notNull) { $0.receiverParticipant }
        try t.column("stream_id", .notNull) { $0.streamID }
        try t.column("kind", .notNull) { $0.kind }
        try t.column("sender_call_id") { $0.senderCallID }
        try t.column("sender_participant") { $0.senderParticipant }
        try t.column("sender_stream_id") { $0.senderStreamID }
        try t.column("matched_by", .notNull) { $0.matchedBy }
        try t.column("slot_start_ts", .notNull) { $0.slotStartTs }
        try t.column("slot_end_ts", .notNull) { $0.slotEndTs }
        try t.column("loss_pct") { $0.lossPct }
        try t.column("jitter_ms") { $0.jitterMs }
        try t.column("concealment_pct") { $0.concealmentPct }
        try t.column("mos_lq") { $0.mosLQ }
        try t.column("freeze_pct") { $0.freezePct }
        try t.column("uplink_loss_pct") { $0.uplinkLossPct }
        try t.column("uplink_jitter_ms") { $0.uplinkJitterMs }
        try t.column("uplink_rtt_ms") { $0.uplinkRttMs }
        try t.column("poor", .notNull) { $0.poor }
        try t.column("cause") { $0.cause }
    }
}
