import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// A step's result in one statement: retire its `in_progress` transition and insert the result state
/// after it (`StepTransitionSQL.move`), store `results` with `in_process = false`, and send the
/// message to orchestration (`StepQueueAccess`: PGMQ's notifying send, the same as static SQL, or
/// nothing when a broker publishes it after the commit), all only if the retire matched.
///
/// Whose `in_progress` transition it retires (`ResultStatement.Claim`):
/// - `.own` (the completion stage): the writer's own claim, whose `worker_uuid` is the one of the
///   result's metadata. Upstream's worker claims check-then-write (it reads `enqueued`, then writes
///   `in_progress` without re-checking), so its claim can land over ours while our handler runs;
///   from then on the attempt is upstream's, and our result is refused (`.notInProgress`) instead of
///   being stored over its claim.
/// - `.lost` (crash recovery, `RecoveryScanner`): a dead worker's, as a compare-and-set: only while
///   the transition the scan saw (`transition_uuid`) is still the most recent one, and while its
///   worker (`worker_uuid`) still has no unexpired lease. Several scanners at once: the first retires
///   the transition, the others match nothing and write nothing.
///
/// Returns one row: `inserted` (0 or 1) and `msg_id`: the orchestration message's id (0 with a
/// broker), NULL when nothing was written.
struct ResultStatement: Sendable {
    /// Whose `in_progress` transition the result retires.
    enum Claim: Sendable {
        case own
        case lost
    }

    /// The statement and its parameters: `step_uuid`, `to_state`, `metadata`, `results`, then
    /// (`.lost`) `transition_uuid` and `worker_uuid`, then (PGMQ) `queue` and `message`.
    let statement: NamedStatement
    /// Whether the statement sends the message in PGMQ, binding its queue and body.
    let sendsMessage: Bool

    /// The result statement retiring `claim`'s transition and sending by `access`. With `.tables`,
    /// the queue is the tables' one (`QueueNames.stepResults`).
    init(retiring claim: Claim, sending access: StepQueueAccess) {
        var parameters = StatementParameters()
        let step = parameters.add("step_uuid")
        let toState = parameters.add("to_state")
        let metadata = parameters.add("metadata")
        let results = parameters.add("results")
        var conditions = ["to_state = 'in_progress'"]
        switch claim {
        case .own:
            conditions.append("metadata->>'worker_uuid' = (\(metadata)::jsonb)->>'worker_uuid'")
        case .lost:
            let transition = parameters.add("transition_uuid")
            let worker = parameters.add("worker_uuid")
            conditions.append("workflow_step_transition_uuid = \(transition)::uuid")
            conditions.append(
                """
                NOT EXISTS (SELECT 1 FROM tasker.worker_leases lease
                             WHERE lease.worker_uuid = \(worker)::uuid AND lease.expires_at > clock_timestamp())
                """)
        }
        let send: (ctes: String, msgID: String)
        switch access {
        case .functions:
            let queue = parameters.add("queue")
            let message = parameters.add("message")
            send = (
                "", "CASE WHEN EXISTS (SELECT 1 FROM retired) THEN tasker.pgmq_send_with_notify(\(queue)::text, \(message)::jsonb, 0) END"
            )
        case .tables(let tables, _):
            let queue = parameters.add("queue")
            let message = parameters.add("message")
            send = (Self.staticSend(into: tables, queue: queue, message: message), "(SELECT msg_id FROM notified)")
        case .broker:
            send = ("", "CASE WHEN EXISTS (SELECT 1 FROM retired) THEN 0::bigint END")
        }
        let move = StepTransitionSQL.move(step: "\(step)::uuid", to: "\(toState)::text", metadata: metadata, when: conditions)
        let sql = """
            WITH \(move),
            step AS (
                UPDATE tasker.workflow_steps SET in_process = false, results = \(results)::jsonb, updated_at = NOW()
                 WHERE workflow_step_uuid = \(step)::uuid AND EXISTS (SELECT 1 FROM retired)
                RETURNING 1)\(send.ctes)
            SELECT (SELECT count(*) FROM moved) AS inserted, \(send.msgID) AS msg_id
            """
        let claimName = claim == .own ? "result" : "recover"
        let accessName =
            switch access {
            case .functions: "send_function"
            case .tables: "send_static"
            case .broker: "broker"
            }
        statement = NamedStatement(name: "\(claimName).\(accessName)", sql: sql, parameters: parameters)
        sendsMessage = access != .broker
    }

