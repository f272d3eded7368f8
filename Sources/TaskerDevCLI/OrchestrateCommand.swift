import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import TaskerHTTP
import TaskerModel
import TaskerOrchestration
import TaskerPostgres
import TaskerWorker
import UnixSignals

/// `tasker-dev orchestrate`: run the companion orchestration until SIGINT/SIGTERM (graceful:
/// the messages in hand are finished and archived, the rest stay queued), with its task REST API
/// (`[orchestration.web]`, `OrchestrationWebServer`) unless `orchestration.web.enabled = false`.
struct OrchestrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "orchestrate",
        abstract: "Run the companion orchestration: task requests, step enqueueing, results, retries, finalization.")

    @Option(name: .customLong("config"), help: "A pre-merged TOML file (default: TASKER_CONFIG_PATH, else config/tasker by TASKER_ENV).")
    var configPath: String?

    func run() async throws {
        WorkerLogging.bootstrap()
        let configuration = try Self.loadConfiguration(configPath, command: "orchestrate")
        let logger = Logger(label: "tasker.orchestration")
        let telemetry: [any Service]
        do {
            // The orchestration's traces (issue #30), configured as the worker's (TELEMETRY_ENABLED, OTEL_*).
            telemetry = try WorkerTelemetry.bootstrap(serviceName: "tasker-orchestration")
        } catch {
            FileHandle.standardError.write(Data("tasker-dev orchestrate: invalid configuration\n\(error)\n".utf8))
            throw ExitCode(78)
        }
        if configuration.orchestration.web.enabled {
            // The API's TLS files checked before anything starts (the server reads them again when it starts).
            do {
                _ = try ServerTLS.load(configuration.orchestration.web, section: "orchestration.web")
            } catch {
                FileHandle.standardError.write(Data("tasker-dev orchestrate: invalid configuration\n\(error)\n".utf8))
                throw ExitCode(78)
            }
            if let warning = ServerTLS.unusedKeysWarning(configuration.orchestration.web, section: "orchestration.web") {
                logger.warning("\(warning)")
            }
        }
        let service = OrchestrationService(configuration: configuration, logger: logger)
        // The span exporter first: it stops last, after the last spans were made.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = telemetry.map {
            .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)
        }
        services.append(
            .init(
                service: service, successTerminationBehavior: .gracefullyShutdownGroup,
                failureTerminationBehavior: .gracefullyShutdownGroup))
        let web = configuration.orchestration.web
        if web.enabled {
            // After the orchestration in the group, so it stops first: the pool it reads is the service's.
            let queries = TaskQueries(pool: service.databasePool, orchestration: service)
            services.append(
                .init(
                    service: OrchestrationWebServer(web: web, queries: queries), successTerminationBehavior: .gracefullyShutdownGroup,
                    failureTerminationBehavior: .gracefullyShutdownGroup))
        }
        var groupConfiguration = ServiceGroupConfiguration(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        // The messages in hand get one statement timeout (each statement is bounded by it) plus a
        // margin; then what is left is cancelled, and those messages return after their visibility timeout.
        groupConfiguration.maximumGracefulShutdownDuration =
            .milliseconds(configuration.common.database.statementTimeoutMs) + .seconds(5)
        try await ServiceGroup(configuration: groupConfiguration).run()
    }

    /// The configuration as `run` loads it (`common` and `orchestration` files); exits with EX_CONFIG
    /// (78) and every error when invalid.
    static func loadConfiguration(_ path: String?, command: String) throws -> TaskerConfiguration {
        let loader = ConfigurationLoader(context: "orchestration")
        do {
            let loaded = try path.map { try loader.load(file: $0) } ?? loader.load()
            let logger = Logger(label: "tasker.configuration")
            for warning in loaded.warnings { logger.warning("configuration warning", metadata: ["warning": "\(warning)"]) }
            return loaded.configuration
        } catch {
            FileHandle.standardError.write(Data("tasker-dev \(command): invalid configuration\n\(error)\n".utf8))
            throw ExitCode(78)
        }
    }
}
