-- $1 step_uuid, $2 metadata, $3 queue, $4 message
WITH retired AS (
    UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
     WHERE workflow_step_uuid = $1::uuid AND most_recent
       AND to_state = 'pending'
    RETURNING to_state, sort_key),
moved AS (
    INSERT INTO tasker.workflow_step_transitions
        (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
    SELECT $1::uuid, 'enqueued', r.to_state, $2::jsonb, r.sort_key + 1, true, NOW(), NOW() FROM retired r
    RETURNING sort_key)
SELECT tasker.pgmq_send_with_notify($3::text, $4::jsonb, 0) AS msg_id FROM moved
