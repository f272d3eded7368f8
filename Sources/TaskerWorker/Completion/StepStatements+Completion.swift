import TaskerPostgres

extension StepStatements {
    /// The whole completion in one statement, only if the step is still `in_progress` under the
    /// writer's own claim: retire that transition, insert the result state after it, store `results`
    /// with `in_process = false`, and send the message to orchestration (with its notification).
    /// $1 step uuid, $2 to state, $3 metadata, $4 results, $5 queue, $6 message.
    static let complete = PreparedStatement(
        """
        WITH retired AS (
            UPDATE tasker.workflow_step_transitions SET most_recent = false, updated_at = NOW()
             WHERE workflow_step_uuid = $1 AND most_recent AND to_state = 'in_progress'
               AND metadata->>'worker_uuid' = ($3::jsonb)->>'worker_uuid'
            RETURNING sort_key),
        transition AS (
            INSERT INTO tasker.workflow_step_transitions
                (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
            SELECT $1, $2, 'in_progress', $3::jsonb, r.sort_key + 1, true, NOW(), NOW() FROM retired r
            RETURNING 1),
        step AS (
            UPDATE tasker.workflow_steps SET in_process = false, results = $4::jsonb, updated_at = NOW()
             WHERE workflow_step_uuid = $1 AND EXISTS (SELECT 1 FROM retired)
            RETURNING 1)
        SELECT (SELECT count(*) FROM transition) AS inserted,
               CASE WHEN EXISTS (SELECT 1 FROM retired)
                    THEN tasker.pgmq_send_with_notify($5::text, $6::jsonb, 0) END AS msg_id
        """)

    /// The retired `in_progress` transition must be the writer's own claim: its `worker_uuid` is the
    /// one of the result's metadata ($3). Upstream's worker claims check-then-write (it reads
    /// `enqueued`, then writes `in_progress` without re-checking), so its claim can land over ours
    /// while our handler runs; from then on the attempt is upstream's, and our result is refused
    /// (`.notInProgress`) instead of being stored over its claim. Crash recovery, which stores for a
    /// dead claimer, removes this condition and pins the transition it saw instead
    /// (`RecoveryStatements.recover`). Its text in `complete`.
    static let ownClaimCondition = "AND metadata->>'worker_uuid' = ($3::jsonb)->>'worker_uuid'\n"
}
