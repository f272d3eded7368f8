-- 0004: Step/task state functions used by workers and orchestration, the
-- updated_at and result-audit trigger functions, and their triggers.
--
-- Signatures (parameter names, types, defaults, result column names) match
-- upstream tasker-core because callers use named arguments and read result
-- columns by name.  All table references are schema-qualified so that nothing
-- depends on the caller's search_path or role name.
SET LOCAL search_path TO tasker, public;

-- ---------------------------------------------------------------------------
-- Retry / readiness helpers
-- ---------------------------------------------------------------------------

-- Next retry time: explicit backoff (last_attempted_at + backoff seconds) if
-- set, else exponential fallback from the last failure, capped; else NULL.
CREATE OR REPLACE FUNCTION tasker.calculate_step_next_retry_time(
    backoff_request_seconds integer,
    last_attempted_at       timestamp without time zone,
    failure_time            timestamp without time zone,
    attempts                integer,
    p_max_backoff_seconds   integer DEFAULT 60,
    p_backoff_multiplier    numeric DEFAULT 2.0
) RETURNS timestamp without time zone
LANGUAGE sql STABLE
AS $fn$
    SELECT CASE
        WHEN $1 IS NOT NULL AND $2 IS NOT NULL
            THEN $2 + make_interval(secs => $1)
        WHEN $3 IS NOT NULL
            THEN $3 + LEAST(power($6, COALESCE($4, 1)) * interval '1 second',
                            $5 * interval '1 second')
        ELSE NULL
    END
$fn$;

-- A step may run now if it is pending/waiting_for_retry, not processed, not in
-- process, its parents are done, it may (re)try, and any backoff has elapsed.
CREATE OR REPLACE FUNCTION tasker.evaluate_step_state_readiness(
    current_state          text,
    processed              boolean,
    in_process             boolean,
    dependencies_satisfied boolean,
    retry_eligible         boolean,
    retryable              boolean,
    next_retry_time        timestamp without time zone
) RETURNS boolean
LANGUAGE sql STABLE
AS $fn$
    SELECT COALESCE($1, 'pending') IN ('pending', 'waiting_for_retry')
       AND ($2 = false OR $2 IS NULL)
       AND ($3 = false OR $3 IS NULL)
       AND $4
       AND $5
       AND ($7 IS NULL OR $7 <= now())
$fn$;

