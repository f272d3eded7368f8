import Foundation
import TaskerModel
import TaskerPostgres

/// Task and step transitions, written as upstream writes them (db-and-orchestration.md §3.0): retire
/// the `most_recent` row, then insert the new one with `sort_key + 1` — both in ONE prepared
/// statement (a data-modifying CTE), so a transition costs one round trip.
///
/// Every write here is a compare-and-set on the current state: the retiring UPDATE only matches a
/// row in the expected state (a concurrent writer holds the row lock until it commits, after which
/// the row no longer matches), and the first transition of a step without any is inserted only
/// if there is none (`ON CONFLICT … DO NOTHING` on the partial unique index of `most_recent`).
/// Either way the loser sees `false`.
public enum TransitionRepository {
    /// `metadata` of the first task and step transitions (`NULL→pending`).
    static let initialMetadata = #"{"initial_state":"pending","from_service":"task_initializer"}"#

    // MARK: Tasks

    /// The task's current state; nil when it has no transition yet.
    public static func currentTaskState(_ c: isolated PostgresConnection, taskUUID: UUID) throws(PostgresError) -> TaskState? {
        let rows = try c.query(Statements.currentTaskState, [taskUUID])
        guard let text: String = try rows.first?.decode("to_state") else { return nil }
        guard let state = TaskState(rawValue: text) else {
            throw PostgresError(.decoding, "task \(taskUUID) is in unknown state \"\(text)\"")
        }
        return state
    }

    /// Moves the task from `from` to `to` inside the caller's transaction. Returns false (and writes
    /// nothing) when the task is not in `from`. `finalization` adds upstream's finalizer metadata
    /// (`timestamp`, `atomic_finalization: true`).
    static func transitionTask(
        _ c: isolated PostgresConnection, taskUUID: UUID, from: TaskState, to: TaskState,
        event: TaskEvent, processorUUID: UUID, finalization: Bool = false,
        now: Date = Date()
    ) throws(PostgresError) -> Bool {
        // One round trip: retire the current row (only if it is in `from`), insert the next one.
        let inserted = try c.query(
            Statements.transitionTask,
            [
                taskUUID, from.rawValue, to.rawValue,
                try taskMetadata(event, finalization: finalization, now: now), processorUUID,
            ])
        return !inserted.isEmpty
    }

    /// `{"event": <Debug rendering>}`, plus upstream's finalizer keys when `finalization`.
    static func taskMetadata(_ event: TaskEvent, finalization: Bool, now: Date) throws(PostgresError) -> PostgresJSON {
        var metadata: [String: JSONValue] = ["event": .string(event.debugRendering)]
        if finalization {
            metadata["timestamp"] = .string(RFC3339.string(now))
            metadata["atomic_finalization"] = true
        }
        return try json(.object(metadata))
    }

    // MARK: Steps

    /// The step's current state (`pending` when it has no transition, as upstream resolves it).
    public static func currentStepState(_ c: isolated PostgresConnection, stepUUID: UUID) throws(PostgresError) -> StepState {
        let rows = try c.query(Statements.currentStepState, [stepUUID])
        guard let text: String = try rows.first?.decode("to_state") else { return .pending }
        guard let state = StepState(rawValue: text) else {
            throw PostgresError(.decoding, "step \(stepUUID) is in unknown state \"\(text)\"")
        }
        return state
    }

    /// Moves the step from `from` to `to` inside the caller's transaction, with metadata
    /// `{"event": <serde JSON of the event>, "timestamp": RFC 3339}`. A step without transitions
    /// counts as `pending`. Returns false when the step is not in `from`.
    static func transitionStep(
        _ c: isolated PostgresConnection, stepUUID: UUID, from: StepState, to: StepState,
        event: StepEvent, now: Date = Date()
    ) throws(PostgresError) -> Bool {
        let metadata = try stepMetadata(event, stepUUID: stepUUID, now: now)
        // One round trip: retire the current row (only if it is in `from`), insert the next one.
        let inserted = try c.query(Statements.transitionStep, [stepUUID, from.rawValue, to.rawValue, metadata])
        if !inserted.isEmpty { return true }
        // Dynamic steps (decision and batch) start without a transition: they are `pending`.
        guard from == .pending else { return false }
        let first = try c.query(Statements.firstStepTransition, [stepUUID, from.rawValue, to.rawValue, metadata])
        return !first.isEmpty
    }

