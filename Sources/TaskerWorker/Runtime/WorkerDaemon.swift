import AsyncAlgorithms
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TaskerAuth
import TaskerHTTP
import TaskerHandlerSDK
import TaskerMessaging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// The worker as a swift-service-lifecycle `Service`, built fully in `init`: an embedding program
/// runs it in its own `ServiceGroup` beside its own services (as Hummingbird's `Application` is
/// run); `WorkerLauncher` does so for `tasker-worker run`, with the signal handling.
///
/// `init` reads the task templates (their namespaces decide the queues served) and assembles the
/// pipeline and the operator surface's `runtime`; `run()` registers the templates in the database,
/// then runs the operator servers and the pipeline in one inner `ServiceGroup` until graceful
/// shutdown (from the enclosing group, or `shutdown()`).
///
/// Pipeline: `WorkerEventSystem` (LISTEN + poller) → `StepExecutor` (hydrate, claim) →
/// dispatch channel → `HandlerDispatchService` (handlers under the permits of `WorkerCapacity`) → completion channel →
/// `CompletionProcessorService` (one transaction per result, then domain events).
///
/// Shutdown runs in reverse order of the inner group: the event system stops listening, polling
/// and claiming and finishes the dispatch channel; the dispatch service lets running handlers
/// finish (or time out) and finishes the completion channel; the completion service stores every
/// result; the actors' hooks run; the pool closes; the operator servers stop last (they answer
/// health probes while the pipeline drains).
public final class WorkerDaemon: Service, Sendable {
    public let configuration: TaskerConfiguration
    public let identity: WorkerIdentity
    public let handlers: HandlerRegistry
    public let pool: PostgresConnectionPool
    public let templates: TaskTemplateRegistry
    public let statistics: WorkerStatistics
    /// When this daemon was created (the process's uptime origin).
    public let startedAt: Date
    /// Where the REST and gRPC servers listen, once they do.
    public let boundAddresses: BoundAddresses
    /// The worker's parts the operator surface reads (REST, gRPC, metrics, health).
    package let runtime: WorkerRuntime
    /// The task templates read at `init`, registered by `run()`.
    private let templateReport: TemplateLoadReport
    /// The namespaces of those templates: the queues this worker serves.
    let namespaces: [String]
    /// The pipeline's services, in group order (shut down in reverse).
    private let pipeline: [any Service]
    /// The step path's choice of static SQL or PGMQ's functions (`selectQueueStatements`).
    let queueStatements: QueueStatementSelection
    /// PGMQ or RabbitMQ (`[common.queues] backend`).
    let transport: any StepTransport
    /// The broker's connection when RabbitMQ carries the messages.
    package let broker: RabbitMQMessaging?
    let logger: Logger
    private let shutdownRequested = OneShotSignal()

    public convenience init(
        configuration: TaskerConfiguration, handlers: HandlerRegistry = .withBuiltIns(),
        templateLoader: TaskTemplateLoader = TaskTemplateLoader(), identity: WorkerIdentity = WorkerIdentity(),
        logger: Logger = Logger(label: "tasker.worker")
    ) {
        self.init(
            configuration: configuration, handlers: handlers, templateLoader: templateLoader, identity: identity,
            foreignHandlers: nil, logger: logger)
    }

