-- 0002: Tasker tables, enum types, keys, indexes and the step DAG view.
--
-- Compatible with the upstream tasker-core schema (same names, column types,
-- nullability, defaults, CHECK state lists, constraint and index names), and
-- written so it can run over a database the upstream migrations already built.
-- created_at/updated_at have no defaults on the core tables (callers pass NOW()).
SET LOCAL search_path TO tasker, public;

CREATE SCHEMA IF NOT EXISTS tasker;

-- ---------------------------------------------------------------------------
-- Enum types
-- ---------------------------------------------------------------------------
DO $enums$
BEGIN
    IF to_regtype('tasker.dlq_reason') IS NULL THEN
        CREATE TYPE tasker.dlq_reason AS ENUM (
            'staleness_timeout',
            'max_retries_exceeded',
            'dependency_cycle_detected',
            'worker_unavailable',
            'manual_dlq');
    END IF;
    IF to_regtype('tasker.dlq_resolution_status') IS NULL THEN
        CREATE TYPE tasker.dlq_resolution_status AS ENUM (
            'pending',
            'manually_resolved',
            'permanently_failed',
            'cancelled');
    END IF;
    IF to_regtype('tasker.identity_strategy') IS NULL THEN
        CREATE TYPE tasker.identity_strategy AS ENUM (
            'strict',
            'caller_provided',
            'always_unique');
    END IF;
END
$enums$;

COMMENT ON TYPE tasker.identity_strategy IS
    'How a task''s identity_hash is derived: strict = hash of (named task, context); caller_provided = caller idempotency key; always_unique = fresh uuid v7.';

-- ---------------------------------------------------------------------------
-- Tables
-- ---------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS tasker.task_namespaces (
    task_namespace_uuid uuid DEFAULT uuid_generate_v7() NOT NULL,
    name                character varying(64) NOT NULL,
    description         character varying(255),
    created_at          timestamp(6) without time zone NOT NULL,
    updated_at          timestamp(6) without time zone NOT NULL
);

CREATE TABLE IF NOT EXISTS tasker.named_tasks (
    named_task_uuid     uuid DEFAULT uuid_generate_v7() NOT NULL,
    task_namespace_uuid uuid NOT NULL,
    name                character varying(64) NOT NULL,
    description         character varying(255),
    version             character varying(16) DEFAULT '0.1.0'::character varying NOT NULL,
    configuration       jsonb DEFAULT '{}'::jsonb,
    created_at          timestamp(6) without time zone NOT NULL,
    updated_at          timestamp(6) without time zone NOT NULL,
    identity_strategy   tasker.identity_strategy DEFAULT 'strict'::tasker.identity_strategy NOT NULL
);
-- Databases created before identity strategies existed lack the column.
ALTER TABLE tasker.named_tasks
    ADD COLUMN IF NOT EXISTS identity_strategy tasker.identity_strategy
        DEFAULT 'strict'::tasker.identity_strategy NOT NULL;

CREATE TABLE IF NOT EXISTS tasker.named_steps (
    named_step_uuid uuid DEFAULT uuid_generate_v7() NOT NULL,
    name            character varying(128) NOT NULL,
    description     character varying(255),
    created_at      timestamp(6) without time zone NOT NULL,
    updated_at      timestamp(6) without time zone NOT NULL
);

CREATE TABLE IF NOT EXISTS tasker.named_tasks_named_steps (
    ntns_uuid            uuid DEFAULT uuid_generate_v7() NOT NULL,
    named_task_uuid      uuid NOT NULL,
    named_step_uuid      uuid NOT NULL,
    default_retryable    boolean DEFAULT true NOT NULL,
    default_max_attempts integer DEFAULT 3 NOT NULL,
    created_at           timestamp(6) without time zone NOT NULL,
    updated_at           timestamp(6) without time zone NOT NULL
);

