import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore
import TaskerWorker

/// The one worker of this process behind the C ABI: a `WorkerDaemon` with the built-in Swift
/// handlers and an FFI dispatch channel attached, run in a `ServiceGroup` on a background task.
/// The host process handles its own signals (the library installs no signal handlers): it calls
/// `tasker_worker_stop` (or `tasker_worker_begin_shutdown`) on SIGTERM.
final class EmbeddedWorker: Sendable {
    let handleID = UUID()
    let daemon: WorkerDaemon
    let channel: ForeignDispatchChannel
    let environmentName: String
    let domainEvents: DomainEventInbox
    /// Triggered when the worker's run ends (stopped, or failed).
    let finished = OneShotSignal()
    private let failure = Mutex<String?>(nil)
    private let shuttingDown = Mutex(false)
    private let logger: Logger

    private init(
        daemon: WorkerDaemon, channel: ForeignDispatchChannel, environmentName: String, domainEvents: DomainEventInbox, logger: Logger
    ) {
        self.daemon = daemon
        self.channel = channel
        self.environmentName = environmentName
        self.domainEvents = domainEvents
        self.logger = logger
    }

    var isShuttingDown: Bool { shuttingDown.withLock { $0 } }
    var isRunning: Bool { !finished.isTriggered }

    /// Loads the configuration as `tasker-worker run` does (with `options` over the environment),
    /// starts the worker and returns once it serves; throws `.bootstrap` naming what failed.
    static func start(_ options: BootstrapOptions) async throws(FFIError) -> EmbeddedWorker {
        let identity = WorkerIdentity()
        _ = hostLoggingReady
        WorkerLogging.bootstrap(
            level: options.logLevel ?? Self.environmentLevel(), format: options.logFormat,
            metadata: ["worker_id": "\(identity.publicID)"])
        _ = WorkerMetrics.bootstrap()
        let logger = Logger(label: "tasker.worker")
        let environment = options.environment(ProcessInfo.processInfo.environment)
        let loader = ConfigurationLoader(environment: environment, configRoot: options.configRoot(environment: environment))
        var configuration: TaskerConfiguration
        do {
            let loaded = try loader.load()
            for warning in loaded.warnings { logger.warning("configuration warning", metadata: ["warning": "\(warning)"]) }
            configuration = loaded.configuration
        } catch {
            throw FFIError(.bootstrap, "invalid configuration: \(error)")
        }
        if let url = options.databaseURL { configuration.common.database.url = url }
        if let address = options.webBindAddress { configuration.worker.web.bindAddress = address }
        if let address = options.grpcBindAddress { configuration.worker.grpc.bindAddress = address }
        let telemetry: [any Service]
        do {
            telemetry = try WorkerTelemetry.bootstrap(environment: environment)
        } catch {
            throw FFIError(.bootstrap, "invalid configuration: \(error)")
        }
        let channel = ForeignDispatchChannel(configuration: configuration.worker.mpscChannels.ffiDispatch)
        let daemon = WorkerDaemon(
            configuration: configuration, handlers: .withBuiltIns(),
            templateLoader: TaskTemplateLoader(environment: environment), identity: identity,
            foreignHandlers: channel, logger: logger)
        let inbox = DomainEventInbox(events: await daemon.subscribeToDomainEvents())
        let worker = EmbeddedWorker(
            daemon: daemon, channel: channel, environmentName: loader.environmentName, domainEvents: inbox, logger: logger)
        Task {
            do {
                try await WorkerLauncher.run(daemon, beside: telemetry, gracefulShutdownSignals: [], logger: logger)
            } catch {
                worker.failure.withLock { $0 = "\(error)" }
                logger.error("embedded worker stopped with an error", metadata: ["error": "\(error)"])
            }
            inbox.close()
            worker.finished.trigger()
            channel.releasePollers()
        }
        try await worker.waitUntilServing(timeout: .seconds(120))
        return worker
    }

    /// `TASKER_LOG_LEVEL`, else `RUST_LOG` when it is a plain level name.
    private static func environmentLevel() -> Logger.Level? {
        let environment = ProcessInfo.processInfo.environment
        return (environment["TASKER_LOG_LEVEL"] ?? environment["RUST_LOG"]).flatMap(BootstrapOptions.level)
    }

    /// Returns once the event system receives (listener connected or poller running) and the
    /// enabled operator servers listen; throws when the run ends first or `timeout` passes.
    private func waitUntilServing(timeout: Duration) async throws(FFIError) {
        let configuration = daemon.configuration.worker
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            if finished.isTriggered {
                let reason = failure.withLock { $0 } ?? "the worker stopped during startup"
                throw FFIError(.bootstrap, "bootstrap failed: \(reason)")
            }
            let status = daemon.runtime.eventSystem.status
            let receiving = status.isReceiving || (status.running && status.mode == .disabled)
            let web = !configuration.web.enabled || daemon.boundAddresses.web != nil
            let grpc = !configuration.grpc.enabled || daemon.boundAddresses.grpc != nil
            if receiving && web && grpc { return }
            if ContinuousClock.now >= deadline {
                await stop()
                throw FFIError(.bootstrap, "bootstrap failed: the worker did not start serving within \(timeout)")
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Begins the graceful shutdown (idempotent).
    func beginShutdown() async {
        shuttingDown.withLock { $0 = true }
        await daemon.shutdown()
    }

    /// Graceful shutdown, waited for.
    func stop() async {
        await beginShutdown()
        await finished.wait()
    }

    /// `tasker_worker_bootstrap`'s result.
    var bootstrapResult: JSONValue {
        .object([
            "handle_id": .string(handleID.uuidString.lowercased()), "status": "started",
            "message": .string("tasker worker started (environment \(environmentName))"),
            "worker_id": .string(daemon.identity.workerID),
            "namespaces": .array(daemon.servedNamespaces.map(JSONValue.string)),
            "web_address": daemon.boundAddresses.web.map(JSONValue.string) ?? .null,
            "grpc_address": daemon.boundAddresses.grpc.map(JSONValue.string) ?? .null,
        ])
    }

    /// `tasker_worker_status`'s result.
    func status() async -> JSONValue {
        let pool = await daemon.pool.statistics
        return .object([
            "running": .bool(isRunning), "environment": .string(environmentName),
            "worker_id": .string(daemon.identity.workerID),
            "supported_namespaces": .array(daemon.servedNamespaces.map(JSONValue.string)),
            "web_api_enabled": .bool(daemon.configuration.worker.web.enabled),
            "database_pool_size": .int(Int64(pool.active + pool.idle)), "database_pool_idle": .int(Int64(pool.idle)),
            "shutting_down": .bool(isShuttingDown),
        ])
    }
}
