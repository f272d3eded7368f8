-- 0006: System-wide task/step counts by current state (orchestration health).
SET LOCAL search_path TO tasker, public;

CREATE OR REPLACE FUNCTION tasker.get_system_health_counts()
RETURNS TABLE(
    pending_tasks                            bigint,
    initializing_tasks                       bigint,
    enqueuing_steps_tasks                    bigint,
    steps_in_process_tasks                   bigint,
    evaluating_results_tasks                 bigint,
    waiting_for_dependencies_tasks           bigint,
    waiting_for_retry_tasks                  bigint,
    blocked_by_failures_tasks                bigint,
    complete_tasks                           bigint,
    error_tasks                              bigint,
    cancelled_tasks                          bigint,
    resolved_manually_tasks                  bigint,
    total_tasks                              bigint,
    pending_steps                            bigint,
    enqueued_steps                           bigint,
    in_progress_steps                        bigint,
    enqueued_for_orchestration_steps         bigint,
    enqueued_as_error_for_orchestration_steps bigint,
    waiting_for_retry_steps                  bigint,
    complete_steps                           bigint,
    error_steps                              bigint,
    cancelled_steps                          bigint,
    resolved_manually_steps                  bigint,
    total_steps                              bigint
)
LANGUAGE plpgsql
AS $fn$
BEGIN
    RETURN QUERY
    WITH ts AS (
        SELECT tt.to_state AS s
          FROM tasker.tasks t
          LEFT JOIN tasker.task_transitions tt
                 ON tt.task_uuid = t.task_uuid AND tt.most_recent = true
    ),
    ss AS (
        SELECT st.to_state AS s
          FROM tasker.workflow_steps w
          LEFT JOIN tasker.workflow_step_transitions st
                 ON st.workflow_step_uuid = w.workflow_step_uuid AND st.most_recent = true
    ),
    tc AS (
        SELECT count(*) FILTER (WHERE s = 'pending')                  AS c_pending,
               count(*) FILTER (WHERE s = 'initializing')             AS c_initializing,
               count(*) FILTER (WHERE s = 'enqueuing_steps')          AS c_enqueuing,
               count(*) FILTER (WHERE s = 'steps_in_process')         AS c_in_process,
               count(*) FILTER (WHERE s = 'evaluating_results')       AS c_evaluating,
               count(*) FILTER (WHERE s = 'waiting_for_dependencies') AS c_wait_deps,
               count(*) FILTER (WHERE s = 'waiting_for_retry')        AS c_wait_retry,
               count(*) FILTER (WHERE s = 'blocked_by_failures')      AS c_blocked,
               count(*) FILTER (WHERE s = 'complete')                 AS c_complete,
               count(*) FILTER (WHERE s = 'error')                    AS c_error,
               count(*) FILTER (WHERE s = 'cancelled')                AS c_cancelled,
               count(*) FILTER (WHERE s = 'resolved_manually')        AS c_resolved,
               count(*)                                               AS c_total
          FROM ts
    ),
    sc AS (
        SELECT count(*) FILTER (WHERE s = 'pending')                             AS c_pending,
               count(*) FILTER (WHERE s = 'enqueued')                            AS c_enqueued,
               count(*) FILTER (WHERE s = 'in_progress')                         AS c_in_progress,
               count(*) FILTER (WHERE s = 'enqueued_for_orchestration')          AS c_efo,
               count(*) FILTER (WHERE s = 'enqueued_as_error_for_orchestration') AS c_eaefo,
               count(*) FILTER (WHERE s = 'waiting_for_retry')                   AS c_wait_retry,
               count(*) FILTER (WHERE s = 'complete')                            AS c_complete,
               count(*) FILTER (WHERE s = 'error')                               AS c_error,
               count(*) FILTER (WHERE s = 'cancelled')                           AS c_cancelled,
               count(*) FILTER (WHERE s = 'resolved_manually')                   AS c_resolved,
               count(*)                                                          AS c_total
          FROM ss
    )
    SELECT tc.c_pending, tc.c_initializing, tc.c_enqueuing, tc.c_in_process, tc.c_evaluating,
           tc.c_wait_deps, tc.c_wait_retry, tc.c_blocked, tc.c_complete, tc.c_error,
           tc.c_cancelled, tc.c_resolved, tc.c_total,
           sc.c_pending, sc.c_enqueued, sc.c_in_progress, sc.c_efo, sc.c_eaefo,
           sc.c_wait_retry, sc.c_complete, sc.c_error, sc.c_cancelled, sc.c_resolved, sc.c_total
      FROM tc CROSS JOIN sc;
END
$fn$;