CREATE TABLE IF NOT EXISTS tasker.tasks (
    task_uuid             uuid DEFAULT uuid_generate_v7() NOT NULL,
    named_task_uuid       uuid NOT NULL,
    complete              boolean DEFAULT false NOT NULL,
    requested_at          timestamp without time zone NOT NULL,
    completed_at          timestamp without time zone,
    initiator             character varying(128),
    source_system         character varying(128),
    reason                character varying(128),
    tags                  jsonb,
    context               jsonb,
    identity_hash         character varying(128) NOT NULL,
    created_at            timestamp(6) without time zone NOT NULL,
    updated_at            timestamp(6) without time zone NOT NULL,
    priority              integer DEFAULT 0 NOT NULL,
    correlation_id        uuid NOT NULL,
    parent_correlation_id uuid
);

CREATE TABLE IF NOT EXISTS tasker.workflow_steps (
    workflow_step_uuid      uuid DEFAULT uuid_generate_v7() NOT NULL,
    task_uuid               uuid NOT NULL,
    named_step_uuid         uuid NOT NULL,
    retryable               boolean DEFAULT true NOT NULL,
    max_attempts            integer DEFAULT 3,
    in_process              boolean DEFAULT false NOT NULL,
    processed               boolean DEFAULT false NOT NULL,
    processed_at            timestamp without time zone,
    attempts                integer,
    last_attempted_at       timestamp without time zone,
    backoff_request_seconds integer,
    inputs                  jsonb,
    results                 jsonb,
    created_at              timestamp(6) without time zone NOT NULL,
    updated_at              timestamp(6) without time zone NOT NULL,
    priority                integer DEFAULT 0 NOT NULL,
    checkpoint              jsonb
);

CREATE TABLE IF NOT EXISTS tasker.workflow_step_edges (
    workflow_step_edge_uuid uuid DEFAULT uuid_generate_v7() NOT NULL,
    from_step_uuid          uuid NOT NULL,
    to_step_uuid            uuid NOT NULL,
    name                    character varying NOT NULL,
    created_at              timestamp(6) without time zone NOT NULL,
    updated_at              timestamp(6) without time zone NOT NULL
);

CREATE TABLE IF NOT EXISTS tasker.task_transitions (
    task_transition_uuid uuid DEFAULT uuid_generate_v7() NOT NULL,
    task_uuid            uuid NOT NULL,
    to_state             character varying NOT NULL,
    from_state           character varying,
    metadata             jsonb DEFAULT '{}'::jsonb,
    sort_key             integer NOT NULL,
    most_recent          boolean DEFAULT false NOT NULL,
    created_at           timestamp(6) without time zone NOT NULL,
    updated_at           timestamp(6) without time zone NOT NULL,
    processor_uuid       uuid,
    transition_metadata  jsonb DEFAULT '{}'::jsonb
);

CREATE TABLE IF NOT EXISTS tasker.workflow_step_transitions (
    workflow_step_transition_uuid uuid DEFAULT uuid_generate_v7() NOT NULL,
    workflow_step_uuid            uuid NOT NULL,
    to_state                      character varying NOT NULL,
    from_state                    character varying,
    metadata                      jsonb DEFAULT '{}'::jsonb,
    sort_key                      integer NOT NULL,
    most_recent                   boolean DEFAULT false NOT NULL,
    created_at                    timestamp(6) without time zone NOT NULL,
    updated_at                    timestamp(6) without time zone NOT NULL
);

CREATE TABLE IF NOT EXISTS tasker.workflow_step_result_audit (
    workflow_step_result_audit_uuid uuid DEFAULT uuid_generate_v7() NOT NULL,
    workflow_step_uuid              uuid NOT NULL,
    workflow_step_transition_uuid   uuid NOT NULL,
    task_uuid                       uuid NOT NULL,
    recorded_at                     timestamp(6) without time zone DEFAULT now() NOT NULL,
    worker_uuid                     uuid,
    correlation_id                  uuid,
    success                         boolean NOT NULL,
    execution_time_ms               bigint,
    created_at                      timestamp(6) without time zone DEFAULT now() NOT NULL,
    updated_at                      timestamp(6) without time zone DEFAULT now() NOT NULL
);

