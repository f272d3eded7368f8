import ArgumentParser
import Foundation
import TaskerWorker

/// `tasker-worker run`: load the configuration and run the worker until SIGINT/SIGTERM.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Run the worker (configured by TASKER_ENV / TASKER_CONFIG_PATH / DATABASE_URL).")

    @Option(name: .customLong("config"), help: "A pre-merged TOML file (default: TASKER_CONFIG_PATH, else config/tasker by TASKER_ENV).")
    var configPath: String?

    func run() async throws {
        LogSetup.bootstrap()
        let loader = ConfigurationLoader()
        let loaded: LoadedConfiguration
        do {
            loaded = try configPath.map { try loader.load(file: $0) } ?? loader.load()
        } catch {
            FileHandle.standardError.write(Data("tasker-worker: invalid configuration\n\(error)\n".utf8))
            throw ExitCode(78)  // EX_CONFIG
        }
        for warning in loaded.warnings {
            FileHandle.standardError.write(Data("tasker-worker: warning: \(warning)\n".utf8))
        }
        try await WorkerDaemon(configuration: loaded.configuration).run()
    }
}
