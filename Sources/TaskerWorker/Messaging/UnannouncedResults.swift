import Foundation
import Logging
import TaskerHandlerSDK
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Recovery of results committed but never announced, for the transports that announce a result
/// after its commit (RabbitMQ; PGMQ in a database of its own): a worker that dies between the
/// completion's commit and the announcement leaves its step `enqueued_for_orchestration` (or
/// `enqueued_as_error_for_orchestration`) with no message for orchestration. PGMQ in the task
/// database cannot lose it (the message is sent in the same statement); with the others the next
/// start announces it again.
///
/// Each result is re-announced by one start only: once its message was announced, its transition's
/// metadata gets `republished_at` (`markRepublished`), and later starts skip it. So a crash-looping
/// worker does not announce the same results again at every start: the re-announcements over any
/// number of starts are at most the results left waiting, plus at most one batch (`batchSize`) per
/// start that died between the announcements and the mark. An announced message is durable (a
/// confirmed publish, a committed send), so nothing is left unannounced by the skip.
struct UnannouncedResults: Sendable {
    /// The namespaces whose results are looked for at start (the worker's served ones).
    var namespaces: [String] = []
    /// ≈ the process start: results committed before it have no announcement pending in this process.
    var startedAt = Date()
    /// The transport's end: the lookup's retries stop at it.
    let stopped: OneShotSignal
    let logger: Logger

