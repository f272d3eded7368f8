import Foundation
import Logging
import TaskerModel

/// The `tasker-worker run` entry point, for handler authors' own executables:
///
/// ```swift
/// let handlers = HandlerRegistry.withBuiltIns()
/// handlers.register("payments.charge", ChargeHandler())
/// try await WorkerLauncher.run(handlers: handlers)
/// ```
///
/// Loads the configuration (`TASKER_CONFIG_PATH`, else `config/tasker` by `TASKER_ENV`), prints
/// warnings, and runs a `WorkerDaemon` until SIGINT/SIGTERM. Bootstraps logging (`WorkerLogging`:
/// `TASKER_LOG_LEVEL`, `TASKER_LOG_FORMAT`; every line carries `worker_id`) and metrics
/// (`WorkerMetrics`), both idempotent.
public enum WorkerLauncher {
    /// Why the worker did not start.
    public struct LaunchError: Error, CustomStringConvertible {
        public let description: String
    }

    public static func run(handlers: HandlerRegistry = .withBuiltIns(), configPath: String? = nil,
                           loader: ConfigurationLoader = ConfigurationLoader()) async throws {
        let identity = WorkerIdentity()
        WorkerLogging.bootstrap(metadata: ["worker_id": "\(identity.workerID)"])
        WorkerMetrics.bootstrap()
        let loaded: LoadedConfiguration
        do {
            loaded = try configPath.map { try loader.load(file: $0) } ?? loader.load()
        } catch {
            throw LaunchError(description: "invalid configuration\n\(error)")
        }
        let logger = Logger(label: "tasker.worker")
        for warning in loaded.warnings {
            logger.warning("configuration warning", metadata: ["warning": "\(warning)"])
        }
        do {
            try await WorkerDaemon(configuration: loaded.configuration, handlers: handlers, identity: identity).run()
        } catch let error as AuthConfigurationError {
            throw LaunchError(description: "invalid configuration\n\(error)")
        }
    }
}
