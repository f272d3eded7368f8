-- $1 step_uuids, $2 claim_metadata_list
SELECT c.n, wst.workflow_step_uuid AS step_uuid, ws.task_uuid, t.correlation_id
  FROM unnest($1::uuid[], $2::jsonb[]) WITH ORDINALITY AS c(step_uuid, metadata, n)
  JOIN tasker.workflow_step_transitions wst
    ON wst.workflow_step_uuid = c.step_uuid AND wst.most_recent AND wst.to_state = 'in_progress'
   AND wst.metadata = c.metadata
  JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
  JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
