import ArgumentParser
import Foundation
import TaskerWorker

/// `tasker-worker run`: load the configuration and run the worker until SIGINT/SIGTERM, with the
/// built-in diagnostic handlers only (`tasker.noop`, `tasker.echo`, `tasker.fail`, `tasker.sleep`).
/// Handler authors build their own executable with `WorkerLauncher`; the example workflows' handlers
/// run in `tasker-dev run`, never in this binary.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Run the worker (configured by TASKER_ENV / TASKER_CONFIG_PATH / DATABASE_URL).")

    @Option(name: .customLong("config"), help: "A pre-merged TOML file (default: TASKER_CONFIG_PATH, else config/tasker by TASKER_ENV).")
    var configPath: String?

    func run() async throws {
        WorkerLogging.bootstrap()
        try await WorkerLauncher.runExitingOnLaunchError(
            handlers: HandlerRegistry.withBuiltIns(), configPath: configPath,
            command: "tasker-worker")
    }
}
