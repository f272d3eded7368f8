-- 0003: PGMQ helpers: send-with-NOTIFY wrappers, queue-created trigger,
-- read/delete/extend of one specific message.
--
-- Requires PGMQ (schema pgmq with pgmq.meta, pgmq.send, pgmq.send_batch) to be
-- installed first.  Payload contract (worker-contract §2):
--   channel "pgmq_message_ready.<namespace>" and "pgmq_message_ready"
--   message text < 7000 chars  -> event_type message_with_payload (+ message)
--   otherwise                  -> event_type message_ready, payload_omitted
--   payload text > 7800 chars  -> message_ready, payload_omitted, truncated
--                                 (no delay_seconds)
--   batches                    -> event_type batch_ready
--   channel "pgmq_queue_created" on every new pgmq.meta row
SET LOCAL search_path TO tasker, public;

DO $require_pgmq$
BEGIN
    IF to_regclass('pgmq.meta') IS NULL THEN
        RAISE EXCEPTION 'PGMQ must be installed before the tasker migrations (pgmq.meta not found)';
    END IF;
END
$require_pgmq$;

-- Adds the headers column to one queue table if an old PGMQ created it without.
CREATE OR REPLACE FUNCTION tasker.pgmq_ensure_headers_column(queue_name text)
RETURNS void
LANGUAGE plpgsql
AS $fn$
DECLARE
    v_table text := 'q_' || queue_name;
BEGIN
    IF to_regclass(format('pgmq.%I', v_table)) IS NULL THEN
        RETURN;
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM information_schema.columns
         WHERE table_schema = 'pgmq' AND table_name = v_table AND column_name = 'headers'
    ) THEN
        EXECUTE format('ALTER TABLE pgmq.%I ADD COLUMN headers jsonb', v_table);
    END IF;
END
$fn$;

DO $headers$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT tablename FROM pg_catalog.pg_tables
              WHERE schemaname = 'pgmq' AND tablename LIKE 'q\_%'
    LOOP
        PERFORM tasker.pgmq_ensure_headers_column(substr(r.tablename, 3));
    END LOOP;
END
$headers$;

-- Namespace of a queue name:
--   orchestration*        -> 'orchestration'
--   worker_<ns>_queue     -> <ns>
--   <name>_queue          -> <name>
--   anything else         -> 'default'
CREATE OR REPLACE FUNCTION tasker.extract_queue_namespace(queue_name text)
RETURNS text
LANGUAGE plpgsql
AS $fn$
BEGIN
    IF queue_name ~ '^orchestration' THEN
        RETURN 'orchestration';
    END IF;

    IF queue_name ~ '^worker_.*_queue$' THEN
        RETURN COALESCE((regexp_match(queue_name, '^worker_(.+?)_queue$'))[1], 'worker');
    END IF;

    IF queue_name ~ '^[a-zA-Z][a-zA-Z0-9_]*_queue$' THEN
        RETURN COALESCE((regexp_match(queue_name, '^([a-zA-Z][a-zA-Z0-9_]*)_queue$'))[1], 'default');
    END IF;

    RETURN 'default';
END
$fn$;

-- Largest message text (in characters) still embedded in the notification.
CREATE OR REPLACE FUNCTION tasker.pgmq_payload_size_threshold()
RETURNS integer
LANGUAGE plpgsql IMMUTABLE
AS $fn$
BEGIN
    RETURN 7000;
END
$fn$;

-- Trigger function on pgmq.meta: announce new queues.
CREATE OR REPLACE FUNCTION tasker.pgmq_notify_queue_created()
RETURNS trigger
LANGUAGE plpgsql
AS $fn$
DECLARE
    v_payload text;
BEGIN
    v_payload := json_build_object(
        'event_type', 'queue_created',
        'queue_name', NEW.queue_name,
        'namespace',  tasker.extract_queue_namespace(NEW.queue_name),
        'created_at', now()::timestamptz
    )::text;

    IF length(v_payload) > 7800 THEN
        v_payload := substring(v_payload, 1, 7790) || '...}';
    END IF;

    PERFORM pg_notify('pgmq_queue_created', v_payload);
    RETURN NEW;
