-- $1 step_uuid, $2 from_state, $3 metadata
WITH retired AS (
    UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
     WHERE workflow_step_uuid = $1::uuid AND most_recent
       AND to_state = $2::text
    RETURNING to_state, sort_key),
moved AS (
    INSERT INTO tasker.workflow_step_transitions
        (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
    SELECT $1::uuid, 'complete', r.to_state, $3::jsonb, r.sort_key + 1, true, NOW(), NOW() FROM retired r
    RETURNING sort_key),
processed AS (
    UPDATE tasker.workflow_steps
       SET processed = true, processed_at = NOW(), in_process = false, updated_at = NOW()
     WHERE workflow_step_uuid = $1::uuid AND EXISTS (SELECT 1 FROM moved))
SELECT sort_key FROM moved