CREATE TABLE IF NOT EXISTS tasker.tasks_dlq (
    dlq_entry_uuid       uuid DEFAULT uuid_generate_v7() NOT NULL,
    task_uuid            uuid NOT NULL,
    original_state       character varying(50) NOT NULL,
    dlq_reason           tasker.dlq_reason NOT NULL,
    dlq_timestamp        timestamp without time zone DEFAULT now() NOT NULL,
    resolution_status    tasker.dlq_resolution_status DEFAULT 'pending'::tasker.dlq_resolution_status NOT NULL,
    resolution_timestamp timestamp without time zone,
    resolution_notes     text,
    resolved_by          character varying(255),
    task_snapshot        jsonb NOT NULL,
    metadata             jsonb,
    created_at           timestamp without time zone DEFAULT now() NOT NULL,
    updated_at           timestamp without time zone DEFAULT now() NOT NULL
);

-- ---------------------------------------------------------------------------
-- Constraints (primary keys, uniques, state CHECKs, foreign keys), added only
-- when a constraint of that name is not already on the table.  Order matters:
-- unique keys before the foreign keys that reference them.
-- ---------------------------------------------------------------------------
DO $constraints$
DECLARE
    task_states text := $s$'pending'::character varying, 'initializing'::character varying, 'enqueuing_steps'::character varying, 'steps_in_process'::character varying, 'evaluating_results'::character varying, 'waiting_for_dependencies'::character varying, 'waiting_for_retry'::character varying, 'blocked_by_failures'::character varying, 'complete'::character varying, 'error'::character varying, 'cancelled'::character varying, 'resolved_manually'::character varying$s$;
    step_states text := $s$'pending'::character varying, 'enqueued'::character varying, 'in_progress'::character varying, 'enqueued_for_orchestration'::character varying, 'enqueued_as_error_for_orchestration'::character varying, 'waiting_for_retry'::character varying, 'complete'::character varying, 'error'::character varying, 'cancelled'::character varying, 'resolved_manually'::character varying$s$;
    c record;
