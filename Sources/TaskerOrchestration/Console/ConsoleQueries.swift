import Foundation

/// What the task console (`/console`) needs beyond upstream's task API: task counts by state and a
/// task's DAG (each step's parents, state, attempts and timings from its transitions). Console-only
/// JSON, so upstream's `TaskResponse`/`StepResponse` shapes stay as upstream has them.
extension TaskQueries {
    /// `{"counts":{state:n},"namespaces":[…],"dlq_pending":n}`.
    func consoleSummary() async throws(TaskAPIError) -> Data {
        let rows = try await documents(ConsoleStatements.summary, [], doing: "counting tasks")
        return rows.first ?? Data(#"{"counts":{},"namespaces":[],"dlq_pending":0}"#.utf8)
    }

    /// `{"task_uuid","steps":[{step_uuid,name,state,attempts,max_attempts,parents,created_at,claimed_at,completed_at,results}]}`,
    /// or nil when there is no such task.
    func consoleDAG(_ taskUUID: UUID) async throws(TaskAPIError) -> Data? {
        guard try await exists(taskUUID) else { return nil }
        let steps = try await documents(ConsoleStatements.dag, [taskUUID, ConsoleStatements.maxSteps], doing: "reading a task's DAG")
        var out = Data(#"{"task_uuid":"\#(taskUUID.lowercased)","truncated":\#(steps.count >= ConsoleStatements.maxSteps),"steps":["#.utf8)
        for (index, step) in steps.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(step)
        }
        out.append(contentsOf: Array("]}".utf8))
        return out
    }
}

/// The SQL behind ``TaskQueries/consoleSummary()`` and ``TaskQueries/consoleDAG(_:)``.
enum ConsoleStatements {
    /// The most steps one DAG answer holds (a larger task is shown truncated).
    static let maxSteps = 2_000
    /// The most namespaces offered as a filter.
    static let maxNamespaces = 200

    /// Task counts by current state, the namespaces (for the filter) and the pending DLQ entries.
    static let summary = """
        SELECT jsonb_build_object(
                'counts', coalesce((
                    SELECT jsonb_object_agg(state, n) FROM (
                        SELECT coalesce(tt.to_state, 'pending') AS state, count(*) AS n
                          FROM tasker.tasks t
                          LEFT JOIN tasker.task_transitions tt ON tt.task_uuid = t.task_uuid AND tt.most_recent
                         GROUP BY 1) s), '{}'::jsonb),
                'namespaces', coalesce((
                    SELECT jsonb_agg(name ORDER BY name) FROM (
                        SELECT name FROM tasker.task_namespaces ORDER BY name LIMIT \(maxNamespaces)) n), '[]'::jsonb),
                'dlq_pending', (SELECT count(*) FROM tasker.tasks_dlq WHERE resolution_status::text = 'pending'))::text AS doc
        """

    /// The steps of task `$1` (at most `$2`) with their parents (`workflow_step_edges`), current state,
    /// and timings: `claimed_at` is the latest move to `in_progress`, `completed_at` the move into the
    /// final state the step is in.
    static let dag = """
        SELECT jsonb_build_object(
                'step_uuid', ws.workflow_step_uuid, 'name', ns.name,
                'state', coalesce(cur.to_state, 'pending'),
                'attempts', coalesce(ws.attempts, 0), 'max_attempts', coalesce(ws.max_attempts, 0),
                'parents', coalesce((
                    SELECT jsonb_agg(e.from_step_uuid ORDER BY e.from_step_uuid)
                      FROM tasker.workflow_step_edges e WHERE e.to_step_uuid = ws.workflow_step_uuid), '[]'::jsonb),
                'created_at', \(TaskQueryStatements.utc("ws.created_at")),
                'claimed_at', (
                    SELECT \(TaskQueryStatements.utc("max(c.created_at)"))
                      FROM tasker.workflow_step_transitions c
                     WHERE c.workflow_step_uuid = ws.workflow_step_uuid AND c.to_state = 'in_progress'),
                'completed_at', CASE WHEN cur.to_state IN ('complete', 'error', 'cancelled', 'resolved_manually')
                                     THEN \(TaskQueryStatements.utc("cur.created_at")) END,
                'results', ws.results)::text AS doc
          FROM tasker.workflow_steps ws
          JOIN tasker.named_steps ns ON ns.named_step_uuid = ws.named_step_uuid
          LEFT JOIN tasker.workflow_step_transitions cur
            ON cur.workflow_step_uuid = ws.workflow_step_uuid AND cur.most_recent
         WHERE ws.task_uuid = $1::uuid
         ORDER BY ws.created_at, ws.workflow_step_uuid
         LIMIT $2::bigint
        """
}
