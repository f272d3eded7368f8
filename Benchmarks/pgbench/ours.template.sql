-- One step as tasker-worker-swift runs it: the TEMPLATE of the SQL floors. benchlib/floor.py renders
-- it into two pgbench scripts in the run's directory, putting in each placeholder (a statement name in braces) the worker's own
-- statement text (printed by `tasker-worker statements --json`, each $k replaced by the pgbench variable
-- of its parameter's name in floor.py's PARAMETERS), so the floors cannot drift from the worker:
--   ours.sql            the default (`[worker.pgmq] statements = "auto"` on a known PGMQ table layout,
--                       here PGMQ >= 1.5's): the claim's archive and the completion's notifying send as
--                       static SQL on the queue tables (claim.archive_static, result.send_static);
--   ours_functions.sql  the same step through PGMQ's functions (`statements = "functions"`, or a layout
--                       the worker does not know): pgmq.archive, tasker.pgmq_send_with_notify.
-- Sources/TaskerWorker/Claim/StepRepository.swift runs them so:
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
-- start_meta, done_meta, result. The static statements also carry the queue names in their table
-- names (pgmq."q_worker_bench_queue", pgmq."a_worker_bench_queue", pgmq."q_orchestration_step_results").
\set i :i + 1
\set n :base + :client_id * :per_client + :i
\set msg_id :n + :msg_offset
SELECT md5('s' || :n)::uuid AS step_uuid, md5('t' || :n)::uuid AS task_uuid,
       jsonb_build_object('task_uuid', md5('t' || :n)::uuid, 'step_uuid', md5('s' || :n)::uuid,
                          'correlation_id', md5('c' || :n)::uuid)::text AS message
\gset s_
\startpipeline
BEGIN;
{claimSettings};
{hydrate};
{claim};
COMMIT;
\endpipeline
{complete};
