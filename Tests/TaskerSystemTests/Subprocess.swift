import Foundation
import TaskerTestSupport

/// The one way the tests run a program to its end: stdin from a file, stdout and stderr into
/// files (a pipe that fills up would block the child), the exit status. `WorkerProcess` is the
/// long-running variant (a worker started, watched and stopped).
enum Subprocess {
    struct Outcome: CustomStringConvertible {
        let status: Int32
        /// False when it died on a signal (`status` is then the signal's number).
        let exitedNormally: Bool
        let stdoutData: Data
        let stderr: String
        /// True when it was stopped for running past its timeout.
        var timedOut = false

        var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
        var description: String { "status \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
    }

    /// Runs `executable arguments…` with exactly `environment` in `directory` (default: a scratch
    /// directory of its own) and waits for its exit.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String],
        directory: String? = nil, stdin: Data? = nil
    ) throws -> Outcome {
        try start(executable, arguments, environment: environment, directory: directory, stdin: stdin).finish()
    }

    /// Starts `executable arguments…` as `run` does, for a caller that signals it (`process`) before
    /// collecting its output with `finish()`.
    /// `combinedOutput`: stdout and stderr go to one file (`output`, in the order written), as a
    /// daemon's log does.
    static func start(
        _ executable: String, _ arguments: [String], environment: [String: String],
        directory: String? = nil, stdin: Data? = nil, combinedOutput: Bool = false
    ) throws -> Running {
        try Running(
            executable, arguments, environment: environment, directory: directory, stdin: stdin,
            combinedOutput: combinedOutput)
    }

    /// As `run`, stopped once `timeout` has passed (SIGTERM, 2 s grace, SIGKILL; `timedOut` set).
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String],
        directory: String? = nil, stdin: Data? = nil, timeout: Duration
    ) async throws -> Outcome {
        let launch = try start(executable, arguments, environment: environment, directory: directory, stdin: stdin)
        let process = launch.process
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while process.isRunning, ContinuousClock.now < deadline, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(20))
        }
        let timedOut = process.isRunning
        if timedOut {
            process.terminate()
            let grace = ContinuousClock.now.advanced(by: .seconds(2))
            while process.isRunning, ContinuousClock.now < grace { try? await Task.sleep(for: .milliseconds(20)) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        var outcome = try launch.finish()
        outcome.timedOut = timedOut
        return outcome
    }

    /// One started run: its scratch directory (stdin, stdout, stderr files) and process.
    final class Running {
        let process = Process()
        private let scratch: URL
        private let handles: [FileHandle]

        private let stdoutFile: URL
        private let stderrFile: URL

        init(
            _ executable: String, _ arguments: [String], environment: [String: String], directory: String?,
            stdin: Data?, combinedOutput: Bool = false
        ) throws {
            scratch = FileManager.default.temporaryDirectory.appendingPathComponent("subprocess-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            stdoutFile = scratch.appendingPathComponent(combinedOutput ? "output" : "stdout")
            stderrFile = combinedOutput ? stdoutFile : scratch.appendingPathComponent("stderr")
            try (stdin ?? Data()).write(to: scratch.appendingPathComponent("stdin"))
            try Data().write(to: stdoutFile)
            try Data().write(to: stderrFile)
            let input = try FileHandle(forReadingFrom: scratch.appendingPathComponent("stdin"))
            let output = try FileHandle(forWritingTo: stdoutFile)
            let errors = combinedOutput ? output : try FileHandle(forWritingTo: stderrFile)
            handles = combinedOutput ? [input, output] : [input, output, errors]
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            process.currentDirectoryURL = URL(fileURLWithPath: directory ?? scratch.path)
            process.environment = environment
            process.standardInput = input
            process.standardOutput = output
            process.standardError = errors
            do {
                try ProcessLaunch.run(process)
            } catch {
                close()
                throw error
            }
        }

        /// What the child has written to stdout so far (with stderr when the output is combined).
        var output: String { (try? String(contentsOf: stdoutFile, encoding: .utf8)) ?? "" }

        /// Waits for the exit, then reads the output and removes the scratch directory.
        func finish() throws -> Outcome {
            process.waitUntilExit()
            defer { close() }
            return Outcome(
                status: process.terminationStatus, exitedNormally: process.terminationReason == .exit,
                stdoutData: try Data(contentsOf: stdoutFile),
                stderr: String(decoding: try Data(contentsOf: stderrFile), as: UTF8.self))
        }

        /// SIGTERM, then waits up to `timeout` for the exit; true if it exited.
        func terminate(within timeout: Duration) async -> Bool {
            process.terminate()
            try? await waitUntil(timeout: timeout) { !self.process.isRunning }
            return !process.isRunning
        }

        /// SIGKILL if still running.
        func kill() {
            if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        }

        /// Kills a child still running and removes the scratch directory.
        deinit {
            kill()
            close()
        }

        private func close() {
            for handle in handles { try? handle.close() }
            try? FileManager.default.removeItem(at: scratch)
        }
    }
}
