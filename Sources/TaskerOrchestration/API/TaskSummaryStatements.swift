/// The SQL of `GET /v1/tasks/{uuid}/summary`: upstream's `TaskSummaryResponse` (TAS-317, the task
/// visualisation's one call) built by PostgreSQL in one column `doc`. Upstream computes its rows with
/// the function `tasker.get_task_summary` (its migration 20260306000001), which this schema does not
/// carry; the statement reads the same sources (`get_task_execution_context`, `get_step_readiness_status`,
/// `named_tasks.configuration`, the pending `tasks_dlq` row) and builds the same document:
///
/// - `task`: the task's identity, state and step counts (`DateTime<Utc>` timestamps, as `TaskResponse`);
/// - `template.steps`: each step of the registered template (`name`, `step_type` default `standard`,
///   `handler` = `handler.callable` default `unknown`, `dependencies`, `retry.retryable` default true,
///   `retry.max_attempts` default 3), as upstream's `extract_template_summary`;
/// - `steps`: each workflow step in creation order with its readiness and, when its result carries
///   one, its error (`error_type`, `retryable`, `status_code`). Upstream's SQL reads `error.type`, a
///   key its own results never have (they write `error_type`), so its `error` is always null; ours reads
///   `error_type` (and `type`, should a result have it);
/// - `dlq`: the pending investigation, if any, with reason and status as the database spells them
///   (upstream's SQL casts them to text);
/// - `links`: the task, its steps and the DLQ.
///
/// Hostile results (a step's `results` is whatever its handler returned): every value taken from them
/// is type-checked in SQL before a cast, so no result can make the summary fail.
enum TaskSummaryStatements {
    /// `expression` (a `timestamp`) as upstream's `DateTime<Utc>` text.
    private static func utc(_ expression: String) -> String { TaskQueryStatements.utc(expression) }

    /// Each template step of `nt.configuration` as upstream's `TemplateStepSummary`.
    private static let templateSteps = """
        coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                       'name', s.def ->> 'name',
                       'step_type', coalesce(CASE WHEN jsonb_typeof(s.def -> 'type') = 'string' THEN s.def ->> 'type' END, 'standard'),
                       'handler', coalesce(
                           CASE WHEN jsonb_typeof(s.def -> 'handler' -> 'callable') = 'string'
                                THEN s.def -> 'handler' ->> 'callable' END, 'unknown'),
                       'dependencies', coalesce((
                           SELECT jsonb_agg(d.dependency ORDER BY d.ord)
                             FROM jsonb_array_elements(
                                      CASE WHEN jsonb_typeof(s.def -> 'dependencies') = 'array'
                                           THEN s.def -> 'dependencies' ELSE '[]'::jsonb END)
                                  WITH ORDINALITY AS d(dependency, ord)
                            WHERE jsonb_typeof(d.dependency) = 'string'), '[]'::jsonb),
                       'retryable', coalesce(
                           CASE WHEN jsonb_typeof(s.def -> 'retry' -> 'retryable') = 'boolean'
                                THEN (s.def -> 'retry' ->> 'retryable')::boolean END, true),
                       'max_attempts',
                           CASE WHEN jsonb_typeof(s.def -> 'retry' -> 'max_attempts') = 'number'
                                 AND (s.def -> 'retry' ->> 'max_attempts') ~ '^[0-9]{1,9}$'
                                THEN (s.def -> 'retry' ->> 'max_attempts')::bigint ELSE 3 END)
                   ORDER BY s.ord)
              FROM jsonb_array_elements(
                       CASE WHEN jsonb_typeof(nt.configuration -> 'steps') = 'array'
                            THEN nt.configuration -> 'steps' ELSE '[]'::jsonb END)
                   WITH ORDINALITY AS s(def, ord)
             WHERE jsonb_typeof(s.def -> 'name') = 'string'), '[]'::jsonb)
        """

