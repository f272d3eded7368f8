-- $1 step_uuid, $2 from_state, $3 to_state, $4 metadata
INSERT INTO tasker.workflow_step_transitions
    (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
SELECT $1::uuid, $3::text, $2::text, $4::jsonb, 1, true, NOW(), NOW()
 WHERE NOT EXISTS (SELECT 1 FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1::uuid)
ON CONFLICT (workflow_step_uuid, most_recent) WHERE most_recent = true DO NOTHING
RETURNING sort_key
