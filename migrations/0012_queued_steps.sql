-- 0012 (ours): which of the given steps have a message in a worker queue (visible, or hidden by a
-- read), for the orchestration's sweep of step messages lost between an enqueue's commit and their
-- send when the queues have a database of their own (README "The queues in a database of their
-- own"; TaskerOrchestration OrchestrationQueueDatabase). Applied to the queue database (and to the
-- one database of a deployment without a queue database of its own, where nothing calls it).
SET LOCAL search_path TO tasker, public;

-- The step uuids of $2 that have a message in queue $1 (none when the queue does not exist). The
-- queue's table is named by pgmq.meta's row, quoted (%I): no other table can be read through it.
CREATE OR REPLACE FUNCTION tasker.pgmq_queued_steps(queue_name text, step_uuids text[])
RETURNS SETOF text
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_queue text;
BEGIN
    SELECT m.queue_name INTO v_queue FROM pgmq.meta m WHERE m.queue_name = pgmq_queued_steps.queue_name;
    IF v_queue IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE pg_catalog.format(
        'SELECT DISTINCT q.message->>''step_uuid'' FROM pgmq.%I q WHERE q.message->>''step_uuid'' = ANY($1)',
        'q_' || v_queue) USING step_uuids;
END
$fn$;
