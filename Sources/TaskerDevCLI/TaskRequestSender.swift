import Foundation
import Logging
import TaskerMessaging
import TaskerModel
import TaskerOrchestration
import TaskerPostgres
import TaskerStore

/// Where `submit --queue` and `progress --submit-rate` send task requests for a running orchestration:
/// `orchestration_task_requests` on the configured transport, PGMQ's queue (`pgmq_send_with_notify`)
/// or, with `[common.queues] backend = "rabbitmq"`, the broker's queue of that name (a confirmed
/// publish; the orchestration acks it after the task was created).
struct TaskRequestSender: Sendable {
    private enum Transport: Sendable {
        case pgmq(PostgresConnectionPool)
        case rabbitmq(OrchestrationBroker)
    }

    private let transport: Transport

    /// How long `send` waits for the broker's confirm before giving up (e.g. no broker at the URL).
    static let brokerTimeout: Duration = .seconds(30)

    /// The transport's description for messages: `PGMQ` or `RabbitMQ`.
    var transportName: String {
        switch transport {
        case .pgmq: "PGMQ"
        case .rabbitmq: "RabbitMQ"
        }
    }

    /// Runs `body` with a sender for `common`'s transport: on RabbitMQ the broker connection runs
    /// meanwhile (`[common.queues.rabbitmq]`; closed afterwards), on PGMQ `pool` carries the requests,
    /// or a pool of the queues' own database (`[common.pgmq_database]`; closed afterwards).
    static func with<T: Sendable>(
        _ common: CommonConfiguration, pool: PostgresConnectionPool, connectionName: String,
        _ body: (TaskRequestSender) async throws -> T
    ) async throws -> T {
        let queues = common.queues
        switch queues.backend {
        case .pgmq:
            guard
                let queues = QueueDatabase.configured(
                    common, applicationName: connectionName, maxConnections: 2, logger: Logger(label: "tasker.dev.queue_database"))
            else {
                return try await body(TaskRequestSender(transport: .pgmq(pool)))
            }
            do {
                let value = try await body(TaskRequestSender(transport: .pgmq(queues.pool)))
                await queues.close()
                return value
            } catch {
                await queues.close()
                throw error
            }
        case .rabbitmq:
            let broker = OrchestrationBroker(settings: queues.rabbitmq, connectionName: connectionName)
            let connection = Task { try? await broker.runConnection() }
            // The first request waits for the connection here rather than logging a failed publish.
            let connected = ContinuousClock.now.advanced(by: .seconds(5))
            while !broker.isConnected && !Task.isCancelled && ContinuousClock.now < connected {
                try? await Task.sleep(for: .milliseconds(20))
            }
            do {
                let value = try await body(TaskRequestSender(transport: .rabbitmq(broker)))
                connection.cancel()
                await connection.value
                return value
            } catch {
                connection.cancel()
                await connection.value
                throw error
            }
        }
    }

    /// Sends one request; throws what failed (on RabbitMQ: no confirm within `brokerTimeout`).
    func send(_ message: TaskRequestMessage) async throws {
        switch transport {
        case .pgmq(let pool):
            let body = try PostgresJSON(message)
            _ = try await pool.withConnection { c in
                try await PGMQ.sendWithNotify(c, queue: QueueNames.taskRequests, message: body)
            }
        case .rabbitmq(let broker):
            let confirmed = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask { try await broker.publishTaskRequest(message) }
                group.addTask {
                    try await Task.sleep(for: Self.brokerTimeout)
                    return false
                }
                let first = try await group.next() ?? false
                group.cancelAll()
                return first
            }
            guard confirmed else { throw TaskRequestNotConfirmed(timeout: Self.brokerTimeout) }
        }
    }
}

/// The broker did not confirm a task request in time (not running, or refusing the connection).
struct TaskRequestNotConfirmed: Error, CustomStringConvertible {
    let timeout: Duration
    var description: String {
        "the RabbitMQ broker did not confirm the task request within \(timeout) (is it running at common.queues.rabbitmq.url / RABBITMQ_URL?)"
    }
}