END
$fn$;

-- pgmq.send + NOTIFY in the caller's transaction; returns the new msg_id.
CREATE OR REPLACE FUNCTION tasker.pgmq_send_with_notify(
    queue_name    text,
    message       jsonb,
    delay_seconds integer DEFAULT 0
) RETURNS bigint
LANGUAGE plpgsql
AS $fn$
DECLARE
    v_msg_id    bigint;
    v_namespace text;
    v_channel   text;
    v_payload   text;
BEGIN
    SELECT pgmq.send(queue_name, message, delay_seconds) INTO v_msg_id;

    v_namespace := tasker.extract_queue_namespace(queue_name);
    v_channel   := 'pgmq_message_ready.' || v_namespace;

    IF length(message::text) < tasker.pgmq_payload_size_threshold() THEN
        v_payload := json_build_object(
            'event_type',    'message_with_payload',
            'msg_id',        v_msg_id,
            'queue_name',    queue_name,
            'namespace',     v_namespace,
            'message',       message,
            'ready_at',      now()::timestamptz,
            'delay_seconds', delay_seconds
        )::text;
    ELSE
        v_payload := json_build_object(
            'event_type',      'message_ready',
            'msg_id',          v_msg_id,
            'queue_name',      queue_name,
            'namespace',       v_namespace,
            'ready_at',        now()::timestamptz,
            'delay_seconds',   delay_seconds,
            'payload_omitted', true
        )::text;
    END IF;

    -- pg_notify payloads must stay below 8000 bytes.
    IF length(v_payload) > 7800 THEN
        v_payload := json_build_object(
            'event_type',      'message_ready',
            'msg_id',          v_msg_id,
            'queue_name',      queue_name,
            'namespace',       v_namespace,
            'ready_at',        now()::timestamptz,
            'payload_omitted', true,
            'truncated',       true
        )::text;
    END IF;

    PERFORM pg_notify(v_channel, v_payload);
    IF v_channel <> 'pgmq_message_ready' THEN
        PERFORM pg_notify('pgmq_message_ready', v_payload);
    END IF;

    RETURN v_msg_id;
END
$fn$;

-- pgmq.send_batch + one batch_ready NOTIFY per channel; returns the msg_ids.
CREATE OR REPLACE FUNCTION tasker.pgmq_send_batch_with_notify(
    queue_name    text,
    messages      jsonb[],
    delay_seconds integer DEFAULT 0
) RETURNS SETOF bigint
LANGUAGE plpgsql
AS $fn$
DECLARE
    v_ids       bigint[];
    v_namespace text;
    v_channel   text;
    v_payload   text;
BEGIN
    SELECT array_agg(s.id ORDER BY s.id) INTO v_ids
      FROM pgmq.send_batch(queue_name, messages, delay_seconds) AS s(id);

    v_namespace := tasker.extract_queue_namespace(queue_name);
    v_channel   := 'pgmq_message_ready.' || v_namespace;

    v_payload := json_build_object(
        'event_type',    'batch_ready',
        'msg_ids',       v_ids,
        'queue_name',    queue_name,
        'namespace',     v_namespace,
        'message_count', array_length(v_ids, 1),
        'ready_at',      now()::timestamptz,
        'delay_seconds', delay_seconds
    )::text;

    IF length(v_payload) > 7800 THEN
        v_payload := substring(v_payload, 1, 7790) || '...}';
    END IF;

    PERFORM pg_notify(v_channel, v_payload);
    IF v_channel <> 'pgmq_message_ready' THEN
        PERFORM pg_notify('pgmq_message_ready', v_payload);
    END IF;

    RETURN QUERY SELECT unnest(v_ids);
END
$fn$;

DROP TRIGGER IF EXISTS pgmq_queue_created_trigger ON pgmq.meta;
CREATE TRIGGER pgmq_queue_created_trigger
    AFTER INSERT ON pgmq.meta
    FOR EACH ROW
    EXECUTE FUNCTION tasker.pgmq_notify_queue_created();