-- ---------------------------------------------------------------------------
-- Step readiness
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION tasker.get_step_readiness_status_batch(
    input_task_uuids uuid[],
    step_uuids       uuid[] DEFAULT NULL::uuid[]
) RETURNS TABLE(
    workflow_step_uuid      uuid,
    task_uuid               uuid,
    named_step_uuid         uuid,
    name                    text,
    current_state           text,
    dependencies_satisfied  boolean,
    retry_eligible          boolean,
    ready_for_execution     boolean,
    last_failure_at         timestamp without time zone,
    next_retry_at           timestamp without time zone,
    total_parents           integer,
    completed_parents       integer,
    attempts                integer,
    max_attempts            integer,
    backoff_request_seconds integer,
    last_attempted_at       timestamp without time zone
)
LANGUAGE plpgsql STABLE
AS $fn$
BEGIN
    RETURN QUERY
    WITH scope AS (
        SELECT s.workflow_step_uuid AS step_uuid
          FROM tasker.workflow_steps s
         WHERE s.task_uuid = ANY(input_task_uuids)
           AND (step_uuids IS NULL OR s.workflow_step_uuid = ANY(step_uuids))
    ),
    -- current state of every step of the scoped tasks (parents included)
    cur AS (
        SELECT DISTINCT ON (t.workflow_step_uuid)
               t.workflow_step_uuid AS step_uuid, t.to_state
          FROM tasker.workflow_step_transitions t
          JOIN scope ON scope.step_uuid = t.workflow_step_uuid
         WHERE t.most_recent = true
         ORDER BY t.workflow_step_uuid, t.created_at DESC
    ),
    parent_state AS (
        SELECT DISTINCT ON (t.workflow_step_uuid)
               t.workflow_step_uuid AS step_uuid, t.to_state
          FROM tasker.workflow_step_transitions t
          JOIN tasker.workflow_step_edges e ON e.from_step_uuid = t.workflow_step_uuid
          JOIN scope ON scope.step_uuid = e.to_step_uuid
         WHERE t.most_recent = true
         ORDER BY t.workflow_step_uuid, t.created_at DESC
    ),
    last_error AS (
        SELECT DISTINCT ON (t.workflow_step_uuid)
               t.workflow_step_uuid AS step_uuid, t.created_at AS failed_at
          FROM tasker.workflow_step_transitions t
          JOIN scope ON scope.step_uuid = t.workflow_step_uuid
         WHERE t.to_state = 'error'
         ORDER BY t.workflow_step_uuid, t.created_at DESC
    ),
    deps AS (
        SELECT e.to_step_uuid AS step_uuid,
               count(*) AS total,
               count(*) FILTER (WHERE ps.to_state IN ('complete', 'resolved_manually')) AS done
          FROM tasker.workflow_step_edges e
          JOIN scope ON scope.step_uuid = e.to_step_uuid
          LEFT JOIN parent_state ps ON ps.step_uuid = e.from_step_uuid
         GROUP BY e.to_step_uuid
    ),
    flags AS (
        SELECT ws.workflow_step_uuid AS step_uuid,
               (d.total IS NULL OR d.done = d.total) AS deps_ok,
               (COALESCE(ws.attempts, 0) = 0
                OR (COALESCE(ws.retryable, true) = true
                    AND COALESCE(ws.attempts, 0) < COALESCE(ws.max_attempts, 3))) AS can_try,
               tasker.calculate_step_next_retry_time(
                   ws.backoff_request_seconds, ws.last_attempted_at,
                   le.failed_at, ws.attempts) AS retry_at
          FROM tasker.workflow_steps ws
          JOIN scope ON scope.step_uuid = ws.workflow_step_uuid
          LEFT JOIN deps d        ON d.step_uuid = ws.workflow_step_uuid
          LEFT JOIN last_error le ON le.step_uuid = ws.workflow_step_uuid
    )
    SELECT ws.workflow_step_uuid,
           ws.task_uuid,
           ws.named_step_uuid,
           ns.name::text,
           COALESCE(cur.to_state, 'pending')::text,
           f.deps_ok,
           f.can_try,
           tasker.evaluate_step_state_readiness(
               COALESCE(cur.to_state, 'pending'), ws.processed, ws.in_process,
               f.deps_ok, f.can_try, COALESCE(ws.retryable, true), f.retry_at),
           le.failed_at,
           f.retry_at,
           COALESCE(d.total, 0)::integer,
           COALESCE(d.done, 0)::integer,
           COALESCE(ws.attempts, 0)::integer,
           COALESCE(ws.max_attempts, 3),
           ws.backoff_request_seconds,
           ws.last_attempted_at
      FROM tasker.workflow_steps ws
      JOIN scope ON scope.step_uuid = ws.workflow_step_uuid
      JOIN tasker.named_steps ns ON ns.named_step_uuid = ws.named_step_uuid
      LEFT JOIN cur           ON cur.step_uuid = ws.workflow_step_uuid
      LEFT JOIN deps d        ON d.step_uuid = ws.workflow_step_uuid
      LEFT JOIN last_error le ON le.step_uuid = ws.workflow_step_uuid
      LEFT JOIN flags f       ON f.step_uuid = ws.workflow_step_uuid
     ORDER BY ws.task_uuid, ws.workflow_step_uuid;
END
$fn$;

CREATE OR REPLACE FUNCTION tasker.get_step_readiness_status(
    input_task_uuid uuid,
    step_uuids      uuid[] DEFAULT NULL::uuid[]
) RETURNS TABLE(
    workflow_step_uuid      uuid,
    task_uuid               uuid,
    named_step_uuid         uuid,
    name                    text,
    current_state           text,
    dependencies_satisfied  boolean,
    retry_eligible          boolean,
    ready_for_execution     boolean,
    last_failure_at         timestamp without time zone,
    next_retry_at           timestamp without time zone,
    total_parents           integer,
    completed_parents       integer,
    attempts                integer,
    max_attempts            integer,
    backoff_request_seconds integer,
    last_attempted_at       timestamp without time zone
)
LANGUAGE plpgsql STABLE
AS $fn$
BEGIN
    RETURN QUERY
    SELECT * FROM tasker.get_step_readiness_status_batch(ARRAY[input_task_uuid], step_uuids);
END
$fn$;

