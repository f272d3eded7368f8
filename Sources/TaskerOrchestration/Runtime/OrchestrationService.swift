import AsyncAlgorithms
import Foundation
import Logging
import ServiceLifecycle
import TaskerAuth
import TaskerHTTP
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The companion orchestration as a swift-service-lifecycle `Service`: consumes
/// `orchestration_task_requests`, `orchestration_step_results` and `orchestration_task_finalizations`
/// (LISTEN on `pgmq_message_ready.orchestration`: each notified message is claimed by id and processed in its
/// own task, without waiting for the others; polling as the fallback; a message is archived once
/// processed), runs the readiness discovery, routing everything through
/// ``OrchestrationCommandProcessorActor``, and the ``StalenessDetector``.
/// Graceful shutdown stops reading, finishes the messages in hand, then closes the pool.
public final class OrchestrationService: Service, Sendable {
    public let processor: OrchestrationCommandProcessorActor
    public let settings: OrchestrationSettings
    public let statistics: OrchestrationStatistics
    let stalenessDetector: StalenessDetector
    private let pool: PostgresConnectionPool
    private let listener: PostgresListener
    /// RabbitMQ (`[common.queues] backend = "rabbitmq"`); nil: PGMQ.
    public let broker: OrchestrationBroker?
    /// The queues' own database (`[common.pgmq_database]`); nil: PGMQ in the task database, or RabbitMQ.
    public let queueDatabase: OrchestrationQueueDatabase?
    let logger: Logger
    /// What each listener event asks for (TaskerMessaging's, shared with the worker).
    private let notifications: NotificationIntake
    /// Every PGMQ read and archive of the intake (TaskerMessaging's, shared with the worker): a
    /// failed read is logged and answered with a catch-up read.
    private let reader: QueueReader
    /// Catch-up reads asked for later (TaskerMessaging's, shared with the worker).
    private let catchUps: CatchUpSchedule
    /// The dispatch loop's work, and how it is submitted (the loop is its only reader).
    private let work: AsyncStream<Work>
    private let submit: AsyncStream<Work>.Continuation

    /// An orchestration on `pool` (closed when `run()` returns).
    /// With `broker`, the orchestration's messages go through RabbitMQ (`OrchestrationService+RabbitMQ`)
    /// and nothing through PGMQ. With `queueDatabase`, PGMQ is there (reads, archives after the work
    /// committed, sends after the enqueue committed, LISTEN), and `databaseURL` is not listened to.
    public init(
        pool: PostgresConnectionPool, databaseURL: String, settings: OrchestrationSettings = OrchestrationSettings(),
        processorUUID: UUID = UUID.v7(), broker: OrchestrationBroker? = nil, queueDatabase: OrchestrationQueueDatabase? = nil,
        logger: Logger = Logger(label: "tasker.orchestration")
    ) {
        self.pool = pool
        self.broker = broker
        self.queueDatabase = queueDatabase
        self.settings = settings
        self.logger = logger
        self.processor = OrchestrationCommandProcessorActor(
            context: OrchestrationContext(
                pool: pool, processorUUID: processorUUID, backoff: settings.backoff, broker: broker,
                queueDatabase: queueDatabase, logger: logger))
        let statistics = OrchestrationStatistics()
        self.statistics = statistics
        self.notifications = NotificationIntake(
            channelQueues: [QueueNames.readyChannel(namespace: "orchestration"): Self.notifiedQueues], logger: logger,
            onRejected: { _ in statistics.recordRejectedNotification() },
            onDropped: { count in statistics.recordDroppedNotifications(count) })
        self.listener = PostgresListener(
            url: queueDatabase?.pool.configuration.url ?? databaseURL, channels: notifications.channels,
            connectTimeout: pool.configuration.connectTimeout, sessionLimits: pool.configuration.sessionLimits,
            bufferSize: settings.listenerBufferSize, logger: Logger(label: "tasker.orchestration.listener"))
        self.stalenessDetector = StalenessDetector(pool: pool, settings: settings.staleness, statistics: statistics)
        let (work, submit) = AsyncStream.makeStream(of: Work.self)
        (self.work, self.submit) = (work, submit)
        self.catchUps = CatchUpSchedule { submit.yield(.read) }
        self.reader = QueueReader(pool: queueDatabase?.pool ?? pool, catchUps: catchUps, logger: logger)
    }

