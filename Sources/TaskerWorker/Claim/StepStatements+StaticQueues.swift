import TaskerModel
import TaskerPostgres

extension StepStatements {
    /// `claim` with the message archived by static SQL on the queue's tables instead of
    /// `pgmq.archive` (which builds and plans its SQL on every call): the row is deleted from
    /// `pgmq.q_<queue>` and inserted into `pgmq.a_<queue>` with the same columns (`archived_at`
    /// from its default, `now()`), as `pgmq.archive` does, and only if the retire matched. `archived`
    /// is NULL without a retire, else whether the message was still there. $3 must be `tables.queue`.
    static func claim(archivingIn tables: PGMQQueueTables, layout: PGMQTableLayout) -> PreparedStatement {
        let archive = """
            ,
            archived AS (
                DELETE FROM \(tables.queueTable) WHERE msg_id = $4::bigint AND EXISTS (SELECT 1 FROM retired)
                RETURNING \(layout.archivedColumns)),
            moved AS (
                INSERT INTO \(tables.archiveTable) (\(layout.archivedColumns))
                SELECT \(layout.archivedColumns) FROM archived
                RETURNING msg_id)
            SELECT (SELECT attempts FROM step)
            """
        return PreparedStatement(
            claim.sql.replacing("\nSELECT (SELECT attempts FROM step)", with: archive)
                .replacing(functionArchive, with: "EXISTS (SELECT 1 FROM moved)"))
    }

    /// `claim`'s call of PGMQ's function, which the static claim replaces.
    static let functionArchive = "pgmq.archive($3::text, $4::bigint)"

    /// `complete` with the orchestration message sent by static SQL instead of
    /// `tasker.pgmq_send_with_notify` (migration 0003): the row inserted into `pgmq.q_<queue>` as
    /// `pgmq.send(queue, message, 0)` does, and the same two notifications with the same payload
    /// (`message_with_payload` below `pgmq_payload_size_threshold()`, else `message_ready` with
    /// `payload_omitted`; `truncated` past 7,800 characters) on `pgmq_message_ready.<namespace>` and
    /// `pgmq_message_ready`. $5 must be `tables.queue`.
    static func complete(sendingTo tables: PGMQQueueTables) -> PreparedStatement {
        let send = """
            ,
            sent AS (
                INSERT INTO \(tables.queueTable) (vt, message, headers)
                SELECT clock_timestamp() + make_interval(secs => 0), $6::jsonb, NULL::jsonb WHERE EXISTS (SELECT 1 FROM retired)
                RETURNING msg_id, tasker.extract_queue_namespace($5::text) AS namespace),
            built AS MATERIALIZED (
                SELECT s.msg_id, s.namespace,
                       CASE WHEN length($6::jsonb::text) < tasker.pgmq_payload_size_threshold()
                            THEN json_build_object(
                                'event_type', 'message_with_payload', 'msg_id', s.msg_id, 'queue_name', $5::text,
                                'namespace', s.namespace, 'message', $6::jsonb, 'ready_at', now()::timestamptz,
                                'delay_seconds', 0)::text
                            ELSE json_build_object(
                                'event_type', 'message_ready', 'msg_id', s.msg_id, 'queue_name', $5::text,
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
                                                'event_type', 'message_ready', 'msg_id', b.msg_id, 'queue_name', $5::text,
                                                'namespace', b.namespace, 'ready_at', now()::timestamptz,
                                                'payload_omitted', true, 'truncated', true)::text
                                            ELSE b.payload END AS payload) p)
            SELECT (SELECT count(*) FROM transition)
            """
        return PreparedStatement(
            complete.sql.replacing("\nSELECT (SELECT count(*) FROM transition)", with: send)
                .replacing(functionSend, with: "(SELECT msg_id FROM notified)"))
    }

    /// `complete`'s call of the notifying send, which the static completion replaces.
    static let functionSend = "tasker.pgmq_send_with_notify($5::text, $6::jsonb, 0)"
}

/// The statements the step path runs for its PGMQ work: the static ones of
/// `StepStatements+StaticQueues` for each queue whose table layout is known
/// (`PGMQTableLayout.detect` at boot), PGMQ's functions for any other (and for all of them when
/// `worker.pgmq.statements = "functions"`).
package struct StepQueueStatements: Sendable {
    /// PGMQ's functions for every queue.
    package static let functions = StepQueueStatements(claims: [:], completion: nil)

    /// Static claims by worker queue.
    let claims: [String: PreparedStatement]
    /// The static completion (its queue is `QueueNames.stepResults`).
    let completion: PreparedStatement?

    /// Static statements for the queues in `layouts` (a queue whose name `PGMQQueueTables` refuses
    /// keeps the functions).
    package init(layouts: [String: PGMQTableLayout]) {
        var claims: [String: PreparedStatement] = [:]
        var completion: PreparedStatement?
        for (queue, layout) in layouts {
            guard let tables = PGMQQueueTables(queue: queue) else { continue }
            if queue == QueueNames.stepResults {
                completion = StepStatements.complete(sendingTo: tables)
            } else {
                claims[queue] = StepStatements.claim(archivingIn: tables, layout: layout)
            }
        }
        self.init(claims: claims, completion: completion)
    }

    init(claims: [String: PreparedStatement], completion: PreparedStatement?, defaultClaim: PreparedStatement = StepStatements.claim) {
        self.claims = claims
        self.completion = completion
        self.defaultClaim = defaultClaim
    }

    /// The claim of a queue without a static one (`StepStatements.claim`, or the broker's).
    let defaultClaim: PreparedStatement

    /// The claim for a message of `queue`.
    func claim(queue: String) -> PreparedStatement { claims[queue] ?? defaultClaim }
    /// The completion.
    var complete: PreparedStatement { completion ?? StepStatements.complete }
    /// The queues served with static statements (for the boot log), sorted.
    package var staticQueues: [String] { (claims.keys.sorted()) + (completion == nil ? [] : [QueueNames.stepResults]) }

    /// Detects the layout of each of `queues` (and of `QueueNames.stepResults`) and builds the
    /// statements; with `useFunctions`, PGMQ's functions for all.
    package static func detect(
        _ c: isolated PostgresConnection, queues: [String], useFunctions: Bool
    ) throws(PostgresError) -> (statements: StepQueueStatements, layouts: [String: PGMQTableLayout?]) {
        var layouts: [String: PGMQTableLayout?] = [:]
        for queue in Set(queues + [QueueNames.stepResults]) {
            layouts[queue] = try PGMQTableLayout.detect(c, queue: queue)
        }
        if useFunctions { return (.functions, layouts) }
        return (StepQueueStatements(layouts: layouts.compactMapValues { $0 }), layouts)
    }
}