    /// `pending → enqueued` (`Enqueue`) and, only when the step moved, the step message sent with
    /// `pgmq_send_with_notify` to `queue`, in one round trip. False when the step was not `pending`.
    /// With `sendInPGMQ` false (RabbitMQ), the transition only: the message is published after the commit.
    static func enqueueStep(
        _ c: isolated PostgresConnection, stepUUID: UUID, queue: String, message: PostgresJSON,
        sendInPGMQ: Bool = true, now: Date = Date()
    ) throws(PostgresError) -> Bool {
        let metadata = try stepMetadata(.enqueue, stepUUID: stepUUID, now: now)
        let statement = sendInPGMQ ? Statements.enqueueStep : Statements.enqueueStepWithoutSend
        if try !c.query(statement, [stepUUID, metadata, queue, message]).isEmpty { return true }
        // A dynamic step without any transition yet.
        guard try transitionStep(c, stepUUID: stepUUID, from: .pending, to: .enqueued, event: .enqueue, now: now)
        else { return false }
        if sendInPGMQ { try PGMQ.sendWithNotify(c, queue: queue, message: message) }
        return true
    }

    /// `from → complete` (`Complete` with the results) and the step marked processed
    /// (`processed`, `processed_at`, `in_process = false`), in one round trip. False (and nothing
    /// written) when the step was not in `from`.
    static func completeStep(
        _ c: isolated PostgresConnection, stepUUID: UUID, from: StepState, resultsJSON: String,
        now: Date = Date()
    ) throws(PostgresError) -> Bool {
        let metadata = try stepMetadata(.complete(resultsJSON: resultsJSON), stepUUID: stepUUID, now: now)
        return try !c.query(Statements.completeStep, [stepUUID, from.rawValue, metadata]).isEmpty
    }

    // MARK: Pipelined forms
    //
    // The same writes as statements of a `PostgresConnection.pipeline`, where the next statement is
    // sent before this one's result is known. The `asserting` forms make a failed compare-and-set
    // visible: they raise `division_by_zero` (SQLSTATE 22012, `PostgresError.isFailedAssertion`)
    // instead of returning no row, so the pipeline stops there and the transaction rolls back.

    /// `transitionTask` as a pipeline statement; with `asserting`, a task not in `from` is an error
    /// (else: no row, as `transitionTask` returns false).
    static func transitionTaskStatement(
        taskUUID: UUID, from: TaskState, to: TaskState, event: TaskEvent,
        processorUUID: UUID, finalization: Bool = false, asserting: Bool,
        now: Date = Date()
    ) throws(PostgresError) -> PipelineStatement {
        .prepared(
            asserting ? Statements.transitionTaskAsserted : Statements.transitionTask,
            [
                taskUUID, from.rawValue, to.rawValue, try taskMetadata(event, finalization: finalization, now: now),
                processorUUID,
            ])
    }

    /// `transitionStep` of a step that has a transition, asserting it was in `from`.
    static func transitionStepAssertedStatement(
        stepUUID: UUID, from: StepState, to: StepState, event: StepEvent,
        now: Date = Date()
    ) throws(PostgresError) -> PipelineStatement {
        .prepared(
            Statements.transitionStepAsserted,
            [stepUUID, from.rawValue, to.rawValue, try stepMetadata(event, stepUUID: stepUUID, now: now)])
    }