    /// An orchestration configured from `[common]` (database URL and pool, queue polling).
    public convenience init(configuration: TaskerConfiguration, logger: Logger = Logger(label: "tasker.orchestration")) {
        let database = configuration.common.database
        let pool = PostgresConnectionPool(
            configuration: PostgresPoolConfiguration(
                database: database, applicationName: "tasker-orchestration",
                // The task API's reads (`TaskQueries`) hold at most this many at once.
                operatorMaxConnections: configuration.orchestration.web.databasePools.operatorMaxConnections),
            logger: Logger(label: "tasker.orchestration.pool"))
        let broker: OrchestrationBroker? =
            switch configuration.common.queues.backend {
            case .pgmq: nil
            case .rabbitmq: OrchestrationBroker(settings: configuration.common.queues.rabbitmq)
            }
        let queueDatabase = OrchestrationQueueDatabase.configured(configuration.common, applicationName: "tasker-orchestration")
        var settings = OrchestrationSettings(configuration: configuration)
        // The queues' own database is reached directly: its LISTEN session goes there.
        if queueDatabase != nil { settings.listen = true }
        // Its LISTEN session: `listen_url`, else `url` when direct; none behind a transaction
        // pooler without `listen_url` (`OrchestrationSettings.listen`: polling only).
        self.init(
            pool: pool, databaseURL: database.listenSessionURL ?? database.url, settings: settings, broker: broker,
            queueDatabase: queueDatabase, logger: logger)
    }

    /// The service's pool (the task API reads through its `.operator` lane); closed when `run()` returns.
    public var databasePool: PostgresConnectionPool { pool }

    /// Processes one command directly (tests, `submit`, `POST /v1/tasks`).
    public func process(_ command: OrchestrationCommand) async throws -> OrchestrationCommandResult {
        try await processor.process(command)
    }

    /// What the dispatch loop is told.
    private enum Work: Sendable {
        /// Read the queues (poll tick, listener (re)connected, unparseable notification).
        case read
        /// A notification named this message: claim it by id and process it.
        case notified(queue: String, msgID: Int64)
        /// A message handler returned.
        case finished
    }

    /// Runs until graceful shutdown, then closes the pool: once per service (its pool, listener and
    /// work stream end with it).
    public func run() async throws {
        if let broker {
            try await run(on: broker)
            return
        }
        try await ensureQueues()
        let (work, submit) = (self.work, self.submit)
        var metadata: Logger.Metadata = ["processor_uuid": "\(processor.context.processorUUID)"]
        if let queueDatabase { metadata["queue_database"] = "\(queueDatabase.description)" }
        logger.info("tasker orchestration starting", metadata: metadata)
        await withDiscardingTaskGroup { group in
            if let queueDatabase {
                group.addTask {
                    // The sweep for step messages lost between an enqueue's commit and its send.
                    let sweep = self.settings.lostMessageSweep
                    await queueDatabase.resendMissing(pool: self.pool, olderThan: sweep)
                    for await _ in AsyncTimerSequence(interval: sweep, clock: .continuous).cancelOnGracefulShutdown() {
                        await queueDatabase.resendMissing(pool: self.pool, olderThan: sweep)
                    }
                }
                group.addTask {
                    // At graceful shutdown sends in flight get one more attempt; the sweep sends the rest.
                    try? await gracefulShutdown()
                    queueDatabase.stopped.trigger()
                }
            }
            if settings.listen {
                group.addTask { try? await self.listener.run() }
                group.addTask {
                    for await signal in self.notifications.signals(of: self.listener) { self.route(signal, to: submit) }
                }
            }
            group.addTask {
                for await _ in AsyncTimerSequence(interval: self.settings.pollInterval, clock: .continuous)
                    .cancelOnGracefulShutdown()
                { submit.yield(.read) }
            }
            group.addTask { try? await self.stalenessDetector.run() }
            group.addTask {
                for await _ in AsyncTimerSequence(interval: self.settings.readinessInterval, clock: .continuous)
                    .cancelOnGracefulShutdown()
                { await self.discoverReadyTasks() }
            }
            submit.yield(.read)
            await dispatch(work, submit: submit)
            listener.stop()
            group.cancelAll()
        }
        // Late `.finished` and catch-up requests have no reader any more.
        submit.finish()
        await queueDatabase?.close()
        await pool.close()
        logger.info("tasker orchestration stopped", metadata: ["results_processed": "\(statistics.resultsProcessed)"])
    }

