import Foundation

/// The console's live view of the workers (`GET /console/api/workers`): the workers alive by the
/// liveness crash recovery uses (an unexpired row in `tasker.worker_leases`, migration 0008, by the
/// database's clock), the namespaces each works for, and its steps in flight (steps whose current
/// transition is `in_progress` with the worker's `worker_uuid` in its metadata: what the claim writes,
/// `ClaimStamp`, and what crash recovery reads, `RecoveryStatements.scan`).
extension TaskQueries {
    /// `{"now","workers":[{worker_uuid,hostname,started_at,renewed_at,expires_at,recovers,namespaces,
    /// steps_in_flight,steps:[{step_uuid,task_uuid,name,namespace,since}]}],"truncated","expired_leases"}`
    /// (``ConsoleWorkerStatements/workers``).
    func consoleWorkers() async throws(TaskAPIError) -> Data {
        let rows = try await documents(
            ConsoleWorkerStatements.workers,
            [
                ConsoleWorkerStatements.maxWorkers, ConsoleWorkerStatements.maxStepsPerWorker,
                ConsoleWorkerStatements.recentMinutes, ConsoleWorkerStatements.recentResultsPerWorker,
            ],
            doing: "reading the live workers")
        return rows.first ?? Data(#"{"workers":[],"truncated":false,"expired_leases":0}"#.utf8)
    }
}

/// The SQL behind ``TaskQueries/consoleWorkers()``. Bounded: at most ``maxWorkers`` workers (the
/// oldest leases first; `truncated` says there were more), ``maxStepsPerWorker`` steps listed per
/// worker (`steps_in_flight` counts them all), and a worker's namespaces read from its steps in flight
/// and its newest ``recentResultsPerWorker`` results of the last ``recentMinutes`` minutes (the lease
/// row names no namespaces; `workflow_step_result_audit` keeps the `worker_uuid` of each result).
enum ConsoleWorkerStatements {
    /// The most workers one answer lists.
    static let maxWorkers = 200
    /// The most steps in flight listed per worker.
    static let maxStepsPerWorker = 20
    /// How far back a worker's results name its namespaces.
    static let recentMinutes = 15
    /// The most results per worker read for its namespaces.
    static let recentResultsPerWorker = 200

    /// `$1` ``maxWorkers``, `$2` ``maxStepsPerWorker``, `$3` ``recentMinutes``, `$4`
    /// ``recentResultsPerWorker``. Lease times are `timestamptz`, shown in UTC; step times are the
    /// schema's UTC `timestamp`s.
    static let workers = """
        WITH clock AS (
            SELECT clock_timestamp() AS at
        ), live AS (
            SELECT l.worker_uuid, l.hostname, l.started_at, l.renewed_at, l.expires_at, l.recovers
              FROM tasker.worker_leases l, clock
             WHERE l.expires_at > clock.at
             ORDER BY l.started_at, l.worker_uuid
             LIMIT $1::bigint
        ), in_flight AS (
            SELECT wst.metadata->>'worker_uuid' AS worker, wst.created_at AS since,
                   ws.workflow_step_uuid AS step_uuid, ws.task_uuid, ns.name AS step_name, tn.name AS namespace
              FROM tasker.workflow_step_transitions wst
              JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
              JOIN tasker.named_steps ns ON ns.named_step_uuid = ws.named_step_uuid
              JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
              JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
              JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
             WHERE wst.most_recent AND wst.to_state = 'in_progress'
               AND wst.metadata->>'worker_uuid' IN (SELECT live.worker_uuid::text FROM live)
        ), recent AS (
            SELECT l.worker_uuid::text AS worker, tn.name AS namespace
              FROM live l
             CROSS JOIN clock
             CROSS JOIN LATERAL (
                   SELECT a.task_uuid
                     FROM tasker.workflow_step_result_audit a
                    WHERE a.worker_uuid = l.worker_uuid
                      AND a.recorded_at > (clock.at AT TIME ZONE 'UTC') - make_interval(mins => $3::int)
                    ORDER BY a.recorded_at DESC
                    LIMIT $4::bigint) a
              JOIN tasker.tasks t ON t.task_uuid = a.task_uuid
              JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
              JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
        )
        SELECT jsonb_build_object(
                'now', \(TaskQueryStatements.utc("(clock.at AT TIME ZONE 'UTC')")),
                'workers', coalesce((
                    SELECT jsonb_agg(jsonb_build_object(
                            'worker_uuid', l.worker_uuid, 'hostname', l.hostname,
                            'started_at', \(TaskQueryStatements.utc("(l.started_at AT TIME ZONE 'UTC')")),
                            'renewed_at', \(TaskQueryStatements.utc("(l.renewed_at AT TIME ZONE 'UTC')")),
                            'expires_at', \(TaskQueryStatements.utc("(l.expires_at AT TIME ZONE 'UTC')")),
                            'recovers', l.recovers,
                            'namespaces', coalesce((
                                SELECT jsonb_agg(DISTINCT n.namespace ORDER BY n.namespace)
                                  FROM (SELECT f.namespace FROM in_flight f WHERE f.worker = l.worker_uuid::text
                                        UNION ALL
                                        SELECT r.namespace FROM recent r WHERE r.worker = l.worker_uuid::text) n), '[]'::jsonb),
                            'steps_in_flight', (SELECT count(*) FROM in_flight f WHERE f.worker = l.worker_uuid::text),
                            'steps', coalesce((
                                SELECT jsonb_agg(jsonb_build_object(
                                        'step_uuid', s.step_uuid, 'task_uuid', s.task_uuid, 'name', s.step_name,
                                        'namespace', s.namespace, 'since', \(TaskQueryStatements.utc("s.since")))
                                        ORDER BY s.since, s.step_uuid)
                                  FROM (SELECT f.* FROM in_flight f WHERE f.worker = l.worker_uuid::text
                                         ORDER BY f.since, f.step_uuid LIMIT $2::bigint) s), '[]'::jsonb))
                            ORDER BY l.started_at, l.worker_uuid)
                      FROM live l), '[]'::jsonb),
                'truncated', (SELECT count(*) FROM tasker.worker_leases l WHERE l.expires_at > clock.at) > $1::bigint,
                'expired_leases', (SELECT count(*) FROM tasker.worker_leases l WHERE l.expires_at <= clock.at))::text AS doc
          FROM clock
        """
}