    /// `tasker.pgmq_send_with_notify` (migration 0003) as static SQL: the row inserted into
    /// `pgmq.q_<queue>` as `pgmq.send(queue, message, 0)` does, and the same two notifications with
    /// the same payload (`message_with_payload` below `pgmq_payload_size_threshold()`, else
    /// `message_ready` with `payload_omitted`; `truncated` past 7,800 characters) on
    /// `pgmq_message_ready.<namespace>` and `pgmq_message_ready`.
    private static func staticSend(into tables: PGMQQueueTables, queue: String, message: String) -> String {
        """
        ,
        sent AS (
            INSERT INTO \(tables.queueTable) (vt, message, headers)
            SELECT clock_timestamp() + make_interval(secs => 0), \(message)::jsonb, NULL::jsonb WHERE EXISTS (SELECT 1 FROM retired)
            RETURNING msg_id, tasker.extract_queue_namespace(\(queue)::text) AS namespace),
        built AS MATERIALIZED (
            SELECT s.msg_id, s.namespace,
                   CASE WHEN length(\(message)::jsonb::text) < tasker.pgmq_payload_size_threshold()
                        THEN json_build_object(
                            'event_type', 'message_with_payload', 'msg_id', s.msg_id, 'queue_name', \(queue)::text,
                            'namespace', s.namespace, 'message', \(message)::jsonb, 'ready_at', now()::timestamptz,
                            'delay_seconds', 0)::text
                        ELSE json_build_object(
                            'event_type', 'message_ready', 'msg_id', s.msg_id, 'queue_name', \(queue)::text,
                            'namespace', s.namespace, 'ready_at', now()::timestamptz, 'delay_seconds', 0,
                            'payload_omitted', true)::text END AS payload
              FROM sent s),
        notified AS MATERIALIZED (  -- materialized: both notifications run even though only msg_id is read
            SELECT b.msg_id, p.payload,
                   pg_notify('pgmq_message_ready.' || b.namespace, p.payload) AS on_namespace,
                   CASE WHEN 'pgmq_message_ready.' || b.namespace <> 'pgmq_message_ready'
                        THEN pg_notify('pgmq_message_ready', p.payload) END AS on_all
              FROM built b,
                   LATERAL (SELECT CASE WHEN length(b.payload) > 7800
                                        THEN json_build_object(
                                            'event_type', 'message_ready', 'msg_id', b.msg_id, 'queue_name', \(queue)::text,
                                            'namespace', b.namespace, 'ready_at', now()::timestamptz,
                                            'payload_omitted', true, 'truncated', true)::text
                                        ELSE b.payload END AS payload) p)
        """
    }

    /// The values of the parameters for `write`; `lost` is the dead claim of a `.lost` statement.
    func values(for write: CompletionWrite, lost: LostWorkerStep? = nil) -> [any PostgresEncodable] {
        var values: [any PostgresEncodable] = [
            write.stepUUID, write.toState, PostgresJSON(raw: write.metadata), PostgresJSON(raw: write.resultJSON),
        ]
        if let lost { values += [lost.transitionUUID, lost.workerUUID] }
        if sendsMessage { values += [QueueNames.stepResults, PostgresJSON(raw: write.body)] }
        return values
    }

    /// The statement for `write`, in a pipeline.
    func bound(to write: CompletionWrite) -> PipelineStatement {
        .prepared(statement.prepared, values(for: write))
    }
}
