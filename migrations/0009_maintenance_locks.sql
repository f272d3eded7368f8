-- 0009 (ours): the lock that elects one orchestration at a time for the staleness sweep (issue #26,
-- "what a CONNECT-only role can do"; docs/security.md "PostgreSQL roles"). Not in upstream's schema.
--
-- Earlier versions took an advisory lock (pg_try_advisory_xact_lock) for it. Advisory locks are open
-- to any role that can connect: one holding the key stopped every sweep for as long as it liked.
-- A row lock on this table needs UPDATE on it, which PUBLIC does not have (nor any privilege on
-- schema tasker): the sweep locks its row with SELECT ... FOR UPDATE SKIP LOCKED in its own
-- transaction, and a sweep that finds it locked is skipped, as before.
SET LOCAL search_path TO tasker, public;

CREATE TABLE IF NOT EXISTS tasker.maintenance_locks (
    name text PRIMARY KEY
);
REVOKE ALL ON TABLE tasker.maintenance_locks FROM PUBLIC;
INSERT INTO tasker.maintenance_locks (name) VALUES ('staleness_sweep') ON CONFLICT DO NOTHING;
