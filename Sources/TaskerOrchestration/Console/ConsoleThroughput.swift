import Foundation

/// The console's throughput and latency chart (`GET /console/api/throughput`): the workers' results
/// of the last minutes in per-minute buckets, each with the steps completed (successful results),
/// the steps failed, and the 50th and 95th percentile of the step latency, the time from a step's
/// claim (its `in_progress` transition) to its result (the transition right after it,
/// `enqueued_for_orchestration` or `enqueued_as_error_for_orchestration`), from the transitions'
/// own timestamps.
extension TaskQueries {
    /// `{"window_minutes","bucket_seconds","since","results_counted","capped","buckets":[{start,completed,
    /// failed,p50_ms,p95_ms}]}` (``ConsoleThroughputStatements/throughput``): one bucket per minute,
    /// oldest first, the current (partial) minute last; `p50_ms`/`p95_ms` null for a minute without results.
    func consoleThroughput() async throws(TaskAPIError) -> Data {
        let rows = try await documents(
            ConsoleThroughputStatements.throughput,
            [ConsoleThroughputStatements.windowMinutes, ConsoleThroughputStatements.maxResults],
            doing: "reading the step throughput")
        return rows.first ?? Data(#"{"buckets":[]}"#.utf8)
    }
}

/// The SQL behind ``TaskQueries/consoleThroughput()``. Bounded by a time window (``windowMinutes``)
/// and a number of results (``maxResults``, the newest first; `capped` says the window held more,
/// and then its oldest minutes count only part of theirs). The results are found through
/// `workflow_step_result_audit` (one row per worker result transition, written by the
/// `trg_step_result_audit` trigger in the same transaction, indexed by `recorded_at`), so the
/// statement never scans the transitions table; each result's transition and the claim before it
/// are then read by key.
enum ConsoleThroughputStatements {
    /// The minutes the chart covers (the current one included).
    static let windowMinutes = 15
    /// The most results one answer counts.
    static let maxResults = 100_000

    /// `$1` ``windowMinutes``, `$2` ``maxResults``. Minutes are those of the schema's UTC timestamps,
    /// cut by the database's clock.
    static let throughput = """
        WITH clock AS (
            SELECT date_trunc('minute', clock_timestamp() AT TIME ZONE 'UTC') - make_interval(mins => $1::int - 1) AS since
        ), results AS (
            SELECT a.workflow_step_transition_uuid AS transition_uuid, a.success
              FROM tasker.workflow_step_result_audit a, clock
             WHERE a.recorded_at >= clock.since
             ORDER BY a.recorded_at DESC
             LIMIT $2::bigint
        ), timed AS (
            SELECT date_trunc('minute', rt.created_at) AS minute, r.success,
                   (EXTRACT(EPOCH FROM rt.created_at - claim.created_at) * 1000)::float8 AS latency_ms
              FROM results r
              JOIN tasker.workflow_step_transitions rt ON rt.workflow_step_transition_uuid = r.transition_uuid
              LEFT JOIN tasker.workflow_step_transitions claim
                ON claim.workflow_step_uuid = rt.workflow_step_uuid AND claim.sort_key = rt.sort_key - 1
               AND claim.to_state = 'in_progress'
             CROSS JOIN clock
             WHERE rt.created_at >= clock.since
        ), buckets AS (
            SELECT m.minute,
                   count(t.success) FILTER (WHERE t.success) AS completed,
                   count(t.success) FILTER (WHERE NOT t.success) AS failed,
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY t.latency_ms) AS p50,
                   percentile_cont(0.95) WITHIN GROUP (ORDER BY t.latency_ms) AS p95
              FROM clock
             CROSS JOIN LATERAL generate_series(
                   clock.since, clock.since + make_interval(mins => $1::int - 1), interval '1 minute') AS m(minute)
              LEFT JOIN timed t ON t.minute = m.minute
             GROUP BY m.minute
        )
        SELECT jsonb_build_object(
                'window_minutes', $1::int, 'bucket_seconds', 60,
                'since', \(TaskQueryStatements.utc("clock.since")),
                'results_counted', (SELECT count(*) FROM results),
                'capped', (SELECT count(*) FROM results) >= $2::bigint,
                'buckets', (
                    SELECT jsonb_agg(jsonb_build_object(
                            'start', \(TaskQueryStatements.utc("b.minute")), 'completed', b.completed, 'failed', b.failed,
                            'p50_ms', round(b.p50::numeric, 1), 'p95_ms', round(b.p95::numeric, 1))
                            ORDER BY b.minute)
                      FROM buckets b))::text AS doc
          FROM clock
        """
}
