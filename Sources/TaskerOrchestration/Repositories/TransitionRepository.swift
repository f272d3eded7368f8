import Foundation
import TaskerModel
import TaskerPostgres
import TaskerStore

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
    static func currentTaskState(_ c: isolated PostgresConnection, taskUUID: UUID) throws(PostgresError) -> TaskState? {
        try taskState(c.query(Statements.currentTaskState, [taskUUID]), taskUUID: taskUUID)
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
                taskMetadata(event, finalization: finalization, now: now), processorUUID,
            ])
        return !inserted.isEmpty
    }

    /// `{"event": <Debug rendering>}`, plus upstream's finalizer keys when `finalization`.
    static func taskMetadata(_ event: TaskEvent, finalization: Bool, now: Date) -> PostgresJSON {
        // Strings and a boolean only: nothing here can be refused.
        var writer = JSONWriter(sortedKeys: false, escapeSlashes: true)
        writer.open("{")
        writer.member("event", event.debugRendering, first: true)
        if finalization {
            writer.member("timestamp", RFC3339.string(now))
            writer.member("atomic_finalization", true)
        }
        writer.close("}")
        return PostgresJSON(raw: writer.text)
    }

    // MARK: Steps

    /// The step's current state (`pending` when it has no transition, as upstream resolves it).
    static func currentStepState(_ c: isolated PostgresConnection, stepUUID: UUID) throws(PostgresError) -> StepState {
        try c.query(Statements.currentStepState, [stepUUID]).first?.decode("to_state") ?? .pending
    }

    /// Moves the step from `from` to `to` inside the caller's transaction, with metadata
    /// `{"event": <serde JSON of the event>, "timestamp": RFC 3339}`. A step without transitions
    /// counts as `pending`. Returns false when the step is not in `from`.
    static func transitionStep(
        _ c: isolated PostgresConnection, stepUUID: UUID, from: StepState, to: StepState,
        event: StepEvent, now: Date = Date()
    ) throws(PostgresError) -> Bool {
        try transitionStep(c, stepUUID: stepUUID, from: from, to: to, metadata: stepMetadata(event, now: now))
    }

    /// `transitionStep` with the transition's metadata as given (an operator's action adds who acted
    /// and why to the event and timestamp: `ManualStepStatements.metadata`).
    static func transitionStep(
        _ c: isolated PostgresConnection, stepUUID: UUID, from: StepState, to: StepState, metadata: PostgresJSON
    ) throws(PostgresError) -> Bool {
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
        let metadata = stepMetadata(.enqueue, now: now)
        let statement = sendInPGMQ ? Statements.enqueueStep : Statements.enqueueStepWithoutSend
        let values: [any PostgresEncodable] = sendInPGMQ ? [stepUUID, metadata, queue, message] : [stepUUID, metadata]
        if try !c.query(statement, values).isEmpty { return true }
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
        let metadata = stepMetadata(.complete(resultsJSON: resultsJSON), now: now)
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
                taskUUID, from.rawValue, to.rawValue, taskMetadata(event, finalization: finalization, now: now),
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
            [stepUUID, from.rawValue, to.rawValue, stepMetadata(event, now: now)])
    }

    /// `enqueueStep` of a step that has a transition, asserting it was `pending` and its message sent
    /// (with `sendInPGMQ` false: asserting it was `pending`; nothing sent).
    static func enqueueStepAssertedStatement(
        stepUUID: UUID, queue: String, message: PostgresJSON,
        sendInPGMQ: Bool = true, now: Date = Date()
    ) throws(PostgresError) -> PipelineStatement {
        let metadata = stepMetadata(.enqueue, now: now)
        return sendInPGMQ
            ? .prepared(Statements.enqueueStepAsserted, [stepUUID, metadata, queue, message])
            : .prepared(Statements.enqueueStepAssertedWithoutSend, [stepUUID, metadata])
    }

    /// `completeStep` as a pipeline statement: one row when the step moved, none when it was not in `from`.
    static func completeStepStatement(
        stepUUID: UUID, from: StepState, resultsJSON: String,
        now: Date = Date()
    ) throws(PostgresError) -> PipelineStatement {
        .prepared(
            Statements.completeStep,
            [stepUUID, from.rawValue, stepMetadata(.complete(resultsJSON: resultsJSON), now: now)])
    }

    /// `currentTaskState` as a pipeline statement (decode with `taskState(_:taskUUID:)`).
    static func currentTaskStateStatement(taskUUID: UUID) -> PipelineStatement {
        .prepared(Statements.currentTaskState, [taskUUID])
    }

    /// The state of a `currentTaskState` result.
    static func taskState(_ rows: PostgresQueryResult, taskUUID: UUID) throws(PostgresError) -> TaskState? {
        try rows.first?.decode("to_state")
    }

    /// `{"event": <serde JSON of the event>, "timestamp": RFC 3339}`.
    static func stepMetadata(_ event: StepEvent, now: Date) -> PostgresJSON {
        // Strings only: nothing here can be refused.
        var writer = JSONWriter(sortedKeys: false, escapeSlashes: true)
        writer.open("{")
        writer.member("event", event.jsonString(), first: true)
        writer.member("timestamp", RFC3339.string(now))
        writer.close("}")
        return PostgresJSON(raw: writer.text)
    }
}

extension PostgresError {
    /// A pipelined compare-and-set found the row elsewhere (the `asserting` statements of
    /// `TransitionRepository`): SQLSTATE 22012, `division_by_zero`.
    var isFailedAssertion: Bool { sqlState == "22012" }
}
