import ArgumentParser
import Foundation
import TaskerModel
import TaskerWorker

/// `tasker-worker config …`: configuration tools.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Configuration tools.", subcommands: [Check.self])

    /// `tasker-worker config check [FILE]`: print the effective configuration (secrets redacted) or the
    /// errors; exit non-zero on errors.
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Validate the configuration and print it with secrets redacted, or print every error.")

        @Argument(help: "A pre-merged TOML file (default: TASKER_CONFIG_PATH, else config/tasker by TASKER_ENV).")
        var file: String?

        func run() async throws {
            let result = ConfigurationCheck.run(file: file)
            if result.succeeded {
                print(result.output, terminator: "")
            } else {
                FileHandle.standardError.write(Data(result.output.utf8))
                throw ExitCode(result.exitCode)
            }
        }
    }
}
