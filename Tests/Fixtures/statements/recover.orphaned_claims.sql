-- $1 step_uuids, $2 claim_metadata
SELECT wst.workflow_step_uuid AS step_uuid, ws.task_uuid, t.correlation_id
  FROM tasker.workflow_step_transitions wst
  JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
  JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
 WHERE wst.workflow_step_uuid = ANY($1::uuid[]) AND wst.most_recent AND wst.to_state = 'in_progress'
   AND wst.metadata = $2::jsonb
