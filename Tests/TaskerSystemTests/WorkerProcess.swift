import Foundation
import TaskerTestSupport
import Testing

/// The real `tasker-worker` binary run as a child process on a test database (TASKER_ENV=test, text
/// logs, operator servers on free loopback ports), its output in a log file of its own. Killed
/// (SIGKILL) by `kill()` if still running; callers `defer { child.kill() }` so that no child is
/// ever left behind.
final class WorkerProcess {
    private let child: Subprocess.Running
    var process: Process { child.process }

    /// Starts `tasker-worker arguments…` in the repository root with `environment` added to the
    /// test environment (`DATABASE_URL` = `db`'s, `TASKER_TEMPLATE_PATH` = `templatePath`).
    /// `softFileLimit`: started under this soft `RLIMIT_NOFILE` (through `sh -c 'ulimit -Sn N'`).
    /// `executable`: `CommandLineTests.devBinary` runs `tasker-dev` instead.
    init(
        _ arguments: [String], db: TestDatabase, templatePath: String,
        environment: [String: String] = [:], softFileLimit: Int? = nil,
        executable: String = CommandLineTests.binary
    ) throws {
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "TASKER_CONFIG_PATH")
        env["DATABASE_URL"] = db.url
        env["TASKER_ENV"] = "test"
        env["TASKER_LOG_FORMAT"] = "text"
        // Tests run in parallel: let the operator servers pick free ports.
        env["TASKER_WEB_BIND_ADDRESS"] = "127.0.0.1:0"
        env["TASKER_WORKER_GRPC_BIND_ADDRESS"] = "127.0.0.1:0"
        env["TASKER_TEMPLATE_PATH"] = templatePath
        env.merge(environment) { _, new in new }
        if let softFileLimit {
            child = try Subprocess.start(
                "/bin/sh", ["-c", "ulimit -Sn \(softFileLimit) && exec \"$0\" \"$@\"", executable] + arguments,
                environment: env, directory: TestEnvironment.repositoryRoot, combinedOutput: true)
        } else {
            child = try Subprocess.start(
                executable, arguments, environment: env, directory: TestEnvironment.repositoryRoot, combinedOutput: true)
        }
    }

    /// What the worker has logged so far.
    var log: String { child.output }

    /// SIGKILL if still running.
    func kill() { child.kill() }

    /// SIGTERM, then waits up to `timeout` for the exit; true if it exited.
    func terminate(within timeout: Duration) async throws -> Bool { await child.terminate(within: timeout) }

    /// The address of the "REST server listening" log line once logged (nil if the worker exited
    /// first or `timeout` passed).
    func restAddress(timeout: Duration = .seconds(60)) async throws -> String? {
        var address: String?
        try await waitUntil(timeout: timeout) {
            address = Self.restAddress(in: self.log)
            return address != nil || !self.process.isRunning
        }
        return address
    }

    /// The address of the worker's "REST server listening" log line (text format), if logged yet.
    static func restAddress(in log: String) -> String? {
        for line in log.split(separator: "\n") where line.contains("REST server listening") {
            guard let range = line.range(of: "address=") else { continue }
            let value = line[range.upperBound...].prefix { $0 != " " }.filter { $0 != "\"" }
            if !value.isEmpty { return String(value) }
        }
        return nil
    }
}
