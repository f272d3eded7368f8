-- $1 step_uuid
SELECT to_state FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1::uuid AND most_recent
