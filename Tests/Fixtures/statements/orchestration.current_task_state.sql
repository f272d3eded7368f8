-- $1 task_uuid
SELECT to_state FROM tasker.task_transitions WHERE task_uuid = $1::uuid AND most_recent
