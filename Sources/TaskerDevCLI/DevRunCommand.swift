import ArgumentParser
import TaskerExamples
import TaskerWorker

/// `tasker-dev run`: the worker as `tasker-worker run` runs it, plus the handlers of the example
/// workflows in `config/tasks/examples/` (`TaskerExamples`), for `scripts/dev` and local trials.
struct DevRunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the worker with the built-in and the example handlers (configured as tasker-worker run).")

    @Option(name: .customLong("config"), help: "A pre-merged TOML file (default: TASKER_CONFIG_PATH, else config/tasker by TASKER_ENV).")
    var configPath: String?

    func run() async throws {
        WorkerLogging.bootstrap()
        try await WorkerLauncher.runExitingOnLaunchError(
            handlers: Self.handlers(), configPath: configPath,
            command: "tasker-dev")
    }

    /// The built-ins and the example handlers.
    static func handlers() -> HandlerRegistry {
        let handlers = HandlerRegistry.withBuiltIns()
        ExampleHandlers.register(into: handlers)
        return handlers
    }
}
