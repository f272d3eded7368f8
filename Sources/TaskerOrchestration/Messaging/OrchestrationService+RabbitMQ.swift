import AsyncAlgorithms
import Foundation
import Logging
import ServiceLifecycle
import TaskerAMQP
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// What becomes of one message of an orchestration queue once processed.
enum MessageDisposition: Sendable, Equatable {
    /// Processed; from PGMQ, archived in its work's transaction. A delivery is acked.
    case archivedWithWork
    /// Processed; from PGMQ, archived now. A delivery is acked.
    case finished
    /// Refused (counted): archived / acked without effect.
    case poison
    /// A transient failure: from PGMQ, left for its visibility timeout; a delivery is requeued after a backoff.
    case retry

    /// The settlement of a RabbitMQ delivery: acked after its work committed, poison acked, transient requeued.
    var settlement: DeliverySettlement { self == .retry ? .requeue : .ack }
}

/// A message body that is not readable (not JSON, or over the size limit).
struct MessageBodyError: Error, CustomStringConvertible {
    var reason: String
    var description: String { "body is not readable: \(reason)" }
}

extension OrchestrationService {
    /// The orchestration on RabbitMQ: nothing goes through PGMQ. The queues are consumed by a
    /// `BrokerConsumer` (results, task requests, finalizations; each delivery acked after its work
    /// committed and its step messages were confirmed, poison acked and counted, transient failures
    /// requeued after a backoff, duplicate results acked without effect); the step messages of steps
    /// `enqueued` before this start are re-published; readiness discovery and the staleness detector
    /// run as on PGMQ. At graceful shutdown the consumers stop, the deliveries in hand finish, then the
    /// connection closes and the pool.
    func run(on broker: OrchestrationBroker) async throws {
        if let error = broker.connection.configurationError { throw error }
        logger.info(
            "tasker orchestration starting on RabbitMQ",
            metadata: ["processor_uuid": "\(processor.context.processorUUID)", "broker": "\(broker.connection.description)"])
        // Detached so that it outlives the graceful shutdown: the acks and step messages of the
        // deliveries in hand still go out. Cancelled once the consumer has settled them.
        let connection = Task.detached { try? await broker.connection.run() }
        await withDiscardingTaskGroup { group in
            group.addTask {
                // Cancelled at graceful shutdown (a broker that stays down would keep it retrying): the next start re-publishes.
                _ = await cancelWhenGracefulShutdown { await broker.resendEnqueued(pool: self.databasePool) }
            }
            group.addTask {
                await broker.consumer.run { delivery, queue in
                    let (body, bodyError) = delivery.jsonBody(limit: OrchestrationBroker.maximumDeliveryBytes)
                    let message = QueueMessage(
                        queue: queue, msgID: Int64(truncatingIfNeeded: delivery.deliveryTag),
                        readCount: delivery.redelivered ? 2 : 1, message: body, bodyError: bodyError)
                    return await self.process(message, receipt: nil).settlement
                }
            }
            group.addTask {
                try? await gracefulShutdown()
                broker.consumer.stop()
            }
            group.addTask { try? await self.stalenessDetector.run() }
            group.addTask {
                for await _ in AsyncTimerSequence(interval: self.settings.readinessInterval, clock: .continuous)
                    .cancelOnGracefulShutdown()
                { await self.discoverReadyTasks() }
            }
        }
        connection.cancel()
        await connection.value
        await databasePool.close()
        logger.info("tasker orchestration stopped", metadata: ["results_processed": "\(statistics.resultsProcessed)"])
    }
}
