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

/// Step-message intake from RabbitMQ: a `BrokerConsumer` on the served namespace queues of
/// `RabbitMQMessaging` (a consumer per queue with `prefetch_count`, manual acks). Each delivery goes
/// through the same `StepExecutor.execute` as a PGMQ message, and is settled by its outcome:
/// - `.handled` (claimed and committed, or poison, or stale, or a duplicate): **acked, only after
///   the claim's transaction committed**, so a worker dying before that leaves the delivery
///   unacked and the broker redelivers it;
/// - `.shed` (no room below the load-shedding threshold): **kept unacked and tried again** at the
///   next release of capacity (`WorkerCapacity.waitForRelease`, at most `roomRecheck` apart), so
///   that claims never run ahead of the handler permits and no delivery churns through the broker;
///   the broker's `prefetch_count` bounds how many deliveries wait so. Without the worker's liveness
///   lock (claims refused until it is taken again) the delivery is requeued instead, as below;
/// - `.retryLater` (a transient claim failure, the step busy): nacked with requeue
///   after a backoff that grows with consecutive failures (no spinning);
/// - `.notAccepting` (claiming switched off): nacked with requeue after the same backoff; once
///   intake closed for shutdown, left unacked: `stop()` cancels the consumers, and closing their
///   channels returns every unacked delivery to its queue.
///
/// At every start it also re-publishes the results our workers committed before this process
/// started and never announced (`RabbitMQMessaging.republishUnannounced`).
final class RabbitMQIntake: StepIntake {
    let broker: RabbitMQMessaging
    private let consumer: BrokerConsumer
    private let executor: StepExecutor
    private let pool: PostgresConnectionPool
    /// The worker's capacity: a delivery refused for lack of room waits for its next release.
    private let capacity: WorkerCapacity
    /// Triggered by `stop()`: the deliveries waiting for room stop waiting (left unacked).
    private let stopping = OneShotSignal()
    /// The longest a delivery waiting for room goes without trying again (a bound: every release
    /// after a shed wakes the waiters at once).
    static let roomRecheck: Duration = .seconds(1)

    init(
        broker: RabbitMQMessaging, capacity: WorkerCapacity, executor: StepExecutor, pool: PostgresConnectionPool,
        logger: Logger = Logger(label: "tasker.rabbitmq.intake")
    ) {
        self.broker = broker
        self.capacity = capacity
        self.executor = executor
        self.pool = pool
        consumer = BrokerConsumer(
            connection: broker.broker, queues: broker.queues, prefetchCount: broker.prefetchCount, logger: logger)
    }

    /// Stops taking deliveries (shutdown): the consumers are cancelled and `run` returns once the
    /// deliveries being claimed are settled.
    func stop() {
        stopping.trigger()
        consumer.stop()
    }

    /// Deliveries are pushed: nothing to read.
    func catchUp() {}

    func status(_ status: inout WorkerEventSystemStatus) {
        status.brokerState = broker.connection.state
    }

    /// Re-publishes unannounced results (until graceful shutdown) and consumes until `stop()`: every
    /// delivery claimed by the executor, as a notification's message is.
    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { [broker, pool] in
                _ = await cancelWhenGracefulShutdown { await broker.republishUnannounced(pool: pool) }
            }
            group.addTask { [executor] in
                await self.run { delivery in await executor.execute(delivery) }
            }
        }
    }

    /// Deliveries nacked with requeue (transient failures; never for lack of room).
    var requeued: Int { consumer.requeued }

    /// Consumes until `stop()` (`BrokerConsumer.run`). `execute` claims one delivery (`StepExecutor.execute`).
    func run(execute: @escaping @Sendable (StepDelivery) async -> DeliveryOutcome) async {
        await consumer.run { [capacity, stopping] delivery, queue in
            let step = Self.stepDelivery(delivery, queue: queue)
            while true {
                switch await execute(step) {
                case .handled: return .ack
                case .retryLater, .notAccepting: return .requeue
                case .shed:
                    guard capacity.holdsLiveness, !stopping.isTriggered else { return .requeue }
                    // Unacked while it waits: the broker sends no more than prefetch_count such deliveries.
                    guard
                        await stopping.unlessTriggered({ await capacity.waitForRelease(atMost: Self.roomRecheck) }) != nil
                    else { return .requeue }
                }
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