BEGIN
    FOR c IN
        SELECT * FROM (VALUES
            -- primary keys
            (1,  'tasker.task_namespaces',            'task_namespaces_pkey',            'PRIMARY KEY (task_namespace_uuid)'),
            (2,  'tasker.named_tasks',                'named_tasks_pkey',                'PRIMARY KEY (named_task_uuid)'),
            (3,  'tasker.named_steps',                'named_steps_pkey',                'PRIMARY KEY (named_step_uuid)'),
            (4,  'tasker.named_tasks_named_steps',    'named_tasks_named_steps_pkey',    'PRIMARY KEY (ntns_uuid)'),
            (5,  'tasker.tasks',                      'tasks_pkey',                      'PRIMARY KEY (task_uuid)'),
            (6,  'tasker.workflow_steps',             'workflow_steps_pkey',             'PRIMARY KEY (workflow_step_uuid)'),
            (7,  'tasker.workflow_step_edges',        'workflow_step_edges_pkey',        'PRIMARY KEY (workflow_step_edge_uuid)'),
            (8,  'tasker.task_transitions',           'task_transitions_pkey',           'PRIMARY KEY (task_transition_uuid)'),
            (9,  'tasker.workflow_step_transitions',  'workflow_step_transitions_pkey',  'PRIMARY KEY (workflow_step_transition_uuid)'),
            (10, 'tasker.workflow_step_result_audit', 'workflow_step_result_audit_pkey', 'PRIMARY KEY (workflow_step_result_audit_uuid)'),
            (11, 'tasker.tasks_dlq',                  'tasks_dlq_pkey',                  'PRIMARY KEY (dlq_entry_uuid)'),
            -- unique constraints
            (20, 'tasker.named_steps',                'named_steps_name_unique',                   'UNIQUE (name)'),
            (21, 'tasker.named_tasks_named_steps',    'named_tasks_named_steps_unique',            'UNIQUE (named_task_uuid, named_step_uuid)'),
            (22, 'tasker.named_tasks',                'named_tasks_namespace_name_version_unique', 'UNIQUE (task_namespace_uuid, name, version)'),
            (23, 'tasker.task_namespaces',            'task_namespaces_name_key',                  'UNIQUE (name)'),
            (24, 'tasker.task_namespaces',            'task_namespaces_name_unique',               'UNIQUE (name)'),
            (25, 'tasker.workflow_step_edges',        'unique_edge_per_step_pair',                 'UNIQUE (from_step_uuid, to_step_uuid, name)'),
            (26, 'tasker.workflow_step_result_audit', 'uq_audit_step_transition',                  'UNIQUE (workflow_step_uuid, workflow_step_transition_uuid)'),
            (27, 'tasker.workflow_steps',             'uq_workflow_step_task_named_step',          'UNIQUE (task_uuid, named_step_uuid)'),
            -- state CHECKs (12 task states, 10 step states)
            (30, 'tasker.task_transitions', 'chk_task_transitions_from_state',
                 format('CHECK (from_state IS NULL OR from_state::text = ANY ((ARRAY[%s])::text[]))', task_states)),
            (31, 'tasker.task_transitions', 'chk_task_transitions_to_state',
                 format('CHECK (to_state::text = ANY ((ARRAY[%s])::text[]))', task_states)),
            (32, 'tasker.workflow_step_transitions', 'chk_workflow_step_transitions_from_state',
                 format('CHECK (from_state IS NULL OR from_state::text = ANY ((ARRAY[%s])::text[]))', step_states)),
            (33, 'tasker.workflow_step_transitions', 'chk_workflow_step_transitions_to_state',
                 format('CHECK (to_state::text = ANY ((ARRAY[%s])::text[]))', step_states)),
            -- foreign keys
            (40, 'tasker.named_tasks',               'named_tasks_task_namespace_uuid_fkey',
                 'FOREIGN KEY (task_namespace_uuid) REFERENCES tasker.task_namespaces(task_namespace_uuid)'),
            (41, 'tasker.named_tasks_named_steps',   'named_tasks_named_steps_named_step_uuid_fkey',
                 'FOREIGN KEY (named_step_uuid) REFERENCES tasker.named_steps(named_step_uuid)'),
            (42, 'tasker.named_tasks_named_steps',   'named_tasks_named_steps_named_task_uuid_fkey',
                 'FOREIGN KEY (named_task_uuid) REFERENCES tasker.named_tasks(named_task_uuid)'),
            (43, 'tasker.tasks',                     'tasks_named_task_uuid_fkey',
                 'FOREIGN KEY (named_task_uuid) REFERENCES tasker.named_tasks(named_task_uuid)'),
            (44, 'tasker.workflow_steps',            'workflow_steps_task_uuid_fkey',
                 'FOREIGN KEY (task_uuid) REFERENCES tasker.tasks(task_uuid)'),
            (45, 'tasker.workflow_steps',            'workflow_steps_named_step_uuid_fkey',
                 'FOREIGN KEY (named_step_uuid) REFERENCES tasker.named_steps(named_step_uuid)'),
            (46, 'tasker.workflow_step_edges',       'workflow_step_edges_from_step_uuid_fkey',
                 'FOREIGN KEY (from_step_uuid) REFERENCES tasker.workflow_steps(workflow_step_uuid)'),
            (47, 'tasker.workflow_step_edges',       'workflow_step_edges_to_step_uuid_fkey',
                 'FOREIGN KEY (to_step_uuid) REFERENCES tasker.workflow_steps(workflow_step_uuid)'),
            (48, 'tasker.task_transitions',          'task_transitions_task_uuid_fkey',
                 'FOREIGN KEY (task_uuid) REFERENCES tasker.tasks(task_uuid)'),
            (49, 'tasker.workflow_step_transitions', 'workflow_step_transitions_workflow_step_uuid_fkey',
                 'FOREIGN KEY (workflow_step_uuid) REFERENCES tasker.workflow_steps(workflow_step_uuid)'),
            (50, 'tasker.workflow_step_result_audit', 'workflow_step_result_audit_step_transition_uuid_fkey',
                 'FOREIGN KEY (workflow_step_transition_uuid) REFERENCES tasker.workflow_step_transitions(workflow_step_transition_uuid)'),
            (51, 'tasker.workflow_step_result_audit', 'workflow_step_result_audit_task_uuid_fkey',
                 'FOREIGN KEY (task_uuid) REFERENCES tasker.tasks(task_uuid)'),
            (52, 'tasker.workflow_step_result_audit', 'workflow_step_result_audit_workflow_step_uuid_fkey',
                 'FOREIGN KEY (workflow_step_uuid) REFERENCES tasker.workflow_steps(workflow_step_uuid)'),
            (53, 'tasker.tasks_dlq',                 'tasks_dlq_task_uuid_fkey',
                 'FOREIGN KEY (task_uuid) REFERENCES tasker.tasks(task_uuid)')
        ) AS t(ord, tbl, cname, cdef)
        ORDER BY ord
    LOOP
        IF NOT EXISTS (
            SELECT 1 FROM pg_catalog.pg_constraint
             WHERE conrelid = c.tbl::regclass AND conname = c.cname
        ) THEN
            EXECUTE format('ALTER TABLE ONLY %s ADD CONSTRAINT %I %s', c.tbl, c.cname, c.cdef);
        END IF;
    END LOOP;
