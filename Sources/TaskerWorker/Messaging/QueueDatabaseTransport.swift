import Foundation
import Logging
import ServiceLifecycle
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Step messages in PGMQ in a database of their own (`[common.pgmq_database]`, `PGMQ_DATABASE_URL`):
/// reads, archives, sends and the LISTEN session go to the queue database (`queuePool`), claims and
/// results stay in the task database. No transaction spans both, so the step path works as on a
/// broker: the claim and the result statements touch no queue (`StepQueueStatements.broker`), a
/// claimed step's message is archived once the claim committed (`settleClaimed`), and a stored
/// result's message is sent once the result committed (`announceResults`, retried until it is sent).
///
/// Nothing is lost between the two databases:
/// - a message is archived only after its step's claim committed; if the archive fails (the queue
///   database is down, the worker dies), the message comes back after its visibility timeout and
///   the claim finds the step past `enqueued`: a stale duplicate, archived then;
/// - a result committed and never sent (the worker died in between) is sent again by the next start
///   (`UnannouncedResults`, run by `run()`); a duplicate is ignored by orchestration, which processes
///   a result only for a step still waiting for it.
///
/// A `Service` right after the pools in the pipeline's group: stopped after the completion service,
/// which still announces results while the pipeline drains.
final class QueueDatabaseTransport: StepTransport, Service {
    /// The task database: the start-up lookup of unannounced results.
    let pool: PostgresConnectionPool
    /// The queue database.
    let queuePool: PostgresConnectionPool
    /// The namespaces whose results the start-up re-announces.
    let namespaces: [String]
    /// Triggered when the service stops: sends waiting for the queue database give up (the next
    /// start re-announces what they carried).
    let stopped = OneShotSignal()
    /// Between attempts of a send that failed.
    let sendBackoff: ReconnectBackoff
    let logger: Logger
    /// ≈ the process start: results committed before it are re-announced by `run()`.
    let startedAt = Date()

    init(
        pool: PostgresConnectionPool, queuePool: PostgresConnectionPool, namespaces: [String],
        sendBackoff: ReconnectBackoff = ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(5)),
        logger: Logger = Logger(label: "tasker.queue_database")
    ) {
        self.pool = pool
        self.queuePool = queuePool
        self.namespaces = namespaces
        self.sendBackoff = sendBackoff
        self.logger = logger
    }

    /// The queue database's pool when the configuration gives the queues a database of their own
    /// and PGMQ carries the messages; nil otherwise (one database, or RabbitMQ, where the queue
    /// database would hold nothing).
    static func pool(_ common: CommonConfiguration) -> PostgresConnectionPool? {
        guard common.queues.backend == .pgmq, let configuration = common.queueDatabasePool(applicationName: "tasker-worker")
        else { return nil }
        return PostgresConnectionPool(configuration: configuration, logger: Logger(label: "tasker.postgres.queue_pool"))
    }

    var summary: String { "pgmq in its own database \(Redaction.redactCredentials(queuePool.configuration.url))" }
    var services: [any Service] { [queuePool, self] }
    var initialStatements: StepQueueStatements { .broker }
    var detectsTableLayouts: Bool { false }
    var recoveryStatement: ResultStatement { .recoverBroker }
    var unclaimedOutcome: DeliveryOutcome { .handled }

    /// Re-announces the results left unannounced by earlier runs, then waits for shutdown.
    func run() async throws {
        await withGracefulShutdownHandler {
            await cancelWhenGracefulShutdown {
                let unannounced = UnannouncedResults(
                    namespaces: self.namespaces, startedAt: self.startedAt, stopped: self.stopped, logger: self.logger)
                await unannounced.republish(pool: self.pool) { message in await self.send(message) }
            }
            try? await gracefulShutdown()
        } onGracefulShutdown: {
            self.stopped.trigger()
        }
    }

    func settle(_ delivery: StepDelivery) async throws -> Bool {
        try await queuePool.withConnection { c in try await PGMQ.archive(c, queue: delivery.queue, msgID: delivery.msgID) }
    }

    /// Archives the message of a step whose claim committed. A failure is logged: the message comes
    /// back after its visibility timeout and is archived as a stale duplicate then.
    func settleClaimed(_ delivery: StepDelivery) async {
        do {
            _ = try await settle(delivery)
        } catch {
            logger.warning(
                "could not archive the message of a claimed step; it is archived as a stale duplicate when it comes back",
                metadata: ["queue": "\(delivery.queue)", "msg_id": "\(delivery.msgID)", "error": "\(error)"])
        }
    }

    func release(_ delivery: StepDelivery) async throws {
        guard delivery.hiddenByRead else { return }
        try await queuePool.withConnection { c in
            try await PGMQ.setVisibilityTimeout(c, queue: delivery.queue, msgID: delivery.msgID, seconds: 0)
        }
    }

    func announceResults(_ messages: [StepMessage]) async {
        await withDiscardingTaskGroup { group in
            for message in messages { group.addTask { _ = await self.send(message) } }
        }
    }

    /// Sends a stored result's message to `orchestration_step_results` in the queue database (the
    /// same JSON the single-database result statement sends), retried with backoff until it is sent;
    /// false when the transport stopped first (forced shutdown): the next start re-announces it.
    func send(_ message: StepMessage) async -> Bool {
        let body = PostgresJSON(raw: message.jsonString())
        var attempts = RetryAttempts(backoff: sendBackoff)
        while !Task.isCancelled {
            do {
                _ = try await queuePool.withConnection { c in
                    try await PGMQ.sendWithNotify(c, queue: QueueNames.stepResults, message: body)
                }
                return true
            } catch {
                let delay = attempts.failed()
                if attempts.failures % 10 == 1 {
                    logger.warning(
                        "sending a stored result to the queue database failed; retrying",
                        metadata: StepLogMetadata.of(message).merging(["error": "\(error)"]) { $1 })
                }
                guard await stopped.sleep(for: delay) else { break }
            }
        }
        logger.critical(
            "stopped before a stored step result was sent; the next start re-announces it", metadata: StepLogMetadata.of(message))
        return false
    }

    func publishEvent(_ json: String, to queue: String) async throws {
        let body = PostgresJSON(raw: json)
        _ = try await queuePool.withConnection { c in try await PGMQ.sendWithNotify(c, queue: queue, message: body) }
    }
}
