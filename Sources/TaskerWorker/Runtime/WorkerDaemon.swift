import Logging
import ServiceLifecycle

/// The long-running worker process: the services `tasker-worker run` starts in one `ServiceGroup`.
///
/// For now (foundation issue) that is the database connection pool and the LISTEN connection, so
/// a started worker is connected, watches `pgmq_queue_created`, reports its pool, and shuts down
/// cleanly on SIGINT/SIGTERM. The step pipeline, REST and gRPC join this group in later issues.
public struct WorkerDaemon: Sendable {
    public let configuration: TaskerConfiguration
    public let pool: PostgresConnectionPool
    public let listener: PostgresListener
    private let logger: Logger

    public init(configuration: TaskerConfiguration, logger: Logger = Logger(label: "tasker.worker")) {
        self.configuration = configuration
        self.logger = logger
        let database = configuration.common.database
        self.pool = PostgresConnectionPool(
            configuration: PostgresPoolConfiguration(url: database.url, settings: database.pool),
            logger: Logger(label: "tasker.postgres.pool"))
        self.listener = PostgresListener(url: database.url, channels: ["pgmq_queue_created"],
                                         logger: Logger(label: "tasker.postgres.listener"))
    }

    /// Runs until SIGINT/SIGTERM (graceful shutdown) or cancellation.
    public func run() async throws {
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [
                // A pool that stops maintaining itself takes the worker down: nothing works without it.
                .init(service: pool, successTerminationBehavior: .gracefullyShutdownGroup,
                      failureTerminationBehavior: .gracefullyShutdownGroup),
                // The listener reconnects inside run(); it only returns on shutdown.
                .init(service: listener, successTerminationBehavior: .gracefullyShutdownGroup,
                      failureTerminationBehavior: .gracefullyShutdownGroup),
                .init(service: ListenerEventLogger(listener: listener, logger: logger)),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        logger.info("tasker worker started", metadata: [
            "database": "\(PostgresConnection.redact(configuration.common.database.url))",
            "pool_max": "\(configuration.common.database.pool.maxConnections)",
        ])
        try await group.run()
        logger.info("tasker worker stopped")
    }
}

/// Logs what the listener reports until it finishes (step processing replaces this in #3).
struct ListenerEventLogger: Service {
    let listener: PostgresListener
    let logger: Logger

    func run() async throws {
        for await event in listener.events.cancelOnGracefulShutdown() {
            switch event {
            case .connected(let isReconnect):
                logger.info(isReconnect ? "listener reconnected" : "listener connected; worker idle")
            case .notification(let note):
                logger.debug("notification", metadata: ["channel": "\(note.channel)", "payload": "\(note.payload)"])
            }
        }
    }
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