-- All ancestors of a step (recursive, depth <= 50) with their results.
CREATE OR REPLACE FUNCTION tasker.get_step_transitive_dependencies(target_step_uuid uuid)
RETURNS TABLE(
    workflow_step_uuid uuid,
    task_uuid          uuid,
    named_step_uuid    uuid,
    step_name          character varying,
    results            jsonb,
    processed          boolean,
    distance           integer
)
LANGUAGE plpgsql STABLE
AS $fn$
BEGIN
    RETURN QUERY
    WITH RECURSIVE ancestors(step_uuid, dist) AS (
        SELECT e.from_step_uuid, 1
          FROM tasker.workflow_step_edges e
         WHERE e.to_step_uuid = target_step_uuid
        UNION ALL
        SELECT e.from_step_uuid, a.dist + 1
          FROM ancestors a
          JOIN tasker.workflow_step_edges e ON e.to_step_uuid = a.step_uuid
         WHERE a.dist < 50
    )
    SELECT ws.workflow_step_uuid,
           ws.task_uuid,
           ws.named_step_uuid,
           ns.name,
           ws.results,
           ws.processed,
           a.dist
      FROM ancestors a
      JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = a.step_uuid
      JOIN tasker.named_steps ns    ON ns.named_step_uuid = ws.named_step_uuid
     ORDER BY a.dist ASC, ws.workflow_step_uuid ASC;
END
$fn$;

-- Longest-path level of every step of a task (roots = 0).
CREATE OR REPLACE FUNCTION tasker.calculate_dependency_levels(input_task_uuid uuid)
RETURNS TABLE(workflow_step_uuid uuid, dependency_level integer)
LANGUAGE plpgsql STABLE
AS $fn$
BEGIN
    RETURN QUERY
    WITH RECURSIVE lvl(step_uuid, level) AS (
        SELECT ws.workflow_step_uuid, 0
          FROM tasker.workflow_steps ws
         WHERE ws.task_uuid = input_task_uuid
           AND NOT EXISTS (SELECT 1 FROM tasker.workflow_step_edges e
                            WHERE e.to_step_uuid = ws.workflow_step_uuid)
        UNION ALL
        SELECT e.to_step_uuid, l.level + 1
          FROM lvl l
          JOIN tasker.workflow_step_edges e ON e.from_step_uuid = l.step_uuid
          JOIN tasker.workflow_steps ws     ON ws.workflow_step_uuid = e.to_step_uuid
         WHERE ws.task_uuid = input_task_uuid
    )
    SELECT lvl.step_uuid, max(lvl.level)::integer AS dependency_level
      FROM lvl
     GROUP BY lvl.step_uuid
     ORDER BY dependency_level, lvl.step_uuid;
END
$fn$;

