import TaskerPostgres

/// The step path's reads, prepared once per connection (`PreparedStatement`): hydrate and the claim
/// transaction's settings. The claim is `ClaimStatement`, the result `ResultStatement`, their variants
/// chosen by `StepQueueStatements`; every statement's final text is in `Tests/Fixtures/statements/`
/// and printed by `tasker-worker statements`, which the pgbench floors run (`Benchmarks/benchlib/floor.py`).
enum StepStatements {
    /// A step with its task, template names, current state and dependency results. $1 step uuid,
    /// $2 task uuid.
    static let hydrate = PreparedStatement(hydrateSQL(withRows: false))

    /// `hydrate` plus `task_row`/`step_row`: the other columns of the task and the step as JSON
    /// (naive timestamps as upstream serializes them), for the FFI step event's `task_sequence_step`
    /// document. Used only by a worker with a foreign runtime attached: a Swift-only worker does not
    /// pay for building them.
    static let hydrateWithRows = PreparedStatement(hydrateSQL(withRows: true))

    private static func hydrateSQL(withRows: Bool) -> String {
        let rows = withRows ? ",\n       to_jsonb(t) - 'context' AS task_row, to_jsonb(ws) - 'inputs' - 'checkpoint' AS step_row" : ""
        return """
            SELECT t.task_uuid, t.named_task_uuid, t.context, t.correlation_id,
                   nt.name AS task_name, nt.version AS task_version, tn.name AS namespace_name,
                   ws.workflow_step_uuid, ns.name AS step_name,
                   COALESCE(ws.inputs->>'__template_step_name', ns.name) AS template_step_name,
                   ws.retryable, ws.max_attempts, COALESCE(ws.attempts, 0) AS attempts, ws.inputs, ws.checkpoint,
                   COALESCE((SELECT wst.to_state FROM tasker.workflow_step_transitions wst
                              WHERE wst.workflow_step_uuid = ws.workflow_step_uuid AND wst.most_recent), 'pending') AS current_state,
                   (SELECT jsonb_object_agg(d.step_name, d.results)
                      FROM tasker.get_step_transitive_dependencies(ws.workflow_step_uuid) d
                     WHERE d.processed AND d.results IS NOT NULL) AS dependency_results\(rows)
              FROM tasker.workflow_steps ws
              JOIN tasker.named_steps ns ON ns.named_step_uuid = ws.named_step_uuid
              JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
              JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
              JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
             WHERE ws.workflow_step_uuid = $1 AND ws.task_uuid = $2
            """
    }

    /// The claim transaction's settings, as a prepared statement (pipelines take no `SET LOCAL`):
    /// `statement_timeout` = $1 milliseconds (text; `timing.claim_timeout_seconds`; NULL keeps the
    /// session's), and
    /// generic plans, so that the plpgsql `get_step_transitive_dependencies` in hydrate is not
    /// re-planned on every call (the companion orchestration measured 2–3 ms per re-plan).
    static let claimSettings = PreparedStatement(
        """
        SELECT set_config('statement_timeout', COALESCE($1::text, current_setting('statement_timeout')), true),
               set_config('plan_cache_mode', 'force_generic_plan', true)
        """)
}
