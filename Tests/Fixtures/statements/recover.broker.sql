-- $1 step_uuid, $2 to_state, $3 metadata, $4 results, $5 transition_uuid, $6 worker_uuid
WITH retired AS (
    UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
     WHERE workflow_step_uuid = $1::uuid AND most_recent
       AND to_state = 'in_progress'
       AND workflow_step_transition_uuid = $5::uuid
       AND NOT EXISTS (SELECT 1 FROM tasker.worker_leases lease
                        WHERE lease.worker_uuid = $6::uuid AND lease.expires_at > clock_timestamp())
    RETURNING to_state, sort_key),
moved AS (
    INSERT INTO tasker.workflow_step_transitions
        (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
    SELECT $1::uuid, $2::text, r.to_state, $3::jsonb, r.sort_key + 1, true, NOW(), NOW() FROM retired r
    RETURNING sort_key),
step AS (
    UPDATE tasker.workflow_steps SET in_process = false, results = $4::jsonb, updated_at = NOW()
     WHERE workflow_step_uuid = $1::uuid AND EXISTS (SELECT 1 FROM retired)
    RETURNING 1)
SELECT (SELECT count(*) FROM moved) AS inserted, CASE WHEN EXISTS (SELECT 1 FROM retired) THEN 0::bigint END AS msg_id