-- Claim one message by id: makes it invisible for vt_seconds and bumps
-- read_ct, only if it is currently visible.  No row = invisible or gone.
CREATE OR REPLACE FUNCTION tasker.pgmq_read_specific_message(
    queue_name    text,
    target_msg_id bigint,
    vt_seconds    integer DEFAULT 30
) RETURNS TABLE (
    msg_id      bigint,
    read_ct     integer,
    enqueued_at timestamp with time zone,
    vt          timestamp with time zone,
    message     jsonb
)
LANGUAGE plpgsql
AS $fn$
DECLARE
    v_table text;
BEGIN
    IF queue_name ~ '[^a-zA-Z0-9_]' THEN
        RAISE EXCEPTION 'Invalid queue name: %', queue_name;
    END IF;
    v_table := 'q_' || lower(queue_name);
    IF to_regclass(format('pgmq.%I', v_table)) IS NULL THEN
        RAISE EXCEPTION 'Queue does not exist: %', queue_name;
    END IF;

    RETURN QUERY EXECUTE format(
        'UPDATE pgmq.%I AS q
            SET vt = now() + make_interval(secs => $1),
                read_ct = q.read_ct + 1
          WHERE q.msg_id = $2
            AND q.vt <= now()
      RETURNING q.msg_id, q.read_ct, q.enqueued_at, q.vt, q.message', v_table)
    USING vt_seconds, target_msg_id;
END
$fn$;

-- Delete one message by id; true if a row was deleted.
CREATE OR REPLACE FUNCTION tasker.pgmq_delete_specific_message(
    queue_name    text,
    target_msg_id bigint
) RETURNS boolean
LANGUAGE plpgsql
AS $fn$
DECLARE
    v_table text;
    v_count integer;
BEGIN
    IF queue_name ~ '[^a-zA-Z0-9_]' THEN
        RAISE EXCEPTION 'Invalid queue name: %', queue_name;
    END IF;
    v_table := 'q_' || lower(queue_name);
    IF to_regclass(format('pgmq.%I', v_table)) IS NULL THEN
        RAISE EXCEPTION 'Queue does not exist: %', queue_name;
    END IF;

    EXECUTE format('DELETE FROM pgmq.%I WHERE msg_id = $1', v_table) USING target_msg_id;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count > 0;
END
$fn$;

-- Push a message's visibility timeout further out by additional_vt_seconds.
CREATE OR REPLACE FUNCTION tasker.pgmq_extend_vt_specific_message(
    queue_name            text,
    target_msg_id         bigint,
    additional_vt_seconds integer DEFAULT 30
) RETURNS boolean
LANGUAGE plpgsql
AS $fn$
DECLARE
    v_table text;
    v_count integer;
BEGIN
    IF queue_name ~ '[^a-zA-Z0-9_]' THEN
        RAISE EXCEPTION 'Invalid queue name: %', queue_name;
    END IF;
    v_table := 'q_' || lower(queue_name);
    IF to_regclass(format('pgmq.%I', v_table)) IS NULL THEN
        RAISE EXCEPTION 'Queue does not exist: %', queue_name;
    END IF;

    EXECUTE format('UPDATE pgmq.%I SET vt = vt + make_interval(secs => $1) WHERE msg_id = $2', v_table)
        USING additional_vt_seconds, target_msg_id;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count > 0;
END
$fn$;

COMMENT ON FUNCTION tasker.pgmq_send_with_notify(text, jsonb, integer) IS
    'pgmq.send plus NOTIFY on pgmq_message_ready.<namespace> and pgmq_message_ready, atomically.';
COMMENT ON FUNCTION tasker.pgmq_send_batch_with_notify(text, jsonb[], integer) IS
    'pgmq.send_batch plus one batch_ready NOTIFY per channel.';
COMMENT ON FUNCTION tasker.pgmq_read_specific_message(text, bigint, integer) IS
    'Claims one visible message by id for vt_seconds; returns no row if it is invisible or gone.';
