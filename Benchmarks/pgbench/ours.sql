-- One step as tasker-worker-swift runs it by default (`[worker.pgmq] statements = "auto"` on a known
-- PGMQ table layout, here PGMQ >= 1.5's): Sources/TaskerWorker/Claim/StepRepository.swift, statement
-- texts from StepStatements.swift, StepStatements+Completion.swift and StepStatements+StaticQueues.swift
-- (the claim's archive and the completion's notifying send as static SQL on the queue tables); bench.py
-- fails when they drift apart. ours_functions.sql is the same step through PGMQ's functions
-- (`statements = "functions"`, or a layout the worker does not know).
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
-- start_meta, done_meta, result. The queue names are also written into the table names
-- (pgmq."q_worker_bench_queue", pgmq."a_worker_bench_queue", pgmq."q_orchestration_step_results").
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
    RETURNING attempts),
archived AS (
    DELETE FROM pgmq."q_worker_bench_queue" WHERE msg_id = :msg_id::bigint AND EXISTS (SELECT 1 FROM retired)
    RETURNING msg_id, vt, read_ct, enqueued_at, last_read_at, message, headers),
moved AS (
    INSERT INTO pgmq."a_worker_bench_queue" (msg_id, vt, read_ct, enqueued_at, last_read_at, message, headers)
    SELECT msg_id, vt, read_ct, enqueued_at, last_read_at, message, headers FROM archived
    RETURNING msg_id)
SELECT (SELECT attempts FROM step) AS attempts, (SELECT count(*) FROM transition) AS inserted,
       CASE WHEN EXISTS (SELECT 1 FROM retired) THEN EXISTS (SELECT 1 FROM moved) END AS archived;
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
    RETURNING 1),
sent AS (
    INSERT INTO pgmq."q_orchestration_step_results" (vt, message, headers)
    SELECT clock_timestamp() + make_interval(secs => 0), :s_message::jsonb, NULL::jsonb WHERE EXISTS (SELECT 1 FROM retired)
    RETURNING msg_id, tasker.extract_queue_namespace(:results_queue::text) AS namespace),
built AS MATERIALIZED (
    SELECT s.msg_id, s.namespace,
           CASE WHEN length(:s_message::jsonb::text) < tasker.pgmq_payload_size_threshold()
                THEN json_build_object(
                    'event_type', 'message_with_payload', 'msg_id', s.msg_id, 'queue_name', :results_queue::text,
                    'namespace', s.namespace, 'message', :s_message::jsonb, 'ready_at', now()::timestamptz,
                    'delay_seconds', 0)::text
                ELSE json_build_object(
                    'event_type', 'message_ready', 'msg_id', s.msg_id, 'queue_name', :results_queue::text,
                    'namespace', s.namespace, 'ready_at', now()::timestamptz, 'delay_seconds', 0,
                    'payload_omitted', true)::text END AS payload
      FROM sent s),
notified AS MATERIALIZED (
    SELECT b.msg_id, p.payload,
           pg_notify('pgmq_message_ready.' || b.namespace, p.payload) AS on_namespace,
           CASE WHEN 'pgmq_message_ready.' || b.namespace <> 'pgmq_message_ready'
                THEN pg_notify('pgmq_message_ready', p.payload) END AS on_all
      FROM built b,
           LATERAL (SELECT CASE WHEN length(b.payload) > 7800
                                THEN json_build_object(
                                    'event_type', 'message_ready', 'msg_id', b.msg_id, 'queue_name', :results_queue::text,
                                    'namespace', b.namespace, 'ready_at', now()::timestamptz,
                                    'payload_omitted', true, 'truncated', true)::text
                                ELSE b.payload END AS payload) p)
SELECT (SELECT count(*) FROM transition) AS inserted,
       CASE WHEN EXISTS (SELECT 1 FROM retired)
            THEN (SELECT msg_id FROM notified) END AS msg_id;
