/// What SQL says differently in the two stores, for statements written once: the views
/// (`Views.sql`). Each function returns an expression with the same value in both.
struct SQLDialect: Sendable {
    /// How a view is made: SQLite keeps existing ones (`Schema.makeViews` drops those whose
    /// definitions changed); PostgreSQL's are dropped first.
    var createView: String
    /// Epoch seconds as `YYYY-MM-DD HH:MM:SS` (UTC).
    var datetime: @Sendable (String) -> String
    /// Epoch seconds as `YYYY-MM-DD` (UTC).
    var date: @Sendable (String) -> String
    /// A REAL rounded to `places` decimals, half away from zero, still a REAL.
    var round: @Sendable (String, Int) -> String
    /// The values of a group joined with `separator` (SQL text), in the order the group's rows
    /// arrive (the view sorts them first).
    var joined: @Sendable (_ value: String, _ separator: String) -> String

    static let sqlite = SQLDialect(
        createView: "CREATE VIEW IF NOT EXISTS",
        datetime: { "datetime(\($0), 'unixepoch')" },
        date: { "date(\($0), 'unixepoch')" },
        round: { "round(\($0), \($1))" },
        joined: { "group_concat(\($0), \($1))" })

    static let postgres = SQLDialect(
        createView: "CREATE VIEW",
        datetime: { "to_char(to_timestamp(\($0)) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')" },
        date: { "to_char(to_timestamp(\($0)) AT TIME ZONE 'UTC', 'YYYY-MM-DD')" },
        round: { "round((\($0))::numeric, \($1))::double precision" },
        // PostgreSQL does not promise to keep a subquery's order into an aggregate: it is said.
        joined: { "string_agg(\($0), \($1) ORDER BY \($0))" })
}

