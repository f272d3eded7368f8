import Foundation
import TaskerModel
import TaskerPostgres

/// The SQL of an operator's action on a step (``StepResolutionService``), besides the step's
/// compare-and-set transition itself (`TransitionRepository.transitionStep`): finding the step in its
/// task with both states, and the step's columns each action changes, as upstream's state machine
/// actions change them once the transition is written (`ResetAttemptsAction`, `UpdateStepResultsAction`).
/// They run in the transition's transaction, after it succeeded: the row lock the transition took keeps
/// every other writer of the step waiting until the transaction ends.
enum ManualStepStatements {
    /// Step `$1` of task `$2`: its current state (NULL without a transition: `pending`) and its task's
    /// (NULL while the task has none). No row when the task has no such step.
    static let stepOfTask = PreparedStatement(
        """
        SELECT (SELECT wst.to_state FROM tasker.workflow_step_transitions wst
                 WHERE wst.workflow_step_uuid = ws.workflow_step_uuid AND wst.most_recent) AS step_state,
               (SELECT tt.to_state FROM tasker.task_transitions tt
                 WHERE tt.task_uuid = ws.task_uuid AND tt.most_recent) AS task_state
          FROM tasker.workflow_steps ws
         WHERE ws.workflow_step_uuid = $1::uuid AND ws.task_uuid = $2::uuid
        """)

    /// `reset_for_retry` on step `$1`: its attempts count from zero again and a backoff it asked for is
    /// forgotten, so that it is ready at once (upstream resets `attempts`; its check for the event
    /// looks for `reset_for_retry` in `{"type":"ResetForRetry"}` and never matches, so upstream's
    /// attempts stay as they were).
    static let reset = PreparedStatement(
        """
        UPDATE tasker.workflow_steps
           SET attempts = 0, backoff_request_seconds = NULL, in_process = false, processed = false,
               processed_at = NULL, updated_at = NOW()
         WHERE workflow_step_uuid = $1::uuid
        """)

    /// `resolve_manually` on step `$1`: processed, no longer in process (upstream
    /// `handle_move_to_resolved_manually`); its results stay what they were.
    static let resolve = PreparedStatement(
        """
        UPDATE tasker.workflow_steps
           SET processed = true, processed_at = NOW(), in_process = false, updated_at = NOW()
         WHERE workflow_step_uuid = $1::uuid
        """)

    /// `complete_manually` on step `$1`: processed with the operator's `StepExecutionResult` `$2` as its
    /// results, which its dependents read (upstream `handle_move_to_completed` → `mark_processed`).
    static let complete = PreparedStatement(
        """
        UPDATE tasker.workflow_steps
           SET processed = true, processed_at = NOW(), in_process = false, results = $2::jsonb, updated_at = NOW()
         WHERE workflow_step_uuid = $1::uuid
        """)

    /// The step and task states ``stepOfTask`` found: nil when the task has no such step.
    static func find(
        _ c: isolated PostgresConnection, step stepUUID: UUID, task taskUUID: UUID
    ) throws(PostgresError) -> (step: StepState, task: TaskState?)? {
        guard let row = try c.query(stepOfTask, [stepUUID, taskUUID]).first else { return nil }
        let step: StepState? = try row.decode("step_state")
        let task: TaskState? = try row.decode("task_state")
        return (step ?? .pending, task)
    }

    /// The columns `action` changes on step `stepUUID` (`resultsJSON`: `complete_manually`'s results).
    static func apply(
        _ c: isolated PostgresConnection, _ action: StepManualAction, step stepUUID: UUID, resultsJSON: String?
    ) throws(PostgresError) {
        switch action {
        case .resetForRetry: try c.query(reset, [stepUUID])
        case .resolveManually: try c.query(resolve, [stepUUID])
        case .completeManually: try c.query(complete, [stepUUID, PostgresJSON(raw: resultsJSON ?? "null")])
        }
    }

    /// The transition's metadata: upstream's `{"event": <serde JSON of the event>, "timestamp": RFC 3339}`
    /// plus who acted and why (`reset_by` / `resolved_by` / `completed_by`, `reason`), so that the step's
    /// history names its operator (upstream only logs them).
    static func metadata(_ action: StepManualAction, event: StepEvent, now: Date) -> PostgresJSON {
        // Strings only: nothing here can be refused.
        let performer = action.performer
        var writer = JSONWriter(sortedKeys: false, escapeSlashes: true)
        writer.open("{")
        writer.member("event", event.jsonString(), first: true)
        writer.member("timestamp", RFC3339.string(now))
        writer.member(performer.field, performer.name)
        writer.member("reason", action.reason)
        writer.member("action_type", action.actionType)
        writer.close("}")
        return PostgresJSON(raw: writer.text)
    }
}
