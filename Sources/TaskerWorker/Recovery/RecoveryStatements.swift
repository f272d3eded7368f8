import TaskerPostgres

/// The SQL of crash recovery: the scan for steps of dead workers (no unexpired liveness lease in
/// `tasker.worker_leases`, `WorkerLeaseRepository`; prepared, through the pool), and the
/// `/health/detailed` report of long-running `in_progress` steps. Their recovery write is the result
/// statement retiring a lost claim (`ResultStatement(retiring: .lost, …)`).
enum RecoveryStatements {
    /// A `worker_uuid` this code trusts (a UUID in its lowercase text form); others are never touched.
    static let uuidPattern = "'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'"

    /// The workers alive now: an unexpired lease, by the database's clock (`worker` as text).
    static let liveWorkers = """
        SELECT lease.worker_uuid::text AS worker FROM tasker.worker_leases lease WHERE lease.expires_at > clock_timestamp()
        """

    /// Steps whose most recent transition is `in_progress` with a trusted `worker_uuid` that has no
    /// unexpired lease, oldest first, at most $1. Steps with no `worker_uuid` (the
    /// upstream worker records none) or a malformed one are never returned. One round trip.
    static let scan = PreparedStatement(
        """
        WITH live AS MATERIALIZED (\(liveWorkers))
        SELECT wst.workflow_step_transition_uuid AS transition_uuid, wst.workflow_step_uuid AS step_uuid,
               ws.task_uuid, t.correlation_id, wst.metadata->>'worker_uuid' AS worker_uuid
          FROM tasker.workflow_step_transitions wst
          JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
          JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
         WHERE wst.most_recent AND wst.to_state = 'in_progress'
           AND wst.metadata->>'worker_uuid' ~ \(uuidPattern)
           AND NOT EXISTS (SELECT 1 FROM live WHERE live.worker = wst.metadata->>'worker_uuid')
         ORDER BY wst.created_at
         LIMIT $1
        """)

    /// The scanner keeps its turn (migration 0011) for $2 more seconds, right before each scan: a row
    /// when worker $1 still holds it (expired or not, as long as nobody took it since), none when another
    /// worker took it (then this one does not scan). Unnamed: it works through a transaction pooler.
    static let keepTurn = """
        UPDATE tasker.recovery_scanner SET held_until = clock_timestamp() + make_interval(secs => $2::float8)
         WHERE holder = $1::uuid
        RETURNING true AS kept
        """

    /// Gives the turn up (the scanner stopped): the next renewal of a recovering worker takes it.
    static let releaseTurn = """
        UPDATE tasker.recovery_scanner SET held_until = '-infinity' WHERE holder = $1::uuid
        """

    /// Steps `in_progress` for longer than $1 seconds, by claiming worker (`unrecorded`: no
    /// `worker_uuid`; `malformed`: not a UUID), most steps first, at most 20 workers.
    static let staleInProgress = PreparedStatement(
        """
        SELECT CASE WHEN wst.metadata->>'worker_uuid' IS NULL THEN 'unrecorded'
                    WHEN wst.metadata->>'worker_uuid' ~ \(uuidPattern) THEN wst.metadata->>'worker_uuid'
                    ELSE 'malformed' END AS worker,
               count(*) AS steps,
               EXTRACT(EPOCH FROM NOW() - min(wst.created_at))::float8 AS oldest_seconds
          FROM tasker.workflow_step_transitions wst
         WHERE wst.most_recent AND wst.to_state = 'in_progress'
           AND wst.created_at < NOW() - make_interval(secs => $1::float8)
         GROUP BY 1
         ORDER BY 2 DESC, 1
         LIMIT 20
        """)
}
