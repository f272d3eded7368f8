import ArgumentParser
import Foundation
import TaskerModel
import TaskerOrchestration
import TaskerPostgres
import TaskerStore

/// The database access of `submit` and `task`: the configuration as `orchestrate` loads it, a small pool,
/// and the task API's one implementation (`TaskQueries`, the same code behind the orchestration's REST
/// API).
///
/// The commands talk to the database directly rather than to the REST API: they work whether or not an
/// orchestration is running or its API is reachable (no port or credentials to find), and they share
/// every query and the task creation with the REST routes, which the binding tests exercise over HTTP.
enum TaskDatabase {
    /// Runs `body` with the task queries on a two-connection pool, closed afterwards.
    static func withQueries<T: Sendable>(
        configPath: String?, command: String, _ body: (TaskQueries) async throws -> T
    ) async throws -> T {
        let configuration = try OrchestrateCommand.loadConfiguration(configPath, command: command)
        let database = configuration.common.database
        var poolConfiguration = PostgresPoolConfiguration(database: database, applicationName: "tasker-dev-\(command)")
        poolConfiguration.maxConnections = 2
        poolConfiguration.minConnections = 0
        let pool = PostgresConnectionPool(configuration: poolConfiguration)
        // On RabbitMQ a created task's first step messages are published (confirmed) before `submit` returns.
        let broker: OrchestrationBroker? =
            switch configuration.common.queues.backend {
            case .pgmq: nil
            case .rabbitmq: OrchestrationBroker(settings: configuration.common.queues.rabbitmq, connectionName: "tasker-dev \(command)")
            }
        let connection = broker.map { broker in Task { try? await broker.runConnection() } }
        // With the queues in a database of their own, a created task's first step messages are sent there.
        let queueDatabase = OrchestrationQueueDatabase.configured(
            configuration.common, applicationName: "tasker-dev-\(command)", maxConnections: 2)
        let orchestration = OrchestrationService(pool: pool, databaseURL: database.url, broker: broker, queueDatabase: queueDatabase)
        do {
            // The command line reads whole documents (no per-field limit, unlike the REST API).
            let value = try await body(TaskQueries(pool: pool, orchestration: orchestration, documentFieldLimit: nil))
            connection?.cancel()
            await connection?.value
            await queueDatabase?.close()
            await pool.close()
            return value
        } catch {
            connection?.cancel()
            await connection?.value
            await queueDatabase?.close()
            await pool.close()
            throw error
        }
    }

    /// Prints `message` on stderr as `tasker-dev <command>: <message>` and fails the command.
    static func fail(_ command: String, _ message: String) -> any Error {
        FileHandle.standardError.write(Data("tasker-dev \(command): \(message)\n".utf8))
        return ExitCode.failure
    }
}