    /// The queues the orchestration's channel (`pgmq_message_ready.orchestration`) announces.
    static let notifiedQueues: Set<String> = [QueueNames.taskRequests, QueueNames.stepResults, QueueNames.taskFinalizations]

    /// A listener event's signal (`NotificationIntake`, the worker's rule too) as work: a
    /// notification naming at most `NotificationTriage.maxMessageIDsPerNotification` messages of our
    /// queues has them processed by themselves at once (no read of the queues, no waiting for other
    /// messages in hand); one naming more, a (re)connect or dropped events become a read at once, a
    /// truncated batch or a notification that cannot be read a read within a second
    /// (`CatchUpReason.delay`, the worker's rule too; reads are coalesced by the dispatch loop and
    /// bounded by its batch size).
    private func route(_ signal: NotificationIntake.Signal, to submit: AsyncStream<Work>.Continuation) {
        switch signal {
        case .readByID(let queue, let msgIDs):
            for id in msgIDs { submit.yield(.notified(queue: queue, msgID: id)) }
        case .readQueue:
            submit.yield(.read)
        case .catchUp(let reason):
            if let delay = reason.delay { catchUps.schedule(after: delay) } else { submit.yield(.read) }
        }
    }

    private func ensureQueues() async throws {
        try await (queueDatabase?.pool ?? pool).withConnection { c in
            for queue in TaskTemplateRegistry.orchestrationQueues { try await PGMQ.create(c, queue: queue) }
        }
    }

    // MARK: Queues

    /// Runs every message in its own child task as soon as it is known (from a notification or a
    /// read), at most `batchSize` at a time; a read takes only as many messages as there is room
    /// for, and is repeated while it comes back full. Returns at graceful shutdown once the messages
    /// in hand are finished.
    private func dispatch(_ work: AsyncStream<Work>, submit: AsyncStream<Work>.Continuation) async {
        let limit = max(1, settings.batchSize)
        await withDiscardingTaskGroup { handlers in
            var inFlight = 0
            var readWanted = false
            var requestsFirst = false
            for await item in work.cancelOnGracefulShutdown() {
                switch item {
                case .finished:
                    inFlight -= 1
                case .read:
                    readWanted = true
                case .notified(let queue, let msgID):
                    if inFlight < limit {
                        inFlight += 1
                        handlers.addTask {
                            await self.handleNotified(queue: queue, msgID: msgID)
                            submit.yield(.finished)
                        }
                    } else {
                        readWanted = true
                    }
                }
                guard readWanted, inFlight < limit, !Task.isShuttingDownGracefully else { continue }
                readWanted = false
                statistics.recordReadPass()
                let room = limit - inFlight
                // The queue read first alternates, so a steady backlog of one never starves the other.
                let (first, second) =
                    requestsFirst
                    ? (QueueNames.taskRequests, QueueNames.stepResults)
                    : (QueueNames.stepResults, QueueNames.taskRequests)
                requestsFirst.toggle()
                let firstMessages = await read(first, quantity: room)
                let secondMessages = room > firstMessages.count ? await read(second, quantity: room - firstMessages.count) : []
                let taken = firstMessages.count + secondMessages.count
                // Finalization requests (rare: nothing in Tasker sends them today) take what is left.
                let finalizations = room > taken ? await read(QueueNames.taskFinalizations, quantity: room - taken) : []
                if taken + finalizations.count == room { readWanted = true }
                for message in firstMessages + secondMessages + finalizations {
                    inFlight += 1
                    handlers.addTask {
                        await self.handle(message)
                        submit.yield(.finished)
                    }
                }
            }
        }
    }

    /// Up to `quantity` messages of `queue`; none when the read failed (logged by the reader, and
    /// read again within a second).
    private func read(_ queue: String, quantity: Int) async -> [QueueMessage] {
        await reader.read(queue, quantity: quantity, visibilityTimeout: settings.visibilityTimeoutSeconds) ?? []
    }

    /// Claims a notified message by id (hidden for the visibility timeout, as a read does) and
    /// processes it; nothing when it is gone or already claimed (e.g. by a poll read).
    private func handleNotified(queue: String, msgID: Int64) async {
        statistics.recordNotifiedRead()
        // A failed read is logged and a catch-up read follows (`QueueReader`).
        let messages = await reader.read(queue, msgIDs: [msgID], visibilityTimeout: settings.visibilityTimeoutSeconds)
        if let message = messages?.first { await handle(message) }
    }

