/// The SQL behind the task API (`/v1/tasks…`; `/v1/dlq…` is ``DLQStatements``) and `tasker-dev task`: each statement returns
/// upstream's JSON document, built by PostgreSQL (`jsonb_build_object`), in one column `doc`, so the REST
/// answer and the command line's `--json` are the same bytes. Timestamps are RFC 3339 in UTC
/// (`…Z`, microseconds), as upstream's `DateTime<Utc>` fields; step readiness keeps upstream's naive
/// timestamps (no zone), as its `NaiveDateTime` fields (serde refuses a zone there).
enum TaskQueryStatements {
    /// `to_char` of a `timestamp` column as upstream's `DateTime<Utc>` (NULL stays NULL).
    static func utc(_ column: String) -> String {
        #"to_char(\#(column), 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')"#
    }

    /// `to_char` of a `timestamp` column as upstream's `NaiveDateTime`.
    private static func naive(_ column: String) -> String {
        #"to_char(\#(column), 'YYYY-MM-DD"T"HH24:MI:SS.US')"#
    }

    /// One `StepReadiness` object of readiness row `r` (upstream's `StepReadinessStatus`; its
    /// timestamps are `NaiveDateTime`).
    private static let readinessObject = """
        jsonb_build_object(
            'workflow_step_uuid', r.workflow_step_uuid, 'task_uuid', r.task_uuid,
            'named_step_uuid', r.named_step_uuid, 'name', r.name, 'current_state', r.current_state,
            'dependencies_satisfied', r.dependencies_satisfied, 'retry_eligible', r.retry_eligible,
            'ready_for_execution', r.ready_for_execution, 'last_failure_at', \(naive("r.last_failure_at")),
            'next_retry_at', \(naive("r.next_retry_at")), 'total_parents', r.total_parents,
            'completed_parents', r.completed_parents, 'attempts', coalesce(r.attempts, 0),
            'max_attempts', coalesce(r.max_attempts, 0), 'backoff_request_seconds', r.backoff_request_seconds,
            'last_attempted_at', \(naive("r.last_attempted_at")))
        """

    /// `expression` (a jsonb), or, when `$limit` (a bigint parameter) is not NULL and the JSON text of
    /// `expression` is longer than it, the omission marker
    /// `{"_tasker_omitted":{"bytes":<its length>,"limit":<limit>,"reason":…}}` in its place: one task's
    /// document stays bounded however large its context or results are.
    static func bounded(_ expression: String, limit: String) -> String {
        """
        CASE WHEN \(limit)::bigint IS NOT NULL AND octet_length((\(expression))::text) > \(limit)::bigint
             THEN jsonb_build_object('_tasker_omitted', jsonb_build_object(
                 'bytes', octet_length((\(expression))::text), 'limit', \(limit)::bigint,
                 'reason', 'larger than the task API''s per-field limit; tasker-dev task show --json prints it whole'))
             ELSE \(expression) END
        """
    }

    /// Upstream's `TaskResponse` of each task in `$1::uuid[]`, newest first (one row per existing
    /// task), its context bounded by `$2` (``bounded(_:limit:)``).
    static let tasks = taskDocuments(
        context: bounded("coalesce(t.context, '{}'::jsonb)", limit: "$2"),
        steps: """
            coalesce((
                SELECT jsonb_agg(\(readinessObject) ORDER BY r.workflow_step_uuid)
                  FROM tasker.get_step_readiness_status(t.task_uuid, NULL) r), '[]'::jsonb)
            """)

    /// The list's summary of each task in `$1::uuid[]`: upstream's `TaskResponse` shape (tasker-py's
    /// client decodes it as one), its `context` the marker `{"_tasker_omitted":{"reason":…}}` and its
    /// `steps` empty; the step counts stay. A page of 100 summaries is a few tens of KiB whatever the
    /// tasks hold (upstream lists every context whole).
    static let taskSummaries = taskDocuments(
        context: """
            jsonb_build_object('_tasker_omitted', jsonb_build_object(
                'reason', 'task lists carry no context; GET /v1/tasks/' || t.task_uuid || ' has it'))
            """,
        steps: "'[]'::jsonb")

