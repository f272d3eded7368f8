import Foundation
import Logging
import Synchronization
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The queues in a database of their own (`[common.pgmq_database]`, `PGMQ_DATABASE_URL`): the pool
/// the worker's and the orchestration's PGMQ work goes through there, and the one send that both
/// need, once a transaction in the task database committed (a stored result, an enqueued step): no
/// transaction spans the two databases.
package final class QueueDatabase: Sendable {
    /// The queue database.
    package let pool: PostgresConnectionPool
    /// Triggered when its owner stops: sends still retrying give up (the owner's start-up or
    /// periodic recovery sends what they carried).
    package let stopped = OneShotSignal()
    private let backoff: ReconnectBackoff
    private let logger: Logger
    /// Queues known to exist (created before the first send to each by this process, and again
    /// after a send found one missing).
    private let existing = Mutex<Set<String>>([])

    /// The queue database of `common`, or nil when the queues share the task database or RabbitMQ
    /// carries the messages. `maxConnections`: a smaller pool than `[common.pgmq_database.pool]`'s
    /// (a command-line tool's).
    package static func configured(
        _ common: CommonConfiguration, applicationName: String, maxConnections: Int? = nil, logger: Logger
    ) -> QueueDatabase? {
        guard common.queues.backend == .pgmq, var configuration = common.queueDatabasePool(applicationName: applicationName)
        else { return nil }
        if let maxConnections {
            configuration.maxConnections = maxConnections
            configuration.minConnections = 0
        }
        return QueueDatabase(
            pool: PostgresConnectionPool(configuration: configuration, logger: Logger(label: "tasker.postgres.queue_pool")),
            logger: logger)
    }

    package init(
        pool: PostgresConnectionPool, backoff: ReconnectBackoff = ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(5)),
        logger: Logger
    ) {
        self.pool = pool
        self.backoff = backoff
        self.logger = logger
    }

    /// The queue database's URL, password hidden.
    package var description: String { Redaction.redactCredentials(pool.configuration.url) }

    /// Sends `body` to `queue` (`tasker.pgmq_send_with_notify`) and returns once the send committed,
    /// retried with backoff; a queue that does not exist is created first (`tasker.create_queue`).
    /// False when the send cannot succeed (the server refused the data itself, or the queue name) or
    /// the owner stopped first (`stopped`, cancellation): the caller's recovery sends it later.
    package func sendUntilCommitted(
        _ body: PostgresJSON, to queue: String, what: String, metadata: Logger.Metadata
    ) async -> Bool {
        var attempts = RetryAttempts(backoff: backoff)
        while !Task.isCancelled {
            let create = !existing.withLock { $0.contains(queue) }
            do {
                _ = try await pool.withConnection { c in
                    if create { try await PGMQ.create(c, queue: queue) }
                    return try await PGMQ.sendWithNotify(c, queue: queue, message: body)
                }
                if create { _ = existing.withLock { $0.insert(queue) } }
                return true
            } catch let error as PostgresError where error.isPermanentDataError {
                logger.critical(
                    "the queue database refused \(what) for good; not retried",
                    metadata: metadata.merging(["queue": "\(queue)", "error": "\(error)"]) { $1 })
                return false
            } catch {
                // A queue dropped since: created again by the next attempt.
                if let error = error as? PostgresError, error.isUndefinedObject { _ = existing.withLock { $0.remove(queue) } }
                let delay = attempts.failed()
                if attempts.failures % 10 == 1 {
                    logger.warning(
                        "sending \(what) to the queue database failed; retrying",
                        metadata: metadata.merging(["queue": "\(queue)", "error": "\(error)"]) { $1 })
                }
                guard await stopped.sleep(for: delay) else { break }
            }
        }
        logger.critical("stopped before \(what) was sent; it is sent again later", metadata: metadata.merging(["queue": "\(queue)"]) { $1 })
        return false
    }

    /// Stops the sends' retries and closes the pool.
    package func close() async {
        stopped.trigger()
        await pool.close()
    }
}