END
$constraints$;

-- ---------------------------------------------------------------------------
-- Indexes
-- ---------------------------------------------------------------------------
-- task_namespaces / named_tasks
CREATE INDEX IF NOT EXISTS idx_task_namespaces_name ON tasker.task_namespaces USING btree (name);
CREATE INDEX IF NOT EXISTS idx_named_tasks_namespace_uuid ON tasker.named_tasks USING btree (task_namespace_uuid);
CREATE INDEX IF NOT EXISTS idx_named_tasks_identity_strategy ON tasker.named_tasks USING btree (identity_strategy);
CREATE INDEX IF NOT EXISTS idx_named_tasks_lifecycle_config ON tasker.named_tasks
    USING gin ((configuration -> 'lifecycle'::text))
    WHERE (configuration -> 'lifecycle'::text) IS NOT NULL;

-- tasks
CREATE INDEX IF NOT EXISTS idx_tasks_active_with_priority_covering ON tasker.tasks
    USING btree (complete, priority, task_uuid) INCLUDE (named_task_uuid, requested_at)
    WHERE complete = false;
CREATE INDEX IF NOT EXISTS idx_tasks_complete ON tasker.tasks USING btree (complete);
CREATE INDEX IF NOT EXISTS idx_tasks_completed_at ON tasker.tasks USING btree (completed_at);
CREATE INDEX IF NOT EXISTS idx_tasks_correlation_hierarchy ON tasker.tasks
    USING btree (parent_correlation_id, correlation_id) WHERE parent_correlation_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_tasks_correlation_id ON tasker.tasks USING btree (correlation_id);
-- identity_hash is unique (task de-duplication); the constraint lives in this index.
CREATE UNIQUE INDEX IF NOT EXISTS idx_tasks_identity_hash ON tasker.tasks USING btree (identity_hash);
CREATE INDEX IF NOT EXISTS idx_tasks_named_task_uuid ON tasker.tasks USING btree (named_task_uuid);
CREATE INDEX IF NOT EXISTS idx_tasks_parent_correlation_id ON tasker.tasks
    USING btree (parent_correlation_id) WHERE parent_correlation_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_tasks_priority ON tasker.tasks USING btree (priority);