    /// The `TaskResponse` statement with its `context` and `steps` values.
    private static func taskDocuments(context: String, steps: String) -> String {
        """
        SELECT (jsonb_build_object(
                'task_uuid', t.task_uuid, 'name', nt.name, 'namespace', tn.name, 'version', nt.version,
                'status', coalesce(tt.to_state, 'pending'),
                'created_at', \(utc("t.created_at")), 'updated_at', \(utc("t.updated_at")),
                'completed_at', \(utc("t.completed_at")),
                'context', \(context), 'initiator', coalesce(t.initiator, ''),
                'source_system', coalesce(t.source_system, ''), 'reason', coalesce(t.reason, ''),
                'priority', t.priority,
                'tags', CASE WHEN jsonb_typeof(t.tags) = 'array' THEN t.tags END,
                'correlation_id', t.correlation_id, 'parent_correlation_id', t.parent_correlation_id)
            || jsonb_build_object(
                'total_steps', coalesce(ec.total_steps, 0), 'pending_steps', coalesce(ec.pending_steps, 0),
                'in_progress_steps', coalesce(ec.in_progress_steps, 0),
                'completed_steps', coalesce(ec.completed_steps, 0), 'failed_steps', coalesce(ec.failed_steps, 0),
                'ready_steps', coalesce(ec.ready_steps, 0),
                'execution_status', coalesce(ec.execution_status, 'waiting_for_dependencies'),
                'recommended_action', coalesce(ec.recommended_action, 'wait_for_dependencies'),
                'completion_percentage', coalesce(ec.completion_percentage, 0)::float8,
                'health_status', coalesce(ec.health_status, 'unknown'),
                'steps', \(steps)))::text AS doc
          FROM tasker.tasks t
          JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
          JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
          LEFT JOIN tasker.task_transitions tt ON tt.task_uuid = t.task_uuid AND tt.most_recent
          LEFT JOIN LATERAL tasker.get_task_execution_context(t.task_uuid) ec ON true
         WHERE t.task_uuid = ANY($1::uuid[])
         ORDER BY t.created_at DESC, t.task_uuid DESC
        """
    }

    /// The filtered page of task uuids (`$1` namespace or NULL, `$2` state or NULL, `$3` initiator or
    /// NULL, `$4` source system or NULL, `$5` limit, `$6` offset) with the total count of matches.
    static let taskPage = """
        WITH matching AS (
            SELECT t.task_uuid, t.created_at
              FROM tasker.tasks t
              JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
              JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
              LEFT JOIN tasker.task_transitions tt ON tt.task_uuid = t.task_uuid AND tt.most_recent
             WHERE ($1::text IS NULL OR tn.name = $1::text)
               AND ($2::text IS NULL OR coalesce(tt.to_state, 'pending') = $2::text)
               AND ($3::text IS NULL OR t.initiator = $3::text)
               AND ($4::text IS NULL OR t.source_system = $4::text))
        SELECT (SELECT count(*) FROM matching)::bigint AS total,
               coalesce((SELECT array_agg(task_uuid ORDER BY created_at DESC, task_uuid DESC) FROM (
                   SELECT task_uuid, created_at FROM matching
                    ORDER BY created_at DESC, task_uuid DESC LIMIT $5::bigint OFFSET $6::bigint) page),
                   '{}')::text AS uuids
        """

    /// Upstream's `StepResponse` of task `$1`'s steps (all when `$2` is NULL, else the one step `$2`),
    /// each result bounded by `$3`, in dependency order: by the longest chain of parents above each step
    /// (`depth`, over the task's own edges; bounded, so stored edges that made a cycle still end), then
    /// by creation. A template may list a step before the one it depends on.
    static let steps = """
        WITH RECURSIVE depth(step_uuid, level) AS (
                SELECT ws.workflow_step_uuid, 0 FROM tasker.workflow_steps ws WHERE ws.task_uuid = $1::uuid
                UNION
                SELECT e.to_step_uuid, depth.level + 1
                  FROM depth JOIN tasker.workflow_step_edges e ON e.from_step_uuid = depth.step_uuid
                 WHERE depth.level < 1000)
        SELECT jsonb_build_object(
                'step_uuid', ws.workflow_step_uuid, 'task_uuid', ws.task_uuid, 'name', r.name,
                'created_at', \(utc("ws.created_at")), 'updated_at', \(utc("ws.updated_at")),
                'completed_at', \(utc("ws.processed_at")), 'results', \(bounded("ws.results", limit: "$3")),
                'current_state', r.current_state, 'dependencies_satisfied', r.dependencies_satisfied,
                'retry_eligible', r.retry_eligible, 'ready_for_execution', r.ready_for_execution,
                'total_parents', r.total_parents, 'completed_parents', r.completed_parents,
                'attempts', coalesce(r.attempts, 0), 'max_attempts', coalesce(r.max_attempts, 0),
                'last_failure_at', \(utc("r.last_failure_at")), 'next_retry_at', \(utc("r.next_retry_at")),
                'last_attempted_at', \(utc("r.last_attempted_at")))::text AS doc
          FROM tasker.get_step_readiness_status($1::uuid, NULL) r
          JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = r.workflow_step_uuid
          LEFT JOIN (SELECT step_uuid, max(level) AS level FROM depth GROUP BY step_uuid) d
                 ON d.step_uuid = ws.workflow_step_uuid
         WHERE $2::uuid IS NULL OR ws.workflow_step_uuid = $2::uuid
         ORDER BY d.level, ws.created_at, ws.workflow_step_uuid
        """

