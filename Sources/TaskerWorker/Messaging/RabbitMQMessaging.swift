import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import TaskerAMQP
import TaskerModel
import TaskerPostgres

/// The worker's RabbitMQ connection (`[common.queues] backend = "rabbitmq"`): declares the queues
/// as upstream does (`RabbitMQTopology`: every served `worker_<ns>_queue` and
/// `orchestration_step_results`, on every (re)connect), carries the consumers of `RabbitMQIntake`,
/// and publishes step results with publisher confirms.
///
/// A `Service` placed right after the pool in the pipeline's group, so that it is stopped after the
/// completion service (results are still published while the pipeline drains).
///
/// Results: the completion commits in PostgreSQL first (`StepStatements.completeWithoutSend`), then
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
    package let connection: AMQPConnectionService
    /// `worker_<ns>_queue` of every served namespace.
    package let queues: [String]
    /// `[common.queues.rabbitmq] prefetch_count`: unacked deliveries per consumer.
    package let prefetchCount: UInt16
    private let publishBackoff: ReconnectBackoff
    private let publisher: ResultChannel
    let logger: Logger
    /// When this worker was built (≈ the process start): results older than it are re-published
    /// at start (`republishUnannounced`).
    let startedAt = Date()
    /// Results published and confirmed, and publishes retried (for `/metrics`).
    private let counters = Mutex<(published: Int, retries: Int)>((0, 0))

    /// The largest delivery body taken (a larger one ends the connection: `AMQPConfiguration.maximumBodySize`).
    package static let maximumDeliveryBytes: UInt64 = 1 << 20

    /// Why `[common.queues.rabbitmq] url` could not be used; `run()` throws it (the boot fails).
    private let urlError: AMQPURLError?

    /// Builds the broker connection from `[common.queues.rabbitmq]`; the URL's password is never
    /// shown (`AMQPConfiguration.description`, `AMQPURLError`). A URL that does not parse fails `run()`.
    package init(
        settings: CommonConfiguration.RabbitMQSettings, namespaces: [String], connectionName: String,
        reconnect: ReconnectBackoff = ReconnectBackoff(initial: .milliseconds(200), maximum: .seconds(10)),
        publishBackoff: ReconnectBackoff = ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(5)),
        logger: Logger = Logger(label: "tasker.rabbitmq")
    ) {
        var configuration = AMQPConfiguration()
        do {
            configuration = try AMQPConfiguration(url: settings.url)
            urlError = nil
        } catch {
            urlError = error
        }
        configuration.heartbeatSeconds = UInt16(clamping: settings.heartbeatSeconds)
        // Step messages are a few hundred bytes: at most `prefetch_count` MiB of deliveries in memory.
        configuration.maximumBodySize = Self.maximumDeliveryBytes
        configuration.connectionName = connectionName
        let queues = namespaces.map(QueueNames.workerQueue(namespace:))
        self.queues = queues
        let declared = queues + namespaces.map(QueueNames.domainEvents(namespace:)) + [QueueNames.stepResults]
        self.prefetchCount = UInt16(clamping: max(1, settings.prefetchCount))
        self.publishBackoff = publishBackoff
        self.logger = logger
        let publisher = ResultChannel()
        self.publisher = publisher
        connection = AMQPConnectionService(
            configuration: configuration, delay: { reconnect.delay(forAttempt: $0) },
            logger: logger
        ) { connection in
            let channel = try await connection.openChannel()
            for queue in declared {
                try await RabbitMQTopology.declareQueue(queue, on: channel)
            }
            try await channel.close()
        }
    }

    package func run() async throws {
        if let urlError { throw RabbitMQConfigurationError(reason: "\(urlError)") }
        try await connection.run()
    }

    /// The broker as health and `/config` show it (`amqp://user:***@host:port/vhost`).
    package var brokerDescription: String { "\(connection.configuration)" }

    /// Whether the connection is up (and the queues were declared on it).
    package var isConnected: Bool { connection.state == .connected }

    /// Results confirmed by the broker, and publish attempts that failed and were retried.
    package var publishCounts: (published: Int, retries: Int) { counters.withLock { $0 } }

    /// Publishes a step's result message to `orchestration_step_results` and returns once the broker
    /// confirmed it; retries every failure (a lost connection, a nack, a closed channel) with backoff,
    /// across reconnects. The body is `StepMessage.jsonString()`, as the PGMQ send's. Returns false only when the task is cancelled first (forced shutdown): the
    /// start-up republish of the next run recovers that step (see the type's documentation).
    @discardableResult
    package func publishResult(_ message: StepMessage) async -> Bool {
        let body = ByteBuffer(string: message.jsonString())
        return await publish(body, metadata: StepLogMetadata.of(message))
    }

    private func publish(_ body: ByteBuffer, metadata: Logger.Metadata) async -> Bool {
        var attempt = 0
        while !Task.isCancelled {
            let failure: String
            if let live = connection.connection {
                do {
                    let channel = try await publisher.channel(on: live)
                    try await channel.publish(body, routingKey: QueueNames.stepResults, properties: .persistentJSON)
                    counters.withLock { $0.published += 1 }
                    return true
                } catch {
                    await publisher.discard(after: error)
                    failure = "\(error)"
                }
            } else {
                failure = "not connected: \(connection.state)"
            }
            counters.withLock { $0.retries += 1 }
            let delay = publishBackoff.delay(forAttempt: attempt)
            if attempt == 0 || attempt % 10 == 0 {
                logger.warning(
                    "publishing a step result failed; retrying until the broker confirms it",
                    metadata: metadata.merging(
                        ["error": "\(failure)", "attempt": "\(attempt + 1)", "retry_in": "\(delay)"], uniquingKeysWith: { $1 }))
            }
            attempt += 1
            do { try await Task.sleep(for: delay) } catch { break }
        }
        logger.critical(
            "stopped before a stored step result was published; the next start re-publishes it",
            metadata: metadata)
        return false
    }

    /// Publishes a durable domain event to `queue` (`<ns>_domain_events`, declared at connect) and
    /// waits for the broker's confirm. One attempt, as the PGMQ send: domain events are
    /// fire-and-forget (a failure is counted and logged by `DomainEventActor`).
    package func publishEvent(_ json: String, to queue: String) async throws {
        guard let live = connection.connection else { throw BrokerNotConnected() }
        do {
            let channel = try await publisher.channel(on: live)
            try await channel.publish(ByteBuffer(string: json), routingKey: queue, properties: .persistentJSON)
        } catch {
            await publisher.discard(after: error)
            throw error
        }
    }

    /// The depth of each served queue (a passive `queue.declare` on a channel of its own); nil when
    /// the broker is not connected or does not answer.
    package func queueDepths() async -> [String: Int]? {
        guard let live = connection.connection else { return nil }
        do {
            let channel = try await live.openChannel()
            defer { Task { try? await channel.close() } }
            var depths: [String: Int] = [:]
            for queue in queues { depths[queue] = Int(try await channel.inspectQueue(queue).messageCount) }
            return depths
        } catch {
            return nil
        }
    }
}

/// The confirm-mode channel results are published on, opened once per connection.
private actor ResultChannel {
    private var current: AMQPChannel?

    func channel(on connection: AMQPConnection) async throws(AMQPError) -> AMQPChannel {
        if let current, current.connection === connection, await current.isOpen { return current }
        let channel = try await connection.openChannel()
        try await channel.enablePublisherConfirms()
        current = channel
        return channel
    }

    /// After a failure the channel may be closed (a nack leaves it open, but a fresh one costs little).
    func discard(after error: AMQPError) async {
        guard let channel = current else { return }
        current = nil
        if case .publishNacked = error { try? await channel.close() }
    }
}

/// `[common.queues.rabbitmq] url` cannot be used (never shows the URL: it holds a password).
package struct RabbitMQConfigurationError: Error, CustomStringConvertible {
    let reason: String
    package var description: String { "common.queues.rabbitmq.url: \(reason)" }
}

/// The broker did not answer (not connected, or a channel closed), e.g. for queue depths.
package struct BrokerNotConnected: Error, CustomStringConvertible {
    package init() {}
    package var description: String { "the RabbitMQ broker is not connected" }
}
