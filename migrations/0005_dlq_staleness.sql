-- 0005: Staleness detection and dead-letter (DLQ) investigation support:
-- threshold helper, analysis/monitoring views, discovery and transition
-- functions.  Used by orchestration's staleness detector and DLQ API.
SET LOCAL search_path TO tasker, public;

-- Minutes a task may stay in a state: template lifecycle overrides
-- (configuration.lifecycle.max_*_minutes) else the given defaults; 24 h for
-- states that are not monitored.
CREATE OR REPLACE FUNCTION tasker.calculate_staleness_threshold(
    p_task_state            character varying,
    p_template_config       jsonb,
    p_default_waiting_deps  integer DEFAULT 60,
    p_default_waiting_retry integer DEFAULT 30,
    p_default_steps_process integer DEFAULT 30
) RETURNS integer
LANGUAGE plpgsql IMMUTABLE
AS $fn$
DECLARE
    v_lifecycle jsonb := p_template_config -> 'lifecycle';
BEGIN
    CASE p_task_state
        WHEN 'waiting_for_dependencies' THEN
            RETURN COALESCE((v_lifecycle ->> 'max_waiting_for_dependencies_minutes')::integer,
                            p_default_waiting_deps);
        WHEN 'waiting_for_retry' THEN
            RETURN COALESCE((v_lifecycle ->> 'max_waiting_for_retry_minutes')::integer,
                            p_default_waiting_retry);
        WHEN 'steps_in_process' THEN
            RETURN COALESCE((v_lifecycle ->> 'max_steps_in_process_minutes')::integer,
                            p_default_steps_process);
        ELSE
            RETURN 1440;
    END CASE;
END
$fn$;

-- Incomplete tasks with namespace, template and time spent in current state.
CREATE OR REPLACE VIEW tasker.v_task_state_analysis AS
SELECT t.task_uuid,
       t.correlation_id,
       tns.name                 AS namespace_name,
       tns.task_namespace_uuid  AS namespace_uuid,
       nt.name                  AS task_name,
       nt.named_task_uuid,
       nt.configuration         AS template_config,
       tt.to_state              AS current_state,
       tt.created_at            AS state_entered_at,
       extract(epoch FROM (now() - tt.created_at::timestamp with time zone)) / 60::numeric AS time_in_state_minutes,
       extract(epoch FROM (now() - t.created_at::timestamp with time zone)) / 60::numeric  AS task_age_minutes,
       t.priority,
       t.complete
  FROM tasker.tasks t
  JOIN tasker.named_tasks nt      ON nt.named_task_uuid = t.named_task_uuid
  JOIN tasker.task_namespaces tns ON tns.task_namespace_uuid = nt.task_namespace_uuid
  JOIN tasker.task_transitions tt ON tt.task_uuid = t.task_uuid AND tt.most_recent = true
 WHERE t.complete = false;

-- stale / warning (>= 80 % of threshold) / healthy for the monitored states.
CREATE OR REPLACE VIEW tasker.v_task_staleness_monitoring AS
SELECT a.task_uuid,
       a.namespace_name,
       a.task_name,
       a.current_state,
       a.time_in_state_minutes,
       a.task_age_minutes,
       tasker.calculate_staleness_threshold(a.current_state, a.template_config, 60, 30, 30) AS staleness_threshold_minutes,
       CASE
           WHEN a.time_in_state_minutes >=
                tasker.calculate_staleness_threshold(a.current_state, a.template_config, 60, 30, 30)::numeric
               THEN 'stale'::text
           WHEN a.time_in_state_minutes >=
                tasker.calculate_staleness_threshold(a.current_state, a.template_config, 60, 30, 30)::numeric * 0.8
               THEN 'warning'::text
           ELSE 'healthy'::text
       END AS health_status,
       a.priority
  FROM tasker.v_task_state_analysis a
 WHERE a.current_state::text IN ('waiting_for_dependencies', 'waiting_for_retry', 'steps_in_process');

-- DLQ metrics per reason.
CREATE OR REPLACE VIEW tasker.v_dlq_dashboard AS
SELECT d.dlq_reason,
       count(*) AS total_entries,
       count(*) FILTER (WHERE d.resolution_status = 'pending'::tasker.dlq_resolution_status)            AS pending,
       count(*) FILTER (WHERE d.resolution_status = 'manually_resolved'::tasker.dlq_resolution_status)  AS manually_resolved,
       count(*) FILTER (WHERE d.resolution_status = 'permanently_failed'::tasker.dlq_resolution_status) AS permanent_failures,
       count(*) FILTER (WHERE d.resolution_status = 'cancelled'::tasker.dlq_resolution_status)          AS cancelled,
       min(d.dlq_timestamp) AS oldest_entry,
       max(d.dlq_timestamp) AS newest_entry,
       avg(extract(epoch FROM (COALESCE(d.resolution_timestamp::timestamp with time zone, now())
                               - d.dlq_timestamp::timestamp with time zone)) / 60::numeric) AS avg_resolution_time_minutes
  FROM tasker.tasks_dlq d
 GROUP BY d.dlq_reason;