    /// Upstream's `StepAuditResponse` rows of step `$2` of task `$1`, newest first, each result bounded by `$3`.
    static let audit = """
        SELECT jsonb_build_object(
                'audit_uuid', a.workflow_step_result_audit_uuid, 'workflow_step_uuid', a.workflow_step_uuid,
                'transition_uuid', a.workflow_step_transition_uuid, 'task_uuid', a.task_uuid,
                'recorded_at', \(utc("a.recorded_at")), 'worker_uuid', a.worker_uuid,
                'correlation_id', a.correlation_id, 'success', a.success,
                'execution_time_ms', a.execution_time_ms, 'result', \(bounded("ws.results", limit: "$3")), 'step_name', ns.name,
                'from_state', wst.from_state, 'to_state', wst.to_state)::text AS doc
          FROM tasker.workflow_step_result_audit a
          JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = a.workflow_step_uuid
          JOIN tasker.named_steps ns ON ns.named_step_uuid = ws.named_step_uuid
          JOIN tasker.workflow_step_transitions wst
            ON wst.workflow_step_transition_uuid = a.workflow_step_transition_uuid
         WHERE a.task_uuid = $1::uuid AND a.workflow_step_uuid = $2::uuid
         ORDER BY a.recorded_at DESC, a.workflow_step_result_audit_uuid DESC
        """

    /// Whether step `$2` belongs to task `$1`.
    static let stepOfTask = """
        SELECT 1 FROM tasker.workflow_steps WHERE task_uuid = $1::uuid AND workflow_step_uuid = $2::uuid
        """

    /// Moves each step of task `$1` that no worker holds (`pending`, `enqueued`, `waiting_for_retry`) to
    /// `cancelled` (metadata `$2`), after the task itself moved (`TaskQueries.cancel`). A step another
    /// writer moves meanwhile (a worker's claim, the orchestration's enqueue) is skipped: its retiring
    /// UPDATE waits for that writer and then no longer matches (`most_recent` and the state are
    /// re-checked), so no second `most_recent` row is written. Steps in progress finish; their results
    /// are processed, and the task, being final, is left alone.
    static let cancelSteps = """
        WITH open_steps AS (
            SELECT wst.workflow_step_uuid, wst.to_state, wst.sort_key
              FROM tasker.workflow_steps ws
              JOIN tasker.workflow_step_transitions wst
                ON wst.workflow_step_uuid = ws.workflow_step_uuid AND wst.most_recent
             WHERE ws.task_uuid = $1::uuid
               AND wst.to_state IN ('pending', 'enqueued', 'waiting_for_retry')),
        retired_steps AS (
            UPDATE tasker.workflow_step_transitions wst SET most_recent = false, updated_at = NOW()
              FROM open_steps o
             WHERE wst.workflow_step_uuid = o.workflow_step_uuid AND wst.most_recent
               AND wst.to_state IN ('pending', 'enqueued', 'waiting_for_retry')
            RETURNING wst.workflow_step_uuid, wst.to_state, wst.sort_key),
        moved_steps AS (
            INSERT INTO tasker.workflow_step_transitions
                (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
            SELECT r.workflow_step_uuid, 'cancelled', r.to_state, $2::jsonb, r.sort_key + 1, true, NOW(), NOW()
              FROM retired_steps r
            RETURNING workflow_step_uuid)
        SELECT (SELECT count(*) FROM moved_steps)::bigint AS cancelled_steps
        """
}
