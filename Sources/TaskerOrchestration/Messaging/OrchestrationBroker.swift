import Foundation
import Logging
import NIOCore
import TaskerAMQP
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The orchestration on RabbitMQ (`[common.queues] backend = "rabbitmq"`): one `BrokerConnection`
/// declaring the orchestration's queues on every connect, a `BrokerConsumer` on them (deliveries
/// acked after their work commits, see `OrchestrationService+RabbitMQ`), and a `ConfirmedPublisher`
/// for step messages: `pending → enqueued` commits without a PGMQ send (`EnqueueJournal`), then each
/// message is published to `worker_<ns>_queue` (declared as upstream declares it first) and retried
/// until the broker confirms it.
///
/// A crash between the commit and the confirm leaves a step `enqueued` with no message. What
/// re-sends it: `republishEnqueued` at every start publishes the message of every step `enqueued`
/// since before this process started. A step still `enqueued` has not been claimed (the worker
/// acks only after its claim commits), so its message is queued, unacked or lost; a duplicate of a
/// queued one is harmless (the worker's claim is a compare-and-set on `enqueued`, the second delivery
/// is stale and acked). The staleness detector stays the last resort when no orchestration starts again.
public final class OrchestrationBroker: Sendable {
    let connection: BrokerConnection
    let publisher: ConfirmedPublisher
    let consumer: BrokerConsumer
    private let declared = DeclaredQueues()
    private let declareBackoff = ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(5))
    let logger: Logger
    /// ≈ the process start: steps `enqueued` before it are re-published at start.
    let startedAt = Date()

    /// The queues the orchestration consumes.
    static let consumedQueues = [QueueNames.stepResults, QueueNames.taskRequests, QueueNames.taskFinalizations]

    /// The largest delivery body taken (task requests carry the task's context).
    static let maximumDeliveryBytes: UInt64 = 16 << 20

    /// The most steps one start re-publishes (the oldest first).
    static let republishLimit = 1000

    /// The broker from `[common.queues.rabbitmq]` (the URL's password is never shown; a URL that does
    /// not parse fails the orchestration's `run()`).
    public init(
        settings: CommonConfiguration.RabbitMQSettings, connectionName: String = "tasker-orchestration",
        logger: Logger = Logger(label: "tasker.orchestration.rabbitmq")
    ) {
        self.logger = logger
        connection = BrokerConnection(
            settings: settings, declaring: Self.consumedQueues, connectionName: connectionName,
            maximumBodySize: Self.maximumDeliveryBytes,
            reconnect: ReconnectBackoff(initial: .milliseconds(200), maximum: .seconds(10)), logger: logger)
        publisher = ConfirmedPublisher(
            connection: connection, backoff: ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(5)), logger: logger)
        consumer = BrokerConsumer(
            connection: connection, queues: Self.consumedQueues,
            prefetchCount: UInt16(clamping: max(1, settings.prefetchCount)), logger: logger)
    }

    /// Keeps the connection up (reconnecting) until cancelled or a graceful shutdown, for a process
    /// that creates tasks without running the orchestration (`tasker-dev submit`); throws for a URL
    /// that does not parse. `OrchestrationService` runs it itself.
    public func runConnection() async throws {
        try await connection.run()
    }

    /// Whether the connection is up.
    public var isConnected: Bool { connection.isConnected }

    /// Step messages confirmed by the broker, and publish attempts retried.
    public var publishCounts: (published: Int, retries: Int) { publisher.counts }

    /// Publishes a task request to `orchestration_task_requests` (declared on every connect) for a
    /// running orchestration, and returns once the broker confirmed it (retried across reconnects);
    /// false when the task was cancelled first. For `tasker-dev submit --queue` and the example
    /// submitter of `tasker-dev progress`, with `runConnection()` running.
    public func publishTaskRequest(_ message: TaskRequestMessage) async throws -> Bool {
        let body = try JSONEncoder().encode(message)
        return await publisher.publishUntilConfirmed(
            ByteBuffer(bytes: body), routingKey: QueueNames.taskRequests, what: "a task request",
            metadata: ["request_id": "\(message.requestID.uuidString.lowercased())"])
    }

    /// What the operator surface reports (`/health/ready`, `/health/detailed`, `/metrics`).
    public var status: OrchestrationBrokerStatus {
        let counts = publisher.counts
        return OrchestrationBrokerStatus(
            connected: connection.isConnected, connections: connection.service.generation, published: counts.published,
            publishRetries: counts.retries, broker: connection.description)
    }

    /// Publishes each message (its queue declared first on this connection) and returns once all
    /// were confirmed; false when the task was cancelled first (the next start re-publishes).
    @discardableResult
    func publish(_ entries: [EnqueueJournal.Entry]) async -> Bool {
        for entry in entries {
            var attempts = RetryAttempts(backoff: declareBackoff)
            while !Task.isCancelled {
                do {
                    try await declared.ensure(entry.queue, on: connection.service)
                    break
                } catch {
                    let delay = attempts.failed()
                    if attempts.failures % 10 == 1 {
                        logger.warning(
                            "declaring a worker queue failed; retrying", metadata: ["queue": "\(entry.queue)", "error": "\(error)"])
                    }
                    guard await connection.stopped.sleep(for: delay) else { break }
                }
            }
            let published = await publisher.publishUntilConfirmed(
                ByteBuffer(string: entry.message.jsonString()), routingKey: entry.queue, what: "a step message",
                metadata: [
                    "task_uuid": "\(entry.message.taskUUID)", "step_uuid": "\(entry.message.stepUUID)",
                    "correlation_id": "\(entry.message.correlationID)",
                ])
            guard published else {
                logger.critical(
                    "stopped before an enqueued step's message was published; the next start re-publishes it",
                    metadata: ["step_uuid": "\(entry.message.stepUUID)"])
                return false
            }
        }
        return true
    }

    /// Of `entries`, those whose step is `enqueued` now (after the command's commits): a message
    /// recorded by an attempt that rolled back is dropped unless the step did get enqueued.
    static let stillEnqueued = PreparedStatement(
        """
        SELECT workflow_step_uuid AS step_uuid FROM tasker.workflow_step_transitions
         WHERE most_recent AND to_state = 'enqueued'
           AND workflow_step_uuid IN (SELECT (jsonb_array_elements_text($1::jsonb))::uuid)
        """)

    /// Steps `enqueued` since before $1 (this process's start), with what their message needs,
    /// oldest first, at most $2.
    static let enqueuedBefore = PreparedStatement(
        """
        SELECT ws.workflow_step_uuid AS step_uuid, ws.task_uuid, t.correlation_id, tn.name AS namespace
          FROM tasker.workflow_step_transitions wst
          JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
          JOIN tasker.tasks t ON t.task_uuid = ws.task_uuid
          JOIN tasker.named_tasks nt ON nt.named_task_uuid = t.named_task_uuid
          JOIN tasker.task_namespaces tn ON tn.task_namespace_uuid = nt.task_namespace_uuid
         WHERE wst.most_recent AND wst.to_state = 'enqueued' AND wst.created_at < $1::timestamptz
         ORDER BY wst.created_at
         LIMIT $2
        """)

    /// After a command: publishes the journal's messages whose step is `enqueued` now. Retries the
    /// check while the database fails (the messages are for committed steps).
    func publishCommitted(_ journal: EnqueueJournal, pool: PostgresConnectionPool) async {
        let entries = journal.recorded
        guard !entries.isEmpty else { return }
        let list = "[" + entries.map { StringEscaping.jsonQuoted($0.message.stepUUID.uuidString.lowercased()) }.joined(separator: ",") + "]"
        var attempts = RetryAttempts(backoff: declareBackoff)
        while !Task.isCancelled {
            do {
                let enqueued = try await pool.withConnection { c in
                    Set(
                        try await c.query(Self.stillEnqueued, [PostgresJSON(raw: list)]).map { row throws(PostgresError) -> UUID in
                            try row.decode("step_uuid")
                        })
                }
                await publish(entries.filter { enqueued.contains($0.message.stepUUID) })
                return
            } catch {
                let delay = attempts.failed()
                if attempts.failures == 1 {
                    logger.warning("could not check enqueued steps before publishing; retrying", metadata: ["error": "\(error)"])
                }
                guard await connection.stopped.sleep(for: delay) else { break }
            }
        }
    }

    /// Re-publishes the message of every step `enqueued` since before this process started
    /// (`enqueuedBefore`; see the type's documentation), through TaskerMessaging's
    /// `StartupRepublisher` (the worker's start-up re-publish is the same loop). Returns how many
    /// were published.
    @discardableResult
    func republishEnqueued(pool: PostgresConnectionPool) async -> Int {
        let before = RFC3339.string(startedAt)
        let republisher = StartupRepublisher(
            what: "messages of steps enqueued before this start",
            reason: "an orchestration may have stopped before publishing them", backoff: declareBackoff,
            stopped: connection.stopped, logger: logger)
        return await republisher.run(
            find: {
                try await pool.withConnection { c in
                    try await c.query(Self.enqueuedBefore, [before, Self.republishLimit]).map {
                        row throws(PostgresError) -> EnqueueJournal.Entry in
                        EnqueueJournal.Entry(
                            queue: QueueNames.workerQueue(namespace: try row.decode("namespace")),
                            message: StepMessage(
                                taskUUID: try row.decode("task_uuid"), stepUUID: try row.decode("step_uuid"),
                                correlationID: try row.decode("correlation_id")))
                    }
                }
            },
            publish: { entry in await publish([entry]) })
    }
}

/// The worker queues declared on the current connection (declared once per connection before the
/// first publish to them, as upstream declares them: a publish to a missing queue would be dropped).
private actor DeclaredQueues {
    private var generation = -1
    private var queues: Set<String> = []

    func ensure(_ queue: String, on service: AMQPConnectionService) async throws {
        guard let live = service.connection else { throw BrokerNotConnected() }
        let current = service.generation
        if current != generation {
            generation = current
            queues = []
        }
        guard !queues.contains(queue) else { return }
        let channel = try await live.openChannel()
        do {
            try await RabbitMQTopology.declareQueue(queue, on: channel)
        } catch {
            try? await channel.close()
            throw error
        }
        try? await channel.close()
        if generation == current { queues.insert(queue) }
    }
}

/// The orchestration's broker connection as its operator surface reports it.
public struct OrchestrationBrokerStatus: Sendable, Equatable {
    /// Whether the connection is up.
    public let connected: Bool
    /// Connections made so far (1 after the first connect; each reconnect adds one).
    public let connections: Int
    /// Step messages the broker confirmed.
    public let published: Int
    /// Publish attempts retried (a lost connection, a nack).
    let publishRetries: Int
    /// The broker's URL, password hidden.
    public let broker: String
}