-- Pending investigations, highest priority first (reason weight + age in minutes).
CREATE OR REPLACE VIEW tasker.v_dlq_investigation_queue AS
WITH pending AS (
    SELECT d.*,
           extract(epoch FROM (now() - d.dlq_timestamp::timestamp with time zone)) / 60::numeric AS age_minutes,
           CASE d.dlq_reason
               WHEN 'dependency_cycle_detected'::tasker.dlq_reason THEN 1000
               WHEN 'max_retries_exceeded'::tasker.dlq_reason      THEN 500
               WHEN 'staleness_timeout'::tasker.dlq_reason         THEN 100
               WHEN 'worker_unavailable'::tasker.dlq_reason        THEN 50
               ELSE 10
           END AS weight
      FROM tasker.tasks_dlq d
     WHERE d.resolution_status = 'pending'::tasker.dlq_resolution_status
)
SELECT p.dlq_entry_uuid,
       p.task_uuid,
       p.original_state,
       p.dlq_reason,
       p.dlq_timestamp,
       p.age_minutes                                   AS minutes_in_dlq,
       p.task_snapshot ->> 'namespace'                 AS namespace_name,
       p.task_snapshot ->> 'task_name'                 AS task_name,
       p.task_snapshot ->> 'current_state'             AS current_state,
       (p.metadata ->> 'time_in_state_minutes')::integer AS time_in_state_minutes,
       p.weight::numeric + p.age_minutes               AS priority_score
  FROM pending p
 ORDER BY p.weight::numeric + p.age_minutes DESC;

-- Stale tasks (past their state threshold or max lifetime) without a pending DLQ entry.
CREATE OR REPLACE FUNCTION tasker.get_stale_tasks_for_dlq(
    p_default_waiting_deps  integer DEFAULT 60,
    p_default_waiting_retry integer DEFAULT 30,
    p_default_steps_process integer DEFAULT 30,
    p_max_lifetime_hours    integer DEFAULT 24,
    p_batch_size            integer DEFAULT 100
) RETURNS TABLE(
    task_uuid             uuid,
    namespace_name        character varying,
    task_name             character varying,
    current_state         character varying,
    time_in_state_minutes numeric,
    threshold_minutes     integer,
    task_age_minutes      numeric
)
LANGUAGE plpgsql
AS $fn$
BEGIN
    RETURN QUERY
    WITH a AS (
        SELECT s.*,
               tasker.calculate_staleness_threshold(
                   s.current_state, s.template_config,
                   p_default_waiting_deps, p_default_waiting_retry, p_default_steps_process) AS thr
          FROM tasker.v_task_state_analysis s
         WHERE s.current_state IN ('waiting_for_dependencies', 'waiting_for_retry', 'steps_in_process')
           AND NOT EXISTS (SELECT 1 FROM tasker.tasks_dlq d
                            WHERE d.task_uuid = s.task_uuid
                              AND d.resolution_status = 'pending')
    )
    SELECT a.task_uuid,
           a.namespace_name,
           a.task_name,
           a.current_state,
           a.time_in_state_minutes,
           a.thr,
           a.task_age_minutes
      FROM a
     WHERE a.time_in_state_minutes >= a.thr
        OR a.task_age_minutes >= (p_max_lifetime_hours * 60)
     ORDER BY a.time_in_state_minutes DESC
     LIMIT p_batch_size;
END
$fn$;

-- Insert a pending DLQ entry with a task snapshot; NULL if one is already
-- pending or on error (logged as a WARNING, never raised).
CREATE OR REPLACE FUNCTION tasker.create_dlq_entry(
    p_task_uuid             uuid,
    p_namespace_name        character varying,
    p_task_name             character varying,
    p_current_state         character varying,
    p_time_in_state_minutes integer,
    p_threshold_minutes     integer,
    p_dlq_reason            character varying DEFAULT 'staleness_timeout'::character varying
) RETURNS uuid
LANGUAGE plpgsql
AS $fn$
DECLARE
    v_entry uuid;
