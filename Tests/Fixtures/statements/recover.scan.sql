-- $1 limit
WITH live AS MATERIALIZED (SELECT lease.worker_uuid::text AS worker FROM tasker.worker_leases lease WHERE lease.expires_at > clock_timestamp())
SELECT wst.workflow_step_transition_uuid AS transition_uuid, wst.workflow_step_uuid AS step_uuid,
       ws.task_uuid, t.correlation_id, wst.metadata->>'worker_uuid' AS worker_uuid
  FROM tasker.workflow_step_transitions wst
  JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
  JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
 WHERE wst.most_recent AND wst.to_state = 'in_progress'
   AND wst.metadata->>'worker_uuid' ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
   AND NOT EXISTS (SELECT 1 FROM live WHERE live.worker = wst.metadata->>'worker_uuid')
 ORDER BY wst.created_at
 LIMIT $1