-- ---------------------------------------------------------------------------
-- Task execution context
-- ---------------------------------------------------------------------------
-- execution_status priority: blocked_by_failures > has_ready_steps >
-- processing > all_complete > waiting_for_dependencies.
CREATE OR REPLACE FUNCTION tasker.get_task_execution_contexts_batch(input_task_uuids uuid[])
RETURNS TABLE(
    task_uuid             uuid,
    named_task_uuid       uuid,
    status                text,
    total_steps           bigint,
    pending_steps         bigint,
    in_progress_steps     bigint,
    completed_steps       bigint,
    failed_steps          bigint,
    ready_steps           bigint,
    execution_status      text,
    recommended_action    text,
    completion_percentage numeric,
    health_status         text,
    enqueued_steps        bigint
)
LANGUAGE plpgsql STABLE
AS $fn$
BEGIN
    RETURN QUERY
    WITH steps AS (
        SELECT r.*
          FROM unnest(input_task_uuids) AS u(id)
         CROSS JOIN LATERAL tasker.get_step_readiness_status(u.id, NULL) r
    ),
    counts AS (
        SELECT s.task_uuid AS tid,
               count(*) AS n_total,
               count(*) FILTER (WHERE s.current_state = 'pending') AS n_pending,
               count(*) FILTER (WHERE s.current_state = 'enqueued') AS n_enqueued,
               count(*) FILTER (WHERE s.current_state = 'in_progress') AS n_in_progress,
               count(*) FILTER (WHERE s.current_state = 'enqueued_for_orchestration') AS n_efo,
               count(*) FILTER (WHERE s.current_state = 'enqueued_as_error_for_orchestration') AS n_eaefo,
               count(*) FILTER (WHERE s.current_state IN ('complete', 'resolved_manually')) AS n_done,
               -- every step in 'error' is permanently failed (retryable
               -- failures go to waiting_for_retry instead)
               count(*) FILTER (WHERE s.current_state = 'error') AS n_error,
               count(*) FILTER (WHERE s.ready_for_execution = true) AS n_ready
          FROM steps s
         GROUP BY s.task_uuid
    ),
    tinfo AS (
        SELECT t.task_uuid AS tid,
               t.named_task_uuid AS ntid,
               COALESCE(tt.to_state, 'pending')::text AS cur
          FROM tasker.tasks t
          LEFT JOIN tasker.task_transitions tt
                 ON tt.task_uuid = t.task_uuid AND tt.most_recent = true
         WHERE t.task_uuid = ANY(input_task_uuids)
    ),
    z AS (
        SELECT ti.tid, ti.ntid, ti.cur,
               COALESCE(c.n_total, 0) AS n_total,
               COALESCE(c.n_pending, 0) AS n_pending,
               COALESCE(c.n_enqueued, 0) AS n_enqueued,
               COALESCE(c.n_in_progress, 0) AS n_in_progress,
               COALESCE(c.n_efo, 0) AS n_efo,
               COALESCE(c.n_eaefo, 0) AS n_eaefo,
               COALESCE(c.n_done, 0) AS n_done,
               COALESCE(c.n_error, 0) AS n_error,
               COALESCE(c.n_ready, 0) AS n_ready
          FROM tinfo ti
          LEFT JOIN counts c ON c.tid = ti.tid
    )
    SELECT z.tid,
           z.ntid,
           z.cur,
           z.n_total,
           z.n_pending,
           z.n_in_progress,
           z.n_done,
           z.n_error,
           z.n_ready,
           CASE
               WHEN z.n_error > 0 THEN 'blocked_by_failures'
               WHEN z.n_ready > 0 THEN 'has_ready_steps'
               WHEN z.n_in_progress + z.n_enqueued + z.n_efo + z.n_eaefo > 0 THEN 'processing'
               WHEN z.n_total > 0 AND z.n_done = z.n_total THEN 'all_complete'
               ELSE 'waiting_for_dependencies'
           END,
           CASE
               WHEN z.n_error > 0 THEN 'handle_failures'
               WHEN z.n_ready > 0 THEN 'execute_ready_steps'
               WHEN z.n_in_progress + z.n_enqueued + z.n_efo + z.n_eaefo > 0 THEN 'wait_for_completion'
               WHEN z.n_total > 0 AND z.n_done = z.n_total THEN 'finalize_task'
               ELSE 'wait_for_dependencies'
           END,
           CASE
               WHEN z.n_total = 0 THEN 0.0
               ELSE round((z.n_done::numeric / z.n_total::numeric) * 100, 2)
           END,
           CASE
               WHEN z.n_error > 0 THEN 'blocked'
               ELSE 'healthy'
           END,
           z.n_enqueued + z.n_efo + z.n_eaefo
      FROM z;
END
$fn$;

CREATE OR REPLACE FUNCTION tasker.get_task_execution_context(input_task_uuid uuid)
RETURNS TABLE(
    task_uuid             uuid,
    named_task_uuid       uuid,
    status                text,
    total_steps           bigint,
    pending_steps         bigint,
    in_progress_steps     bigint,
    completed_steps       bigint,
    failed_steps          bigint,
    ready_steps           bigint,
    execution_status      text,
    recommended_action    text,
    completion_percentage numeric,
    health_status         text,
    enqueued_steps        bigint
)
LANGUAGE plpgsql STABLE
AS $fn$
BEGIN
    RETURN QUERY
    SELECT * FROM tasker.get_task_execution_contexts_batch(ARRAY[input_task_uuid]);
END
$fn$;

-- ---------------------------------------------------------------------------
-- Task state
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION tasker.get_current_task_state(p_task_uuid uuid)
RETURNS character varying
LANGUAGE plpgsql
AS $fn$
DECLARE
    v_state character varying;
BEGIN
    SELECT tt.to_state INTO v_state
      FROM tasker.task_transitions tt
     WHERE tt.task_uuid = p_task_uuid
       AND tt.most_recent = true;
    RETURN v_state;
