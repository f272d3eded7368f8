import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// How a step-path statement reaches the queue message it settles (the claim archives the step's
/// message) or sends (the result writes the orchestration's message): the one thing the claim and
/// result statements' variants differ by. Chosen once at boot (`StepQueueStatements`).
enum StepQueueAccess: Sendable, Equatable {
    /// PGMQ's functions: `pgmq.archive`, `tasker.pgmq_send_with_notify` (migration 0003).
    case functions
    /// Static SQL on the queue's own tables, of a known layout (`PGMQTableLayout.detect`): planned
    /// once per connection instead of on every call, as PGMQ's functions build their SQL.
    case tables(PGMQQueueTables, PGMQTableLayout)
    /// Nothing in PostgreSQL: a broker carries the messages (RabbitMQ). The claim's delivery is acked
    /// and the result is published after the statement commits.
    case broker
}

/// The claim, in one statement: retire the step's `enqueued` transition (legacy `pending` only when
/// every parent is complete) and insert `in_progress` after it (`StepTransitionSQL.move`), mark the
/// step in process with `attempts + 1`, and settle the message (`StepQueueAccess`), all only if the
/// retire matched.
///
/// Only a step of the namespace whose queue delivered the message is claimed: a message put into
/// another namespace's queue claims nothing (and archives nothing).
///
/// The claiming worker (`worker_uuid` in the metadata, `ClaimStamp`) must hold its liveness lease,
/// by the database's clock, for more than a quarter of the lease's duration yet (`lease`): a worker
/// whose renewals are not stored claims nothing, however its own clock sees it, so a rescuer that
/// finds the lease expired (`ResultStatement(retiring: .lost, …)`) never takes a step claimed under a lease
/// about to lapse. `lease_held` false says why nothing was claimed. Metadata without `worker_uuid`
/// (tools and tests; upstream's worker records none) claims without a lease.
///
/// Returns one row: `attempts` (NULL unless claimed), `inserted` (transitions written: 0 or 1),
/// `archived` (with an archive: NULL without a claim, else whether the message was still queued;
/// with a broker: whether the step was claimed) and `lease_held`.
struct ClaimStatement: Sendable {
    /// The statement and its parameters: `step_uuid`, `metadata`, `queue` (`worker_<ns>_queue`),
    /// `task_uuid` (NULL: any task), then `message_id` when it archives in PGMQ.
    let statement: NamedStatement
    /// Whether the statement archives the message (PGMQ), binding its id.
    let archivesMessage: Bool

    /// The claim whose message is settled by `access`. With `.tables`, the queue is the tables' one.
    init(settling access: StepQueueAccess) {
        var parameters = StatementParameters()
        let step = parameters.add("step_uuid")
        let metadata = parameters.add("metadata")
        let queue = parameters.add("queue")
        let task = parameters.add("task_uuid")
        let name: String
        let archive: (ctes: String, archived: String)
        switch access {
        case .functions:
            let message = parameters.add("message_id")
            name = "claim.archive_function"
            archive = ("", "CASE WHEN EXISTS (SELECT 1 FROM retired) THEN pgmq.archive(\(queue)::text, \(message)::bigint) END")
        case .tables(let tables, let layout):
            // The row deleted from `pgmq.q_<queue>` and inserted into `pgmq.a_<queue>` with the same
            // columns (`archived_at` from its default, `now()`), as `pgmq.archive` does.
            let message = parameters.add("message_id")
            name = "claim.archive_static"
            archive = (
                """
                ,
                archived AS (
                    DELETE FROM \(tables.queueTable) WHERE msg_id = \(message)::bigint AND EXISTS (SELECT 1 FROM retired)
                    RETURNING \(layout.archivedColumns)),
                archive_inserted AS (
                    INSERT INTO \(tables.archiveTable) (\(layout.archivedColumns))
                    SELECT \(layout.archivedColumns) FROM archived
                    RETURNING msg_id)
                """,
                "CASE WHEN EXISTS (SELECT 1 FROM retired) THEN EXISTS (SELECT 1 FROM archive_inserted) END"
            )
        case .broker:
            name = "claim.broker"
            archive = ("", "EXISTS (SELECT 1 FROM retired)")
        }
        let leaseHeld = "(SELECT held FROM lease)"
        let servedByTheQueue = """
            EXISTS (
                SELECT 1 FROM tasker.workflow_steps ws
                  JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
                  JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
                  JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
                 WHERE ws.workflow_step_uuid = \(step)::uuid AND (\(task)::uuid IS NULL OR ws.task_uuid = \(task)::uuid)
                   AND \(queue)::text = 'worker_' || tn.name || '_queue')
            """
        let claimable = """
            (to_state = 'enqueued'
             OR (to_state = 'pending' AND NOT EXISTS (
                 SELECT 1 FROM tasker.workflow_step_edges e
                  WHERE e.to_step_uuid = \(step)::uuid AND NOT EXISTS (
                        SELECT 1 FROM tasker.workflow_step_transitions p
                         WHERE p.workflow_step_uuid = e.from_step_uuid AND p.most_recent
                           AND p.to_state IN ('complete', 'resolved_manually')))))
            """
        let move = StepTransitionSQL.move(
            step: "\(step)::uuid", to: "'in_progress'", metadata: metadata, when: [leaseHeld, servedByTheQueue, claimable])
        let sql = """
            WITH lease AS MATERIALIZED (
                SELECT \(metadata)::jsonb->>'worker_uuid' IS NULL OR EXISTS (
                        SELECT 1 FROM tasker.worker_leases l
                         WHERE l.worker_uuid = (\(metadata)::jsonb->>'worker_uuid')::uuid
                           AND l.expires_at - (l.expires_at - l.renewed_at) / 4 > clock_timestamp()) AS held),
            \(move),
            step AS (
                UPDATE tasker.workflow_steps
                   SET in_process = true, attempts = COALESCE(attempts, 0) + 1,
                       last_attempted_at = NOW(), updated_at = NOW()
                 WHERE workflow_step_uuid = \(step)::uuid AND EXISTS (SELECT 1 FROM retired)
                RETURNING attempts)\(archive.ctes)
            SELECT (SELECT attempts FROM step) AS attempts, (SELECT count(*) FROM moved) AS inserted,
                   \(archive.archived) AS archived,
                   (SELECT held FROM lease) AS lease_held
            """
        statement = NamedStatement(name: name, sql: sql, parameters: parameters)
        archivesMessage = access != .broker
    }

    /// The statement for `request`, as the worker `metadata` claims it.
    func bound(to request: ClaimRequest, metadata: PostgresJSON) -> PipelineStatement {
        var values: [any PostgresEncodable] = [request.stepUUID, metadata, request.queue, request.taskUUID]
        if archivesMessage { values.append(request.msgID) }
        return .prepared(statement.prepared, values)
    }
}