    /// `enqueueStep` of a step that has a transition, asserting it was `pending` and its message sent
    /// (with `sendInPGMQ` false: asserting it was `pending`; nothing sent).
    static func enqueueStepAssertedStatement(
        stepUUID: UUID, queue: String, message: PostgresJSON,
        sendInPGMQ: Bool = true, now: Date = Date()
    ) throws(PostgresError) -> PipelineStatement {
        .prepared(
            sendInPGMQ ? Statements.enqueueStepAsserted : Statements.enqueueStepAssertedWithoutSend,
            [stepUUID, try stepMetadata(.enqueue, stepUUID: stepUUID, now: now), queue, message])
    }

    /// `completeStep` as a pipeline statement: one row when the step moved, none when it was not in `from`.
    static func completeStepStatement(
        stepUUID: UUID, from: StepState, resultsJSON: String,
        now: Date = Date()
    ) throws(PostgresError) -> PipelineStatement {
        .prepared(
            Statements.completeStep,
            [stepUUID, from.rawValue, try stepMetadata(.complete(resultsJSON: resultsJSON), stepUUID: stepUUID, now: now)])
    }

    /// `currentTaskState` as a pipeline statement (decode with `taskState(_:taskUUID:)`).
    static func currentTaskStateStatement(taskUUID: UUID) -> PipelineStatement {
        .prepared(Statements.currentTaskState, [taskUUID])
    }

    /// The state of a `currentTaskState` result.
    static func taskState(_ rows: PostgresQueryResult, taskUUID: UUID) throws(PostgresError) -> TaskState? {
        guard let text: String = try rows.first?.decode("to_state") else { return nil }
        guard let state = TaskState(rawValue: text) else {
            throw PostgresError(.decoding, "task \(taskUUID) is in unknown state \"\(text)\"")
        }
        return state
    }

    /// `{"event": <serde JSON of the event>, "timestamp": RFC 3339}`.
    static func stepMetadata(_ event: StepEvent, stepUUID: UUID, now: Date) throws(PostgresError) -> PostgresJSON {
        let eventText: String
        do { eventText = try event.jsonString() } catch {
            throw PostgresError(.usage, "cannot encode step event for \(stepUUID): \(error)")
        }
        return try json(["event": .string(eventText), "timestamp": .string(RFC3339.string(now))])
    }

    /// The hot statements, prepared once per connection.
    enum Statements {
        /// The compare-and-set every transition uses: retire step $1's current transition if it is in
        /// `from`, then insert `to` after it (`moved` holds the new row's sort key, empty when the
        /// retire matched nothing). `from`, `to`, `metadata` are SQL expressions.
        private static func moveStep(from: String, to: String, metadata: String) -> String {
            """
            WITH retired AS (
                UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
                 WHERE workflow_step_uuid = $1::uuid AND most_recent AND to_state = \(from)
                RETURNING sort_key),
            moved AS (
                INSERT INTO tasker.workflow_step_transitions
                    (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
                SELECT $1::uuid, \(to), \(from), \(metadata)::jsonb, sort_key + 1, true, NOW(), NOW() FROM retired
                RETURNING sort_key)

            """
        }

        /// `moveStep` for task $1: from $2 to $3 with metadata $4 and processor $5.
        private static let moveTask = """
            WITH retired AS (
                UPDATE tasker.task_transitions SET most_recent = false, updated_at = NOW()
                 WHERE task_uuid = $1::uuid AND most_recent AND to_state = $2::text
                RETURNING sort_key),
            moved AS (
                INSERT INTO tasker.task_transitions
                    (task_uuid, to_state, from_state, metadata, sort_key, most_recent, processor_uuid, created_at, updated_at)
                SELECT $1::uuid, $3::text, $2::text, $4::jsonb, sort_key + 1, true, $5::uuid, NOW(), NOW() FROM retired
                RETURNING sort_key)

            """

        /// Selects from `moved`, raising `division_by_zero` (22012) when it is empty: a lost
        /// compare-and-set stops a pipeline before its `COMMIT`.
        private static let assertMoved = "SELECT 1 / (SELECT count(*)::integer FROM moved) AS moved"

