-- 0010 (ours): one crash-recovery scanner for the whole fleet (issue #29). Not in upstream's schema.
--
-- Every worker used to scan for dead workers' steps every scan_interval_ms, so the fleet's scanning
-- load on PostgreSQL grew with the number of workers. Now the lease renewal itself elects the
-- scanner: the worker with the oldest unexpired lease among those that recover (started_at, then
-- worker_uuid) scans, the others do not (Recovery/WorkerLeaseRepository.swift). No extra statement,
-- no session state (works through a transaction-mode pooler), and when the scanner dies its lease
-- expires and the next renewal of the next-oldest worker elects it.
--
-- recovers: whether the worker scans at all ([worker.crash_recovery] enabled); a worker that does not
-- is never elected. Older workers' rows (before this migration) count as recovering.
SET LOCAL search_path TO tasker, public;

ALTER TABLE tasker.worker_leases ADD COLUMN IF NOT EXISTS recovers boolean NOT NULL DEFAULT true;
