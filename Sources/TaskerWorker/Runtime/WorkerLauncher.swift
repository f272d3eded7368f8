import Foundation
import Logging
import ServiceLifecycle
import TaskerAuth
import TaskerHTTP
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import UnixSignals

/// The `tasker-worker run` entry point, for handler authors' own executables:
///
/// ```swift
/// let handlers = HandlerRegistry.withBuiltIns()
/// handlers.register("payments.charge", ChargeHandler())
/// try await WorkerLauncher.run(handlers: handlers)
/// ```
///
/// Loads the configuration (`TASKER_CONFIG_PATH`, else `config/tasker` by `TASKER_ENV`), prints
/// warnings, and runs a `WorkerDaemon` in a `ServiceGroup` until SIGINT/SIGTERM, together with
/// `services` (the program's own; they come first in the group, so they are shut down after the
/// worker has drained, and any of them ending shuts the whole group down). Bootstraps logging (`WorkerLogging`:
/// `TASKER_LOG_LEVEL`, `TASKER_LOG_FORMAT`; every line carries `worker_id`) and metrics
/// (`WorkerMetrics`), both idempotent.
public enum WorkerLauncher {
    /// Why the worker did not start.
    public struct LaunchError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Loads the configuration and runs the worker (and `services`) until SIGINT/SIGTERM.
    ///
    /// - Parameters:
    ///   - handlers: the handlers the worker runs, by callable.
    ///   - configPath: a pre-merged TOML file; nil: `TASKER_CONFIG_PATH`, else `config/tasker` by `TASKER_ENV`.
    ///   - loader: reads and validates the configuration (its environment is the process's by default).
    ///   - services: run in the worker's group, before it (shut down after it).
    ///   - logger: the worker's and the group's logger (`worker_id` is added to the worker's lines);
    ///     by default `tasker.worker`, made after logging is bootstrapped.
    public static func run(
        handlers: HandlerRegistry = .withBuiltIns(), configPath: String? = nil,
        loader: ConfigurationLoader = ConfigurationLoader(), services: [any Service] = [],
        logger: Logger? = nil
    ) async throws {
        let identity = WorkerIdentity()
        WorkerLogging.bootstrap(metadata: ["worker_id": "\(identity.publicID)"])
        WorkerMetrics.bootstrap()
        let logger = logger ?? Logger(label: "tasker.worker")
        let loaded: LoadedConfiguration
        do {
            loaded = try configPath.map { try loader.load(file: $0) } ?? loader.load()
        } catch {
            throw LaunchError(description: "invalid configuration\n\(error)")
        }
        for warning in loaded.warnings {
            logger.warning("configuration warning", metadata: ["warning": "\(warning)"])
        }
        let telemetry: [any Service]
        do {
            telemetry = try WorkerTelemetry.bootstrap()
        } catch {
            throw LaunchError(description: "invalid configuration\n\(error)")
        }
        do {
            try await run(
                WorkerDaemon(
                    configuration: loaded.configuration, handlers: handlers, identity: identity,
                    logger: logger),
                beside: telemetry + services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        } catch let error as AuthConfigurationError {
            throw LaunchError(description: "invalid configuration\n\(error)")
        } catch let error as ServerTLSError {
            throw LaunchError(description: "invalid configuration\n\(error)")
        }
    }

    /// Runs `worker` in one `ServiceGroup` after `services` (so they are shut down after it has
    /// drained); any of them ending, or one of `gracefulShutdownSignals`, shuts the group down.
    package static func run(
        _ worker: WorkerDaemon, beside services: [any Service],
        gracefulShutdownSignals: [UnixSignal], logger: Logger
    ) async throws {
        var configuration = ServiceGroupConfiguration(
            services: (services + [worker]).map {
                .init(
                    service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                    failureTerminationBehavior: .gracefullyShutdownGroup)
            },
            gracefulShutdownSignals: gracefulShutdownSignals,
            logger: logger)
        // The worker's own group cancels what is left first (`WorkerDaemon.gracefulShutdownLimit`);
        // this bounds the program's services as well.
        configuration.maximumGracefulShutdownDuration =
            WorkerDaemon.gracefulShutdownLimit(worker.configuration) + .seconds(3)
        try await ServiceGroup(configuration: configuration).run()
    }
}
