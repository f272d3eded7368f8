import TaskerModel

/// Which transport carries the worker's messages (`[common.queues] backend`). The pipeline is the
/// same for both; they differ only where a message is taken in and where a result is sent:
///
/// | | PGMQ | RabbitMQ |
/// |---|---|---|
/// | intake | `WorkerEventSystem`'s LISTEN + poller | one consumer per namespace queue (`RabbitMQIntake`) |
/// | claim | hydrate + claim + archive, one transaction | hydrate + claim, one transaction; ack after commit |
/// | poison, stale | archived | acked |
/// | result | sent in the completion's statement | published (confirmed) after the completion commits |
package enum MessageTransport: Sendable {
    case pgmq
    case rabbitMQ(RabbitMQMessaging)

    /// The broker, when RabbitMQ carries the messages.
    package var broker: RabbitMQMessaging? {
        if case .rabbitMQ(let broker) = self { return broker }
        return nil
    }

    /// Whether step messages live in PGMQ (archived there when settled).
    var archivesInPGMQ: Bool { broker == nil }
}
