import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension WorkerLauncher {
    /// `run` as a command-line program runs it: a `LaunchError` (invalid configuration) is printed
    /// on stderr after `command:` and the process exits with EX_CONFIG (78), the code the container
    /// entrypoint and `tasker-worker migrate` use for configuration errors. Other errors are thrown.
    public static func runExitingOnLaunchError(
        handlers: HandlerRegistry, configPath: String?,
        command: String
    ) async throws {
        do {
            try await run(handlers: handlers, configPath: configPath)
        } catch let error as LaunchError {
            FileHandle.standardError.write(Data("\(command): \(error)\n".utf8))
            exit(78)  // EX_CONFIG
        }
    }
}
