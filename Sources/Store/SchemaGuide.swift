/// One line for each table and view that people query, in the order `callstats query` lists
/// them: the answer to "what is in here?" without opening `Data/SCHEMA.md`. A test holds this
/// list to the tables and views a new database has, so that neither can drift from the other.
public enum SchemaGuide {
    public static let relations: [(name: String, summary: String)] = [
        ("calls", "one row per call: dimensions, setup, ICE, end reason, scores, grade and why"),
        ("streams", "one row per RTP stream of a call: totals, loss, jitter, RTT, MOS, video"),
        ("peer_connections", "one row per peer connection of a call: its pair, transport, states, outages, packets"),
        ("intervals", "one row per stream per sampling interval: the call's quality over time"),
        ("events", "the call's timeline: SDK events, quality callbacks, the end"),
        ("findings", "what went wrong in a call, when, for how long, and how bad"),
        ("rollups", "hourly and daily counts and percentiles by dimension (network, platform, sdk, …)"),
        ("worst_calls", "which calls were bad, worst first, with why"),
        ("worst_calls_last_day", "the same for the 24 hours before the newest call"),
        ("poor_share_by_network", "share of poor calls by network type"),
        ("setup_p95_by_app_version", "time to media by app version"),
        ("findings_summary", "how many calls have each finding"),
        ("daily_quality", "quality per day: grades, MOS percentiles, setup"),
        ("conversations", "the legs of one conversation as one: legs, what each heard, the worse of them"),
        ("conversation_legs", "each linked call with its conversation and both directions' scores"),
        ("call_conversations", "which conversation each linked call belongs to, and how it was linked"),
        ("conferences", "one row per group call: participants, spoiled minutes by cause, the worst uplink"),
        ("conference_offenders", "participants whose uplink spoiled others' streams (or whose downlink their own), worst first"),
        ("conference_participants", "each leg of a conference: who, when, what it sent and received, minutes spoiled"),
        ("conference_matrix", "each received stream of a conference per 10-s slot, beside its sender's uplink, with the cause"),
        ("meta", "the schema version and the settings the calls were graded with"),
        ("ingested_files", "the ledger of log content already read"),
        ("call_material", "each call's compact inputs, so later records merge and regrade needs no logs"),
        ("rollup_pending", "rollup buckets a run has yet to rebuild (empty after every finished run)"),
        ("interval_rows", "storage behind the view intervals (calls by call_key): query the view"),
        ("event_rows", "storage behind the view events (calls by call_key): query the view"),
    ]
}
