import Foundation
import Logging
import Synchronization
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The orchestration's queues in a database of their own (`[common.pgmq_database]`,
/// `PGMQ_DATABASE_URL`): its reads, archives, sends and LISTEN session go to `pool`, the task tables
/// stay in the task database. No transaction spans both, so it works as on a broker:
/// - a message read is archived after its work committed (never in the work's transaction); a
///   message whose work committed and whose archive failed comes back after its visibility timeout
///   and is a duplicate then (a result for a step no longer waiting, a task request whose task
///   exists: both ignored);
/// - step messages are sent after the enqueue committed (`EnqueueJournal`, `EnqueuedStepSender`),
///   each until the send committed; the steps `enqueued` before a start are sent again by it.
public final class OrchestrationQueueDatabase: EnqueuedStepSender {
    /// The queue database.
    public let pool: PostgresConnectionPool
    /// Triggered when the orchestration stops: sends still retrying give up (the next start sends
    /// their steps' messages again).
    let stopped = OneShotSignal()
    let startedAt = Date()
    let logger: Logger
    /// Between attempts of a send that failed.
    private let backoff = ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(5))
    /// Whether the queue database answers (`/health/ready`'s messaging check), on its own connection.
    let probe: DatabaseProbe
    /// The worker queues created so far by this process (created before the first send to each:
    /// a send to a missing queue fails).
    private let created = Mutex<Set<String>>([])

    /// The queue database of `common`, or nil when the queues share the task database (or RabbitMQ
    /// carries the messages). `maxConnections`: a smaller pool than `[common.pgmq_database.pool]`'s
    /// (a command-line tool's).
    public static func configured(
        _ common: CommonConfiguration, applicationName: String, maxConnections: Int? = nil
    ) -> OrchestrationQueueDatabase? {
        guard common.queues.backend == .pgmq, var configuration = common.queueDatabasePool(applicationName: applicationName)
        else { return nil }
        if let maxConnections {
            configuration.maxConnections = maxConnections
            configuration.minConnections = 0
        }
        return OrchestrationQueueDatabase(pool: PostgresConnectionPool(configuration: configuration))
    }

    public init(pool: PostgresConnectionPool, logger: Logger = Logger(label: "tasker.orchestration.queue_database")) {
        self.pool = pool
        self.logger = logger
        self.probe = DatabaseProbe(configuration: pool.configuration, logger: logger)
    }

    /// The queue database's URL, password hidden.
    public var description: String { Redaction.redactCredentials(pool.configuration.url) }

    /// Sends each message to its worker queue (created first) and returns once every send
    /// committed; false when the orchestration stopped first.
    func send(_ entries: [EnqueueJournal.Entry]) async -> Bool {
        for entry in entries {
            let body = PostgresJSON(raw: entry.message.jsonString())
            let create = !created.withLock { $0.contains(entry.queue) }
            var attempts = RetryAttempts(backoff: backoff)
            var sent = false
            while !sent && !Task.isCancelled {
                do {
                    _ = try await pool.withConnection { c in
                        if create { try await PGMQ.create(c, queue: entry.queue) }
                        return try await PGMQ.sendWithNotify(c, queue: entry.queue, message: body)
                    }
                    sent = true
                } catch {
                    let delay = attempts.failed()
                    if attempts.failures % 10 == 1 {
                        logger.warning(
                            "sending a step message to the queue database failed; retrying",
                            metadata: ["step_uuid": "\(entry.message.stepUUID)", "queue": "\(entry.queue)", "error": "\(error)"])
                    }
                    guard await stopped.sleep(for: delay) else { break }
                }
            }
            guard sent else {
                logger.critical(
                    "stopped before an enqueued step's message was sent; the next start sends it again",
                    metadata: ["step_uuid": "\(entry.message.stepUUID)"])
                return false
            }
            if create { _ = created.withLock { $0.insert(entry.queue) } }
        }
        return true
    }

    /// Stops the sends' retries and closes the pool.
    public func close() async {
        stopped.trigger()
        await probe.close()
        await pool.close()
    }
}