CREATE INDEX IF NOT EXISTS idx_tasks_requested_at ON tasker.tasks USING btree (requested_at);
CREATE INDEX IF NOT EXISTS idx_tasks_source_system ON tasker.tasks USING btree (source_system);
CREATE INDEX IF NOT EXISTS idx_tasks_tags_gin ON tasker.tasks USING gin (tags);
CREATE INDEX IF NOT EXISTS idx_tasks_tags_gin_path ON tasker.tasks USING gin (tags jsonb_path_ops);
CREATE INDEX IF NOT EXISTS idx_tasks_uuid_temporal ON tasker.tasks USING btree (task_uuid, created_at);

-- workflow_steps
CREATE INDEX IF NOT EXISTS idx_workflow_steps_active_operations ON tasker.workflow_steps
    USING btree (workflow_step_uuid, task_uuid) WHERE processed = false OR processed IS NULL;
CREATE INDEX IF NOT EXISTS idx_workflow_steps_checkpoint_cursor ON tasker.workflow_steps
    USING btree ((checkpoint ->> 'cursor'::text)) WHERE checkpoint IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_workflow_steps_checkpoint_exists ON tasker.workflow_steps
    USING btree (workflow_step_uuid) WHERE checkpoint IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_workflow_steps_named_step_uuid ON tasker.workflow_steps USING btree (named_step_uuid);
CREATE INDEX IF NOT EXISTS idx_workflow_steps_processed_at ON tasker.workflow_steps USING btree (processed_at);
CREATE INDEX IF NOT EXISTS idx_workflow_steps_processing_status ON tasker.workflow_steps
    USING btree (task_uuid, processed, in_process);
CREATE INDEX IF NOT EXISTS idx_workflow_steps_ready_covering ON tasker.workflow_steps
    USING btree (task_uuid, processed, in_process)
    INCLUDE (workflow_step_uuid, attempts, max_attempts, retryable)
    WHERE processed = false;
CREATE INDEX IF NOT EXISTS idx_workflow_steps_retry_logic ON tasker.workflow_steps
    USING btree (attempts, max_attempts, retryable);
CREATE INDEX IF NOT EXISTS idx_workflow_steps_retry_status ON tasker.workflow_steps
    USING btree (attempts, max_attempts);
CREATE INDEX IF NOT EXISTS idx_workflow_steps_task_covering ON tasker.workflow_steps
    USING btree (task_uuid) INCLUDE (workflow_step_uuid, processed, in_process, attempts, max_attempts);
CREATE INDEX IF NOT EXISTS idx_workflow_steps_task_grouping_active ON tasker.workflow_steps
    USING btree (task_uuid, workflow_step_uuid) WHERE processed = false OR processed IS NULL;
CREATE INDEX IF NOT EXISTS idx_workflow_steps_task_readiness ON tasker.workflow_steps
    USING btree (task_uuid, processed, workflow_step_uuid) WHERE processed = false;
CREATE INDEX IF NOT EXISTS idx_workflow_steps_task_uuid ON tasker.workflow_steps USING btree (task_uuid);
CREATE INDEX IF NOT EXISTS idx_workflow_steps_transitive_deps ON tasker.workflow_steps
    USING btree (workflow_step_uuid, named_step_uuid) INCLUDE (task_uuid, processed);

-- workflow_step_edges
CREATE INDEX IF NOT EXISTS idx_workflow_step_edges_from_step ON tasker.workflow_step_edges USING btree (from_step_uuid);
CREATE INDEX IF NOT EXISTS idx_workflow_step_edges_from_step_name ON tasker.workflow_step_edges USING btree (from_step_uuid, name);
CREATE INDEX IF NOT EXISTS idx_workflow_step_edges_to_step ON tasker.workflow_step_edges USING btree (to_step_uuid);

-- task_transitions (the partial unique index serialises concurrent writers)
CREATE UNIQUE INDEX IF NOT EXISTS idx_task_transitions_uuid_most_recent ON tasker.task_transitions
    USING btree (task_uuid, most_recent) WHERE most_recent = true;
CREATE INDEX IF NOT EXISTS idx_task_transitions_most_recent ON tasker.task_transitions
    USING btree (most_recent) WHERE most_recent = true;
