-- $1 threshold_seconds
SELECT CASE WHEN wst.metadata->>'worker_uuid' IS NULL THEN 'unrecorded'
            WHEN wst.metadata->>'worker_uuid' ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN wst.metadata->>'worker_uuid'
            ELSE 'malformed' END AS worker,
       count(*) AS steps,
       EXTRACT(EPOCH FROM NOW() - min(wst.created_at))::float8 AS oldest_seconds
  FROM tasker.workflow_step_transitions wst
 WHERE wst.most_recent AND wst.to_state = 'in_progress'
   AND wst.created_at < NOW() - make_interval(secs => $1::float8)
 GROUP BY 1
 ORDER BY 2 DESC, 1
 LIMIT 20
