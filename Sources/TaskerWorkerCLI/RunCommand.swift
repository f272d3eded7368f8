import ArgumentParser
import Foundation
import TaskerExamples
import TaskerWorker

/// `tasker-worker run`: load the configuration and run the worker until SIGINT/SIGTERM, with the
/// built-in diagnostic handlers only (`tasker.noop`, `tasker.echo`, `tasker.fail`, `tasker.sleep`).
/// `--examples` adds the handlers of the example workflows in `config/tasks/examples/`
/// (`TaskerExamples`), for `scripts/dev` and local trials; production runs never need them.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Run the worker (configured by TASKER_ENV / TASKER_CONFIG_PATH / DATABASE_URL).")

    @Option(name: .customLong("config"), help: "A pre-merged TOML file (default: TASKER_CONFIG_PATH, else config/tasker by TASKER_ENV).")
    var configPath: String?

    @Flag(name: .customLong("examples"),
          help: "Also register the example workflows' handlers (examples.*), for scripts/dev and local trials.")
    var examples = false

    func run() async throws {
        LogSetup.bootstrap()
        do {
            try await WorkerLauncher.run(handlers: Self.handlers(examples: examples), configPath: configPath)
        } catch let error as WorkerLauncher.LaunchError {
            FileHandle.standardError.write(Data("tasker-worker: \(error)\n".utf8))
            throw ExitCode(78)  // EX_CONFIG
        }
    }

    /// The handlers `run` registers: the built-ins, plus the example handlers when asked for.
    static func handlers(examples: Bool) -> HandlerRegistry {
        let handlers = HandlerRegistry.withBuiltIns()
        if examples { ExampleHandlers.register(into: handlers) }
        return handlers
    }
}
