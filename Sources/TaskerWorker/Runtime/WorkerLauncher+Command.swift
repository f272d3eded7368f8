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
    /// The entry point for a handler author's `main.swift` (a `run` error thrown at top level would
    /// end the program with a crash report instead of the message).
    ///
    /// - Parameters:
    ///   - handlers: the handlers the worker runs, by callable.
    ///   - configPath: a pre-merged TOML file; nil: `TASKER_CONFIG_PATH`, else `config/tasker` by `TASKER_ENV`.
    ///   - command: the name the message starts with; by default the executable's file name.
    public static func runExitingOnLaunchError(
        handlers: HandlerRegistry, configPath: String? = nil,
        command: String = CommandLine.arguments.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "worker"
    ) async throws {
        do {
            try await run(handlers: handlers, configPath: configPath)
        } catch let error as LaunchError {
            FileHandle.standardError.write(Data("\(command): \(error)\n".utf8))
            exit(78)  // EX_CONFIG
        }
    }
}
