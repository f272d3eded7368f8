import Foundation
import Logging
import Synchronization
import TaskerAMQP
import TaskerModel
import TaskerPostgres

/// What becomes of one delivery once its work is done (`BrokerConsumer`).
package enum DeliverySettlement: Sendable, Equatable {
    /// Acked: its work committed, or it was poison, stale or a duplicate.
    case ack
    /// Nacked with requeue after a backoff that grows with the consumer's consecutive requeues (a
    /// transient failure; the broker offers it again, to this process or another); left unacked
    /// once `stop()` was called (closing the channel returns it to its queue).
    case requeue
}

/// Push consumption of a `BrokerConnection`'s queues: on every connection, one consumer per queue
/// (a channel each, `basic.qos(prefetch_count)`, manual acks, consumer tag `tasker-consumer-<uuid>`);
/// each delivery is handled in its own task and settled by the handler's `DeliverySettlement` —
/// acked only after the handler returned, i.e. after its work committed, so a process dying before
/// that leaves the delivery unacked and the broker redelivers it. Memory stays bounded: the broker
/// sends at most `prefetch_count` unacked deliveries per consumer, and the client buffers no more.
package final class BrokerConsumer: Sendable {
    private let connection: AMQPConnectionService
    /// The queues consumed.
    package let queues: [String]
    /// Unacked deliveries per consumer.
    package let prefetchCount: UInt16
    private let stopped = OneShotSignal()
    private let requeues = Atomic<Int>(0)
    private let retryBackoff = ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(5))
    private let logger: Logger

    package init(connection: BrokerConnection, queues: [String], prefetchCount: UInt16, logger: Logger) {
        self.connection = connection.service
        self.queues = queues
        self.prefetchCount = max(1, prefetchCount)
        self.logger = logger
    }

    /// Stops taking deliveries (shutdown): the consumers are cancelled and `run` returns once the
    /// deliveries being handled are settled.
    package func stop() { stopped.trigger() }

    /// Whether `stop()` was called.
    var isStopped: Bool { stopped.isTriggered }

    /// Deliveries nacked with requeue since the start (transient failures).
    package var requeued: Int { requeues.load(ordering: .relaxed) }

    /// Consumes until `stop()`: waits for each connection, consumes on it until it ends, then waits
    /// for the next one. `handle` does one delivery's work; `queue` is the queue it came from.
    package func run(handle: @escaping @Sendable (_ delivery: AMQPDelivery, _ queue: String) async -> DeliverySettlement) async {
        var seenGeneration = 0
        while !stopped.isTriggered, !Task.isCancelled {
            // The next connection, waited for on the connection's state changes (no polling while the
            // broker is down); nil at `stop()`, at cancellation, or once the connection service ended.
            let after = seenGeneration
            guard
                let next = await stopped.unlessTriggered({ [connection] in await connection.connection(after: after) }) ?? nil
            else { return }
            let live = next.connection
            seenGeneration = next.generation
            await withDiscardingTaskGroup { group in
                for queue in queues {
                    group.addTask {
                        // A consumer the broker cancelled (its queue deleted) starts again while the connection lives.
                        while !self.stopped.isTriggered, await live.isOpen {
                            await self.consume(queue, on: live, handle: handle)
                            if !self.stopped.isTriggered, await live.isOpen { await self.stopped.sleep(for: .seconds(1)) }
                        }
                    }
                }
            }
        }
    }

    /// One queue's consumer on one connection, until the connection ends or `stop()`.
    private func consume(
        _ queue: String, on connection: AMQPConnection,
        handle: @escaping @Sendable (AMQPDelivery, String) async -> DeliverySettlement
    ) async {
        let channel: AMQPChannel
        let consumer: AMQPConsumer
        do {
            channel = try await connection.openChannel()
            // Declared again (idempotent): a queue deleted since the connect comes back as upstream declares it.
            try await RabbitMQTopology.declareQueue(queue, on: channel)
            try await channel.setPrefetch(count: prefetchCount)
            consumer = try await channel.consume(
                queue: queue, consumerTag: "tasker-consumer-\(UUID().uuidString.lowercased())",
                bufferLimit: Int(prefetchCount))
        } catch {
            logger.warning(
                "could not start consuming; retried on the next connection", metadata: ["queue": "\(queue)", "error": "\(error)"])
            return
        }
        logger.info("consuming", metadata: ["queue": "\(queue)", "consumer_tag": "\(consumer.consumerTag)"])
        let failures = FailureStreak(backoff: retryBackoff)
        // `stop()` cancels the consumer: no more deliveries; those buffered are left unacked.
        let watcher = Task { [stopped] in
            await stopped.wait()
            guard !Task.isCancelled else { return }
            try? await channel.cancel(consumerTag: consumer.consumerTag)
        }
        await withDiscardingTaskGroup { group in
            do {
                for try await delivery in consumer {
                    group.addTask { await self.settle(delivery, queue: queue, channel: channel, failures: failures, handle: handle) }
                }
            } catch {
                logger.warning("consumer ended", metadata: ["queue": "\(queue)", "error": "\(error)"])
            }
            // The deliveries being handled are settled (acked after their commit) before the channel closes.
        }
        watcher.cancel()
        // Every delivery still unacked goes back to the queue now, not when the connection closes.
        try? await channel.close()
    }

    /// Handles one delivery and acks or nacks it by the settlement.
    private func settle(
        _ delivery: AMQPDelivery, queue: String, channel: AMQPChannel, failures: FailureStreak,
        handle: @Sendable (AMQPDelivery, String) async -> DeliverySettlement
    ) async {
        let settlement = await handle(delivery, queue)
        do {
            switch settlement {
            case .ack:
                failures.reset()
                try await channel.ack(deliveryTag: delivery.deliveryTag)
            case .requeue:
                guard !stopped.isTriggered else { return }
                // Back off before the broker offers it again (to this process or another): no spinning.
                // Stopped (or cancelled) meanwhile: left unacked, closing the channel returns it.
                guard await stopped.sleep(for: failures.failed()) else { return }
                try await channel.nack(deliveryTag: delivery.deliveryTag, requeue: true)
                _ = requeues.wrappingAdd(1, ordering: .relaxed)
            }
        } catch {
            // The channel or connection is gone: the broker redelivers the delivery anyway.
            logger.debug("could not settle a delivery; the broker redelivers it", metadata: ["queue": "\(queue)", "error": "\(error)"])
        }
    }
}

/// Consecutive deliveries of one consumer requeued (its settles run concurrently): the backoff grows
/// with it.
private final class FailureStreak: Sendable {
    private let attempts: Mutex<RetryAttempts>

    init(backoff: ReconnectBackoff) { attempts = Mutex(RetryAttempts(backoff: backoff)) }

    /// Records a requeue; the wait before it.
    func failed() -> Duration { attempts.withLock { $0.failed() } }
    func reset() { attempts.withLock { $0.succeeded() } }
}