CREATE INDEX IF NOT EXISTS idx_task_transitions_processor ON tasker.task_transitions
    USING btree (processor_uuid) WHERE processor_uuid IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_task_transitions_state_lookup ON tasker.task_transitions
    USING btree (task_uuid, to_state, most_recent) WHERE most_recent = true;
CREATE INDEX IF NOT EXISTS idx_task_transitions_task_uuid ON tasker.task_transitions USING btree (task_uuid);
CREATE INDEX IF NOT EXISTS idx_task_transitions_timeout ON tasker.task_transitions
    USING btree ((transition_metadata ->> 'timeout_at'::text)) WHERE most_recent = true;
CREATE INDEX IF NOT EXISTS idx_task_transitions_uuid_sort_key ON tasker.task_transitions
    USING btree (task_uuid, sort_key);
CREATE INDEX IF NOT EXISTS idx_task_transitions_uuid_temporal ON tasker.task_transitions
    USING btree (task_transition_uuid, created_at);

-- workflow_step_transitions (the partial unique index decides claim races: 23505)
CREATE UNIQUE INDEX IF NOT EXISTS idx_workflow_step_transitions_uuid_most_recent ON tasker.workflow_step_transitions
    USING btree (workflow_step_uuid, most_recent) WHERE most_recent = true;
CREATE INDEX IF NOT EXISTS idx_workflow_step_transitions_most_recent ON tasker.workflow_step_transitions
    USING btree (most_recent) WHERE most_recent = true;
CREATE INDEX IF NOT EXISTS idx_workflow_step_transitions_state_lookup ON tasker.workflow_step_transitions
    USING btree (workflow_step_uuid, to_state, most_recent) WHERE most_recent = true;
CREATE INDEX IF NOT EXISTS idx_workflow_step_transitions_step_uuid ON tasker.workflow_step_transitions
    USING btree (workflow_step_uuid);
CREATE INDEX IF NOT EXISTS idx_workflow_step_transitions_uuid_sort_key ON tasker.workflow_step_transitions
    USING btree (workflow_step_uuid, sort_key);
CREATE INDEX IF NOT EXISTS idx_workflow_step_transitions_uuid_temporal ON tasker.workflow_step_transitions
    USING btree (workflow_step_transition_uuid, created_at);

-- workflow_step_result_audit
CREATE INDEX IF NOT EXISTS idx_audit_correlation_id ON tasker.workflow_step_result_audit
    USING btree (correlation_id) WHERE correlation_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_audit_recorded_at ON tasker.workflow_step_result_audit USING btree (recorded_at);
CREATE INDEX IF NOT EXISTS idx_audit_step_uuid ON tasker.workflow_step_result_audit USING btree (workflow_step_uuid);
CREATE INDEX IF NOT EXISTS idx_audit_success ON tasker.workflow_step_result_audit USING btree (success);
CREATE INDEX IF NOT EXISTS idx_audit_task_uuid ON tasker.workflow_step_result_audit USING btree (task_uuid);
CREATE INDEX IF NOT EXISTS idx_audit_worker_uuid ON tasker.workflow_step_result_audit
    USING btree (worker_uuid) WHERE worker_uuid IS NOT NULL;

-- tasks_dlq
CREATE INDEX IF NOT EXISTS idx_dlq_reason ON tasker.tasks_dlq USING btree (dlq_reason);
CREATE INDEX IF NOT EXISTS idx_dlq_resolution_status ON tasker.tasks_dlq USING btree (resolution_status, dlq_timestamp);
CREATE INDEX IF NOT EXISTS idx_dlq_task_lookup ON tasker.tasks_dlq USING btree (task_uuid);
CREATE INDEX IF NOT EXISTS idx_dlq_timestamp ON tasker.tasks_dlq USING btree (dlq_timestamp DESC);
-- at most one open (pending) investigation per task
CREATE UNIQUE INDEX IF NOT EXISTS idx_dlq_unique_pending_task ON tasker.tasks_dlq
    USING btree (task_uuid) WHERE resolution_status = 'pending'::tasker.dlq_resolution_status;

