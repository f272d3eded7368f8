import ArgumentParser
import Foundation
import TaskerExamples
import TaskerWorker

/// `tasker-worker run`: load the configuration and run the worker until SIGINT/SIGTERM, with the
/// built-in diagnostic handlers (`tasker.noop`, `tasker.echo`, `tasker.fail`, `tasker.sleep`) and the
/// handlers of the example workflows in `config/tasks/examples/` (`TaskerExamples`).
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Run the worker (configured by TASKER_ENV / TASKER_CONFIG_PATH / DATABASE_URL).")

    @Option(name: .customLong("config"), help: "A pre-merged TOML file (default: TASKER_CONFIG_PATH, else config/tasker by TASKER_ENV).")
    var configPath: String?

    func run() async throws {
        LogSetup.bootstrap()
        do {
            let handlers = HandlerRegistry.withBuiltIns()
            ExampleHandlers.register(into: handlers)
            try await WorkerLauncher.run(handlers: handlers, configPath: configPath)
        } catch let error as WorkerLauncher.LaunchError {
            FileHandle.standardError.write(Data("tasker-worker: \(error)\n".utf8))
            throw ExitCode(78)  // EX_CONFIG
        }
    }
}