BEGIN
    INSERT INTO tasker.tasks_dlq (task_uuid, original_state, dlq_reason, task_snapshot, metadata)
    SELECT t.task_uuid,
           p_current_state,
           p_dlq_reason::tasker.dlq_reason,
           jsonb_build_object(
               'task_uuid', t.task_uuid,
               'namespace', p_namespace_name,
               'task_name', p_task_name,
               'current_state', p_current_state,
               'time_in_state_minutes', p_time_in_state_minutes,
               'threshold_minutes', p_threshold_minutes,
               'snapshot_timestamp', now(),
               'task_details', jsonb_build_object(
                   'correlation_id', t.correlation_id,
                   'priority', t.priority,
                   'requested_at', t.requested_at,
                   'created_at', t.created_at)),
           jsonb_build_object(
               'detection_method', 'automatic_staleness',
               'time_in_state_minutes', p_time_in_state_minutes,
               'threshold_minutes', p_threshold_minutes)
      FROM tasker.tasks t
     WHERE t.task_uuid = p_task_uuid
    ON CONFLICT (task_uuid) WHERE resolution_status = 'pending'::tasker.dlq_resolution_status
    DO NOTHING
    RETURNING dlq_entry_uuid INTO v_entry;

    RETURN v_entry;
EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'Failed to create DLQ entry for task %: %', p_task_uuid, SQLERRM;
    RETURN NULL;
END
$fn$;

-- CAS the task from its current state to 'error'; false on mismatch or error.
CREATE OR REPLACE FUNCTION tasker.transition_stale_task_to_error(
    p_task_uuid      uuid,
    p_current_state  character varying,
    p_namespace_name character varying,
    p_task_name      character varying
) RETURNS boolean
LANGUAGE plpgsql
AS $fn$
BEGIN
    RETURN tasker.transition_task_state_atomic(
        p_task_uuid,
        p_current_state,
        'error',
        NULL,
        jsonb_build_object(
            'reason', 'staleness_timeout',
            'namespace', p_namespace_name,
            'task_name', p_task_name,
            'detected_at', now()));
EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'Failed to transition task % to error: %', p_task_uuid, SQLERRM;
    RETURN false;
END
$fn$;

-- Staleness sweep: discover once, then per task DLQ entry + error transition
-- (or, with p_dry_run, only report what would happen).
CREATE OR REPLACE FUNCTION tasker.detect_and_transition_stale_tasks(
    p_dry_run                            boolean DEFAULT true,
    p_batch_size                         integer DEFAULT 100,
    p_default_waiting_deps_threshold     integer DEFAULT 60,
    p_default_waiting_retry_threshold    integer DEFAULT 30,
    p_default_steps_in_process_threshold integer DEFAULT 30,
    p_default_task_max_lifetime_hours    integer DEFAULT 24
) RETURNS TABLE(
    task_uuid                   uuid,
    namespace_name              character varying,
    task_name                   character varying,
    current_state               character varying,
    time_in_state_minutes       integer,
    staleness_threshold_minutes integer,
    action_taken                character varying,
    moved_to_dlq                boolean,
    transition_success          boolean
)
LANGUAGE plpgsql
AS $fn$
DECLARE
    r         record;
    v_entry   uuid;
    v_ok      boolean;
    v_action  character varying;
BEGIN
    FOR r IN
        SELECT * FROM tasker.get_stale_tasks_for_dlq(
            p_default_waiting_deps_threshold,
            p_default_waiting_retry_threshold,
            p_default_steps_in_process_threshold,
            p_default_task_max_lifetime_hours,
            p_batch_size)
    LOOP
        IF p_dry_run THEN
            v_entry  := NULL;
            v_ok     := false;
            v_action := 'would_transition_to_dlq_and_error';
        ELSE
            v_entry := tasker.create_dlq_entry(
                r.task_uuid, r.namespace_name, r.task_name, r.current_state,
                r.time_in_state_minutes::integer, r.threshold_minutes, 'staleness_timeout');
            v_ok := tasker.transition_stale_task_to_error(
                r.task_uuid, r.current_state, r.namespace_name, r.task_name);
            v_action := CASE
                WHEN v_entry IS NOT NULL AND v_ok THEN 'transitioned_to_dlq_and_error'
                WHEN v_entry IS NOT NULL          THEN 'moved_to_dlq_only'
                WHEN v_ok                         THEN 'transitioned_to_error_only'
                ELSE 'transition_failed'
            END;
        END IF;

        task_uuid                   := r.task_uuid;
        namespace_name              := r.namespace_name;
        task_name                   := r.task_name;
        current_state               := r.current_state;
        time_in_state_minutes       := r.time_in_state_minutes::integer;
        staleness_threshold_minutes := r.threshold_minutes;
        action_taken                := v_action;
        moved_to_dlq                := (v_entry IS NOT NULL);
        transition_success          := COALESCE(v_ok, false);
        RETURN NEXT;
    END LOOP;
END
$fn$;
