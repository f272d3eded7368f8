import Foundation
import Logging
import NIOCore
import Synchronization
import TaskerAMQP
import TaskerModel
import TaskerPostgres

/// Step-message intake from RabbitMQ: on every connection of `RabbitMQMessaging`, one consumer per
/// served namespace queue (a channel each, `basic.qos(prefetch_count)`, manual acks, consumer tag
/// `tasker-consumer-<uuid>`). Each delivery goes through the same `StepExecutorActor.execute` as a
/// PGMQ message, and is settled by its outcome:
/// - `.handled` (claimed and committed, or poison, or stale, or a duplicate): **acked, only after
///   the claim's transaction committed**, so a worker dying before that leaves the delivery
///   unacked and the broker redelivers it;
/// - `.retryLater` (a transient claim failure, load shedding, the step busy): nacked with requeue
///   after a backoff that grows with consecutive failures (no spinning);
/// - `.notAccepting` (claiming switched off): nacked with requeue after the same backoff; once
///   intake closed for shutdown, left unacked: `stop()` cancels the consumers, and closing their
///   channels returns every unacked delivery to its queue.
/// Memory stays bounded: the broker sends at most `prefetch_count` unacked deliveries per consumer,
/// and the client buffers no more than that.
package final class RabbitMQIntake: Sendable {
    let broker: RabbitMQMessaging
    private let stopped = OneShotSignal()
    private let retryBackoff = ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(5))
    private let logger: Logger

    package init(broker: RabbitMQMessaging, logger: Logger = Logger(label: "tasker.rabbitmq.intake")) {
        self.broker = broker
        self.logger = logger
    }

    /// Stops taking deliveries (shutdown): the consumers are cancelled and `run` returns once the
    /// deliveries being claimed are settled.
    package func stop() { stopped.trigger() }

    /// Consumes until `stop()`: waits for each connection of the broker, consumes on it until it
    /// ends, then waits for the next one. `execute` claims one delivery (`StepExecutorActor.execute`).
    package func run(execute: @escaping @Sendable (StepDelivery) async -> DeliveryOutcome) async {
        var seenGeneration = 0
        while !stopped.isTriggered, !Task.isCancelled {
            let generation = broker.connection.generation
            guard generation != seenGeneration, let connection = broker.connection.connection else {
                try? await Task.sleep(for: .milliseconds(50))
                continue
            }
            seenGeneration = generation
            await withDiscardingTaskGroup { group in
                for queue in broker.queues {
                    group.addTask {
                        // A consumer the broker cancelled (its queue deleted) starts again while the connection lives.
                        while !self.stopped.isTriggered, await connection.isOpen {
                            await self.consume(queue, on: connection, execute: execute)
                            if !self.stopped.isTriggered, await connection.isOpen { try? await Task.sleep(for: .seconds(1)) }
                        }
                    }
                }
            }
        }
    }

    /// One queue's consumer on one connection, until the connection ends or `stop()`.
    private func consume(
        _ queue: String, on connection: AMQPConnection, execute: @escaping @Sendable (StepDelivery) async -> DeliveryOutcome
    ) async {
        let channel: AMQPChannel
        let consumer: AMQPConsumer
        do {
            channel = try await connection.openChannel()
            // Declared again (idempotent): a queue deleted since the connect comes back as upstream declares it.
            try await RabbitMQTopology.declareQueue(queue, on: channel)
            try await channel.setPrefetch(count: broker.prefetchCount)
            consumer = try await channel.consume(
                queue: queue, consumerTag: "tasker-consumer-\(UUID().uuidString.lowercased())",
                bufferLimit: Int(broker.prefetchCount))
        } catch {
            logger.warning(
                "could not start consuming; retried on the next connection", metadata: ["queue": "\(queue)", "error": "\(error)"])
            return
        }
        logger.info("consuming", metadata: ["queue": "\(queue)", "consumer_tag": "\(consumer.consumerTag)"])
        let failures = FailureStreak()
        // `stop()` cancels the consumer: no more deliveries; those buffered are left unacked.
        let watcher = Task { [stopped] in
            await stopped.wait()
            guard !Task.isCancelled else { return }
            try? await channel.cancel(consumerTag: consumer.consumerTag)
        }
        await withDiscardingTaskGroup { group in
            do {
                for try await delivery in consumer {
                    group.addTask { await self.settle(delivery, queue: queue, channel: channel, failures: failures, execute: execute) }
                }
            } catch {
                logger.warning("consumer ended", metadata: ["queue": "\(queue)", "error": "\(error)"])
            }
            // The deliveries being claimed are settled (acked after their commit) before the channel closes.
        }
        watcher.cancel()
        // Every delivery still unacked goes back to the queue now, not when the connection closes.
        try? await channel.close()
    }

    /// Claims one delivery and acks or nacks it by the outcome (see the type's documentation).
    private func settle(
        _ amqp: AMQPDelivery, queue: String, channel: AMQPChannel, failures: FailureStreak,
        execute: @Sendable (StepDelivery) async -> DeliveryOutcome
    ) async {
        let outcome = await execute(Self.stepDelivery(amqp, queue: queue))
        do {
            switch outcome {
            case .handled:
                failures.reset()
                try await channel.ack(deliveryTag: amqp.deliveryTag)
            case .retryLater, .notAccepting:
                guard !stopped.isTriggered else { return }
                // Back off before the broker offers it again (to this worker or another): no spinning.
                await pause(retryBackoff.delay(forAttempt: failures.next()))
                guard !stopped.isTriggered else { return }
                try await channel.nack(deliveryTag: amqp.deliveryTag, requeue: true)
            }
        } catch {
            // The channel or connection is gone: the broker redelivers the delivery anyway.
            logger.debug("could not settle a delivery; the broker redelivers it", metadata: ["queue": "\(queue)", "error": "\(error)"])
        }
    }

    /// Waits `delay`, or less when `stop()` comes first (the drain does not wait out a backoff).
    private func pause(_ delay: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: delay) }
            group.addTask { [stopped] in await stopped.wait() }
            await group.next()
            group.cancelAll()
        }
    }

    /// The delivery as the executor takes it: the body is the StepMessage JSON of a PGMQ message; a
    /// body that is not JSON is carried as `bodyError` (poison). `msgID` is the delivery tag.
    static func stepDelivery(_ delivery: AMQPDelivery, queue: String) -> StepDelivery {
        if let size = delivery.discardedBodySize {
            return StepDelivery(
                queue: queue, msgID: Int64(truncatingIfNeeded: delivery.deliveryTag), message: .null,
                bodyError:
                    "the delivery's body of \(size) bytes is over the limit of \(RabbitMQMessaging.maximumDeliveryBytes) bytes (dropped unread)"
            )
        }
        do {
            let message = try JSONDecoder().decode(JSONValue.self, from: Data(delivery.body.readableBytesView))
            return StepDelivery(queue: queue, msgID: Int64(truncatingIfNeeded: delivery.deliveryTag), message: message)
        } catch {
            return StepDelivery(
                queue: queue, msgID: Int64(truncatingIfNeeded: delivery.deliveryTag), message: .null,
                bodyError: "the delivery's body is not JSON (\(delivery.body.readableBytes) bytes): \(error)")
        }
    }
}

/// Consecutive deliveries of one consumer left for later: the backoff grows with it.
private final class FailureStreak: Sendable {
    private let count = Mutex(0)
    func next() -> Int {
        count.withLock { value in
            defer { value += 1 }
            return value
        }
    }
    func reset() { count.withLock { $0 = 0 } }
}
