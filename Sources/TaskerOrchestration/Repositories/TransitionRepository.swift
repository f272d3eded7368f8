import Foundation
import TaskerWorker

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
    static func transitionTask(_ c: isolated PostgresConnection, taskUUID: UUID, from: TaskState, to: TaskState,
                               event: TaskEvent, processorUUID: UUID, finalization: Bool = false,
                               now: Date = Date()) throws(PostgresError) -> Bool {
        var metadata: [String: JSONValue] = ["event": .string(event.debugRendering)]
        if finalization {
            metadata["timestamp"] = .string(RFC3339.string(now))
            metadata["atomic_finalization"] = true
        }
        // One round trip: retire the current row (only if it is in `from`), insert the next one.
        let inserted = try c.query(Statements.transitionTask,
                                   [taskUUID, from.rawValue, to.rawValue, try json(.object(metadata)), processorUUID])
        return !inserted.isEmpty
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
    static func transitionStep(_ c: isolated PostgresConnection, stepUUID: UUID, from: StepState, to: StepState,
                               event: StepEvent, now: Date = Date()) throws(PostgresError) -> Bool {
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
    static func enqueueStep(_ c: isolated PostgresConnection, stepUUID: UUID, queue: String, message: PostgresJSON,
                            now: Date = Date()) throws(PostgresError) -> Bool {
        let metadata = try stepMetadata(.enqueue, stepUUID: stepUUID, now: now)
        if try !c.query(Statements.enqueueStep, [stepUUID, metadata, queue, message]).isEmpty { return true }
        // A dynamic step without any transition yet.
        guard try transitionStep(c, stepUUID: stepUUID, from: .pending, to: .enqueued, event: .enqueue, now: now)
        else { return false }
        try PGMQ.sendWithNotify(c, queue: queue, message: message)
        return true
    }

    /// `from → complete` (`Complete` with the results) and the step marked processed
    /// (`processed`, `processed_at`, `in_process = false`), in one round trip. False (and nothing
    /// written) when the step was not in `from`.
    static func completeStep(_ c: isolated PostgresConnection, stepUUID: UUID, from: StepState, resultsJSON: String,
                             now: Date = Date()) throws(PostgresError) -> Bool {
        let metadata = try stepMetadata(.complete(resultsJSON: resultsJSON), stepUUID: stepUUID, now: now)
        return try !c.query(Statements.completeStep, [stepUUID, from.rawValue, metadata]).isEmpty
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
        static let enqueueStep = PreparedStatement("""
            WITH retired AS (
                UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
                 WHERE workflow_step_uuid = $1::uuid AND most_recent AND to_state = 'pending'
                RETURNING sort_key),
            moved AS (
                INSERT INTO tasker.workflow_step_transitions
                    (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
                SELECT $1::uuid, 'enqueued', 'pending', $2::jsonb, sort_key + 1, true, NOW(), NOW() FROM retired
                RETURNING sort_key)
            SELECT tasker.pgmq_send_with_notify($3::text, $4::jsonb, 0) AS msg_id FROM moved
            """)
        static let completeStep = PreparedStatement("""
            WITH retired AS (
                UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
                 WHERE workflow_step_uuid = $1::uuid AND most_recent AND to_state = $2::text
                RETURNING sort_key),
            moved AS (
                INSERT INTO tasker.workflow_step_transitions
                    (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
                SELECT $1::uuid, 'complete', $2::text, $3::jsonb, sort_key + 1, true, NOW(), NOW() FROM retired
                RETURNING sort_key),
            processed AS (
                UPDATE tasker.workflow_steps
                   SET processed = true, processed_at = NOW(), in_process = false, updated_at = NOW()
                 WHERE workflow_step_uuid = $1::uuid AND EXISTS (SELECT 1 FROM moved))
            SELECT sort_key FROM moved
            """)
        static let currentTaskState = PreparedStatement("""
            SELECT to_state FROM tasker.task_transitions WHERE task_uuid = $1::uuid AND most_recent
            """)
        static let currentStepState = PreparedStatement("""
            SELECT to_state FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1::uuid AND most_recent
            """)
        static let transitionTask = PreparedStatement("""
            WITH retired AS (
                UPDATE tasker.task_transitions SET most_recent = false, updated_at = NOW()
                 WHERE task_uuid = $1::uuid AND most_recent AND to_state = $2::text
                RETURNING sort_key)
            INSERT INTO tasker.task_transitions
                (task_uuid, to_state, from_state, metadata, sort_key, most_recent, processor_uuid, created_at, updated_at)
            SELECT $1::uuid, $3::text, $2::text, $4::jsonb, sort_key + 1, true, $5::uuid, NOW(), NOW() FROM retired
            RETURNING sort_key
            """)
        static let transitionStep = PreparedStatement("""
            WITH retired AS (
                UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
                 WHERE workflow_step_uuid = $1::uuid AND most_recent AND to_state = $2::text
                RETURNING sort_key)
            INSERT INTO tasker.workflow_step_transitions
                (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
            SELECT $1::uuid, $3::text, $2::text, $4::jsonb, sort_key + 1, true, NOW(), NOW() FROM retired
            RETURNING sort_key
            """)
        /// The first transition of a step that has none (a racing creator's row wins: no row returned).
        static let firstStepTransition = PreparedStatement("""
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
