import ServiceLifecycle
import TaskerHandlerSDK
import TaskerModel
import TaskerStore

/// Step messages on RabbitMQ: the claim and result statements touch no PGMQ table
/// (`StepQueueStatements.broker`); deliveries are acked or requeued by `RabbitMQIntake` after the
/// claim commits; results and domain events are published, confirmed, after their commit.
extension RabbitMQMessaging: StepTransport {
    var summary: String { "rabbitmq \(brokerDescription)" }
    var services: [any Service] { [self] }
    var initialStatements: StepQueueStatements { .broker }
    var detectsTableLayouts: Bool { false }
    var recoveryStatement: ResultStatement { .recoverBroker }
    var unclaimedOutcome: DeliveryOutcome { .retryLater }
    var announcesAfterCommit: Bool { true }
    func announceDurably(_ message: StepMessage) async -> Bool { await publishResult(message) }

    /// The intake acks the delivery on `.handled`.
    func settle(_ delivery: StepDelivery) async throws -> Bool { true }

    /// The intake requeues (`.retryLater`) or holds (`.shed`) the delivery.
    func release(_ delivery: StepDelivery) async throws {}

    func announceResults(_ messages: [StepMessage]) async {
        await withDiscardingTaskGroup { group in
            for message in messages { group.addTask { _ = await self.publishResult(message) } }
        }
    }
}