    /// A worker whose steps without a Swift handler go to `foreignHandlers` (the FFI dispatch
    /// channel a foreign runtime polls; the embedded library attaches one) instead of failing with
    /// `handler_not_found`.
    package init(
        configuration: TaskerConfiguration, handlers: HandlerRegistry = .withBuiltIns(),
        templateLoader: TaskTemplateLoader = TaskTemplateLoader(), identity: WorkerIdentity = WorkerIdentity(),
        foreignHandlers: ForeignDispatchChannel?, logger: Logger = Logger(label: "tasker.worker")
    ) {
        self.configuration = configuration
        self.handlers = handlers
        self.identity = identity
        let statistics = WorkerStatistics()
        self.statistics = statistics
        let startedAt = Date()
        self.startedAt = startedAt
        let boundAddresses = BoundAddresses()
        self.boundAddresses = boundAddresses
        var metadataLogger = logger
        metadataLogger[metadataKey: "worker_id"] = "\(identity.publicID)"
        self.logger = metadataLogger
        let database = configuration.common.database
        let pool = PostgresConnectionPool(
            configuration: PostgresPoolConfiguration(
                database: database,
                operatorMaxConnections: configuration.worker.web.databasePools.operatorMaxConnections),
            logger: Logger(label: "tasker.postgres.pool"))
        self.pool = pool
        // The queues' own database (`[common.pgmq_database]`), when they have one and PGMQ carries
        // the messages (on RabbitMQ the database holds no queue).
        let queueDatabase = QueueDatabase.configured(
            configuration.common, applicationName: "tasker-worker", logger: Logger(label: "tasker.queue_database"))
        let queuePool = queueDatabase?.pool
        let templates = TaskTemplateRegistry(pool: pool, queuePool: queuePool ?? pool)
        self.templates = templates
        let report = templateLoader.loadAll()
        self.templateReport = report
        let namespaces = Set(report.templates.map(\.template.namespaceName)).sorted()
        self.namespaces = namespaces
        let pipeline = WorkerPipeline(
            configuration: configuration, identity: identity, handlers: handlers, pool: pool, queueDatabase: queueDatabase,
            templates: templates, statistics: statistics, namespaces: namespaces, foreign: foreignHandlers)
        self.pipeline = pipeline.services
        self.queueStatements = pipeline.queueStatements
        self.transport = pipeline.transport
        self.broker = pipeline.broker
        self.runtime = WorkerRuntime(
            configuration: configuration, identity: identity, pool: pool, queuePool: queuePool ?? pool, templates: templates,
            handlers: handlers,
            statistics: statistics, executor: pipeline.executor, actors: pipeline.actors, eventSystem: pipeline.eventSystem,
            broker: pipeline.broker,
            dispatch: pipeline.dispatch, startedAt: startedAt,
            boundAddresses: boundAddresses, resultStorage: pipeline.resultStorage)
    }

    /// The FFI dispatch channel, when a foreign runtime is attached.
    package var foreignHandlers: ForeignDispatchChannel? { runtime.dispatch.foreign }

    /// The namespaces (queues) this worker serves: those of the task templates read at `init`.
    package var servedNamespaces: [String] { namespaces }

