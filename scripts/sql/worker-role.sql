-- Privileges of the PostgreSQL role that runs `tasker-worker run` (least privilege).
--
-- The schema is installed by another role (`tasker-worker migrate` needs to own the `tasker` and
-- `pgmq` schemas, or to be able to CREATE EXTENSION pgmq). The worker role only reads and writes
-- rows; it is neither a superuser nor the schemas' owner, and needs no CREATEDB/CREATEROLE.
--
-- Usage, once per database, as the schema owner (psql):
--   CREATE ROLE tasker_worker LOGIN PASSWORD '…';
--   psql "$OWNER_URL" -v worker_role=tasker_worker -f scripts/sql/worker-role.sql
-- Run it again after migrating a newer schema (new tables), and after an orchestration created new
-- queues as another role (the ALTER DEFAULT PRIVILEGES lines cover tables the owner creates later).
-- Tests/TaskerWorkerTests/WorkerRoleTests.swift runs a worker under exactly these grants.

-- Tasker's tables: the worker reads tasks, steps, edges and templates, writes step transitions and
-- results, and upserts its own templates' namespaces and named tasks at start. It deletes nothing.
GRANT USAGE ON SCHEMA tasker TO :"worker_role";
GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA tasker TO :"worker_role";
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA tasker TO :"worker_role";
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA tasker TO :"worker_role";
ALTER DEFAULT PRIVILEGES IN SCHEMA tasker GRANT SELECT, INSERT, UPDATE ON TABLES TO :"worker_role";

-- PGMQ: the worker reads and archives its namespaces' messages, sends results and domain events
-- (through tasker.pgmq_send_with_notify), and creates its namespaces' queues at start when they do
-- not exist yet (CREATE on the schema; a queue it creates is owned by it).
GRANT USAGE, CREATE ON SCHEMA pgmq TO :"worker_role";
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq TO :"worker_role";
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA pgmq TO :"worker_role";
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA pgmq TO :"worker_role";
ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"worker_role";
ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq GRANT USAGE, SELECT ON SEQUENCES TO :"worker_role";
