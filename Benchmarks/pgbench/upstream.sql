-- One step as the upstream Rust worker issues it (../shared/reference/worker-contract.md §3-§5):
-- hydration in 6 queries, claim as 2 state reads + a 3-statement transaction + 2 autocommit
-- UPDATEs + the archive, completion as 2 loads + a state read + a 3-statement transaction +
-- an autocommit UPDATE + the send. 24 round trips, 7 commits. Same seeding and -D variables as ours.sql.
\set i :i + 1
\set n :base + :client_id * :per_client + :i
SELECT task_uuid, named_task_uuid, complete, requested_at, initiator, source_system, reason, tags, context,
       identity_hash, priority, created_at, updated_at, correlation_id, parent_correlation_id
  FROM tasker.tasks WHERE task_uuid = md5('t' || :n)::uuid
\gset t_
SELECT nt.name AS task_name, nt.version AS task_version, tn.name AS namespace_name
  FROM tasker.tasks t JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
  JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
 WHERE t.task_uuid = :t_task_uuid
\gset i_
SELECT task_namespace_uuid, name, description, created_at, updated_at FROM tasker.task_namespaces WHERE name = :i_namespace_name
\gset ns_
SELECT named_task_uuid, task_namespace_uuid, name, version, description, configuration, created_at, updated_at
  FROM tasker.named_tasks WHERE name = :i_task_name AND version = :i_task_version AND task_namespace_uuid = :ns_task_namespace_uuid
\gset nt_
SELECT ws.workflow_step_uuid, ws.task_uuid, ws.named_step_uuid, ns.name AS name,
       COALESCE(ws.inputs->>'__template_step_name', ns.name) AS template_step_name, ws.retryable, ws.max_attempts,
       ws.in_process, ws.processed, ws.processed_at, ws.attempts, ws.last_attempted_at, ws.backoff_request_seconds,
       ws.inputs, ws.results, ws.checkpoint, ws.created_at, ws.updated_at
  FROM tasker.workflow_steps ws JOIN tasker.named_steps ns ON ws.named_step_uuid = ns.named_step_uuid
 WHERE ws.workflow_step_uuid = md5('s' || :n)::uuid
\gset s_
SELECT * FROM tasker.get_step_transitive_dependencies(:s_workflow_step_uuid);
SELECT to_state AS st FROM tasker.workflow_step_transitions
 WHERE workflow_step_uuid = :s_workflow_step_uuid AND most_recent = true ORDER BY sort_key DESC LIMIT 1
\gset
SELECT to_state AS st FROM tasker.workflow_step_transitions
 WHERE workflow_step_uuid = :s_workflow_step_uuid AND most_recent = true ORDER BY sort_key DESC LIMIT 1
\gset
BEGIN;
SELECT COALESCE(MAX(sort_key), 0) + 1 AS sk FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = :s_workflow_step_uuid
\gset
UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
 WHERE workflow_step_uuid = :s_workflow_step_uuid AND most_recent = true;
INSERT INTO tasker.workflow_step_transitions (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
VALUES (:s_workflow_step_uuid, 'in_progress', :st, :upstream_start_meta::jsonb, :sk, true, NOW(), NOW());
COMMIT;
UPDATE tasker.workflow_steps SET in_process = true, updated_at = NOW() WHERE workflow_step_uuid = :s_workflow_step_uuid;
UPDATE tasker.workflow_steps SET attempts = COALESCE(attempts, 0) + 1, last_attempted_at = (NOW() AT TIME ZONE 'UTC'), updated_at = NOW()
 WHERE workflow_step_uuid = :s_workflow_step_uuid;
SELECT pgmq.archive('worker_bench_queue'::text, (SELECT msg_id FROM bench.floor_map WHERE n = :n)) AS archived;
SELECT ws.workflow_step_uuid, ws.task_uuid, ws.named_step_uuid, ws.retryable, ws.max_attempts, ws.in_process,
       ws.processed, ws.attempts, ws.inputs, ws.results, ws.created_at, ws.updated_at
  FROM tasker.workflow_steps ws WHERE ws.workflow_step_uuid = :s_workflow_step_uuid;
SELECT task_uuid, named_task_uuid, context, correlation_id, created_at, updated_at FROM tasker.tasks WHERE task_uuid = :t_task_uuid
\gset r_
SELECT to_state AS st FROM tasker.workflow_step_transitions
 WHERE workflow_step_uuid = :s_workflow_step_uuid AND most_recent = true ORDER BY sort_key DESC LIMIT 1
\gset
BEGIN;
SELECT COALESCE(MAX(sort_key), 0) + 1 AS sk FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = :s_workflow_step_uuid
\gset
UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
 WHERE workflow_step_uuid = :s_workflow_step_uuid AND most_recent = true;
INSERT INTO tasker.workflow_step_transitions (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
VALUES (:s_workflow_step_uuid, 'enqueued_for_orchestration', 'in_progress', :done_meta::jsonb, :sk, true, NOW(), NOW());
COMMIT;
UPDATE tasker.workflow_steps SET in_process = false, results = :result::jsonb, updated_at = NOW() WHERE workflow_step_uuid = :s_workflow_step_uuid;
SELECT tasker.pgmq_send_with_notify('orchestration_step_results'::text,
    ('{"task_uuid":"' || :t_task_uuid || '","step_uuid":"' || :s_workflow_step_uuid
     || '","correlation_id":"' || :r_correlation_id || '"}')::jsonb, 0) AS msg_id;