    /// Boots (registers the templates, builds the `WorkerAuthenticator`), then runs the operator
    /// servers and the pipeline until graceful shutdown. Throws when boot fails (templates cannot be
    /// registered, `AuthConfigurationError`). Installs no signal handlers: the enclosing group does.
    public func run() async throws {
        // TLS files first: a bad one stops the boot before the database is touched.
        let tls = try OperatorServices.loadTLS(configuration.worker)
        for (settings, section) in [
            (configuration.worker.web as any TLSListenerSettings, "worker.web"), (configuration.worker.grpc, "worker.grpc"),
        ] {
            if let warning = ServerTLS.unusedKeysWarning(settings, section: section) { logger.warning("\(warning)") }
        }
        for problem in templateReport.problems {
            logger.error("invalid task template (skipped)", metadata: ["problem": "\(problem)"])
        }
        try await checkPoolerSessionSettings()
        try await templates.register(templateReport.templates.map(\.template))
        await selectQueueStatements()
        logger.info(
            "tasker worker starting",
            metadata: [
                "database": "\(Redaction.redactCredentials(configuration.common.database.url))",
                "template_directory": "\(templateReport.directory ?? "none")", "templates": "\(templateReport.templates.count)",
                "namespaces": "\(namespaces.joined(separator: ","))",
                "mode": "\(configuration.worker.eventSystems.worker.deploymentMode)",
                "messaging": "\(transport.summary)",
            ])
        let needed = FileDescriptorLimit.needed(by: configuration)
        if let limit = FileDescriptorLimit.raiseToHardLimit(), limit < needed {
            logger.warning(
                "the open-file limit is below what the connection limits allow; lower worker.web/grpc max_connections or raise ulimit -n",
                metadata: [
                    "nofile_limit": "\(limit)", "needed": "\(needed)",
                ])
        }
        // Auth and TLS configuration errors stop the boot with the key named (as a bad template directory would not).
        let authenticator = try await WorkerAuthenticator(configuration: configuration.worker.web.auth)
        for warning in authenticator.warnings { logger.warning("auth configuration", metadata: ["warning": "\(warning)"]) }
        StepMetrics.serve(namespaces: namespaces)
        // Shut down in reverse: event system, dispatch, completion, actors' hooks, pool, then the
        // operator servers (they keep answering health probes while the pipeline drains).
        let services = OperatorServices.make(runtime: runtime, authenticator: authenticator, tls: tls) + pipeline
        var groupConfiguration = ServiceGroupConfiguration(
            services: services.map {
                .init(
                    service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                    failureTerminationBehavior: .gracefullyShutdownGroup)
            },
            logger: logger)
        // Past the drain deadline plus a margin, what is left is cancelled (every database wait
        // honours cancellation), so shutdown ends in bounded time even with the database unreachable.
        let limit = Self.gracefulShutdownLimit(configuration)
        let forced = OneShotSignal()
        groupConfiguration.maximumGracefulShutdownDuration = limit
        let group = ServiceGroup(configuration: groupConfiguration)
        // The inner group follows the enclosing group's graceful shutdown by itself; `shutdown()`
        // (also before this point: the signal stays triggered) is passed on here.
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { [shutdownRequested] in
                    await shutdownRequested.wait()
                    if !Task.isCancelled { await group.triggerGracefulShutdown() }
                }
                tasks.addTask { [shutdownRequested, logger, forced] in
                    await shutdownRequested.wait()
                    try await Task.sleep(for: limit)
                    forced.trigger()
                    logger.error(
                        "graceful shutdown did not finish within its limit; cancelling what is left (steps whose result is not stored stay in_progress)",
                        metadata: ["limit_seconds": "\(limit.components.seconds)"])
                }
                var failure: (any Error)?
                do { try await group.run() } catch { failure = error }
                tasks.cancelAll()
                // Cut short: not a clean stop, whatever the cancelled services ended with (an error
                // they report is a consequence; the forced shutdown is what the operator must read).
                if forced.isTriggered {
                    throw ForcedShutdownError(limit: limit, cause: failure.map { "\($0)" })
                }
                if let failure { throw failure }
            }
        } onGracefulShutdown: { [shutdownRequested] in
            shutdownRequested.trigger()
        }
        logger.info("tasker worker stopped", metadata: ["steps_executed": "\(statistics.snapshot.totalExecuted)"])
    }

    /// Through a transaction pooler (`common.database.transaction_pooler`), the session settings a
    /// direct connection sends at connect must come from the role or the database: read them on a
    /// pooled connection and refuse to start, naming the statements to run, when they are wrong.
    private func checkPoolerSessionSettings() async throws {
        guard pool.configuration.route == .transactionPooler else { return }
        let settings = try await pool.withConnection { c in try await PostgresSessionCheck.read(c) }
        try settings.require()
        let database = configuration.common.database
        logger.info(
            "connected through a transaction pooler: statements unnamed, session settings from the role",
            metadata: [
                "statement_timeout": "\(settings.statementTimeout)", "lock_timeout": "\(settings.lockTimeout)",
                "listen": "\(database.listenSessionURL.map { Redaction.redactCredentials($0) } ?? "none: polling")",
            ])
    }

    /// Margin after the drain deadline for storing the last results (`gracefulShutdownLimit`).
    static let shutdownMargin: Duration = .seconds(5)

    /// How long graceful shutdown may take before the rest is cancelled: the drain deadline
    /// (`timing.processing_timeout_seconds`) plus `shutdownMargin`.
    static func gracefulShutdownLimit(_ configuration: TaskerConfiguration) -> Duration {
        .seconds(max(1, configuration.worker.eventSystems.worker.timing.processingTimeoutSeconds)) + shutdownMargin
    }

    /// Starts a graceful shutdown (as SIGTERM does). Safe at any time, also during boot: the
    /// request is remembered, and the event system is told to stop directly as well.
    public func shutdown() async {
        runtime.eventSystem.stop()
        shutdownRequested.trigger()
    }

    /// In-process delivery of the `fast` and `broadcast` domain events.
    public func subscribeToDomainEvents(bufferSize: Int = 1000) async -> AsyncStream<DomainEvent> {
        await runtime.actors.domainEvents.subscribe(bufferSize: bufferSize)
    }

    /// Turns claiming on or off (upstream's event integration); deliveries while off stay queued.
    func setClaiming(_ enabled: Bool) {
        runtime.executor.setAccepting(enabled)
        // Messages that arrived while claiming was off are only found by reading the queues.
        if enabled { runtime.eventSystem.catchUp() }
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
