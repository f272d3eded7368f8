-- 0008 (ours): what lets the worker run under a role that owns nothing another role writes to, and
-- the workers' liveness leases (issue #26, items 2 and 4; docs/security.md "PostgreSQL roles" and
-- "Liveness"). Not in upstream's schema.
SET LOCAL search_path TO tasker, public;

-- Creates a PGMQ queue as the role that ran this migration (the schema owner), for a worker role
-- that has no CREATE on schema pgmq (scripts/sql/worker-role.sql). A queue created by the worker
-- role itself would be owned by it, and the owner of a table can add triggers to it that run as
-- whoever writes to the table (the orchestration). Only the queue names a worker or an
-- orchestration creates are accepted; the name reaches pgmq.create, which quotes it (%I).
-- Idempotent: an existing queue is left as it is (pgmq.create on an existing queue would need to
-- own it). search_path is fixed: nothing the caller can create is looked up by name here.
CREATE OR REPLACE FUNCTION tasker.create_queue(queue_name text)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
    IF queue_name IS NULL
       OR pg_catalog.length(queue_name) > 47
       OR queue_name !~ '^[A-Za-z_][A-Za-z0-9_]*$'
       OR NOT (queue_name ~ '^worker_[A-Za-z0-9_]+_queue$'
               OR queue_name ~ '^[A-Za-z_][A-Za-z0-9_]*_domain_events(_dlq)?$'
               OR queue_name IN ('orchestration_step_results', 'orchestration_task_requests',
                                 'orchestration_task_finalizations'))
    THEN
        RAISE EXCEPTION 'tasker.create_queue: % is not a queue name a worker or an orchestration creates',
            pg_catalog.quote_literal(pg_catalog.left(coalesce(queue_name, 'NULL'), 64))
            USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT 1 FROM pgmq.meta m WHERE m.queue_name = create_queue.queue_name) THEN
        RETURN;
    END IF;
    PERFORM pgmq.create(queue_name);
END
$fn$;

-- Functions are executable by PUBLIC by default; this one only by the roles granted it
-- (scripts/sql/worker-role.sql) and its owner.
REVOKE ALL ON FUNCTION tasker.create_queue(text) FROM PUBLIC;

-- One row per running worker: it is alive while expires_at (the database's clock) is in the
-- future. The worker renews its row several times per lease (Recovery/WorkerLeaseState.swift) to
-- clock_timestamp() + the lease's duration, and deletes it at shutdown; crash recovery treats steps claimed by a worker without an unexpired
-- row as lost. Only worker roles may write it (scripts/sql/worker-role.sql); unlike an advisory
-- lock, no role that can merely connect can hold or forge it.
CREATE TABLE IF NOT EXISTS tasker.worker_leases (
    worker_uuid uuid PRIMARY KEY,
    expires_at timestamptz NOT NULL,
    renewed_at timestamptz NOT NULL,
    started_at timestamptz NOT NULL,
    hostname varchar(255) NOT NULL DEFAULT ''
);
REVOKE ALL ON TABLE tasker.worker_leases FROM PUBLIC;