/// The views of `Data/SCHEMA.md`, written once and rendered for each store
/// (`Schema.views`, `PostgresSchema.views`): the same columns and rows in both, which
/// `DatabaseComparison.crossStoreTables` holds them to. Their names are `Schema.viewNames`.
enum Views {
    static func sql(_ d: SQLDialect) -> String {
        """
        \(d.createView) intervals (call_id, \(Schema.intervalColumns)) AS
            SELECT c.call_id, \(Schema.prefixed("i", Schema.intervalColumns)) FROM interval_rows i JOIN calls c ON c.call_key = i.call_key;

        \(d.createView) events (call_id, \(Schema.eventColumns)) AS
            SELECT c.call_id, \(Schema.prefixed("e", Schema.eventColumns)) FROM event_rows e JOIN calls c ON c.call_key = e.call_key;

        \(d.createView) worst_calls AS
            SELECT call_id, \(d.datetime("start_ts / 1000")) AS started, duration_ms / 1000 AS seconds,
                   grade, \(d.round("mos_worst", 2)) AS mos_worst, \(d.round("mos_cq", 2)) AS mos, \(d.round("loss_pct", 2)) AS loss_pct,
                   \(d.round("jitter_ms", 1)) AS jitter_ms, round(rtt_ms) AS rtt_ms, network, platform, grade_reason
            FROM calls WHERE grade IN ('no_media', 'poor', 'fair')
            ORDER BY CASE grade WHEN 'no_media' THEN 0 WHEN 'poor' THEN 1 ELSE 2 END, mos_worst, call_id;

        \(d.createView) worst_calls_last_day AS
            SELECT * FROM worst_calls
            WHERE started >= \(d.datetime("(SELECT max(start_ts) FROM calls) / 1000 - 86400"));

        \(d.createView) poor_share_by_network AS
            SELECT network, count(*) AS calls,
                   count(*) FILTER (WHERE grade = 'poor') AS poor, count(*) FILTER (WHERE grade = 'no_media') AS no_media,
                   \(d.round("100.0 * count(*) FILTER (WHERE grade IN ('poor', 'no_media')) / count(*)", 1)) AS poor_pct,
                   \(d.round("avg(mos_cq)", 2)) AS mos_mean
            FROM calls WHERE grade != 'unanswered' GROUP BY network ORDER BY poor_pct DESC;

        \(d.createView) setup_p95_by_app_version AS
            WITH ranked AS (
                SELECT app || ' ' || app_version AS app_version, media_ms,
                       row_number() OVER (PARTITION BY app, app_version ORDER BY media_ms) AS rn,
                       count(*) OVER (PARTITION BY app, app_version) AS n
                FROM calls WHERE media_ms IS NOT NULL)
            SELECT app_version, max(n) AS calls,
                   min(CASE WHEN rn >= 0.50 * n THEN media_ms END) AS setup_p50_ms,
                   min(CASE WHEN rn >= 0.95 * n THEN media_ms END) AS setup_p95_ms
            FROM ranked GROUP BY app_version ORDER BY setup_p95_ms DESC;

        \(d.createView) findings_summary AS
            SELECT code, severity, count(DISTINCT call_id) AS calls, count(*) AS occurrences,
                   \(d.round("avg(duration_ms) / 1000.0", 1)) AS mean_seconds
            FROM findings GROUP BY code, severity ORDER BY calls DESC;

        \(d.createView) conversation_legs AS
            SELECT v.conversation_id, v.linked_by, c.call_id, c.start_ts, c.direction, c.sdk, c.grade,
                   c.mos_cq, c.mos_worst, c.loss_pct, c.jitter_ms,
                   c.mos_cq_sent, c.mos_worst_sent, c.loss_pct_sent, c.jitter_ms_sent, c.rtt_ms, c.grade_reason
            FROM call_conversations v JOIN calls c USING (call_id);

        \(d.createView) conversations AS
            SELECT conversation_id, min(linked_by) AS linked_by, count(*) AS legs, \(d.joined("call_id", "' '")) AS call_ids,
                   \(d.datetime("min(start_ts) / 1000")) AS started,
                   min(mos_cq) AS mos_min, max(mos_cq) AS mos_max, min(mos_worst) AS mos_worst,
                   (SELECT w.call_id FROM conversation_legs w WHERE w.conversation_id = l.conversation_id
                    ORDER BY w.mos_cq IS NULL, w.mos_cq, w.call_id LIMIT 1) AS worst_leg,
                   (SELECT w.grade FROM conversation_legs w WHERE w.conversation_id = l.conversation_id
                    ORDER BY CASE w.grade WHEN 'no_media' THEN 0 WHEN 'poor' THEN 1 WHEN 'fair' THEN 2 WHEN 'good' THEN 3 ELSE 4 END,
                             w.call_id LIMIT 1) AS grade
            FROM (SELECT * FROM conversation_legs ORDER BY conversation_id, call_id) l
            GROUP BY conversation_id ORDER BY min(start_ts);

        \(d.createView) daily_quality AS
            SELECT \(d.date("bucket_ts / 1000")) AS day, calls, good, fair, poor, no_media, unanswered, unmeasured,
                   \(d.round("100.0 * (poor + no_media) / CASE WHEN calls - unanswered > 1 THEN calls - unanswered ELSE 1 END", 1)) AS poor_pct,
                   \(d.round("mos_p50", 2)) AS mos_p50, \(d.round("mos_p5", 2)) AS mos_p5, round(setup_p95) AS setup_p95_ms
            FROM rollups WHERE period = 'day' AND dimension = 'all' ORDER BY bucket_ts;

        \(ConferenceSchema.views(create: d.createView, round: d.round))
        """
    }
}

extension Schema {
    /// The views every database has, by name: those of `views` (SQLite) and
    /// `PostgresSchema.views`, which a test holds to the statements. Only these are dropped when
    /// their definitions change; views users made themselves are left alone.
    package static let viewNames =
        [
            "intervals", "events", "worst_calls", "worst_calls_last_day", "poor_share_by_network", "setup_p95_by_app_version",
            "findings_summary", "conversation_legs", "conversations", "daily_quality",
        ] + ConferenceSchema.viewNames
}
