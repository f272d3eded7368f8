-- $1 task_uuid, $2 from_state, $3 to_state, $4 metadata, $5 processor_uuid
WITH retired AS (
    UPDATE tasker.task_transitions SET most_recent = false, updated_at = NOW()
     WHERE task_uuid = $1::uuid AND most_recent AND to_state = $2::text
    RETURNING to_state, sort_key),
moved AS (
    INSERT INTO tasker.task_transitions
        (task_uuid, to_state, from_state, metadata, sort_key, most_recent, processor_uuid, created_at, updated_at)
    SELECT $1::uuid, $3::text, r.to_state, $4::jsonb, r.sort_key + 1, true, $5::uuid, NOW(), NOW() FROM retired r
    RETURNING sort_key)
SELECT 1 / (SELECT count(*)::integer FROM moved) AS moved
