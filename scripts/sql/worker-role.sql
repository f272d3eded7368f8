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
-- Run it again after migrating a newer schema (new tables). The ALTER DEFAULT PRIVILEGES lines cover
-- tables the owner creates later, queues included. Upgrading from a version whose worker created its
-- queues itself: those queues are owned by the worker role; give them to the owner first, as a
-- superuser: REASSIGN OWNED BY tasker_worker TO <owner>;
-- PostgreSQL 14 or older grants CREATE on schema public to PUBLIC: revoke it
-- (REVOKE CREATE ON SCHEMA public FROM PUBLIC) or the worker role could shadow functions there.
-- Tests/TaskerSystemTests/WorkerRoleTests.swift runs a worker under exactly these grants and tries
-- what this script must refuse.

-- No object of the worker's own, anywhere the others look (also undoes the CREATE on pgmq that
-- earlier versions of this script granted).
REVOKE CREATE ON SCHEMA tasker FROM :"worker_role";
REVOKE CREATE ON SCHEMA pgmq FROM :"worker_role";
REVOKE CREATE ON SCHEMA public FROM :"worker_role";

-- Tasker's tables: the worker reads tasks, steps, edges and templates, writes step transitions and
-- results, and upserts its own templates' namespaces and named tasks at start. It deletes nothing
-- but its own liveness lease (tasker.worker_leases, below).
GRANT USAGE ON SCHEMA tasker TO :"worker_role";
GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA tasker TO :"worker_role";
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA tasker TO :"worker_role";
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA tasker TO :"worker_role";
ALTER DEFAULT PRIVILEGES IN SCHEMA tasker GRANT SELECT, INSERT, UPDATE ON TABLES TO :"worker_role";

-- Liveness (docs/security.md "Liveness"): each worker renews its row and deletes it at shutdown;
-- workers delete leases that have expired. No other role may write it.
GRANT SELECT, INSERT, UPDATE, DELETE ON tasker.worker_leases TO :"worker_role";
-- The fleet's crash-recovery scanner turn (migration 0011): taken and kept by UPDATE of its one row.
GRANT SELECT, UPDATE ON tasker.recovery_scanner TO :"worker_role";
REVOKE INSERT, DELETE ON tasker.recovery_scanner FROM :"worker_role";
-- The orchestration's maintenance elections (migration 0009) are none of the worker's business: a
-- worker role that could lock their rows could stop the staleness sweep.
REVOKE ALL ON tasker.maintenance_locks FROM :"worker_role";

-- PGMQ: the worker reads and archives its namespaces' messages and sends results and domain events
-- (through tasker.pgmq_send_with_notify). The queues of its namespaces that do not exist yet are
-- created at start through tasker.create_queue (owned by the owner), never by the worker itself.
GRANT USAGE ON SCHEMA pgmq TO :"worker_role";
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq TO :"worker_role";
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA pgmq TO :"worker_role";
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA pgmq TO :"worker_role";
ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"worker_role";
ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq GRANT USAGE, SELECT ON SEQUENCES TO :"worker_role";
-- PGMQ's catalog of queues and its own bookkeeping are read only: rows there are written by
-- pgmq.create (through tasker.create_queue, as the owner) and by PGMQ's triggers.
REVOKE INSERT, UPDATE, DELETE ON pgmq.meta FROM :"worker_role";
