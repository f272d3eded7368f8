import Foundation
import Logging
import NIOCore
import TaskerAMQP
import TaskerMessaging
import TaskerModel
import TaskerPostgres

/// Step-message intake from RabbitMQ: a `BrokerConsumer` on the served namespace queues of
/// `RabbitMQMessaging` (a consumer per queue with `prefetch_count`, manual acks). Each delivery goes
/// through the same `StepExecutorActor.execute` as a PGMQ message, and is settled by its outcome:
/// - `.handled` (claimed and committed, or poison, or stale, or a duplicate): **acked, only after
///   the claim's transaction committed**, so a worker dying before that leaves the delivery
///   unacked and the broker redelivers it;
/// - `.retryLater` (a transient claim failure, load shedding, the step busy): nacked with requeue
///   after a backoff that grows with consecutive failures (no spinning);
/// - `.notAccepting` (claiming switched off): nacked with requeue after the same backoff; once
///   intake closed for shutdown, left unacked: `stop()` cancels the consumers, and closing their
///   channels returns every unacked delivery to its queue.
package final class RabbitMQIntake: Sendable {
    let broker: RabbitMQMessaging
    private let consumer: BrokerConsumer

    package init(broker: RabbitMQMessaging, logger: Logger = Logger(label: "tasker.rabbitmq.intake")) {
        self.broker = broker
        consumer = BrokerConsumer(
            connection: broker.broker, queues: broker.queues, prefetchCount: broker.prefetchCount, logger: logger)
    }

    /// Stops taking deliveries (shutdown): the consumers are cancelled and `run` returns once the
    /// deliveries being claimed are settled.
    package func stop() { consumer.stop() }

    /// Consumes until `stop()` (`BrokerConsumer.run`). `execute` claims one delivery (`StepExecutorActor.execute`).
    package func run(execute: @escaping @Sendable (StepDelivery) async -> DeliveryOutcome) async {
        await consumer.run { delivery, queue in
            switch await execute(Self.stepDelivery(delivery, queue: queue)) {
            case .handled: .ack
            case .retryLater, .notAccepting: .requeue
            }
        }
    }

    /// The delivery as the executor takes it: the body is the StepMessage JSON of a PGMQ message; a
    /// body that is not JSON (or over the limit) is carried as `bodyError` (poison). `msgID` is the delivery tag.
    static func stepDelivery(_ delivery: AMQPDelivery, queue: String) -> StepDelivery {
        let (message, bodyError) = delivery.jsonBody(limit: RabbitMQMessaging.maximumDeliveryBytes)
        return StepDelivery(
            queue: queue, msgID: Int64(truncatingIfNeeded: delivery.deliveryTag), message: message, bodyError: bodyError)
    }
}
