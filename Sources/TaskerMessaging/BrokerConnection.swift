import Logging
import ServiceLifecycle
import TaskerAMQP
import TaskerModel
import TaskerPostgres

/// A RabbitMQ connection of the worker or the orchestration (`[common.queues.rabbitmq]`): reconnects
/// with backoff and declares `declaredQueues` as upstream does (`RabbitMQTopology`: the queue, its
/// `_dlx` and `_dlq`) on every (re)connect, before anyone publishes or consumes on it. The URL's
/// password is never shown (`AMQPConfiguration.description`, `AMQPURLError`).
package final class BrokerConnection: Service, Sendable {
    /// The connection; `connection.connection` is the live one, `generation` counts connects.
    package let service: AMQPConnectionService
    /// Declared on every connect.
    let declaredQueues: [String]
    /// Why `[common.queues.rabbitmq] url` could not be used; `run()` throws it (the boot fails).
    private let urlError: AMQPURLError?
    /// Triggered when `run()` ends (shutdown): no connection will come any more, so the retry loops
    /// on it (`ConfirmedPublisher`, the start-up re-publishes) stop waiting (`OneShotSignal.sleep`).
    package let stopped = OneShotSignal()

    package init(
        settings: CommonConfiguration.RabbitMQSettings, declaring queues: [String], connectionName: String,
        maximumBodySize: UInt64, reconnect: ReconnectBackoff, logger: Logger
    ) {
        var configuration = AMQPConfiguration()
        do {
            configuration = try AMQPConfiguration(url: settings.url)
            urlError = nil
        } catch {
            urlError = error
        }
        configuration.heartbeatSeconds = UInt16(clamping: settings.heartbeatSeconds)
        configuration.maximumBodySize = maximumBodySize
        configuration.connectionName = connectionName
        declaredQueues = queues
        service = AMQPConnectionService(
            configuration: configuration, delay: { reconnect.delay(forAttempt: $0) }, logger: logger
        ) { connection in
            let channel = try await connection.openChannel()
            for queue in queues {
                try await RabbitMQTopology.declareQueue(queue, on: channel)
            }
            try await channel.close()
        }
    }

    package func run() async throws {
        defer { stopped.trigger() }
        if let configurationError { throw configurationError }
        try await service.run()
    }

    /// Why the URL cannot be used (`run()` throws it); nil when it parsed.
    package var configurationError: RabbitMQConfigurationError? {
        urlError.map { RabbitMQConfigurationError(reason: "\($0)") }
    }

    /// The broker as health and `/config` show it (`amqp://user:***@host:port/vhost`).
    package var description: String { "\(service.configuration)" }

    /// Whether the connection is up (and the queues were declared on it).
    package var isConnected: Bool { service.state == .connected }

    /// The depth of each of `queues` (a passive `queue.declare` on a channel of its own); nil when
    /// the broker is not connected or does not answer.
    package func queueDepths(_ queues: [String]) async -> [String: Int]? {
        guard let live = service.connection else { return nil }
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
