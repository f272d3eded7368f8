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
/// A crash between the commit and the confirm leaves a step `enqueued` with no message: the next
/// start publishes it again (`EnqueuedStepSender.resendEnqueued`).
public final class OrchestrationBroker: EnqueuedStepSender {
    let connection: BrokerConnection
    let publisher: ConfirmedPublisher
    let consumer: BrokerConsumer
    private let declared = DeclaredQueues()
    private let declareBackoff = ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(5))
    let logger: Logger
    /// ≈ the process start: steps `enqueued` before it are re-published at start.
    let startedAt = Date()
    /// The connection's end.
    var stopped: OneShotSignal { connection.stopped }

    /// The queues the orchestration consumes.
    static let consumedQueues = [QueueNames.stepResults, QueueNames.taskRequests, QueueNames.taskFinalizations]

    /// The largest delivery body taken (task requests carry the task's context).
    static let maximumDeliveryBytes: UInt64 = 16 << 20

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
    func send(_ entries: [EnqueueJournal.Entry]) async -> Bool {
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
