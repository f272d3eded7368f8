import Foundation
import Logging
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Where the step messages of a command go when they cannot be sent in the enqueue's own
/// transaction: RabbitMQ (`OrchestrationBroker`), or PGMQ in a database of its own
/// (`OrchestrationQueueDatabase`). The one seam of the orchestration's transports: with neither, the
/// enqueue statement sends in PGMQ itself, in the task database.
///
/// Both work the same way around it: `pending → enqueued` commits without a send (`EnqueueJournal`),
/// then `sendCommitted` sends the messages of the steps still `enqueued`, each until it is durable.
/// A crash between the commit and the send leaves a step `enqueued` with no message: on the broker
/// `resendEnqueued` at every start sends the message of every step `enqueued` since before this
/// process started; the queue database, which can tell which messages are queued, sends only the
/// missing ones, at start and periodically (`OrchestrationQueueDatabase.resendMissing`). A
/// step still `enqueued` has not been claimed (a worker settles its message only after its claim
/// commits), so its message is queued, in flight or lost; a duplicate of a queued one is harmless
/// (the worker's claim is a compare-and-set on `enqueued`: the second message is stale and settled).
/// The staleness detector stays the last resort when no orchestration starts again.
protocol EnqueuedStepSender: Sendable {
    /// Sends each message and returns once all are durable (a broker's confirm, a committed send);
    /// false when the sender stopped first (the next start sends them again).
    func send(_ entries: [EnqueueJournal.Entry]) async -> Bool
    /// The sender's end (its connection closed): retries stop at it.
    var stopped: OneShotSignal { get }
    /// ≈ the process start: steps `enqueued` before it are sent again at start.
    var startedAt: Date { get }
    var logger: Logger { get }
}

/// The statements of the sends after commit, whatever the transport.
enum EnqueuedStepStatements {
    /// Of $1 (a JSON array of step uuids), those whose step is `enqueued` now (after the command's
    /// commits): a message recorded by an attempt that rolled back is dropped unless the step did
    /// get enqueued.
    static let stillEnqueued = PreparedStatement(
        """
        SELECT workflow_step_uuid AS step_uuid FROM tasker.workflow_step_transitions
         WHERE most_recent AND to_state = 'enqueued'
           AND workflow_step_uuid IN (SELECT (jsonb_array_elements_text($1::jsonb))::uuid)
        """)

    /// Steps `enqueued` for longer than $1 seconds (by the database's clock), with what their
    /// message needs, oldest first, at most $2.
    static let enqueuedFor = PreparedStatement(
        """
        SELECT ws.workflow_step_uuid AS step_uuid, ws.task_uuid, t.correlation_id, tn.name AS namespace
          FROM tasker.workflow_step_transitions wst
          JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
          JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
          JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
          JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
         WHERE wst.most_recent AND wst.to_state = 'enqueued'
           AND wst.created_at < clock_timestamp() - make_interval(secs => $1::float8)
         ORDER BY wst.created_at
         LIMIT $2
        """)

    /// A row of `enqueuedFor` as the message to send.
    static func entry(_ row: PostgresRow) throws(PostgresError) -> EnqueueJournal.Entry {
        EnqueueJournal.Entry(
            queue: QueueNames.workerQueue(namespace: try row.decode("namespace")),
            message: StepMessage(
                taskUUID: try row.decode("task_uuid"), stepUUID: try row.decode("step_uuid"),
                correlationID: try row.decode("correlation_id")))
    }

    /// The most steps one start sends again (the oldest first).
    static let resendLimit = 1000
    /// Between attempts of the database checks.
    static let backoff = ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(5))
}

extension EnqueuedStepSender {
    /// After a command: sends the journal's messages whose step is `enqueued` now. Retries the
    /// check while the database fails (the messages are for committed steps). Cancelled with its
    /// caller (a task API request that timed out, a forced shutdown): what it did not send, the
    /// queue database's sweep sends (`OrchestrationQueueDatabase.resendMissing`), or on the broker
    /// the next start (`resendEnqueued`).
    func sendCommitted(_ journal: EnqueueJournal, pool: PostgresConnectionPool) async {
        let entries = journal.recorded
        guard !entries.isEmpty else { return }
        let list = "[" + entries.map { StringEscaping.jsonQuoted($0.message.stepUUID.uuidString.lowercased()) }.joined(separator: ",") + "]"
        var attempts = RetryAttempts(backoff: EnqueuedStepStatements.backoff)
        while !Task.isCancelled {
            do {
                let enqueued = try await pool.withConnection { c in
                    Set(
                        try await c.query(EnqueuedStepStatements.stillEnqueued, [PostgresJSON(raw: list)]).map {
                            row throws(PostgresError) -> UUID in try row.decode("step_uuid")
                        })
                }
                _ = await send(entries.filter { enqueued.contains($0.message.stepUUID) })
                return
            } catch {
                let delay = attempts.failed()
                if attempts.failures == 1 {
                    logger.warning(
                        "could not check enqueued steps before sending their messages; retrying", metadata: ["error": "\(error)"])
                }
                guard await stopped.sleep(for: delay) else {
                    logger.critical(
                        "stopped before the messages of enqueued steps were sent; they are sent again later",
                        metadata: ["step_uuids": "\(entries.map(\.message.stepUUID))"])
                    return
                }
            }
        }
    }

    /// Sends again the message of every step `enqueued` since before this process started
    /// (`enqueuedFor` the time since the start; see the protocol's documentation), through TaskerMessaging's
    /// `StartupRepublisher` (the worker's start-up re-announcement is the same loop). Returns how
    /// many were sent.
    @discardableResult
    func resendEnqueued(pool: PostgresConnectionPool) async -> Int {
        // Enqueued before this process started: as long ago as the start, or longer.
        let sinceStart = Duration.seconds(max(0, Date().timeIntervalSince(startedAt)))
        let republisher = StartupRepublisher(
            what: "messages of steps enqueued before this start",
            reason: "an orchestration may have stopped before sending them", backoff: EnqueuedStepStatements.backoff,
            stopped: stopped, logger: logger)
        return await republisher.run(
            find: {
                try await pool.withConnection { c in
                    try await c.query(EnqueuedStepStatements.enqueuedFor, [sinceStart.inSeconds, EnqueuedStepStatements.resendLimit]).map {
                        row throws(PostgresError) -> EnqueueJournal.Entry in try EnqueuedStepStatements.entry(row)
                    }
                }
            },
            publish: { entry in await send([entry]) })
    }
}
