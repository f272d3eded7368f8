-- Privileges of the PostgreSQL role that runs `tasker-worker run` (least privilege).
--
-- Three roles (README "Security and limits", docs/security.md "PostgreSQL roles"):
--   the owner    runs `tasker-worker migrate` and this script; owns the `tasker` and `pgmq` schemas,
--                their tables, functions and every queue (also the queues created later, through
--                tasker.create_queue, a SECURITY DEFINER function it owns);
--   the orchestration  writes steps and enqueues them (run it as the owner, or as a role trusted as
--                much: upstream's orchestration creates queues with pgmq.create itself);
--   the worker   this role: reads and writes rows, and OWNS NOTHING. It has no CREATE on any schema,
--                so it can add no trigger, function, operator or type that another role would run
--                or resolve (the owner of a table can add a trigger that runs as whoever writes to it).
--
-- Usage, once per database, as the schema owner (psql):
--   CREATE ROLE tasker_worker LOGIN PASSWORD '…';
--   psql "$OWNER_URL" -v worker_role=tasker_worker -f scripts/sql/worker-role.sql
-- With the queues in a database of their own (PGMQ_DATABASE_URL), run it on both: each part applies
-- where its objects are (the task tables' grants where tasker.tasks is, PGMQ's where schema pgmq is).
-- Run it again after migrating a newer schema (new tables). The ALTER DEFAULT PRIVILEGES lines cover
-- tables the owner creates later, queues included. Upgrading from a version whose worker created its
-- queues itself: those queues are owned by the worker role; give them to the owner first, as a
-- superuser: REASSIGN OWNED BY tasker_worker TO <owner>;
-- PostgreSQL 14 or older grants CREATE on schema public to PUBLIC: revoke it
-- (REVOKE CREATE ON SCHEMA public FROM PUBLIC) or the worker role could shadow functions there.
-- Tests/TaskerSystemTests/WorkerRoleTests.swift runs a worker under exactly these grants and tries
-- what this script must refuse.

-- The role's name for the parts below that apply only where their objects exist.
SELECT pg_catalog.set_config('tasker.worker_role', :'worker_role', false);

-- No object of the worker's own, anywhere the others look (also undoes the CREATE on pgmq that
-- earlier versions of this script granted, below).
REVOKE CREATE ON SCHEMA tasker FROM :"worker_role";
REVOKE CREATE ON SCHEMA public FROM :"worker_role";

-- Tasker's tables and functions: the worker reads tasks, steps, edges and templates, writes step
-- transitions and results, and upserts its own templates' namespaces and named tasks at start. It
-- deletes nothing but its own liveness lease (tasker.worker_leases, below). In a queue database of
-- its own, schema tasker holds the PGMQ helpers (tasker.pgmq_send_with_notify, tasker.create_queue).
GRANT USAGE ON SCHEMA tasker TO :"worker_role";
GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA tasker TO :"worker_role";
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA tasker TO :"worker_role";
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA tasker TO :"worker_role";
ALTER DEFAULT PRIVILEGES IN SCHEMA tasker GRANT SELECT, INSERT, UPDATE ON TABLES TO :"worker_role";

-- Where the task tables are:
DO $task_database$
DECLARE
    worker_role text := pg_catalog.current_setting('tasker.worker_role');
BEGIN
    IF pg_catalog.to_regclass('tasker.tasks') IS NULL THEN
        RETURN;
    END IF;
    -- Liveness (docs/security.md "Liveness"): each worker renews its row and deletes it at shutdown;
    -- workers delete leases that have expired. No other role may write it.
    EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE, DELETE ON tasker.worker_leases TO %I', worker_role);
    -- The fleet's crash-recovery scanner turn (migration 0011): taken and kept by UPDATE of its one row.
    EXECUTE pg_catalog.format('GRANT SELECT, UPDATE ON tasker.recovery_scanner TO %I', worker_role);
    EXECUTE pg_catalog.format('REVOKE INSERT, DELETE ON tasker.recovery_scanner FROM %I', worker_role);
    -- The orchestration's maintenance elections (migration 0009) are none of the worker's business: a
    -- worker role that could lock their rows could stop the staleness sweep.
    EXECUTE pg_catalog.format('REVOKE ALL ON tasker.maintenance_locks FROM %I', worker_role);
END
$task_database$;

-- Where the queues are (schema pgmq): the worker reads and archives its namespaces' messages and
-- sends results and domain events (through tasker.pgmq_send_with_notify). The queues of its
-- namespaces that do not exist yet are created at start through tasker.create_queue (owned by the
-- owner), never by the worker itself. PGMQ's catalog of queues and its own bookkeeping are read
-- only: rows there are written by pgmq.create (through tasker.create_queue, as the owner) and by
-- PGMQ's triggers.
DO $queues$
DECLARE
    worker_role text := pg_catalog.current_setting('tasker.worker_role');
BEGIN
    IF pg_catalog.to_regnamespace('pgmq') IS NULL THEN
        RETURN;
    END IF;
    EXECUTE pg_catalog.format('REVOKE CREATE ON SCHEMA pgmq FROM %I', worker_role);
    EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA pgmq TO %I', worker_role);
    EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq TO %I', worker_role);
    EXECUTE pg_catalog.format('GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA pgmq TO %I', worker_role);
    EXECUTE pg_catalog.format('GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA pgmq TO %I', worker_role);
    EXECUTE pg_catalog.format(
        'ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO %I', worker_role);
    EXECUTE pg_catalog.format('ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq GRANT USAGE, SELECT ON SEQUENCES TO %I', worker_role);
    EXECUTE pg_catalog.format('REVOKE INSERT, UPDATE, DELETE ON pgmq.meta FROM %I', worker_role);
END
$queues$;