END
$fn$;

-- Compare-and-swap task transition: succeeds (true) only if the task's
-- current state is p_from_state.  Writes processor_uuid and
-- transition_metadata; cannot create a task's first transition.
CREATE OR REPLACE FUNCTION tasker.transition_task_state_atomic(
    p_task_uuid      uuid,
    p_from_state     character varying,
    p_to_state       character varying,
    p_processor_uuid uuid,
    p_metadata       jsonb DEFAULT '{}'::jsonb
) RETURNS boolean
LANGUAGE plpgsql
AS $fn$
DECLARE
    v_next_sort_key integer;
    v_inserted      integer;
BEGIN
    SELECT COALESCE(max(tt.sort_key), 0) + 1 INTO v_next_sort_key
      FROM tasker.task_transitions tt
     WHERE tt.task_uuid = p_task_uuid;

    WITH locked AS (
        SELECT tt.to_state
          FROM tasker.task_transitions tt
         WHERE tt.task_uuid = p_task_uuid
           AND tt.most_recent = true
           FOR UPDATE
    ),
    retired AS (
        UPDATE tasker.task_transitions tt
           SET most_recent = false
         WHERE tt.task_uuid = p_task_uuid
           AND tt.most_recent = true
           AND EXISTS (SELECT 1 FROM locked WHERE locked.to_state = p_from_state)
        RETURNING tt.task_uuid
    )
    INSERT INTO tasker.task_transitions (
        task_uuid, from_state, to_state, processor_uuid, transition_metadata,
        sort_key, most_recent, created_at, updated_at)
    SELECT p_task_uuid, p_from_state, p_to_state, p_processor_uuid, p_metadata,
           v_next_sort_key, true, now(), now()
     WHERE EXISTS (SELECT 1 FROM retired);

    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    RETURN v_inserted > 0;
END
$fn$;

-- Record an orchestration-computed backoff for a step.
CREATE OR REPLACE FUNCTION tasker.set_step_backoff_atomic(p_step_uuid uuid, p_backoff_seconds integer)
RETURNS boolean
LANGUAGE plpgsql
AS $fn$
BEGIN
    UPDATE tasker.workflow_steps
       SET backoff_request_seconds = p_backoff_seconds,
           last_attempted_at = now(),
           updated_at = now()
     WHERE workflow_step_uuid = p_step_uuid;
    RETURN FOUND;
END
$fn$;

-- Tasks stuck in an active orchestration state longer than the timeout.
CREATE OR REPLACE FUNCTION tasker.find_stuck_tasks(p_timeout_minutes integer DEFAULT 10)
RETURNS TABLE(
    task_uuid              uuid,
    current_state          character varying,
    processor_uuid         uuid,
    stuck_duration_minutes integer
)
LANGUAGE plpgsql
AS $fn$
BEGIN
    RETURN QUERY
    SELECT tt.task_uuid,
           tt.to_state,
           tt.processor_uuid,
           extract(epoch FROM (now() - tt.created_at))::integer / 60
      FROM tasker.task_transitions tt
     WHERE tt.most_recent = true
       AND tt.to_state IN ('initializing', 'enqueuing_steps', 'steps_in_process', 'evaluating_results')
       AND tt.created_at < now() - make_interval(mins => p_timeout_minutes);
END
$fn$;

-- ---------------------------------------------------------------------------
-- Task discovery
-- ---------------------------------------------------------------------------
-- One row for the given task (any state) with its ready-step count.
CREATE OR REPLACE FUNCTION tasker.get_task_ready_info(p_task_uuid uuid)
RETURNS TABLE(
    task_uuid         uuid,
    task_name         character varying,
    priority          integer,
    namespace_name    character varying,
    ready_steps_count bigint,
    computed_priority numeric,
    current_state     character varying
)
LANGUAGE plpgsql
AS $fn$
BEGIN
    RETURN QUERY
    SELECT t.task_uuid,
           nt.name,
           t.priority,
           tns.name,
           COALESCE(ctx.ready_steps, 0),
           t.priority + (extract(epoch FROM (now() - t.created_at)) / 3600 * 0.1),
           tt.to_state
      FROM tasker.tasks t
      JOIN tasker.task_transitions tt ON tt.task_uuid = t.task_uuid AND tt.most_recent = true
      JOIN tasker.named_tasks nt      ON nt.named_task_uuid = t.named_task_uuid
      JOIN tasker.task_namespaces tns ON tns.task_namespace_uuid = nt.task_namespace_uuid
     CROSS JOIN LATERAL tasker.get_task_execution_context(p_task_uuid) ctx
     WHERE t.task_uuid = p_task_uuid;
