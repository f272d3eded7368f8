import Foundation
import Logging
import ServiceLifecycle
import TaskerHandlerSDK
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Step messages in PGMQ in a database of their own (`[common.pgmq_database]`, `PGMQ_DATABASE_URL`):
/// reads, archives, sends and the LISTEN session go to the queue database (TaskerMessaging's
/// `QueueDatabase`), claims and results stay in the task database. No transaction spans both, so the
/// step path works as on a broker: the claim and the result statements touch no queue
/// (`StepQueueStatements.broker`), claimed steps' messages are archived once their claims committed
/// (`settleClaimed`, one statement per queue for a batch, after the steps were dispatched), and a
/// stored result's message is sent once the result committed (`announceResults`).
///
/// Nothing is lost between the two databases:
/// - a message is archived only after its step's claim committed; if the archive fails (the queue
///   database is down, the worker dies), the message comes back after its visibility timeout and
///   the claim finds the step past `enqueued`: a stale duplicate, archived then;
/// - a stored result is announced by a sender of its own (`run()`), so the completion writers never
///   wait for the queue database: at most `pendingLimit` announcements wait, then `announceResults`
///   waits for room (a queue database that stays down stops the pipeline rather than memory
///   growing). What a dead process did not send, the next start sends (`UnannouncedResults`, for
///   its namespaces), or, when no worker of them starts again, the fleet's crash-recovery scanner
///   (`UnannouncedResults.ofDeadWorkers`); a duplicate is ignored by orchestration.
///
/// A `Service` right after the pools in the pipeline's group: stopped after the completion service,
/// so every stored result is handed to it; at its graceful shutdown it sends what it holds (one
/// attempt each, `QueueDatabase.stopped`).
final class QueueDatabaseTransport: StepTransport, Service {
    /// The task database: the start-up lookup of unannounced results.
    let pool: PostgresConnectionPool
    /// The queue database.
    let queueDatabase: QueueDatabase
    /// The namespaces whose results the start-up re-announces.
    let namespaces: [String]
    let logger: Logger
    /// ≈ the process start: results committed before it are re-announced by `run()`.
    let startedAt = Date()
    /// Stored results waiting for their announcement, and the room left for more.
    private let announcements: AsyncStream<StepMessage>
    private let announce: AsyncStream<StepMessage>.Continuation
    private let room: AsyncSemaphore
    /// The most announcements waiting at once.
    static let pendingLimit = 1024
    /// Announcements sent at once.
    static let concurrentSends = 4

    init(
        pool: PostgresConnectionPool, queueDatabase: QueueDatabase, namespaces: [String],
        logger: Logger = Logger(label: "tasker.queue_database")
    ) {
        self.pool = pool
        self.queueDatabase = queueDatabase
        self.namespaces = namespaces
        self.logger = logger
        (announcements, announce) = AsyncStream.makeStream(of: StepMessage.self)
        room = AsyncSemaphore(permits: Self.pendingLimit)
    }

    var queuePool: PostgresConnectionPool { queueDatabase.pool }
    var summary: String { "pgmq in its own database \(queueDatabase.description)" }
    var services: [any Service] { [queuePool, self] }
    var initialStatements: StepQueueStatements { .broker }
    var detectsTableLayouts: Bool { false }
    var recoveryStatement: ResultStatement { .recoverBroker }
    var unclaimedOutcome: DeliveryOutcome { .handled }
    var announcesAfterCommit: Bool { true }

    /// Re-announces the results left unannounced by earlier runs, and sends every stored result's
    /// message until graceful shutdown; then sends what is left, one attempt each.
    func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    await cancelWhenGracefulShutdown {
                        let unannounced = UnannouncedResults(
                            namespaces: self.namespaces, startedAt: self.startedAt, stopped: self.queueDatabase.stopped,
                            logger: self.logger)
                        await unannounced.republish(pool: self.pool) { message in await self.send(message) }
                    }
                }
                group.addTask { await self.sendAnnouncements() }
            }
        } onGracefulShutdown: {
            self.queueDatabase.stopped.trigger()
            self.announce.finish()
        }
    }

    /// Sends the waiting announcements, `concurrentSends` at a time, until the stream ends.
    private func sendAnnouncements() async {
        await withTaskGroup(of: Void.self) { group in
            var sending = 0
            for await message in announcements {
                if sending == Self.concurrentSends {
                    _ = await group.next()
                    sending -= 1
                }
                sending += 1
                group.addTask {
                    _ = await self.send(message)
                    self.room.release()
                }
            }
        }
    }

    func settle(_ delivery: StepDelivery) async throws -> Bool {
        try await queuePool.withConnection { c in try await PGMQ.archive(c, queue: delivery.queue, msgID: delivery.msgID) }
    }

    /// Archives the messages of steps whose claims committed, one statement per queue. A failure is
    /// logged: the messages come back after their visibility timeout and are archived as stale
    /// duplicates then.
    func settleClaimed(_ deliveries: [StepDelivery]) async {
        for (queue, ids) in Dictionary(grouping: deliveries, by: \.queue).mapValues({ $0.map(\.msgID) }) {
            do {
                _ = try await queuePool.withConnection { c in try await PGMQ.archive(c, queue: queue, msgIDs: ids) }
            } catch {
                logger.warning(
                    "could not archive the messages of claimed steps; they are archived as stale duplicates when they come back",
                    metadata: ["queue": "\(queue)", "msg_ids": "\(ids)", "error": "\(error)"])
            }
        }
    }

    func release(_ delivery: StepDelivery) async throws {
        guard delivery.hiddenByRead else { return }
        try await queuePool.withConnection { c in
            try await PGMQ.setVisibilityTimeout(c, queue: delivery.queue, msgID: delivery.msgID, seconds: 0)
        }
    }

    /// Hands each stored result to the sender (`run()`), waiting for room when `pendingLimit` wait.
    func announceResults(_ messages: [StepMessage]) async {
        for message in messages {
            do {
                try await room.acquire()
            } catch {
                // Cancelled (forced shutdown): the next start or the recovery scanner announces it.
                return
            }
            if case .terminated = announce.yield(message) {
                room.release()
                // After the sender stopped: sent here, one attempt.
                _ = await send(message)
            }
        }
    }

    func announceDurably(_ message: StepMessage) async -> Bool { await send(message) }

    /// Sends a stored result's message to `orchestration_step_results` in the queue database (the
    /// same JSON the single-database result statement sends), retried until it committed.
    func send(_ message: StepMessage) async -> Bool {
        await queueDatabase.sendUntilCommitted(
            PostgresJSON(raw: message.jsonString()), to: QueueNames.stepResults, what: "a stored step result",
            metadata: StepLogMetadata.of(message))
    }

    func publishEvent(_ json: String, to queue: String) async throws {
        let body = PostgresJSON(raw: json)
        _ = try await queuePool.withConnection { c in try await PGMQ.sendWithNotify(c, queue: queue, message: body) }
    }
}
