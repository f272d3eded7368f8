-- One step as tasker-worker-swift runs it (Sources/TaskerWorker/Database/StepRepository.swift):
-- hydrate (1 query), claim (1 transaction), complete (1 transaction). 10 round trips, 2 commits.
-- Step n of this client: seeded by bench.py with uuids md5('s'||n) / md5('t'||n) and its queue
-- message id in bench.floor_map. Variables from -D: i=-1 (per-client counter; pgbench keeps a
-- client's variables across its transactions), base, per_client, start_meta, done_meta, result.
\set i :i + 1
\set n :base + :client_id * :per_client + :i
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
       (SELECT msg_id FROM bench.floor_map WHERE n = :n) AS msg_id
  FROM tasker.workflow_steps ws
  JOIN tasker.named_steps ns ON ns.named_step_uuid = ws.named_step_uuid
  JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
  JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
  JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
 WHERE ws.workflow_step_uuid = md5('s' || :n)::uuid AND ws.task_uuid = md5('t' || :n)::uuid
\gset h_
BEGIN;
SET LOCAL statement_timeout = 300000;
UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
 WHERE workflow_step_uuid = :h_workflow_step_uuid AND most_recent AND to_state = ANY('{enqueued,pending}'::text[])
RETURNING to_state AS c_from, sort_key AS c_sk
\gset
\set c_next :c_sk + 1
WITH transition AS (
    INSERT INTO tasker.workflow_step_transitions
        (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
    VALUES (:h_workflow_step_uuid, 'in_progress', :c_from, :start_meta::jsonb, :c_next, true, NOW(), NOW())
    RETURNING 1),
step AS (
    UPDATE tasker.workflow_steps
       SET in_process = true, attempts = COALESCE(attempts, 0) + 1,
           last_attempted_at = NOW(), updated_at = NOW()
     WHERE workflow_step_uuid = :h_workflow_step_uuid
    RETURNING attempts)
SELECT (SELECT attempts FROM step) AS attempts, (SELECT count(*) FROM transition) AS inserted,
       pgmq.archive('worker_bench_queue'::text, :h_msg_id::bigint) AS archived;
COMMIT;
BEGIN;
UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
 WHERE workflow_step_uuid = :h_workflow_step_uuid AND most_recent AND to_state = ANY('{in_progress}'::text[])
RETURNING to_state AS d_from, sort_key AS d_sk
\gset
\set d_next :d_sk + 1
WITH transition AS (
    INSERT INTO tasker.workflow_step_transitions
        (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
    VALUES (:h_workflow_step_uuid, 'enqueued_for_orchestration', 'in_progress', :done_meta::jsonb, :d_next, true, NOW(), NOW())
    RETURNING 1),
step AS (
    UPDATE tasker.workflow_steps SET in_process = false, results = :result::jsonb, updated_at = NOW()
     WHERE workflow_step_uuid = :h_workflow_step_uuid
    RETURNING 1)
SELECT (SELECT count(*) FROM transition) AS inserted, (SELECT count(*) FROM step) AS updated,
       tasker.pgmq_send_with_notify('orchestration_step_results'::text,
           ('{"task_uuid":"' || :h_task_uuid || '","step_uuid":"' || :h_workflow_step_uuid
            || '","correlation_id":"' || :h_correlation_id || '"}')::jsonb, 0) AS msg_id;
COMMIT;
