-- $1 step_uuid, $2 task_uuid
SELECT t.task_uuid, t.named_task_uuid, t.context, t.correlation_id,
       nt.name AS task_name, nt.version AS task_version, tn.name AS namespace_name,
       ws.workflow_step_uuid, ns.name AS step_name,
       COALESCE(ws.inputs->>'__template_step_name', ns.name) AS template_step_name,
       ws.retryable, ws.max_attempts, COALESCE(ws.attempts, 0) AS attempts, ws.inputs, ws.checkpoint,
       COALESCE((SELECT wst.to_state FROM tasker.workflow_step_transitions wst
                  WHERE wst.workflow_step_uuid = ws.workflow_step_uuid AND wst.most_recent), 'pending') AS current_state,
       (SELECT jsonb_object_agg(d.step_name, d.results)
          FROM tasker.get_step_transitive_dependencies(ws.workflow_step_uuid) d
         WHERE d.processed AND d.results IS NOT NULL) AS dependency_results,
       to_jsonb(t) - 'context' AS task_row, to_jsonb(ws) - 'inputs' - 'checkpoint' AS step_row
  FROM tasker.workflow_steps ws
  JOIN tasker.named_steps ns ON ns.named_step_uuid = ws.named_step_uuid
  JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
  JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
  JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
 WHERE ws.workflow_step_uuid = $1 AND ws.task_uuid = $2
