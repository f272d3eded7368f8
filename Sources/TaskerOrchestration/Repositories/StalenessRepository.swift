import Foundation
import TaskerPostgres

/// One row of upstream's `tasker.detect_and_transition_stale_tasks`: a stale task and what the sweep did.
struct StaleTaskOutcome: Sendable, Equatable {
    public var taskUUID: UUID
    public var namespace: String
    public var taskName: String
    /// The state the task was stale in (`waiting_for_dependencies`, `waiting_for_retry`, `steps_in_process`).
    public var state: String
    var minutesInState: Int
    var thresholdMinutes: Int
    /// Upstream's `StalenessAction`: `transitioned_to_dlq_and_error`, `moved_to_dlq_only`,
    /// `transitioned_to_error_only`, `transition_failed`, or (dry run) `would_transition_to_dlq_and_error`.
    public var action: String
    /// A pending `tasks_dlq` entry was created by this sweep.
    var movedToDLQ: Bool
    /// The task moved to `error` in this sweep.
    var transitionedToError: Bool
}

/// The staleness SQL: upstream's own functions (so the detection, the DLQ entry and the `error`
/// transition are upstream's by construction), serialized between orchestrations, plus the steps
/// added to the DLQ snapshot.
enum StalenessRepository {
    enum Statements {
        /// Locks the sweep's row of `tasker.maintenance_locks` (migration 0009) for the sweep's
        /// transaction, held by the sweep of one orchestration at a time: a second orchestration skips
        /// its sweep instead of racing the first one on the same tasks. A row lock, not an advisory
        /// lock: any role that can connect could hold an advisory key and stop every sweep; this row
        /// can be locked only with UPDATE on the table. The row is written again if it was deleted
        /// (the inserting transaction then holds it). Upstream's detector does not take it; against
        /// it, the function's own guards (the unique pending DLQ entry per task, the compare-and-set
        /// transition) keep one entry and one `error` transition per task.
        static let tryLock = PreparedStatement(
            """
            WITH written AS (
                INSERT INTO tasker.maintenance_locks (name) VALUES ('staleness_sweep') ON CONFLICT DO NOTHING RETURNING 1)
            SELECT EXISTS (SELECT 1 FROM written)
                OR EXISTS (SELECT 1 FROM tasker.maintenance_locks WHERE name = 'staleness_sweep' FOR UPDATE SKIP LOCKED)
                   AS locked
            """)
        static let detect = PreparedStatement(
            """
            SELECT task_uuid, namespace_name::text AS namespace_name, task_name::text AS task_name,
                   current_state::text AS current_state, time_in_state_minutes, staleness_threshold_minutes,
                   action_taken::text AS action_taken, moved_to_dlq, transition_success
              FROM tasker.detect_and_transition_stale_tasks(
                       $1::boolean, $2::integer, $3::integer, $4::integer, $5::integer, $6::integer)
            """)
        /// Adds `steps` to the snapshot of the entries just created (upstream's snapshot has the task
        /// only): per step its name, state and when it entered it, attempts, flags and the claiming worker.
        static let snapshotSteps = PreparedStatement(
            """
            UPDATE tasker.tasks_dlq d
               SET task_snapshot = d.task_snapshot || jsonb_build_object('steps', COALESCE((
                   SELECT jsonb_agg(jsonb_build_object(
                              'workflow_step_uuid', ws.workflow_step_uuid,
                              'name', ns.name,
                              'current_state', COALESCE(wst.to_state, 'pending'),
                              'state_entered_at', wst.created_at,
                              'attempts', ws.attempts,
                              'max_attempts', ws.max_attempts,
                              'retryable', ws.retryable,
                              'in_process', ws.in_process,
                              'processed', ws.processed,
                              'last_attempted_at', ws.last_attempted_at,
                              'backoff_request_seconds', ws.backoff_request_seconds,
                              'worker_uuid', wst.metadata -> 'worker_uuid')
                              ORDER BY ws.created_at, ws.workflow_step_uuid)
                     FROM tasker.workflow_steps ws
                     JOIN tasker.named_steps ns ON ns.named_step_uuid = ws.named_step_uuid
                     LEFT JOIN tasker.workflow_step_transitions wst
                            ON wst.workflow_step_uuid = ws.workflow_step_uuid AND wst.most_recent
                    WHERE ws.task_uuid = d.task_uuid), '[]'::jsonb))
             WHERE d.task_uuid = ANY($1::uuid[])
               AND d.resolution_status = 'pending'
               AND NOT (d.task_snapshot ? 'steps')
            """)
    }

    /// What one sweep asks the function for.
    struct SweepParameters: Sendable {
        var dryRun: Bool
        var batchSize: Int
        var waitingForDependenciesMinutes: Int
        var waitingForRetryMinutes: Int
        var stepsInProcessMinutes: Int
        var taskMaxLifetimeHours: Int
    }

    /// One sweep in one transaction: nil when another orchestration is sweeping (its lock is held),
    /// else the function's rows, with the steps added to the snapshots of the entries it created.
    static func sweep(_ c: isolated PostgresConnection, _ p: SweepParameters) throws(PostgresError) -> [StaleTaskOutcome]? {
        guard try c.query(Statements.tryLock).first?.decode("locked", as: Bool.self) == true else {
            return nil
        }
        let rows = try c.query(
            Statements.detect,
            [
                p.dryRun, p.batchSize, p.waitingForDependenciesMinutes, p.waitingForRetryMinutes,
                p.stepsInProcessMinutes, p.taskMaxLifetimeHours,
            ])
        var outcomes: [StaleTaskOutcome] = []
        for row in rows {
            outcomes.append(
                StaleTaskOutcome(
                    taskUUID: try row.decode("task_uuid"), namespace: try row.decode("namespace_name"),
                    taskName: try row.decode("task_name"), state: try row.decode("current_state"),
                    minutesInState: try row.decode("time_in_state_minutes"),
                    thresholdMinutes: try row.decode("staleness_threshold_minutes"),
                    action: try row.decode("action_taken"), movedToDLQ: try row.decode("moved_to_dlq"),
                    transitionedToError: try row.decode("transition_success")))
        }
        let entered = outcomes.filter(\.movedToDLQ).map(\.taskUUID)
        if !entered.isEmpty { try c.query(Statements.snapshotSteps, [PostgresArrayLiteral(entered)]) }
        return outcomes
    }
}
