import Foundation
import Logging
import TaskerModel
import TaskerPostgres

/// Recovery of results committed but never published: a worker that dies between the completion's
/// commit and the broker's confirm leaves its step `enqueued_for_orchestration` (or
/// `enqueued_as_error_for_orchestration`) with no message for orchestration. PGMQ cannot lose it
/// (the message is sent in the same statement); on RabbitMQ the next start re-publishes it.
extension RabbitMQMessaging {
    /// Steps of the served namespaces ($2, a JSON array) whose most recent transition is a result
    /// for orchestration written by one of our workers (`worker_uuid` in its metadata: upstream's
    /// worker records none and publishes its own) before $1 — before this process started, so no
    /// publish of this process is pending for them — oldest first, at most $3.
    static let unannouncedResults = PreparedStatement(
        """
        SELECT ws.workflow_step_uuid AS step_uuid, ws.task_uuid, t.correlation_id
          FROM tasker.workflow_step_transitions wst
          JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
          JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
          JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
          JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
         WHERE wst.most_recent
           AND wst.to_state IN ('enqueued_for_orchestration', 'enqueued_as_error_for_orchestration')
           AND wst.metadata ? 'worker_uuid'
           AND wst.created_at < $1::timestamptz
           AND tn.name IN (SELECT jsonb_array_elements_text($2::jsonb))
         ORDER BY wst.created_at
         LIMIT $3
        """)

    /// The most steps one start re-publishes (the oldest first; orchestration's staleness handling
    /// covers the rest).
    static let republishLimit = 1000

    /// Re-publishes the result message of every step waiting for orchestration since before this
    /// process started (`unannouncedResults`). A step whose message had been published (by a worker
    /// that died after the confirm, or by a live worker whose message is still queued) gets a
    /// duplicate, which orchestration ignores: it processes a result only for a step still
    /// `enqueued_*_for_orchestration`, and acks the duplicate. Retries the query until it answers
    /// or the task is cancelled. Returns how many were published.
    @discardableResult
    package func republishUnannounced(pool: PostgresConnectionPool) async -> Int {
        let namespaces = queues.map(QueueNames.namespace(ofWorkerQueue:))
        guard !namespaces.isEmpty else { return 0 }
        let before = RFC3339.string(startedAt)
        let list = "[" + namespaces.map(StringEscaping.jsonQuoted).joined(separator: ",") + "]"
        var attempt = 0
        var messages: [StepMessage]?
        while messages == nil, !Task.isCancelled {
            do {
                messages = try await pool.withConnection { c in
                    try await c.query(Self.unannouncedResults, [before, PostgresJSON(raw: list), Self.republishLimit]).map {
                        row throws(PostgresError) in
                        StepMessage(
                            taskUUID: try row.decode("task_uuid"), stepUUID: try row.decode("step_uuid"),
                            correlationID: try row.decode("correlation_id"))
                    }
                }
            } catch {
                if attempt == 0 {
                    logger.warning("could not look for results to re-publish; retrying", metadata: ["error": "\(error)"])
                }
                attempt += 1
                try? await Task.sleep(for: ReconnectBackoff(initial: .milliseconds(200), maximum: .seconds(5)).delay(forAttempt: attempt))
            }
        }
        guard let messages, !messages.isEmpty else { return 0 }
        logger.warning(
            "re-publishing the results of steps waiting for orchestration since before this start (a worker may have died before publishing them)",
            metadata: ["steps": "\(messages.count)"])
        var published = 0
        for message in messages where await publishResult(message) { published += 1 }
        return published
    }
}
