-- 0013 (ours): the steps whose current state waits for a message (enqueued: a step message to a
-- worker; enqueued_*_for_orchestration: a result message to orchestration), for the periodic sweeps
-- that send again what was lost between a commit and its send when the messages do not travel in
-- the same transaction (a queue database of its own, RabbitMQ): the orchestration's lost step
-- messages, the crash-recovery scanner's unannounced results of dead workers. Both read only these
-- rows. Not in upstream's schema; upstream ignores it.
SET LOCAL search_path TO tasker, public;

CREATE INDEX IF NOT EXISTS idx_workflow_step_transitions_waiting_for_message ON tasker.workflow_step_transitions
    USING btree (created_at)
    WHERE most_recent = true
      AND to_state IN ('enqueued', 'enqueued_for_orchestration', 'enqueued_as_error_for_orchestration');
