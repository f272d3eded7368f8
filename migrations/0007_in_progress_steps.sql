-- 0007 (ours): the steps whose current state is in_progress, for the workers' crash recovery scan
-- (every few seconds) and the /health/detailed report of long-running steps; both read only these
-- rows. Not in upstream's schema; the worker works without it (a slower scan of most_recent rows).
SET LOCAL search_path TO tasker, public;

CREATE INDEX IF NOT EXISTS idx_workflow_step_transitions_in_progress ON tasker.workflow_step_transitions
    USING btree (created_at) WHERE most_recent = true AND to_state = 'in_progress';
