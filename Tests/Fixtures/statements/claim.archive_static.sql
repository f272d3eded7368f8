-- $1 step_uuid, $2 metadata, $3 queue, $4 task_uuid, $5 message_id
WITH lease AS MATERIALIZED (
    SELECT $2::jsonb->>'worker_uuid' IS NULL OR EXISTS (
            SELECT 1 FROM tasker.worker_leases l
             WHERE l.worker_uuid = ($2::jsonb->>'worker_uuid')::uuid
               AND l.expires_at - (l.expires_at - l.renewed_at) / 4 > clock_timestamp()) AS held),
retired AS (
    UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
     WHERE workflow_step_uuid = $1::uuid AND most_recent
       AND (SELECT held FROM lease)
       AND EXISTS (
               SELECT 1 FROM tasker.workflow_steps ws
                 JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
                 JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
                 JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
                WHERE ws.workflow_step_uuid = $1::uuid AND ($4::uuid IS NULL OR ws.task_uuid = $4::uuid)
                  AND $3::text = 'worker_' || tn.name || '_queue')
       AND (to_state = 'enqueued'
            OR (to_state = 'pending' AND NOT EXISTS (
                SELECT 1 FROM tasker.workflow_step_edges e
                 WHERE e.to_step_uuid = $1::uuid AND NOT EXISTS (
                       SELECT 1 FROM tasker.workflow_step_transitions p
                        WHERE p.workflow_step_uuid = e.from_step_uuid AND p.most_recent
                          AND p.to_state IN ('complete', 'resolved_manually')))))
    RETURNING to_state, sort_key),
moved AS (
    INSERT INTO tasker.workflow_step_transitions
        (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
    SELECT $1::uuid, 'in_progress', r.to_state, $2::jsonb, r.sort_key + 1, true, NOW(), NOW() FROM retired r
    RETURNING sort_key),
step AS (
    UPDATE tasker.workflow_steps
       SET in_process = true, attempts = COALESCE(attempts, 0) + 1,
           last_attempted_at = NOW(), updated_at = NOW()
     WHERE workflow_step_uuid = $1::uuid AND EXISTS (SELECT 1 FROM retired)
    RETURNING attempts),
archived AS (
    DELETE FROM pgmq."q_worker_example_queue" WHERE msg_id = $5::bigint AND EXISTS (SELECT 1 FROM retired)
    RETURNING msg_id, vt, read_ct, enqueued_at, last_read_at, message, headers),
archive_inserted AS (
    INSERT INTO pgmq."a_worker_example_queue" (msg_id, vt, read_ct, enqueued_at, last_read_at, message, headers)
    SELECT msg_id, vt, read_ct, enqueued_at, last_read_at, message, headers FROM archived
    RETURNING msg_id)
SELECT (SELECT attempts FROM step) AS attempts, (SELECT count(*) FROM moved) AS inserted,
       CASE WHEN EXISTS (SELECT 1 FROM retired) THEN EXISTS (SELECT 1 FROM archive_inserted) END AS archived,
       (SELECT held FROM lease) AS lease_held