    /// Each workflow step as upstream's `StepSummaryInfo`; `x.e` is its result's `error` object (or NULL),
    /// its kind cut at 256 characters (it comes from handler results: the summary stays small).
    private static let steps = """
        coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                       'step_uuid', r.workflow_step_uuid, 'name', r.name, 'current_state', r.current_state,
                       'created_at', ws.created_at, 'completed_at', ws.processed_at,
                       'last_attempted_at', ws.last_attempted_at,
                       'attempts', coalesce(r.attempts, 0), 'max_attempts', coalesce(r.max_attempts, 0),
                       'dependencies_satisfied', r.dependencies_satisfied, 'retry_eligible', r.retry_eligible,
                       'error', CASE WHEN x.error_type IS NOT NULL THEN jsonb_build_object(
                           'error_type', x.error_type,
                           'retryable', coalesce(
                               CASE WHEN jsonb_typeof(x.e -> 'retryable') = 'boolean'
                                    THEN (x.e ->> 'retryable')::boolean END, false),
                           'status_code',
                               CASE WHEN jsonb_typeof(x.e -> 'status_code') = 'number'
                                     AND (x.e ->> 'status_code') ~ '^[0-9]{1,5}$'
                                    THEN CASE WHEN (x.e ->> 'status_code')::integer <= 65535
                                              THEN (x.e ->> 'status_code')::integer END END) END)
                   ORDER BY ws.created_at, ws.workflow_step_uuid)
              FROM tasker.get_step_readiness_status(t.task_uuid, NULL) r
              JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = r.workflow_step_uuid
             CROSS JOIN LATERAL (
                 SELECT e, left(coalesce(
                            CASE WHEN jsonb_typeof(e -> 'error_type') = 'string' THEN e ->> 'error_type' END,
                            CASE WHEN jsonb_typeof(e -> 'type') = 'string' THEN e ->> 'type' END), 256) AS error_type
                   FROM (SELECT CASE WHEN jsonb_typeof(ws.results -> 'error') = 'object'
                                     THEN ws.results -> 'error' END AS e) errors) x), '[]'::jsonb)
        """

    /// The task's pending DLQ investigation as upstream's `DlqSummaryInfo`.
    private static let dlq = """
        coalesce((
            SELECT jsonb_build_object(
                       'in_dlq', true, 'dlq_reason', d.dlq_reason::text, 'resolution_status', d.resolution_status::text)
              FROM tasker.tasks_dlq d
             WHERE d.task_uuid = t.task_uuid AND d.resolution_status = 'pending'
             ORDER BY d.dlq_timestamp DESC
             LIMIT 1),
            jsonb_build_object('in_dlq', false, 'dlq_reason', NULL, 'resolution_status', NULL))
        """

    /// Upstream's `TaskSummaryResponse` of task `$1` (no row when there is no such task).
    static let summary = """
        SELECT jsonb_build_object(
                'task', jsonb_build_object(
                    'task_uuid', t.task_uuid, 'name', nt.name, 'namespace', tn.name, 'version', nt.version,
                    'status', coalesce(tt.to_state, 'pending'),
                    'created_at', \(utc("t.created_at")), 'updated_at', \(utc("t.updated_at")),
                    'completed_at', \(utc("t.completed_at")),
                    'initiator', coalesce(t.initiator, ''), 'source_system', coalesce(t.source_system, ''),
                    'reason', coalesce(t.reason, ''), 'correlation_id', t.correlation_id,
                    'total_steps', coalesce(ec.total_steps, 0), 'pending_steps', coalesce(ec.pending_steps, 0),
                    'in_progress_steps', coalesce(ec.in_progress_steps, 0),
                    'completed_steps', coalesce(ec.completed_steps, 0), 'failed_steps', coalesce(ec.failed_steps, 0),
                    'completion_percentage', coalesce(ec.completion_percentage, 0)::float8,
                    'health_status', coalesce(ec.health_status, 'unknown'),
                    'execution_status', coalesce(ec.execution_status, 'waiting_for_dependencies'),
                    'recommended_action', ec.recommended_action),
                'template', jsonb_build_object('steps', \(templateSteps)),
                'steps', \(steps),
                'dlq', \(dlq),
                'links', jsonb_build_object(
                    'task', '/v1/tasks/' || t.task_uuid,
                    'steps', '/v1/tasks/' || t.task_uuid || '/workflow_steps',
                    'dlq', '/v1/dlq'))::text AS doc
          FROM tasker.tasks t
          JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
          JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
          LEFT JOIN tasker.task_transitions tt ON tt.task_uuid = t.task_uuid AND tt.most_recent
          LEFT JOIN LATERAL tasker.get_task_execution_context(t.task_uuid) ec ON true
         WHERE t.task_uuid = $1::uuid
        """
}