    /// A PGMQ message: processed, then archived unless its work archived it in its own transaction.
    /// With the queues in a database of their own no transaction spans both: the work gets no
    /// receipt, and the message is archived once the work committed.
    private func handle(_ message: QueueMessage) async {
        let receipt = queueDatabase == nil ? MessageReceipt(queue: message.queue, msgID: message.msgID) : nil
        switch await process(message, receipt: receipt) {
        case .finished, .poison: await reader.archive(message)
        case .archivedWithWork: if receipt == nil { await reader.archive(message) }
        case .retry: break
        }
    }

    /// Processes one message of an orchestration queue (from PGMQ with its `receipt`, or a RabbitMQ
    /// delivery without one) and says what becomes of it.
    func process(_ message: QueueMessage, receipt: MessageReceipt?) async -> MessageDisposition {
        if message.queue == QueueNames.taskRequests {
            return await handleTaskRequest(message, receipt: receipt)
        } else if message.queue == QueueNames.taskFinalizations {
            return await handleFinalization(message)
        } else {
            return await handleStepResult(message, receipt: receipt)
        }
    }

    private func handleStepResult(_ message: QueueMessage, receipt: MessageReceipt?) async -> MessageDisposition {
        let step: StepMessage
        do {
            if let bodyError = message.bodyError { throw MessageBodyError(reason: bodyError) }
            step = try message.message.decode(StepMessage.self)
        } catch {
            statistics.recordPoison()
            logger.error(
                "undecodable step result message settled as poison", metadata: ["msg_id": "\(message.msgID)", "error": "\(error)"])
            return .poison
        }
        do {
            // Archived in the result's transaction (PGMQ).
            let outcome = try await processor.process(.processStepResult(step, archiving: receipt))
            if case .stepResultProcessed(.ignored(let state)) = outcome {
                // A duplicate (e.g. a worker's start-up re-publish) or a stale result: nothing written.
                statistics.recordDuplicateResult()
                logger.info(
                    "step result for a step not waiting for orchestration ignored",
                    metadata: ["step_uuid": "\(step.stepUUID)", "state": "\(state.rawValue)"])
            }
            statistics.recordResult()
            return .archivedWithWork
        } catch  where error.isTransientOrchestrationFailure {
            logger.warning(
                "step result not processed; retried later",
                metadata: ["step_uuid": "\(step.stepUUID)", "error": "\(error)"])
            return .retry
        } catch {
            statistics.recordPoison()
            logger.error("step result rejected and settled as poison", metadata: ["step_uuid": "\(step.stepUUID)", "error": "\(error)"])
            return .poison
        }
    }

    private func handleTaskRequest(_ message: QueueMessage, receipt: MessageReceipt?) async -> MessageDisposition {
        do {
            if let bodyError = message.bodyError { throw MessageBodyError(reason: bodyError) }
            let request = try message.message.decode(TaskRequestMessage.self)
            // Archived with the task's creation (PGMQ).
            let result = try await processor.process(.initializeTask(request.taskRequest, archiving: receipt))
            statistics.recordTaskRequest()
            logger.info("task request processed", metadata: ["request_id": "\(request.requestID)", "result": "\(result)"])
            return .archivedWithWork
        } catch  where error.isTransientOrchestrationFailure {
            logger.warning(
                "task request not processed; retried later",
                metadata: ["msg_id": "\(message.msgID)", "error": "\(error)"])
            return .retry
        } catch {
            statistics.recordPoison()
            logger.error("task request rejected and settled as poison", metadata: ["msg_id": "\(message.msgID)", "error": "\(error)"])
            return .poison
        }
    }

    // MARK: Discovery

    /// One `get_next_ready_tasks` pass: every task found gets `ProcessTaskReadiness`.
    func discoverReadyTasks() async {
        let limit = settings.readinessBatchSize
        let tasks: [(UUID, String)]
        do {
            tasks = try await pool.withConnection { c in try await TaskRepository.nextReadyTasks(c, limit: limit) }
        } catch {
            logger.warning("readiness discovery failed", metadata: ["error": "\(error)"])
            return
        }
        await withDiscardingTaskGroup { group in
            for (task, _) in tasks {
                group.addTask {
                    do {
                        _ = try await self.processor.process(.processTaskReadiness(task))
                    } catch {
                        self.logger.warning("task readiness failed", metadata: ["task_uuid": "\(task)", "error": "\(error)"])
                    }
                }
            }
        }
    }
}