-- ---------------------------------------------------------------------------
-- step_dag_relationships: per step, its parents/children (sorted uuid arrays
-- as jsonb), their counts, root/leaf flags and minimum depth from a root.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE VIEW tasker.step_dag_relationships AS
WITH parents AS (
    SELECT e.to_step_uuid AS step_uuid,
           jsonb_agg(e.from_step_uuid ORDER BY e.from_step_uuid) AS uuids,
           count(*) AS n
      FROM tasker.workflow_step_edges e
     GROUP BY e.to_step_uuid
), children AS (
    SELECT e.from_step_uuid AS step_uuid,
           jsonb_agg(e.to_step_uuid ORDER BY e.to_step_uuid) AS uuids,
           count(*) AS n
      FROM tasker.workflow_step_edges e
     GROUP BY e.from_step_uuid
), depths AS (
    WITH RECURSIVE walk(step_uuid, depth) AS (
        SELECT r.workflow_step_uuid, 0
          FROM tasker.workflow_steps r
         WHERE NOT EXISTS (SELECT 1 FROM tasker.workflow_step_edges e
                            WHERE e.to_step_uuid = r.workflow_step_uuid)
        UNION ALL
        SELECT e.to_step_uuid, w.depth + 1
          FROM walk w
          JOIN tasker.workflow_step_edges e ON e.from_step_uuid = w.step_uuid
         WHERE w.depth < 50
    )
    SELECT walk.step_uuid, min(walk.depth) AS min_depth
      FROM walk
     GROUP BY walk.step_uuid
)
SELECT ws.workflow_step_uuid,
       ws.task_uuid,
       ws.named_step_uuid,
       COALESCE(p.uuids, '[]'::jsonb)  AS parent_step_uuids,
       COALESCE(c.uuids, '[]'::jsonb)  AS child_step_uuids,
       COALESCE(p.n, 0::bigint)        AS parent_count,
       COALESCE(c.n, 0::bigint)        AS child_count,
       (COALESCE(p.n, 0::bigint) = 0)  AS is_root_step,
       (COALESCE(c.n, 0::bigint) = 0)  AS is_leaf_step,
       d.min_depth                     AS min_depth_from_root
  FROM tasker.workflow_steps ws
  LEFT JOIN parents  p ON p.step_uuid = ws.workflow_step_uuid
  LEFT JOIN children c ON c.step_uuid = ws.workflow_step_uuid
  LEFT JOIN depths   d ON d.step_uuid = ws.workflow_step_uuid;

-- ---------------------------------------------------------------------------
-- Comments
-- ---------------------------------------------------------------------------
COMMENT ON COLUMN tasker.named_tasks.configuration IS 'Serialized TaskTemplate (JSON) registered by workers.';
COMMENT ON COLUMN tasker.named_tasks.identity_strategy IS 'How task identity (identity_hash) is computed for de-duplication.';
COMMENT ON COLUMN tasker.tasks.correlation_id IS 'Correlation id (uuid v7) for distributed tracing; always set.';
COMMENT ON COLUMN tasker.tasks.parent_correlation_id IS 'Correlation id of a parent workflow, if any.';
COMMENT ON COLUMN tasker.workflow_steps.checkpoint IS 'Handler checkpoint data for resumable batch processing.';
COMMENT ON COLUMN tasker.workflow_steps.results IS 'Serialized StepExecutionResult written by the worker.';
COMMENT ON TABLE tasker.workflow_step_result_audit IS 'One row per worker result transition (enqueued_for_orchestration / enqueued_as_error_for_orchestration); filled by trg_step_result_audit.';
COMMENT ON TABLE tasker.tasks_dlq IS 'Dead-letter investigations for stuck tasks; at most one pending entry per task.';
COMMENT ON VIEW tasker.step_dag_relationships IS 'Step DAG: parents, children, root/leaf flags and minimum depth from a root.';
