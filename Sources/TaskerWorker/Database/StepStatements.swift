/// The step path's SQL, prepared once per connection (`PreparedStatement`): hydrate, the two
/// statements of a claim and the two of a completion. `StepRepository` runs them; the pgbench
/// floor (`Benchmarks/pgbench/ours.sql`) runs the same text.
enum StepStatements {
    /// $1 step uuid, $2 task uuid.
    static let hydrate = PreparedStatement("""
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

    /// Step 1 of every worker transition. $1 step uuid, $2 the states (text array literal).
    static let retireCurrentTransition = PreparedStatement("""
        UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
         WHERE workflow_step_uuid = $1 AND most_recent AND to_state = ANY($2::text[])
        RETURNING to_state, sort_key
        """)

    /// Legacy `pending` claims: parents not yet complete. $1 step uuid.
    static let unmetParents = PreparedStatement("""
        SELECT count(*) AS unmet FROM tasker.workflow_step_edges e
         WHERE e.to_step_uuid = $1 AND NOT EXISTS (
               SELECT 1 FROM tasker.workflow_step_transitions p
                WHERE p.workflow_step_uuid = e.from_step_uuid AND p.most_recent
                  AND p.to_state IN ('complete', 'resolved_manually'))
        """)

    /// $1 step uuid, $2 from state, $3 metadata, $4 sort key, $5 queue, $6 msg id.
    static let claim = PreparedStatement("""
        WITH transition AS (
            INSERT INTO tasker.workflow_step_transitions
                (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
            VALUES ($1, 'in_progress', $2, $3::jsonb, $4, true, NOW(), NOW())
            RETURNING 1),
        step AS (
            UPDATE tasker.workflow_steps
               SET in_process = true, attempts = COALESCE(attempts, 0) + 1,
                   last_attempted_at = NOW(), updated_at = NOW()
             WHERE workflow_step_uuid = $1
            RETURNING attempts)
        SELECT (SELECT attempts FROM step) AS attempts, (SELECT count(*) FROM transition) AS inserted,
               pgmq.archive($5::text, $6::bigint) AS archived
        """)

    /// $1 step uuid, $2 to state, $3 metadata, $4 sort key, $5 results, $6 queue, $7 message.
    static let complete = PreparedStatement("""
        WITH transition AS (
            INSERT INTO tasker.workflow_step_transitions
                (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
            VALUES ($1, $2, 'in_progress', $3::jsonb, $4, true, NOW(), NOW())
            RETURNING 1),
        step AS (
            UPDATE tasker.workflow_steps SET in_process = false, results = $5::jsonb, updated_at = NOW()
             WHERE workflow_step_uuid = $1
            RETURNING 1)
        SELECT (SELECT count(*) FROM transition) AS inserted, (SELECT count(*) FROM step) AS updated,
               tasker.pgmq_send_with_notify($6::text, $7::jsonb, 0) AS msg_id
        """)
}
