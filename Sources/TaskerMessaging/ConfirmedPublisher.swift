import Logging
import NIOCore
import Synchronization
import TaskerAMQP
import TaskerPostgres

/// Publishes on a confirm-mode channel of a `BrokerConnection` (default exchange, routing key = the
/// queue, `delivery_mode` 2, `application/json`): `publishUntilConfirmed` for messages whose state
/// already committed in PostgreSQL (a step result, a step message), retried until the broker
/// confirms; `publishOnce` for fire-and-forget messages (domain events).
package final class ConfirmedPublisher: Sendable {
    private let connection: AMQPConnectionService
    /// The connection's end (`BrokerConnection.stopped`): a retry stops waiting then.
    private let stopped: OneShotSignal
    private let backoff: ReconnectBackoff
    private let channels = PublishChannel()
    private let logger: Logger
    /// Messages confirmed, and publish attempts that failed and were retried (for `/metrics`).
    private let counters = Mutex<(published: Int, retries: Int)>((0, 0))

    package init(connection: BrokerConnection, backoff: ReconnectBackoff, logger: Logger) {
        self.connection = connection.service
        self.stopped = connection.stopped
        self.backoff = backoff
        self.logger = logger
    }

    /// Messages confirmed by the broker, and publish attempts that failed and were retried.
    package var counts: (published: Int, retries: Int) { counters.withLock { $0 } }

    /// Publishes `body` to `routingKey` and returns once the broker confirmed it; retries every
    /// failure (a lost connection, a nack, a closed channel) with backoff, across reconnects.
    /// Returns false only when the task is cancelled first (forced shutdown) or the connection has
    /// stopped for good (`BrokerConnection.stopped`: no broker to wait for); `what` names the
    /// message in the logs, `metadata` identifies it.
    package func publishUntilConfirmed(
        _ body: ByteBuffer, routingKey: String, what: String, metadata: Logger.Metadata
    ) async -> Bool {
        var attempts = RetryAttempts(backoff: backoff)
        while !Task.isCancelled, !stopped.isTriggered {
            let failure: String
            if let live = connection.connection {
                do {
                    let channel = try await channels.channel(on: live)
                    try await channel.publish(body, routingKey: routingKey, properties: .persistentJSON)
                    counters.withLock { $0.published += 1 }
                    return true
                } catch {
                    await channels.discard(after: error)
                    failure = "\(error)"
                }
            } else {
                failure = "not connected: \(connection.state)"
            }
            counters.withLock { $0.retries += 1 }
            let delay = attempts.failed()
            if attempts.failures % 10 == 1 {
                logger.warning(
                    "publishing \(what) failed; retrying until the broker confirms it",
                    metadata: metadata.merging(
                        [
                            "error": "\(failure)", "attempt": "\(attempts.failures)", "retry_in": "\(delay)",
                            "routing_key": "\(routingKey)",
                        ], uniquingKeysWith: { $1 }))
            }
            guard await stopped.sleep(for: delay) else { break }
        }
        return false
    }

    /// One confirmed publish attempt; throws what failed (e.g. `BrokerNotConnected`).
    package func publishOnce(_ body: ByteBuffer, routingKey: String) async throws {
        guard let live = connection.connection else { throw BrokerNotConnected() }
        do {
            let channel = try await channels.channel(on: live)
            try await channel.publish(body, routingKey: routingKey, properties: .persistentJSON)
        } catch {
            await channels.discard(after: error)
            throw error
        }
    }
}

/// The confirm-mode channel messages are published on, opened once per connection.
private actor PublishChannel {
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
