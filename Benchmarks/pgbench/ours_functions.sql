-- One step as tasker-worker-swift runs it through PGMQ's functions (`[worker.pgmq] statements =
-- "functions"`, or a queue table layout it does not know): pgmq.archive in the claim,
-- tasker.pgmq_send_with_notify in the completion (Sources/TaskerWorker/Claim/StepRepository.swift,
-- statement texts from StepStatements.swift; bench.py fails when they drift apart). ours.sql is the
-- default, static variant.
--   1 pipeline = 1 round trip: BEGIN, claimSettings, hydrate, claim, COMMIT (`hydrateAndClaim`);
--   1 statement in autocommit: complete (`completeBatch` of one result).
-- Run with -M prepared (the worker prepares every statement once per connection); -M extended
-- (unnamed statements) gives the "ours_extended" figure. 2 round trips and 2 commits per step.
--
-- One extra round trip the worker does not make: the SELECT before the pipeline. pgbench cannot
-- build a uuid from its integer variables and `\gset` is not allowed inside a pipeline, so the
-- step's uuids and its result message (which the worker has from the queue message) are computed
-- here by a table-free SELECT. The queue message id is n + msg_offset (bench.py checks that the
-- seeded ids are contiguous).
--
-- Step n of this client: seeded by bench.py with uuids md5('s'||n) / md5('t'||n) / md5('c'||n).
-- Variables from -D: i=-1 (per-client counter; pgbench keeps a client's variables across its
-- transactions), base, per_client, msg_offset, queue, results_queue, claim_timeout, to_state,
-- start_meta, done_meta, result.
\set i :i + 1
\set n :base + :client_id * :per_client + :i
\set msg_id :n + :msg_offset
SELECT md5('s' || :n)::uuid AS step_uuid, md5('t' || :n)::uuid AS task_uuid,
       jsonb_build_object('task_uuid', md5('t' || :n)::uuid, 'step_uuid', md5('s' || :n)::uuid,
                          'correlation_id', md5('c' || :n)::uuid)::text AS message
\gset s_
\startpipeline
BEGIN;
SELECT set_config('statement_timeout', COALESCE(:claim_timeout::text, current_setting('statement_timeout')), true),
       set_config('plan_cache_mode', 'force_generic_plan', true);
SELECT t.task_uuid, t.named_task_uuid, t.context, t.correlation_id,
       nt.name AS task_name, nt.version AS task_version, tn.name AS namespace_name,
       ws.workflow_step_uuid, ns.name AS step_name,
       COALESCE(ws.inputs->>'__template_step_name', ns.name) AS template_step_name,
       ws.retryable, ws.max_attempts, COALESCE(ws.attempts, 0) AS attempts, ws.inputs, ws.checkpoint,
       COALESCE((SELECT wst.to_state FROM tasker.workflow_step_transitions wst
                  WHERE wst.workflow_step_uuid = ws.workflow_step_uuid AND wst.most_recent), 'pending') AS current_state,
       (SELECT jsonb_object_agg(d.step_name, d.results)
          FROM tasker.get_step_transitive_dependencies(ws.workflow_step_uuid) d
         WHERE d.processed AND d.results IS NOT NULL) AS dependency_results
  FROM tasker.workflow_steps ws
  JOIN tasker.named_steps ns ON ns.named_step_uuid = ws.named_step_uuid
  JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
  JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
  JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
 WHERE ws.workflow_step_uuid = :s_step_uuid AND ws.task_uuid = :s_task_uuid;
WITH retired AS (
    UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
     WHERE workflow_step_uuid = :s_step_uuid AND most_recent
       AND EXISTS (
            SELECT 1 FROM tasker.workflow_steps ws
              JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
              JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
              JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
             WHERE ws.workflow_step_uuid = :s_step_uuid AND (:s_task_uuid::uuid IS NULL OR ws.task_uuid = :s_task_uuid)
               AND :queue::text = 'worker_' || tn.name || '_queue')
       AND (to_state = 'enqueued'
            OR (to_state = 'pending' AND NOT EXISTS (
                SELECT 1 FROM tasker.workflow_step_edges e
                 WHERE e.to_step_uuid = :s_step_uuid AND NOT EXISTS (
                       SELECT 1 FROM tasker.workflow_step_transitions p
                        WHERE p.workflow_step_uuid = e.from_step_uuid AND p.most_recent
                          AND p.to_state IN ('complete', 'resolved_manually')))))
    RETURNING to_state, sort_key),
transition AS (
    INSERT INTO tasker.workflow_step_transitions
        (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
    SELECT :s_step_uuid, 'in_progress', r.to_state, :start_meta::jsonb, r.sort_key + 1, true, NOW(), NOW() FROM retired r
    RETURNING 1),
step AS (
    UPDATE tasker.workflow_steps
       SET in_process = true, attempts = COALESCE(attempts, 0) + 1,
           last_attempted_at = NOW(), updated_at = NOW()
     WHERE workflow_step_uuid = :s_step_uuid AND EXISTS (SELECT 1 FROM retired)
    RETURNING attempts)
SELECT (SELECT attempts FROM step) AS attempts, (SELECT count(*) FROM transition) AS inserted,
       CASE WHEN EXISTS (SELECT 1 FROM retired) THEN pgmq.archive(:queue::text, :msg_id::bigint) END AS archived;
COMMIT;
\endpipeline
WITH retired AS (
    UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
     WHERE workflow_step_uuid = :s_step_uuid AND most_recent AND to_state = 'in_progress'
       AND metadata->>'worker_uuid' = (:done_meta::jsonb)->>'worker_uuid'
    RETURNING sort_key),
transition AS (
    INSERT INTO tasker.workflow_step_transitions
        (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
    SELECT :s_step_uuid, :to_state, 'in_progress', :done_meta::jsonb, r.sort_key + 1, true, NOW(), NOW() FROM retired r
    RETURNING 1),
step AS (
    UPDATE tasker.workflow_steps SET in_process = false, results = :result::jsonb, updated_at = NOW()
     WHERE workflow_step_uuid = :s_step_uuid AND EXISTS (SELECT 1 FROM retired)
    RETURNING 1)
SELECT (SELECT count(*) FROM transition) AS inserted,
       CASE WHEN EXISTS (SELECT 1 FROM retired)
            THEN tasker.pgmq_send_with_notify(:results_queue::text, :s_message::jsonb, 0) END AS msg_id;
