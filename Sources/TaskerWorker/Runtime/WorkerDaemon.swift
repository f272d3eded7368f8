import AsyncAlgorithms
import Atomics
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TaskerPostgres
import TaskerModel

/// The worker process: loads and registers the task templates, then runs the step pipeline in one
/// `ServiceGroup` until SIGINT/SIGTERM (or `shutdown()`).
///
/// Pipeline: `WorkerEventSystem` (LISTEN + poller) → `StepExecutorActor` (hydrate, claim) →
/// dispatch channel → `HandlerDispatchService` (handlers under the permits of `WorkerCapacity`) → completion channel →
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
    private let group = LockedBox<ServiceGroup>()
    private let commandProcessor = LockedBox<ActorCommandProcessor>()
    private let eventSystem = LockedBox<WorkerEventSystem>()
    private let runtimeBox = LockedBox<WorkerRuntime>()
    /// When this daemon was created (the process's uptime origin).
    public let startedAt = Date()
    /// Where the REST and gRPC servers listen, once they do.
    public let boundAddresses = BoundAddresses()
    private let shutdownRequested = ManagedAtomic<Bool>(false)

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
            configuration: PostgresPoolConfiguration(
                url: database.url, settings: database.pool,
                operatorMaxConnections: configuration.worker.web.databasePools.operatorMaxConnections),
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
            "database": "\(Redaction.redactCredentials(configuration.common.database.url))",
            "template_directory": "\(report.directory ?? "none")", "templates": "\(report.templates.count)",
            "namespaces": "\(namespaces.joined(separator: ","))",
            "mode": "\(configuration.worker.eventSystems.worker.deploymentMode)",
        ])
        let needed = FileDescriptorLimit.needed(by: configuration)
        if let limit = FileDescriptorLimit.raiseToHardLimit(), limit < needed {
            logger.warning("the open-file limit is below what the connection limits allow; lower worker.web/grpc max_connections or raise ulimit -n", metadata: [
                "nofile_limit": "\(limit)", "needed": "\(needed)",
            ])
        }
        // Auth configuration errors stop the boot with the key named (as a bad template directory would not).
        let authenticator = try await WorkerAuthenticator(configuration: configuration.worker.web.auth)
        for warning in authenticator.warnings { logger.warning("auth configuration", metadata: ["warning": "\(warning)"]) }
        let services = makeServices(namespaces: namespaces, authenticator: authenticator)
        let serviceGroup = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: services.map {
                .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                      failureTerminationBehavior: .gracefullyShutdownGroup)
            },
            gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [],
            logger: logger))
        group.set(serviceGroup)
        if shutdownRequested.load(ordering: .sequentiallyConsistent) {
            await serviceGroup.triggerGracefulShutdown()
            eventSystem.get()?.stop()
        }
        try await serviceGroup.run()
        logger.info("tasker worker stopped", metadata: ["steps_executed": "\(statistics.snapshot.totalExecuted)"])
    }

    /// Starts a graceful shutdown (as SIGTERM does). Safe at any time, also during boot: the
    /// request is remembered and the event system is told to stop directly as well.
    public func shutdown() async {
        shutdownRequested.store(true, ordering: .sequentiallyConsistent)
        eventSystem.get()?.stop()
        await group.get()?.triggerGracefulShutdown()
    }

    private func makeServices(namespaces: [String], authenticator: WorkerAuthenticator) -> [any Service] {
        let worker = configuration.worker
        let handlerDispatch = worker.mpscChannels.handlerDispatch
        let eventConfig = worker.eventSystems.worker
        let poller = eventConfig.metadata.fallbackPoller
        let dispatchChannel = AsyncChannel<ClaimedStep>()
        let completionChannel = AsyncChannel<StepCompletion>()
        let domainEvents = DomainEventActor(pool: pool, statistics: statistics)
        let capacity = WorkerCapacity(
            permits: handlerDispatch.maxConcurrentHandlers,
            shedding: LoadShedding(
                enabled: handlerDispatch.loadShedding.enabled,
                capacityThresholdPercent: handlerDispatch.loadShedding.capacityThresholdPercent,
                warningThresholdPercent: handlerDispatch.loadShedding.warningThresholdPercent,
                unstoredLimit: handlerDispatch.maxConcurrentHandlers + handlerDispatch.completionBufferSize))
        let resultStorage = ResultStorageMonitor(alertAfter: .seconds(max(1, worker.resultStorage.unstoredAlertSeconds)))
        let completionService = CompletionProcessorService(
            completions: completionChannel, bufferSize: handlerDispatch.completionBufferSize, pool: pool,
            domainEvents: domainEvents, statistics: statistics, identity: identity,
            eventDrainTimeout: .milliseconds(worker.mpscChannels.domainEvents.shutdownDrainTimeoutMs),
            capacity: capacity, maxResultBytes: worker.resultStorage.maxResultBytes,
            monitor: resultStorage)
        let dispatchService = HandlerDispatchService(
            dispatch: dispatchChannel, completions: completionChannel, bufferSize: handlerDispatch.dispatchBufferSize,
            registry: handlers, pool: pool, capacity: capacity,
            defaultTimeout: .milliseconds(handlerDispatch.handlerTimeoutMs), identity: identity)
        let drainDeadline = dispatchService.drainDeadline
        let drainTimeout = Duration.seconds(max(1, eventConfig.timing.processingTimeoutSeconds))
        let templateCache = TemplateCacheActor(registry: templates)
        StepMetrics.serve(namespaces: namespaces)
        let executor = StepExecutorActor(pool: pool, templates: templateCache, dispatch: dispatchChannel,
                                         statistics: statistics, capacity: capacity, namespaces: namespaces,
                                         claimTimeout: .seconds(max(1, eventConfig.timing.claimTimeoutSeconds)),
                                         identity: identity)
        let actors = WorkerActorRegistry(
            stepExecutor: executor, completion: CompletionActor(processor: completionService),
            templateCache: templateCache, domainEvents: domainEvents,
            status: WorkerStatusActor(identity: identity, statistics: statistics, pool: pool,
                                      dispatch: dispatchService, executor: executor, templates: templateCache))
        let commands = ActorCommandProcessor(actors: actors, completions: completionChannel)
        commandProcessor.set(commands)
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
        let eventSystem = WorkerEventSystem(
            settings: settings,
            databaseURL: configuration.common.database.url, pool: pool, commands: commands, dispatch: dispatchChannel,
            capacityFreed: capacity,
            onShutdownBegins: { drainDeadline.arm(after: drainTimeout) })
        self.eventSystem.set(eventSystem)
        let runtime = WorkerRuntime(
            configuration: configuration, identity: identity, pool: pool, templates: templates, handlers: handlers,
            statistics: statistics, commands: commands, eventSystem: eventSystem, dispatch: dispatchService,
            domainEvents: domainEvents, startedAt: startedAt, boundAddresses: boundAddresses,
            resultStorage: resultStorage)
        runtimeBox.set(runtime)
        // Shut down in reverse: event system, dispatch, completion, actors' hooks, pool, then the
        // operator servers (they keep answering health probes while the pipeline drains).
        return OperatorServices.make(runtime: runtime, authenticator: authenticator)
            + [pool, ActorLifecycleService(actors: actors), completionService, dispatchService, eventSystem]
    }

    /// The running worker's parts for the operator surface (nil before the pipeline is built).
    public var runtime: WorkerRuntime? { runtimeBox.get() }

    /// In-process delivery of the `fast` and `broadcast` domain events (nil before the pipeline is built).
    public func subscribeToDomainEvents(bufferSize: Int = 1000) async -> AsyncStream<DomainEvent>? {
        await commandProcessor.get()?.actors.domainEvents.subscribe(bufferSize: bufferSize)
    }

    /// Sends a command to the running worker (nil before the pipeline is built).
    public func process(_ command: WorkerCommand) async -> WorkerCommandResponse? {
        guard let commands = commandProcessor.get() else { return nil }
        let response = await commands.process(command)
        // Messages that arrived while claiming was off are only found by reading the queues.
        if case .setEventIntegration(true) = command { eventSystem.get()?.catchUp() }
        return response
    }
}

/// Runs the actors' `started()` hooks when the group starts and `stopped()` once the pipeline has
/// drained (it is shut down after the completion service).
struct ActorLifecycleService: Service {
    let actors: WorkerActorRegistry

    func run() async throws {
        await actors.startAll()
        try? await gracefulShutdown()
        await actors.stopAll()
    }
}

/// A value set once the worker has built it, readable from any task.
private final class LockedBox<Value: Sendable>: Sendable {
    private let storage = Synchronization.Mutex<Value?>(nil)
    func set(_ value: Value) { storage.withLock { $0 = value } }
    func get() -> Value? { storage.withLock { $0 } }
}
