import AsyncAlgorithms
import Logging
import ServiceLifecycle
import Synchronization

/// The worker process: loads and registers the task templates, then runs the step pipeline in one
/// `ServiceGroup` until SIGINT/SIGTERM (or `shutdown()`).
///
/// Pipeline: `WorkerEventSystem` (LISTEN + poller) → `StepExecutorActor` (hydrate, claim) →
/// dispatch channel → `HandlerDispatchService` (handlers under a semaphore) → completion channel →
/// `CompletionProcessorService` (one transaction per result, then domain events).
///
/// Shutdown runs in reverse order of the group: the event system stops listening, polling and
/// claiming and finishes the dispatch channel; the dispatch service lets running handlers finish
/// (or time out) and finishes the completion channel; the completion service stores every result;
/// the pool closes last.
public final class WorkerDaemon: Sendable {
    public let configuration: TaskerConfiguration
    public let identity: WorkerIdentity
    public let handlers: HandlerRegistry
    public let pool: PostgresConnectionPool
    public let templates: TaskTemplateRegistry
    public let statistics = WorkerStatistics()
    private let templateLoader: TaskTemplateLoader
    private let logger: Logger
    private let group = ServiceGroupBox()

    public init(configuration: TaskerConfiguration, handlers: HandlerRegistry = .withBuiltIns(),
                templateLoader: TaskTemplateLoader = TaskTemplateLoader(), identity: WorkerIdentity = WorkerIdentity(),
                logger: Logger = Logger(label: "tasker.worker")) {
        self.configuration = configuration
        self.handlers = handlers
        self.templateLoader = templateLoader
        self.identity = identity
        var metadataLogger = logger
        metadataLogger[metadataKey: "worker_id"] = "\(identity.workerID)"
        self.logger = metadataLogger
        let database = configuration.common.database
        self.pool = PostgresConnectionPool(
            configuration: PostgresPoolConfiguration(url: database.url, settings: database.pool),
            logger: Logger(label: "tasker.postgres.pool"))
        self.templates = TaskTemplateRegistry(pool: pool)
    }

    /// Boots and runs until shutdown. Throws when boot fails (templates cannot be registered).
    public func run(handleSignals: Bool = true) async throws {
        let report = templateLoader.loadAll()
        for problem in report.problems {
            logger.error("invalid task template (skipped)", metadata: ["problem": "\(problem)"])
        }
        try await templates.register(report.templates.map(\.template))
        let namespaces = await templates.supportedNamespaces
        logger.info("tasker worker starting", metadata: [
            "database": "\(PostgresConnection.redact(configuration.common.database.url))",
            "template_directory": "\(report.directory ?? "none")", "templates": "\(report.templates.count)",
            "namespaces": "\(namespaces.joined(separator: ","))",
            "mode": "\(configuration.worker.eventSystems.worker.deploymentMode)",
        ])
        let services = makeServices(namespaces: namespaces)
        let serviceGroup = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: services.map {
                .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                      failureTerminationBehavior: .gracefullyShutdownGroup)
            },
            gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [],
            logger: logger))
        group.set(serviceGroup)
        try await serviceGroup.run()
        logger.info("tasker worker stopped", metadata: ["steps_executed": "\(statistics.snapshot.totalExecuted)"])
    }

    /// Starts a graceful shutdown (as SIGTERM does).
    public func shutdown() async {
        await group.get()?.triggerGracefulShutdown()
    }

    private func makeServices(namespaces: [String]) -> [any Service] {
        let worker = configuration.worker
        let handlerDispatch = worker.mpscChannels.handlerDispatch
        let eventConfig = worker.eventSystems.worker
        let poller = eventConfig.metadata.fallbackPoller
        let dispatchChannel = AsyncChannel<ClaimedStep>()
        let completionChannel = AsyncChannel<StepCompletion>()
        let domainEvents = DomainEventActor(pool: pool, statistics: statistics)
        let dispatchService = HandlerDispatchService(
            dispatch: dispatchChannel, completions: completionChannel, bufferSize: handlerDispatch.dispatchBufferSize,
            registry: handlers, maxConcurrentHandlers: handlerDispatch.maxConcurrentHandlers,
            defaultTimeout: .milliseconds(handlerDispatch.handlerTimeoutMs), identity: identity)
        let shedding = LoadShedding(
            enabled: handlerDispatch.loadShedding.enabled,
            capacityThresholdPercent: handlerDispatch.loadShedding.capacityThresholdPercent,
            warningThresholdPercent: handlerDispatch.loadShedding.warningThresholdPercent,
            semaphore: dispatchService.semaphore)
        let executor = StepExecutorActor(pool: pool, templates: templates, dispatch: dispatchChannel,
                                         statistics: statistics, loadShedding: shedding)
        let eventSystem = WorkerEventSystem(
            settings: WorkerEventSystemSettings(
                mode: eventConfig.deploymentMode, namespaces: namespaces,
                visibilityTimeoutSeconds: eventConfig.timing.visibilityTimeoutSeconds,
                pollInterval: .milliseconds(poller.pollingIntervalMs), pollBatchSize: poller.batchSize,
                pollVisibilityTimeoutSeconds: poller.visibilityTimeoutSeconds,
                pollAgeThresholdSeconds: poller.ageThresholdSeconds,
                pollerEnabled: poller.enabled),
            databaseURL: configuration.common.database.url, pool: pool, executor: executor, dispatch: dispatchChannel)
        let completionService = CompletionProcessorService(
            completions: completionChannel, bufferSize: handlerDispatch.completionBufferSize, pool: pool,
            domainEvents: domainEvents, statistics: statistics, identity: identity)
        // Shut down in reverse: event system, dispatch, completion, pool.
        return [pool, completionService, dispatchService, eventSystem]
    }
}

/// Holds the running `ServiceGroup` so `shutdown()` can reach it.
private final class ServiceGroupBox: Sendable {
    private let storage = Synchronization.Mutex<ServiceGroup?>(nil)
    func set(_ group: ServiceGroup) { storage.withLock { $0 = group } }
    func get() -> ServiceGroup? { storage.withLock { $0 } }
}

extension PostgresPoolConfiguration {
    /// A pool configuration from `common.database.pool` (upstream key names and defaults).
    public init(url: String, settings: CommonConfiguration.PoolSettings, applicationName: String = "tasker-worker") {
        self.init(url: url, maxConnections: settings.maxConnections, minConnections: settings.minConnections,
                  acquireTimeout: .seconds(settings.acquireTimeoutSeconds),
                  idleTimeout: .seconds(settings.idleTimeoutSeconds),
                  maxLifetime: .seconds(settings.maxLifetimeSeconds),
                  slowAcquireThreshold: .milliseconds(settings.slowAcquireThresholdMs),
                  applicationName: applicationName)
    }
}
