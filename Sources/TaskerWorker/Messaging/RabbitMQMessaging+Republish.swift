import Foundation
import Logging
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Recovery of results committed but never published: a worker that dies between the completion's
/// commit and the broker's confirm leaves its step `enqueued_for_orchestration` (or
/// `enqueued_as_error_for_orchestration`) with no message for orchestration. PGMQ cannot lose it
/// (the message is sent in the same statement); on RabbitMQ the next start re-publishes it.
///
/// Each result is re-published by one start only: once the broker confirmed the re-published
/// message, its transition's metadata gets `republished_at` (`markRepublished`), and later starts
/// skip it. So a crash-looping worker does not publish the same results again at every start: the
/// re-publishes over any number of starts are at most the results left waiting, plus at most one
/// batch (`republishBatch`) per start that died between the confirms and the mark. A confirmed
/// message is durable on the broker, so nothing is left unannounced by the skip.
extension RabbitMQMessaging {
    /// Steps of the served namespaces ($2, a JSON array) whose most recent transition is a result
    /// for orchestration written by one of our workers (`worker_uuid` in its metadata: upstream's
    /// worker records none and publishes its own) before $1 — before this process started, so no
    /// publish of this process is pending for them — and not re-published by an earlier start
    /// (`republished_at`), oldest first, at most $3.
    static let unannouncedResults = PreparedStatement(
        """
        SELECT wst.workflow_step_transition_uuid AS transition_uuid, ws.workflow_step_uuid AS step_uuid, ws.task_uuid,
               t.correlation_id
          FROM tasker.workflow_step_transitions wst
          JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
          JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
          JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
          JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
         WHERE wst.most_recent
           AND wst.to_state IN ('enqueued_for_orchestration', 'enqueued_as_error_for_orchestration')
           AND wst.metadata ? 'worker_uuid'
           AND NOT wst.metadata ? 'republished_at'
           AND wst.created_at < $1::timestamptz
           AND tn.name IN (SELECT jsonb_array_elements_text($2::jsonb))
         ORDER BY wst.created_at
         LIMIT $3
        """)

    /// Marks the result transitions $1 (a JSON array of uuids), still the steps' current ones, as
    /// re-published at $2 (the broker confirmed their messages): later starts skip them.
    static let markRepublished = PreparedStatement(
        """
        UPDATE tasker.workflow_step_transitions
           SET metadata = coalesce(metadata, '{}'::jsonb) || jsonb_build_object('republished_at', $2::text)
         WHERE most_recent
           AND workflow_step_transition_uuid IN (SELECT (jsonb_array_elements_text($1::jsonb))::uuid)
        """)

    /// The most steps one start re-publishes (the oldest first; the next start takes the next ones,
    /// and orchestration's staleness handling covers the rest).
    static let republishLimit = 1000
    /// Results re-published (each confirmed) before their transitions are marked in one statement.
    static let republishBatch = 100

    /// Re-publishes the result message of every step waiting for orchestration since before this
    /// process started (`unannouncedResults`), through TaskerMessaging's `StartupRepublisher` (the
    /// orchestration's start-up re-publish is the same loop). A step whose message had been
    /// published (by a worker that died after the confirm, or by a live worker whose message is
    /// still queued) gets a duplicate, which orchestration ignores: it processes a result only for a
    /// step still `enqueued_*_for_orchestration`, and acks the duplicate. Returns how many were
    /// published.
    @discardableResult
    func republishUnannounced(pool: PostgresConnectionPool) async -> Int {
        let namespaces = queues.map(QueueNames.namespace(ofWorkerQueue:))
        guard !namespaces.isEmpty else { return 0 }
        let before = RFC3339.string(startedAt)
        let list = "[" + namespaces.map(StringEscaping.jsonQuoted).joined(separator: ",") + "]"
        let republisher = StartupRepublisher(
            what: "results of steps waiting for orchestration since before this start",
            reason: "a worker may have died before publishing them", batchSize: Self.republishBatch,
            stopped: broker.stopped, logger: logger)
        return await republisher.run(
            find: {
                try await pool.withConnection { c in
                    try await c.query(Self.unannouncedResults, [before, PostgresJSON(raw: list), Self.republishLimit]).map {
                        row throws(PostgresError) -> (transition: UUID, message: StepMessage) in
                        let transition: UUID = try row.decode("transition_uuid")
                        let message = StepMessage(
                            taskUUID: try row.decode("task_uuid"), stepUUID: try row.decode("step_uuid"),
                            correlationID: try row.decode("correlation_id"))
                        return (transition, message)
                    }
                }
            },
            publish: { entry in await publishResult(entry.message) },
            markPublished: { confirmed in await markRepublished(confirmed.map(\.transition), pool: pool) })
    }

    /// Marks the transitions whose re-published result the broker confirmed (`markRepublished`).
    /// One attempt: when it fails, the next start re-publishes those results once more (harmless
    /// duplicates).
    private func markRepublished(_ transitions: [UUID], pool: PostgresConnectionPool) async {
        guard !transitions.isEmpty else { return }
        let list = "[" + transitions.map { StringEscaping.jsonQuoted($0.uuidString.lowercased()) }.joined(separator: ",") + "]"
        do {
            try await pool.withConnection { c in
                _ = try await c.query(Self.markRepublished, [PostgresJSON(raw: list), RFC3339.string(Date())])
            }
        } catch {
            logger.warning(
                "could not record the re-published results; the next start re-publishes them again",
                metadata: ["steps": "\(transitions.count)", "error": "\(error)"])
        }
    }
}
