-- $1 step_uuid, $2 to_state, $3 metadata, $4 results, $5 queue, $6 message
WITH retired AS (
    UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
     WHERE workflow_step_uuid = $1::uuid AND most_recent
       AND to_state = 'in_progress'
       AND metadata->>'worker_uuid' = ($3::jsonb)->>'worker_uuid'
    RETURNING to_state, sort_key),
moved AS (
    INSERT INTO tasker.workflow_step_transitions
        (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
    SELECT $1::uuid, $2::text, r.to_state, $3::jsonb, r.sort_key + 1, true, NOW(), NOW() FROM retired r
    RETURNING sort_key),
step AS (
    UPDATE tasker.workflow_steps SET in_process = false, results = $4::jsonb, updated_at = NOW()
     WHERE workflow_step_uuid = $1::uuid AND EXISTS (SELECT 1 FROM retired)
    RETURNING 1),
sent AS (
    INSERT INTO pgmq."q_orchestration_step_results" (vt, message, headers)
    SELECT clock_timestamp() + make_interval(secs => 0), $6::jsonb, NULL::jsonb WHERE EXISTS (SELECT 1 FROM retired)
    RETURNING msg_id, tasker.extract_queue_namespace($5::text) AS namespace),
built AS MATERIALIZED (
    SELECT s.msg_id, s.namespace,
           CASE WHEN length($6::jsonb::text) < tasker.pgmq_payload_size_threshold()
                THEN json_build_object(
                    'event_type', 'message_with_payload', 'msg_id', s.msg_id, 'queue_name', $5::text,
                    'namespace', s.namespace, 'message', $6::jsonb, 'ready_at', now()::timestamptz,
                    'delay_seconds', 0)::text
                ELSE json_build_object(
                    'event_type', 'message_ready', 'msg_id', s.msg_id, 'queue_name', $5::text,
                    'namespace', s.namespace, 'ready_at', now()::timestamptz, 'delay_seconds', 0,
                    'payload_omitted', true)::text END AS payload
      FROM sent s),
notified AS MATERIALIZED (  -- materialized: both notifications run even though only msg_id is read
    SELECT b.msg_id, p.payload,
           pg_notify('pgmq_message_ready.' || b.namespace, p.payload) AS on_namespace,
           CASE WHEN 'pgmq_message_ready.' || b.namespace <> 'pgmq_message_ready'
                THEN pg_notify('pgmq_message_ready', p.payload) END AS on_all
      FROM built b,
           LATERAL (SELECT CASE WHEN length(b.payload) > 7800
                                THEN json_build_object(
                                    'event_type', 'message_ready', 'msg_id', b.msg_id, 'queue_name', $5::text,
                                    'namespace', b.namespace, 'ready_at', now()::timestamptz,
                                    'payload_omitted', true, 'truncated', true)::text
                                ELSE b.payload END AS payload) p)
SELECT (SELECT count(*) FROM moved) AS inserted, (SELECT msg_id FROM notified) AS msg_id
