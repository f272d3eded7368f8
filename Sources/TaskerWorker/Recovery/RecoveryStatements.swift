import TaskerPostgres

/// The SQL of crash recovery: the liveness lock (on the liveness connection), the scan for steps
/// of dead workers and their recovery write (prepared, through the pool), and the `/health/detailed`
/// report of long-running `in_progress` steps.
enum RecoveryStatements {
    /// Session settings of the liveness connection: the server notices a vanished client (a node
    /// gone without closing its sockets) after about 25 s instead of the kernel's two hours, and
    /// so releases the dead worker's lock. Ignored on Unix-domain sockets.
    static let livenessSessionSettings = """
        SELECT set_config('tcp_keepalives_idle', '10', false), set_config('tcp_keepalives_interval', '5', false),
               set_config('tcp_keepalives_count', '3', false), set_config('statement_timeout', '10000', false)
        """

    /// Takes the liveness lock in shared mode (never waits). $1 class id, $2 key (both int4).
    static let takeLock = """
        SELECT pg_catalog.pg_try_advisory_lock_shared($1::int4, $2::int4) AS taken, pg_catalog.pg_backend_pid() AS pid
        """

    /// Whether THIS session holds the liveness lock with objid $1 (bigint). Run as a statement of
    /// its own after `takeLock`: behind a transaction-mode pooler it may run in another server
    /// session, which holds no such lock.
    static let holdsLock = """
        SELECT EXISTS (
            SELECT 1 FROM pg_catalog.pg_locks l
             WHERE l.pid = pg_catalog.pg_backend_pid() AND l.locktype = 'advisory'
               AND l.classid = \(LivenessKey.classID)::oid AND l.objsubid = 2 AND l.granted AND l.objid::bigint = $1
        ) AS held
        """

    /// Steps whose most recent transition is `in_progress` with a keyable `worker_uuid` whose
    /// liveness lock no session holds, oldest first, at most $1. Steps with no `worker_uuid` (the
    /// upstream worker records none) or a malformed one are never returned. One round trip.
    static let scan = PreparedStatement(
        """
        WITH live AS MATERIALIZED (\(LivenessSQL.heldLocks))
        SELECT wst.workflow_step_transition_uuid AS transition_uuid, wst.workflow_step_uuid AS step_uuid,
               ws.task_uuid, t.correlation_id, wst.metadata->>'worker_uuid' AS worker_uuid
          FROM tasker.workflow_step_transitions wst
          JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
          JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
         WHERE wst.most_recent AND wst.to_state = 'in_progress'
           AND wst.metadata->>'worker_uuid' ~ \(LivenessSQL.uuidPattern)
           AND NOT EXISTS (
                SELECT 1 FROM live
                 WHERE live.objid = CASE WHEN wst.metadata->>'worker_uuid' ~ \(LivenessSQL.uuidPattern)
                                         THEN \(LivenessSQL.objectID(of: "wst.metadata->>'worker_uuid'")) END)
         ORDER BY wst.created_at
         LIMIT $1
        """)

    /// The marker `recover` is derived at: `StepStatements.complete`'s retire condition.
    static let completeRetireCondition = "AND most_recent AND to_state = 'in_progress'\n"

    /// The normal completion (`StepStatements.complete`: result, transition, orchestration message
    /// in one statement), as a compare-and-set: only while the `in_progress` transition $7 that the
    /// scan saw is still the most recent one (the dead worker's claim: `complete`'s own-claim
    /// condition is left out), and while the dead worker's liveness lock (objid $8)
    /// is still not held. Several scanners at once: the first retires the transition, the others
    /// match nothing and write nothing.
    /// $1–$6 as `complete`, $7 transition uuid, $8 liveness objid (bigint).
    static let recover = PreparedStatement(
        StepStatements.complete.sql.replacing(StepStatements.ownClaimCondition, with: "").replacing(
            completeRetireCondition,
            with: completeRetireCondition
                + """
                               AND workflow_step_transition_uuid = $7::uuid
                               AND NOT EXISTS (SELECT 1 FROM (\(LivenessSQL.heldLocks)) live WHERE live.objid = $8::bigint)

                """))

    /// `recover` when a broker carries the results: nothing sent in PostgreSQL; the scanner
    /// publishes the `worker_lost` result after this commits.
    static let recoverWithoutSend = PreparedStatement(
        recover.sql.replacing(StepStatements.functionSend, with: StepStatements.brokerSend))

    /// Steps `in_progress` for longer than $1 seconds, by claiming worker (`unrecorded`: no
    /// `worker_uuid`; `malformed`: not a UUID), most steps first, at most 20 workers.
    static let staleInProgress = PreparedStatement(
        """
        SELECT CASE WHEN wst.metadata->>'worker_uuid' IS NULL THEN 'unrecorded'
                    WHEN wst.metadata->>'worker_uuid' ~ \(LivenessSQL.uuidPattern) THEN wst.metadata->>'worker_uuid'
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
