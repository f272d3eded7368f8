import TaskerPostgres

/// The step path's SQL, prepared once per connection (`PreparedStatement`): hydrate and the two
/// statements of a claim here, the completion in `Completion/StepStatements+Completion.swift`.
/// `StepRepository` runs them; the pgbench floors run the same text (`Benchmarks/pgbench/ours_functions.sql`
/// these, `ours.sql` the static variants of `StepStatements+StaticQueues`).
enum StepStatements {
    /// $1 step uuid, $2 task uuid.
    static let hydrate = PreparedStatement(
        """
        SELECT t.task_uuid, t.named_task_uuid, t.context, t.correlation_id,
               nt.name AS task_name, nt.version AS task_version, tn.name AS namespace_name,
               ws.workflow_step_uuid, ns.name AS step_name,
               COALESCE(ws.inputs->>'__template_step_name', ns.name) AS template_step_name,
               ws.retryable, ws.max_attempts, COALESCE(ws.attempts, 0) AS attempts, ws.inputs, ws.checkpoint,
               COALESCE((SELECT wst.to_state FROM tasker.workflow_step_transitions wst
                          WHERE wst.workflow_step_uuid = ws.workflow_step_uuid AND wst.most_recent), 'pending') AS current_state,
               (SELECT jsonb_object_agg(d.step_name, d.results)
                  FROM tasker.get_step_transitive_dependencies(ws.workflow_step_uuid) d
                 WHERE d.processed AND d.results IS NOT NULL) AS dependency_results
          FROM tasker.workflow_steps ws
          JOIN tasker.named_steps ns ON ns.named_step_uuid = ws.named_step_uuid
          JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
          JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
          JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
         WHERE ws.workflow_step_uuid = $1 AND ws.task_uuid = $2
        """)

    /// `hydrate` plus `task_row`/`step_row`: the other columns of the task and the step as JSON
    /// (naive timestamps as upstream serializes them), for the FFI step event's `task_sequence_step`
    /// document. Used only by a worker with a foreign runtime attached: a Swift-only worker does not
    /// pay for building them.
    static let hydrateWithRows = PreparedStatement(
        hydrate.sql.replacing(
            "AS dependency_results\n",
            with: "AS dependency_results,\n       to_jsonb(t) - 'context' AS task_row, "
                + "to_jsonb(ws) - 'inputs' - 'checkpoint' AS step_row\n"))

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

    /// The whole claim in one statement: retire the current `enqueued` transition (legacy `pending`
    /// only when every parent is complete), insert `in_progress` after it, mark the step in process
    /// with `attempts + 1`, and archive the message, all only if the retire matched. Only a step of
    /// the namespace whose queue ($3, `worker_<ns>_queue`) delivered the message is claimed: a
    /// message put into another namespace's queue claims nothing (and archives nothing). The insert reads
    /// the retired row, so the old row is no longer `most_recent` when the new one goes in. A racing
    /// claimer blocks on the transition's row lock, then finds it retired and changes nothing.
    ///
    /// The claiming worker (`worker_uuid` in $2, `ClaimStamp`) must hold its liveness lease, by the
    /// database's clock, for more than a quarter of the lease's duration yet (`lease`): a worker
    /// whose renewals are not stored claims nothing, however its own clock sees it, so a rescuer
    /// that finds the lease expired (`RecoveryStatements.recover`) never takes a step claimed under
    /// a lease about to lapse. `lease_held` false says why nothing was claimed. Metadata without
    /// `worker_uuid` (tools and tests; upstream's worker records none) claims without a lease.
    /// $1 step uuid, $2 metadata, $3 queue, $4 msg id, $5 task uuid (NULL: any task).
    static let claim = PreparedStatement(
        """
        WITH lease AS MATERIALIZED (
            SELECT $2::jsonb->>'worker_uuid' IS NULL OR EXISTS (
                    SELECT 1 FROM tasker.worker_leases l
                     WHERE l.worker_uuid = ($2::jsonb->>'worker_uuid')::uuid
                       AND l.expires_at - (l.expires_at - l.renewed_at) / 4 > clock_timestamp()) AS held),
        retired AS (
            UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
             WHERE workflow_step_uuid = $1 AND most_recent AND (SELECT held FROM lease)
               AND EXISTS (
                    SELECT 1 FROM tasker.workflow_steps ws
                      JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
                      JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
                      JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
                     WHERE ws.workflow_step_uuid = $1 AND ($5::uuid IS NULL OR ws.task_uuid = $5)
                       AND $3::text = 'worker_' || tn.name || '_queue')
               AND (to_state = 'enqueued'
                    OR (to_state = 'pending' AND NOT EXISTS (
                        SELECT 1 FROM tasker.workflow_step_edges e
                         WHERE e.to_step_uuid = $1 AND NOT EXISTS (
                               SELECT 1 FROM tasker.workflow_step_transitions p
                                WHERE p.workflow_step_uuid = e.from_step_uuid AND p.most_recent
                                  AND p.to_state IN ('complete', 'resolved_manually')))))
            RETURNING to_state, sort_key),
        transition AS (
            INSERT INTO tasker.workflow_step_transitions
                (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
            SELECT $1, 'in_progress', r.to_state, $2::jsonb, r.sort_key + 1, true, NOW(), NOW() FROM retired r
            RETURNING 1),
        step AS (
            UPDATE tasker.workflow_steps
               SET in_process = true, attempts = COALESCE(attempts, 0) + 1,
                   last_attempted_at = NOW(), updated_at = NOW()
             WHERE workflow_step_uuid = $1 AND EXISTS (SELECT 1 FROM retired)
            RETURNING attempts)
        SELECT (SELECT attempts FROM step) AS attempts, (SELECT count(*) FROM transition) AS inserted,
               CASE WHEN EXISTS (SELECT 1 FROM retired) THEN pgmq.archive($3::text, $4::bigint) END AS archived,
               (SELECT held FROM lease) AS lease_held
        """)
}
