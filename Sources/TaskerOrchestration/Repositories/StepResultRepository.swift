import Foundation
import TaskerPostgres

/// A step as the result processor reads it.
struct StepResultRow: Sendable, Equatable {
    public var stepUUID: UUID
    public var taskUUID: UUID
    /// The instance name (`named_steps.name`).
    public var name: String
    /// The template step it runs (`inputs.__template_step_name`, else the name).
    public var templateStepName: String
    public var state: StepState
    /// The raw `results` JSON text (nil when NULL).
    var resultsJSON: String?
    public var attempts: Int
    public var maxAttempts: Int
    /// The task's template coordinates and correlation id (read with the step).
    public var task: TaskIdentity
}

/// The result processor's SQL: load a step, write the backoff, record the final step state.
enum StepResultRepository {
    /// Loads the step with its current state and raw results; nil when it does not exist.
    static func load(_ c: isolated PostgresConnection, stepUUID: UUID) throws(PostgresError) -> StepResultRow? {
        try load(c.query(Statements.load, [stepUUID]), stepUUID: stepUUID)
    }

    /// `load` as a pipeline statement (decode with `load(_:stepUUID:)`).
    static func loadStatement(stepUUID: UUID) -> PipelineStatement { .prepared(Statements.load, [stepUUID]) }

    /// The step of a `load` result; nil when it does not exist.
    static func load(_ rows: PostgresQueryResult, stepUUID: UUID) throws(PostgresError) -> StepResultRow? {
        guard let row = rows.first else { return nil }
        let state: StepState = try row.decode("state")
        return StepResultRow(
            stepUUID: try row.decode("workflow_step_uuid"), taskUUID: try row.decode("task_uuid"),
            name: try row.decode("name"), templateStepName: try row.decode("template_step_name"), state: state,
            resultsJSON: try row.decode("results"), attempts: try row.decode("attempts"),
            maxAttempts: try row.decode("max_attempts"),
            task: TaskIdentity(
                taskUUID: try row.decode("task_uuid"), correlationID: try row.decode("correlation_id"),
                namespace: try row.decode("namespace_name"), name: try row.decode("task_name"),
                version: try row.decode("task_version")))
    }

    /// Records a backoff as upstream's `BackoffCalculator` does: lock the step row, then
    /// `backoff_request_seconds` and `last_attempted_at = NOW()`.
    static func writeBackoff(_ c: isolated PostgresConnection, stepUUID: UUID, seconds: Int) throws(PostgresError) {
        try c.query(
            "SELECT workflow_step_uuid FROM tasker.workflow_steps WHERE workflow_step_uuid = $1 FOR UPDATE",
            [stepUUID])
        try c.query(
            """
            UPDATE tasker.workflow_steps
               SET backoff_request_seconds = $2, last_attempted_at = NOW(), updated_at = NOW()
             WHERE workflow_step_uuid = $1
            """, [stepUUID, Int32(clamping: seconds)])
    }

    /// A failed or retrying step: `in_process = false`.
    static func markNotInProcess(_ c: isolated PostgresConnection, stepUUID: UUID) throws(PostgresError) {
        try c.query(
            "UPDATE tasker.workflow_steps SET in_process = false, updated_at = NOW() WHERE workflow_step_uuid = $1",
            [stepUUID])
    }

    /// The hot statements, prepared once per connection.
    enum Statements {
        /// The step, its state and raw results, with its task's identity (one round trip).
        static let load = PreparedStatement(
            """
            SELECT ws.workflow_step_uuid, ws.task_uuid, ns.name,
                   COALESCE(ws.inputs->>'__template_step_name', ns.name) AS template_step_name,
                   COALESCE((SELECT to_state FROM tasker.workflow_step_transitions t
                              WHERE t.workflow_step_uuid = ws.workflow_step_uuid AND t.most_recent), 'pending') AS state,
                   ws.results::text AS results, COALESCE(ws.attempts, 0) AS attempts, COALESCE(ws.max_attempts, 3) AS max_attempts,
                   t.correlation_id, tn.name AS namespace_name, nt.name AS task_name, nt.version AS task_version
              FROM tasker.workflow_steps ws
              JOIN tasker.named_steps ns ON ns.named_step_uuid = ws.named_step_uuid
              JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
              JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
              JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
             WHERE ws.workflow_step_uuid = $1::uuid
            """)
    }
}
