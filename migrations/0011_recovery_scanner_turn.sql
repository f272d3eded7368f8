-- 0011 (ours): the fleet's crash-recovery scanner holds a turn that only scanning keeps (issue #29).
-- Not in upstream's schema.
--
-- 0010 elected the scanner as the oldest live lease that recovers. A lease says only that its worker
-- renews it: a worker whose scanner is stuck, or any lease row written without scanning behind it (the
-- benchmark's floor wrote one for a day), was elected for good and nobody scanned. Now a lease renewal
-- may only TAKE the turn when it is free or has expired; the scanner keeps it by scanning (each scan
-- first extends held_until by two scan intervals, Recovery/RecoveryStatements.swift), so a turn nobody
-- scans under expires and the next renewal of a recovering worker takes it. 0010's `recovers` column
-- stays: it records whether a worker recovers at all (a worker that does not never takes the turn).
SET LOCAL search_path TO tasker, public;

CREATE TABLE IF NOT EXISTS tasker.recovery_scanner (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    holder uuid,
    held_until timestamptz NOT NULL DEFAULT '-infinity'
);
REVOKE ALL ON TABLE tasker.recovery_scanner FROM PUBLIC;
INSERT INTO tasker.recovery_scanner (singleton) VALUES (true) ON CONFLICT DO NOTHING;
