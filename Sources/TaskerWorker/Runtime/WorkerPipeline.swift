import AsyncAlgorithms
import Logging
import ServiceLifecycle
import TaskerHandlerSDK
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The step pipeline of one worker, assembled from the configuration with every dependency in
/// place (`WorkerDaemon.init` builds it; nothing in it is set later).
struct WorkerPipeline {
    /// In group order; the group shuts them down in reverse: event system, recovery scanner,
    /// dispatch, completion, actors' hooks, liveness lease, pool.
    let services: [any Service]
    let executor: StepExecutor
    let actors: WorkerActorRegistry
    let eventSystem: WorkerEventSystem
    let dispatch: HandlerDispatchService
    let resultStorage: ResultStorageMonitor
    /// Static SQL or PGMQ's functions for the step path's queue work; chosen by `WorkerDaemon.run`
    /// (with RabbitMQ: `StepQueueStatements.broker`, from the start).
    let queueStatements: QueueStatementSelection
    /// PGMQ (in the task database or in its own) or RabbitMQ (`[common.queues] backend`), chosen here once.
    let transport: any StepTransport
    /// The broker's connection when RabbitMQ carries the messages: its intake, and what health and
    /// metrics report.
    let broker: RabbitMQMessaging?

    init(
        configuration: TaskerConfiguration, identity: WorkerIdentity, handlers: HandlerRegistry,
        pool: PostgresConnectionPool, queueDatabase: QueueDatabase? = nil, templates: TaskTemplateRegistry,
        statistics: WorkerStatistics,
        namespaces: [String], foreign: ForeignDispatchChannel? = nil
    ) {
        let worker = configuration.worker
        let broker: RabbitMQMessaging? =
            switch configuration.common.queues.backend {
            case .pgmq: nil
            case .rabbitmq:
                RabbitMQMessaging(
                    settings: configuration.common.queues.rabbitmq, namespaces: namespaces,
                    connectionName: "tasker-worker \(identity.publicID)")
            }
        let queuePool = queueDatabase?.pool
        let transport: any StepTransport =
            broker ?? queueDatabase.map { QueueDatabaseTransport(pool: pool, queueDatabase: $0, namespaces: namespaces) }
            ?? PGMQTransport(pool: pool)
        let queueStatements = QueueStatementSelection(transport.initialStatements)
        let handlerDispatch = worker.mpscChannels.handlerDispatch
        let eventConfig = worker.eventSystems.worker
        let poller = eventConfig.metadata.fallbackPoller
        let dispatchChannel = AsyncChannel<ClaimedStep>()
        let completionChannel = AsyncChannel<StepCompletion>()
        let domainEvents = DomainEventActor(pool: pool, statistics: statistics, transport: transport)
        let capacity = WorkerCapacity(
            permits: handlerDispatch.maxConcurrentHandlers,
            shedding: LoadShedding(
                enabled: handlerDispatch.loadShedding.enabled,
                capacityThresholdPercent: handlerDispatch.loadShedding.capacityThresholdPercent,
                warningThresholdPercent: handlerDispatch.loadShedding.warningThresholdPercent,
                unstoredLimit: handlerDispatch.maxConcurrentHandlers + handlerDispatch.completionBufferSize),
            requiresLiveness: true)
        let recovery = worker.crashRecovery
        let scanInterval = Duration.milliseconds(recovery.scanIntervalMs)
        let grace = Duration.milliseconds(recovery.gracePeriodMs)
        // The lease lasts two thirds of the grace period from each renewal and is renewed every
        // quarter of that; claiming stops a quarter before it could expire (WorkerLeaseState).
        // The fleet's scanner turn lasts two scan intervals past each scan (`ScannerTurn`).
        let scannerTurn = scanInterval * 2
        let liveness = WorkerLeaseService(
            pool: pool, identity: identity, capacity: capacity, duration: LivenessTiming(grace: grace).leaseDuration,
            recovers: recovery.enabled, scannerTurn: scannerTurn)
        let resultStorage = ResultStorageMonitor(alertAfter: .seconds(max(1, worker.resultStorage.unstoredAlertSeconds)))
        let completionService = CompletionProcessorService(
            completions: completionChannel, bufferSize: handlerDispatch.completionBufferSize, pool: pool,
            domainEvents: domainEvents, statistics: statistics, identity: identity,
            eventDrainTimeout: .milliseconds(worker.mpscChannels.domainEvents.shutdownDrainTimeoutMs),
            capacity: capacity, maxResultBytes: worker.resultStorage.maxResultBytes,
            monitor: resultStorage, queueStatements: queueStatements, transport: transport)
        let dispatchService = HandlerDispatchService(
            dispatch: dispatchChannel, completions: completionChannel, bufferSize: handlerDispatch.dispatchBufferSize,
            registry: handlers, pool: pool, capacity: capacity,
            defaultTimeout: .milliseconds(handlerDispatch.handlerTimeoutMs), identity: identity, foreign: foreign)
        let drainDeadline = dispatchService.drainDeadline
        if let foreign { drainDeadline.whenFired { foreign.abandonAll() } }
        let drainTimeout = Duration.seconds(max(1, eventConfig.timing.processingTimeoutSeconds))
        let executor = StepExecutor(
            pool: pool, templates: templates, dispatch: dispatchChannel,
            statistics: statistics, capacity: capacity, namespaces: namespaces,
            claimTimeout: .seconds(max(1, eventConfig.timing.claimTimeoutSeconds)),
            identity: identity, eventDocuments: foreign != nil, queueStatements: queueStatements, transport: transport,
            leaseLapsed: { liveness.claimRefusedByDatabase() })
        let actors = WorkerActorRegistry(domainEvents: domainEvents)
        var settings = WorkerEventSystemSettings(
            mode: eventConfig.deploymentMode, namespaces: namespaces,
            visibilityTimeoutSeconds: eventConfig.timing.visibilityTimeoutSeconds,
            pollInterval: .milliseconds(poller.pollingIntervalMs), pollBatchSize: poller.batchSize,
            pollVisibilityTimeoutSeconds: poller.visibilityTimeoutSeconds,
            pollAgeThresholdSeconds: poller.ageThresholdSeconds,
            pollerEnabled: poller.enabled,
            maxConcurrentDeliveries: max(1, eventConfig.processing.maxConcurrentOperations))
        settings.pollMaxAgeSeconds = max(0, poller.maxAgeHours) * 3600
        settings.pollNamespaces = poller.supportedNamespaces
        settings.disconnectedPollInterval = .seconds(max(1, eventConfig.timing.fallbackPollingIntervalSeconds))
        let listenerConfig = eventConfig.metadata.listener
        settings.listenerRetryInterval = .seconds(max(1, listenerConfig.retryIntervalSeconds))
        settings.listenerConnectTimeout = .seconds(max(1, listenerConfig.connectionTimeoutSeconds))
        settings.listenerKeepalive = .seconds(max(1, eventConfig.timing.healthCheckIntervalSeconds))
        settings.listenerBufferSize = max(1, worker.mpscChannels.eventListeners.pgmqEventBufferSize)
        settings.claimNotifiedBursts = eventConfig.processing.claimNotifiedBursts
        // Behind a transaction pooler with no listen_url there is no LISTEN: the poller reads
        // every message, whatever its age (`WorkerEventSystemSettings.withoutListener`). The queues'
        // own database is reached directly: the LISTEN session goes there.
        let listenUrl = queuePool?.configuration.url ?? configuration.common.database.listenSessionURL
        if listenUrl == nil { settings = settings.withoutListener }
        let intake: any StepIntake =
            broker.map { RabbitMQIntake(broker: $0, capacity: capacity, executor: executor, pool: pool) }
            ?? PGMQIntake(
                settings: settings, databaseURL: listenUrl ?? configuration.common.database.url, pool: queuePool ?? pool,
                executor: executor, capacityFreed: capacity)
        let eventSystem = WorkerEventSystem(
            settings: settings, intake: intake, executor: executor, dispatch: dispatchChannel, capacityFreed: capacity,
            onShutdownBegins: { drainDeadline.arm(after: drainTimeout) })
        let scanner: [any Service] =
            recovery.enabled
            ? [
                RecoveryScanner(
                    pool: pool, identity: identity, statistics: statistics, interval: scanInterval, grace: grace,
                    transport: transport,
                    turn: ScannerTurn(
                        duration: scannerTurn, heldByRenewal: { liveness.isScanner }, stopRecovering: { liveness.stopRecovering() }))
            ] : []
        // The event system stays last (the first the group stops): it also ends on its own
        // (`WorkerDaemon.shutdown`), which the group accepts only from the service it stops first.
        // The broker right after the pool: stopped after the completion service (results are
        // published while the pipeline drains).
        // Behind a transaction pooler: claims with a lost answer looked up again (`OrphanedClaimAudit`).
        let audit: [any Service] =
            executor.unresolvedClaims.map {
                [
                    OrphanedClaimAudit(
                        executor: executor, claims: $0, interval: scanInterval,
                        claimTimeout: .seconds(max(1, eventConfig.timing.claimTimeoutSeconds)))
                ]
            } ?? []
        self.services =
            [pool] + transport.services + [liveness, ActorLifecycleService(actors: actors), completionService, dispatchService]
            + audit + scanner + [eventSystem]
        self.executor = executor
        self.actors = actors
        self.transport = transport
        self.broker = broker
        self.queueStatements = queueStatements
        self.eventSystem = eventSystem
        self.dispatch = dispatchService
        self.resultStorage = resultStorage
    }
}
