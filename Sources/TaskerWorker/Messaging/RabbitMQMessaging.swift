import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import TaskerAMQP
import TaskerHandlerSDK
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The worker's RabbitMQ connection (`[common.queues] backend = "rabbitmq"`): declares the queues
/// as upstream does (`RabbitMQTopology`: every served `worker_<ns>_queue` and
/// `orchestration_step_results`, on every (re)connect), carries the consumers of `RabbitMQIntake`,
/// and publishes step results with publisher confirms.
///
/// A `Service` placed right after the pool in the pipeline's group, so that it is stopped after the
/// completion service (results are still published while the pipeline drains).
///
/// Results: the completion commits in PostgreSQL first (`ResultStatement.broker`), then
/// `publishResult` publishes the same JSON the PGMQ send would (default exchange, routing key
/// `orchestration_step_results`, `delivery_mode` 2, `application/json`) and retries — with backoff,
/// across reconnects — until the broker confirms it. It is never written twice in PostgreSQL (the
/// retry is only of the publish).
///
/// A crash between the commit and the confirm leaves the step `enqueued_for_orchestration` (or
/// `…as_error…`) with no message on the broker. What recovers it: `republishUnannounced`, run by
/// the intake at every start, re-publishes the result message of every step of a served namespace
/// that one of our workers left in one of those states before this process started. A duplicate
/// (the message had been published just before the crash, or a live worker's message is still
/// queued) is harmless: orchestration processes a result only for a step still
/// `enqueued_*_for_orchestration` and acks a duplicate for a step it already moved on. With no
/// worker of the namespace started again, upstream's orchestration staleness handling
/// (`detect_and_transition_stale_tasks`: tasks stuck in processing past their threshold go to the
/// DLQ) is the last resort, as for any lost message.
package final class RabbitMQMessaging: Service, Sendable {
    /// The broker connection (queues declared on every connect).
    package let broker: BrokerConnection
    /// `worker_<ns>_queue` of every served namespace.
    package let queues: [String]
    /// `[common.queues.rabbitmq] prefetch_count`: unacked deliveries per consumer.
    package let prefetchCount: UInt16
    private let publisher: ConfirmedPublisher
    let logger: Logger
    /// When this worker was built (≈ the process start): results older than it are re-published
    /// at start (`republishUnannounced`).
    let startedAt = Date()

    /// The largest delivery body taken (a larger one ends the connection: `AMQPConfiguration.maximumBodySize`).
    package static let maximumDeliveryBytes: UInt64 = 1 << 20

    /// Builds the broker connection from `[common.queues.rabbitmq]`; the URL's password is never
    /// shown (`AMQPConfiguration.description`, `AMQPURLError`). A URL that does not parse fails `run()`.
    package init(
        settings: CommonConfiguration.RabbitMQSettings, namespaces: [String], connectionName: String,
        reconnect: ReconnectBackoff = ReconnectBackoff(initial: .milliseconds(200), maximum: .seconds(10)),
        publishBackoff: ReconnectBackoff = ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(5)),
        logger: Logger = Logger(label: "tasker.rabbitmq")
    ) {
        let queues = namespaces.map(QueueNames.workerQueue(namespace:))
        self.queues = queues
        self.prefetchCount = UInt16(clamping: max(1, settings.prefetchCount))
        self.logger = logger
        // Step messages are a few hundred bytes: at most `prefetch_count` MiB of deliveries in memory.
        broker = BrokerConnection(
            settings: settings,
            declaring: queues + namespaces.map(QueueNames.domainEvents(namespace:)) + [QueueNames.stepResults],
            connectionName: connectionName, maximumBodySize: Self.maximumDeliveryBytes, reconnect: reconnect, logger: logger)
        publisher = ConfirmedPublisher(connection: broker, backoff: publishBackoff, logger: logger)
    }

    package func run() async throws {
        try await broker.run()
    }

    /// The connection (`connection.connection` the live one, `generation` counts connects).
    package var connection: AMQPConnectionService { broker.service }

    /// The broker as health and `/config` show it (`amqp://user:***@host:port/vhost`).
    var brokerDescription: String { broker.description }

    /// Whether the connection is up (and the queues were declared on it).
    package var isConnected: Bool { broker.isConnected }

    /// Results confirmed by the broker, and publish attempts that failed and were retried.
    package var publishCounts: (published: Int, retries: Int) { publisher.counts }

    /// Publishes a step's result message to `orchestration_step_results` and returns once the broker
    /// confirmed it (`ConfirmedPublisher.publishUntilConfirmed`: every failure retried with backoff,
    /// across reconnects). The body is `StepMessage.jsonString()`, as the PGMQ send's. Returns false
    /// only when the task is cancelled first (forced shutdown): the start-up republish of the next
    /// run recovers that step (see the type's documentation).
    @discardableResult
    func publishResult(_ message: StepMessage) async -> Bool {
        let metadata = StepLogMetadata.of(message)
        let published = await publisher.publishUntilConfirmed(
            ByteBuffer(string: message.jsonString()), routingKey: QueueNames.stepResults, what: "a step result",
            metadata: metadata)
        if !published {
            logger.critical(
                "stopped before a stored step result was published; the next start re-publishes it", metadata: metadata)
        }
        return published
    }

    /// Publishes a durable domain event to `queue` (`<ns>_domain_events`, declared at connect) and
    /// waits for the broker's confirm. One attempt, as the PGMQ send: domain events are
    /// fire-and-forget (a failure is counted and logged by `DomainEventActor`).
    func publishEvent(_ json: String, to queue: String) async throws {
        try await publisher.publishOnce(ByteBuffer(string: json), routingKey: queue)
    }

    /// The depth of each served queue (a passive `queue.declare` on a channel of its own); nil when
    /// the broker is not connected or does not answer.
    package func queueDepths() async -> [String: Int]? {
        await broker.queueDepths(queues)
    }
}