END
$fn$;

-- Discovery: tasks in pending, waiting_for_dependencies (<= 60 min in that
-- state) or waiting_for_retry (<= 30 min); non-pending ones need ready steps.
-- Priority: age escalation while fresh (< 1 h in state), exponential decay
-- (12 h half-life) until 24 h, then a floor of 0.1.
-- Note: no row locks are taken; exclusivity comes from the transition CAS
-- and the partial unique indexes.
CREATE OR REPLACE FUNCTION tasker.get_next_ready_tasks(p_limit integer DEFAULT 5)
RETURNS TABLE(
    task_uuid         uuid,
    task_name         character varying,
    priority          integer,
    namespace_name    character varying,
    ready_steps_count bigint,
    computed_priority numeric,
    current_state     character varying
)
LANGUAGE plpgsql
AS $fn$
DECLARE
    c_max_waiting_deps_minutes  constant integer := 60;
    c_max_waiting_retry_minutes constant integer := 30;
    c_decay_start_hours         constant numeric := 1.0;
    c_decay_half_life_hours     constant numeric := 12.0;
    c_stale_hours               constant numeric := 24.0;
    c_min_priority              constant numeric := 0.1;
BEGIN
    RETURN QUERY
    WITH candidates AS (
        SELECT t.task_uuid AS tid,
               nt.name AS tname,
               t.priority AS prio,
               tns.name AS nsname,
               tt.to_state AS cur,
               t.created_at AS task_created,
               CASE
                   WHEN extract(epoch FROM (now() - tt.created_at)) < c_decay_start_hours * 3600
                       THEN t.priority + (extract(epoch FROM (now() - t.created_at)) / 3600 * 0.1)
                   WHEN extract(epoch FROM (now() - tt.created_at)) < c_stale_hours * 3600
                       THEN t.priority * exp(-1 * extract(epoch FROM (now() - tt.created_at))
                                             / (c_decay_half_life_hours * 3600))
                   ELSE c_min_priority
               END AS cprio
          FROM tasker.tasks t
          JOIN tasker.task_transitions tt ON tt.task_uuid = t.task_uuid AND tt.most_recent = true
          JOIN tasker.named_tasks nt      ON nt.named_task_uuid = t.named_task_uuid
          JOIN tasker.task_namespaces tns ON tns.task_namespace_uuid = nt.task_namespace_uuid
         WHERE tt.to_state = 'pending'
            OR (tt.to_state = 'waiting_for_dependencies'
                AND extract(epoch FROM (now() - tt.created_at)) / 60 <= c_max_waiting_deps_minutes)
            OR (tt.to_state = 'waiting_for_retry'
                AND extract(epoch FROM (now() - tt.created_at)) / 60 <= c_max_waiting_retry_minutes)
         ORDER BY cprio DESC, t.created_at ASC
         LIMIT p_limit * 10
    )
    SELECT c.tid,
           c.tname,
           c.prio,
           c.nsname,
           COALESCE(ctx.ready_steps, 0),
           c.cprio,
           c.cur
      FROM candidates c
     CROSS JOIN LATERAL tasker.get_task_execution_context(c.tid) ctx
     WHERE c.cur = 'pending'
        OR ctx.execution_status = 'has_ready_steps'
     ORDER BY c.cprio DESC
     LIMIT p_limit;
END
$fn$;

CREATE OR REPLACE FUNCTION tasker.get_next_ready_task()
RETURNS TABLE(
    task_uuid         uuid,
    task_name         character varying,
    priority          integer,
    namespace_name    character varying,
    ready_steps_count bigint,
    computed_priority numeric,
    current_state     character varying
)
LANGUAGE plpgsql
AS $fn$
BEGIN
    RETURN QUERY SELECT * FROM tasker.get_next_ready_tasks(1);
END
$fn$;