        static let enqueueStep = PreparedStatement(
            moveStep(from: "'pending'", to: "'enqueued'", metadata: "$2") + """
                SELECT tasker.pgmq_send_with_notify($3::text, $4::jsonb, 0) AS msg_id FROM moved
                """)
        static let completeStep = PreparedStatement(
            moveStep(from: "$2::text", to: "'complete'", metadata: "$3") + """
                , processed AS (
                    UPDATE tasker.workflow_steps
                       SET processed = true, processed_at = NOW(), in_process = false, updated_at = NOW()
                     WHERE workflow_step_uuid = $1::uuid AND EXISTS (SELECT 1 FROM moved))
                SELECT sort_key FROM moved
                """)
        static let currentTaskState = PreparedStatement(
            """
            SELECT to_state FROM tasker.task_transitions WHERE task_uuid = $1::uuid AND most_recent
            """)
        static let currentStepState = PreparedStatement(
            """
            SELECT to_state FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1::uuid AND most_recent
            """)
        static let transitionTask = PreparedStatement(moveTask + "SELECT sort_key FROM moved")
        static let transitionStep = PreparedStatement(
            moveStep(from: "$2::text", to: "$3::text", metadata: "$4") + "SELECT sort_key FROM moved")
        /// `transitionTask` raising `division_by_zero` when the task was not in `$2`.
        static let transitionTaskAsserted = PreparedStatement(moveTask + assertMoved)
        /// `transitionStep` raising `division_by_zero` when the step was not in `$2`.
        static let transitionStepAsserted = PreparedStatement(
            moveStep(from: "$2::text", to: "$3::text", metadata: "$4") + assertMoved)
        /// `enqueueStep` raising `division_by_zero` when the step was not `pending` (no message sent).
        static let enqueueStepAsserted = PreparedStatement(
            moveStep(from: "'pending'", to: "'enqueued'", metadata: "$2") + """
                , sent AS MATERIALIZED (
                    SELECT tasker.pgmq_send_with_notify($3::text, $4::jsonb, 0) AS msg_id FROM moved)
                SELECT 1 / (SELECT count(*)::integer FROM sent WHERE msg_id IS NOT NULL) AS moved
                """)
        /// What replaces the PGMQ send when a broker carries the step messages (published after the
        /// commit): keeps $3 and $4 and their types, and a non-NULL `msg_id` (so the asserted form
        /// still asserts only that the step moved).
        static let pgmqSend = "tasker.pgmq_send_with_notify($3::text, $4::jsonb, 0)"
        static let brokerSend = "CASE WHEN $3::text IS NULL OR $4::jsonb IS NULL THEN 0 ELSE 0 END::bigint"
        /// `enqueueStep` without the PGMQ send (RabbitMQ).
        static let enqueueStepWithoutSend = PreparedStatement(enqueueStep.sql.replacing(pgmqSend, with: brokerSend))
        /// `enqueueStepAsserted` without the PGMQ send (RabbitMQ).
        static let enqueueStepAssertedWithoutSend = PreparedStatement(
            enqueueStepAsserted.sql.replacing(pgmqSend, with: brokerSend))
        /// The first transition of a step that has none (a racing creator's row wins: no row returned).
        static let firstStepTransition = PreparedStatement(
            """
            INSERT INTO tasker.workflow_step_transitions
                (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
            SELECT $1::uuid, $3::text, $2::text, $4::jsonb, 1, true, NOW(), NOW()
             WHERE NOT EXISTS (SELECT 1 FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1::uuid)
            ON CONFLICT (workflow_step_uuid, most_recent) WHERE most_recent = true DO NOTHING
            RETURNING sort_key
            """)
    }

    static func json(_ value: JSONValue) throws(PostgresError) -> PostgresJSON {
        do { return PostgresJSON(raw: try value.jsonString()) } catch {
            throw PostgresError(.usage, "cannot encode transition metadata: \(error)")
        }
    }
}

extension PostgresError {
    /// A pipelined compare-and-set found the row elsewhere (the `asserting` statements of
    /// `TransitionRepository`): SQLSTATE 22012, `division_by_zero`.
    var isFailedAssertion: Bool { sqlState == "22012" }
}