    /// Steps of the served namespaces ($2, a JSON array) whose most recent transition is a result
    /// for orchestration written by one of our workers (`worker_uuid` in its metadata: upstream's
    /// worker records none and announces its own) before $1 — before this process started, so no
    /// announcement of this process is pending for them — and not re-announced by an earlier start
    /// (`republished_at`), oldest first, at most $3.
    static let find = PreparedStatement(
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

    /// Results for orchestration written by one of our workers that has no unexpired liveness
    /// lease (`tasker.worker_leases`: it died, and no start of a worker of its namespaces announced
    /// them), for longer than $1 seconds, not re-announced yet, oldest first, at most $2: what the
    /// fleet's crash-recovery scanner announces (`RecoveryScanner`).
    static let findOfDeadWorkers = PreparedStatement(
        """
        WITH live AS MATERIALIZED (\(RecoveryStatements.liveWorkers))
        SELECT wst.workflow_step_transition_uuid AS transition_uuid, ws.workflow_step_uuid AS step_uuid, ws.task_uuid,
               t.correlation_id
          FROM tasker.workflow_step_transitions wst
          JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
          JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
         WHERE wst.most_recent
           AND wst.to_state IN ('enqueued_for_orchestration', 'enqueued_as_error_for_orchestration')
           AND wst.metadata->>'worker_uuid' ~ \(RecoveryStatements.uuidPattern)
           AND NOT wst.metadata ? 'republished_at'
           AND NOT EXISTS (SELECT 1 FROM live WHERE live.worker = wst.metadata->>'worker_uuid')
           AND wst.created_at < clock_timestamp() - make_interval(secs => $1::float8)
         ORDER BY wst.created_at
         LIMIT $2
        """)

    /// Marks the result transitions $1 (a JSON array of uuids), still the steps' current ones, as
    /// re-announced at $2: later starts skip them.
    static let markRepublished = PreparedStatement(
        """
        UPDATE tasker.workflow_step_transitions
           SET metadata = coalesce(metadata, '{}'::jsonb) || jsonb_build_object('republished_at', $2::text)
         WHERE most_recent
           AND workflow_step_transition_uuid IN (SELECT (jsonb_array_elements_text($1::jsonb))::uuid)
        """)

    /// The most steps one start re-announces (the oldest first; the next start takes the next
    /// ones, and orchestration's staleness handling covers the rest).
    static let limit = 1000
    /// Results re-announced before their transitions are marked in one statement.
    static let batchSize = 100

    /// Re-announces the result message of every step waiting for orchestration since before this
    /// process started (`find`), through TaskerMessaging's `StartupRepublisher` (the orchestration's
    /// start-up re-publish is the same loop), with `announce` (true once the message is durable).
    /// A step whose message had been announced (by a worker that died after it, or by a live worker
    /// whose message is still queued) gets a duplicate, which orchestration ignores: it processes a
    /// result only for a step still `enqueued_*_for_orchestration`. Returns how many were announced.
    @discardableResult
    func republish(pool: PostgresConnectionPool, announce: @escaping @Sendable (StepMessage) async -> Bool) async -> Int {
        guard !namespaces.isEmpty else { return 0 }
        let before = RFC3339.string(startedAt)
        let list = "[" + namespaces.map(StringEscaping.jsonQuoted).joined(separator: ",") + "]"
        let republisher = StartupRepublisher(
            what: "results of steps waiting for orchestration since before this start",
            reason: "a worker may have died before announcing them", batchSize: Self.batchSize, stopped: stopped,
            logger: logger)
        return await republisher.run(
            find: {
                try await pool.withConnection { c in
                    try await c.query(Self.find, [before, PostgresJSON(raw: list), Self.limit]).map(Self.entry)
                }
            },
            publish: { entry in await announce(entry.message) },
            markPublished: { announced in await markRepublished(announced.map(\.transition), pool: pool) })
    }

    /// Announces the results of dead workers (`findOfDeadWorkers`, stored more than `age` ago) once
    /// each, as the start-up does for its own namespaces; the crash-recovery scanner's part, so that
    /// a worker that dies between its commit and its announcement and is never started again leaves
    /// nothing unannounced. One lookup (its failure is left to the next call). Returns how many were
    /// announced.
    @discardableResult
    func announceOfDeadWorkers(
        pool: PostgresConnectionPool, olderThan age: Duration, announce: @escaping @Sendable (StepMessage) async -> Bool
    ) async -> Int {
        let found: [(transition: UUID, message: StepMessage)]
        do {
            found = try await pool.withConnection(lane: .background) { c in
                try await c.query(Self.findOfDeadWorkers, [age.inSeconds, Self.batchSize]).map(Self.entry)
            }
        } catch {
            logger.debug("the lookup of dead workers' unannounced results failed", metadata: ["error": "\(error)"])
            return 0
        }
        guard !found.isEmpty else { return 0 }
        logger.warning(
            "announcing results stored by workers that died before announcing them", metadata: ["count": "\(found.count)"])
        var announced: [UUID] = []
        for entry in found where await announce(entry.message) { announced.append(entry.transition) }
        await markRepublished(announced, pool: pool)
        return announced.count
    }

    /// A row of `find` or `findOfDeadWorkers`.
    private static func entry(_ row: PostgresRow) throws(PostgresError) -> (transition: UUID, message: StepMessage) {
        let transition: UUID = try row.decode("transition_uuid")
        let message = StepMessage(
            taskUUID: try row.decode("task_uuid"), stepUUID: try row.decode("step_uuid"), correlationID: try row.decode("correlation_id"))
        return (transition, message)
    }

    /// Marks the transitions whose result was re-announced (`markRepublished`). One attempt: when
    /// it fails, the next start re-announces those results once more (harmless duplicates).
    private func markRepublished(_ transitions: [UUID], pool: PostgresConnectionPool) async {
        guard !transitions.isEmpty else { return }
        let list = "[" + transitions.map { StringEscaping.jsonQuoted($0.uuidString.lowercased()) }.joined(separator: ",") + "]"
        do {
            try await pool.withConnection { c in
                _ = try await c.query(Self.markRepublished, [PostgresJSON(raw: list), RFC3339.string(Date())])
            }
        } catch {
            logger.warning(
                "could not record the re-announced results; the next start re-announces them again",
                metadata: ["steps": "\(transitions.count)", "error": "\(error)"])
        }
    }
}