-- ---------------------------------------------------------------------------
-- Trigger functions and triggers
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION tasker.update_updated_at_column()
RETURNS trigger
LANGUAGE plpgsql
AS $fn$
BEGIN
    NEW.updated_at = CURRENT_TIMESTAMP;
    RETURN NEW;
END
$fn$;

-- Audit row for every worker result transition.  metadata.event is a JSON
-- string of the serialized StepEvent: {"type": ..., "data": StepExecutionResult};
-- success and metadata.execution_time_ms are read from "data" (falling back
-- to the top level for older producers, then to the target state).
CREATE OR REPLACE FUNCTION tasker.create_step_result_audit()
RETURNS trigger
LANGUAGE plpgsql
AS $fn$
DECLARE
    v_task_uuid   uuid;
    v_worker_uuid uuid;
    v_correlation uuid;
    v_event       jsonb;
    v_result      jsonb;
    v_success     boolean;
    v_exec_ms     bigint;
BEGIN
    IF NEW.to_state NOT IN ('enqueued_for_orchestration', 'enqueued_as_error_for_orchestration') THEN
        RETURN NEW;
    END IF;

    SELECT ws.task_uuid INTO v_task_uuid
      FROM tasker.workflow_steps ws
     WHERE ws.workflow_step_uuid = NEW.workflow_step_uuid;

    BEGIN
        v_worker_uuid := (NEW.metadata ->> 'worker_uuid')::uuid;
    EXCEPTION WHEN OTHERS THEN
        v_worker_uuid := NULL;
    END;

    BEGIN
        v_correlation := (NEW.metadata ->> 'correlation_id')::uuid;
    EXCEPTION WHEN OTHERS THEN
        v_correlation := NULL;
    END;

    BEGIN
        -- "event" is normally a string holding JSON; accept an object too.
        IF jsonb_typeof(NEW.metadata -> 'event') = 'object' THEN
            v_event := NEW.metadata -> 'event';
        ELSE
            v_event := (NEW.metadata ->> 'event')::jsonb;
        END IF;
        IF jsonb_typeof(v_event -> 'data') = 'object' THEN
            v_result := v_event -> 'data';
        ELSE
            v_result := v_event;
        END IF;
    EXCEPTION WHEN OTHERS THEN
        v_result := NULL;
    END;

    BEGIN
        v_success := (v_result ->> 'success')::boolean;
    EXCEPTION WHEN OTHERS THEN
        v_success := NULL;
    END;

    BEGIN
        v_exec_ms := (v_result -> 'metadata' ->> 'execution_time_ms')::numeric::bigint;
    EXCEPTION WHEN OTHERS THEN
        v_exec_ms := NULL;
    END;

    IF v_success IS NULL THEN
        v_success := (NEW.to_state = 'enqueued_for_orchestration');
    END IF;

    INSERT INTO tasker.workflow_step_result_audit (
        workflow_step_uuid, workflow_step_transition_uuid, task_uuid,
        worker_uuid, correlation_id, success, execution_time_ms)
    VALUES (
        NEW.workflow_step_uuid, NEW.workflow_step_transition_uuid, v_task_uuid,
        v_worker_uuid, v_correlation, v_success, v_exec_ms);

    RETURN NEW;
END
$fn$;

DROP TRIGGER IF EXISTS trg_step_result_audit ON tasker.workflow_step_transitions;
CREATE TRIGGER trg_step_result_audit
    AFTER INSERT ON tasker.workflow_step_transitions
    FOR EACH ROW
    EXECUTE FUNCTION tasker.create_step_result_audit();

DROP TRIGGER IF EXISTS update_dlq_updated_at ON tasker.tasks_dlq;
CREATE TRIGGER update_dlq_updated_at
    BEFORE UPDATE ON tasker.tasks_dlq
    FOR EACH ROW
    EXECUTE FUNCTION tasker.update_updated_at_column();

COMMENT ON FUNCTION tasker.transition_task_state_atomic(uuid, character varying, character varying, uuid, jsonb) IS
    'Compare-and-swap task state transition; true iff the current state equalled p_from_state.';
COMMENT ON FUNCTION tasker.create_step_result_audit() IS
    'Trigger: audit row on transitions to enqueued_for_orchestration / enqueued_as_error_for_orchestration.';
COMMENT ON TRIGGER trg_step_result_audit ON tasker.workflow_step_transitions IS
    'Creates workflow_step_result_audit rows for worker result transitions.';
