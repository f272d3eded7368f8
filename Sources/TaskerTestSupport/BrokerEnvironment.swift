import Foundation
import Logging
import TaskerAMQP
import Testing

/// The private broker `scripts/test` starts: its URL and a way to run rabbitmqctl against it
/// (shared by the AMQP client's tests and the worker's RabbitMQ tests).
package enum BrokerEnvironment {
    package static let url = ProcessInfo.processInfo.environment["TASKER_TEST_RABBITMQ_URL"].flatMap { $0.isEmpty ? nil : $0 }

    /// Broker tests run only with a broker; without one they are skipped with this reason.
    package static let available = Testing.ConditionTrait.enabled(
        if: url != nil, "TASKER_TEST_RABBITMQ_URL is not set: run the tests with scripts/test, which starts a private RabbitMQ")

    /// `name` is the `connection_name` the broker shows (`forceClose(connectionsNamed:)` finds it by it).
    package static func configuration(heartbeatSeconds: UInt16 = 30, name: String = "tasker-amqp-tests") throws -> AMQPConfiguration {
        var configuration = try AMQPConfiguration(url: url ?? "amqp://guest:guest@127.0.0.1:5672/%2F")
        configuration.heartbeatSeconds = heartbeatSeconds
        configuration.connectionName = name
        return configuration
    }

    package static func connect(heartbeatSeconds: UInt16 = 30, name: String = "tasker-amqp-tests") async throws -> AMQPConnection {
        try await AMQPConnection.connect(
            try configuration(heartbeatSeconds: heartbeatSeconds, name: name), logger: Logger(label: "amqp-test"))
    }

    /// Has the broker close (320 CONNECTION_FORCED) only the connections named `name`, so that tests
    /// running in parallel keep theirs. Returns how many it closed.
    @discardableResult
    package static func forceClose(connectionsNamed name: String) async throws -> Int {
        try await forceClose(connectionsNamed: [name])
    }

    /// As `forceClose(connectionsNamed:)` for every connection named one of `names`: one listing,
    /// then the closes at the same time (each rabbitmqctl takes a second or two), so the
    /// connections drop together.
    @discardableResult
    package static func forceClose(connectionsNamed names: [String]) async throws -> Int {
        let listing = try await rabbitmqctl("list_connections", "--no-table-headers", "--silent", "pid", "client_properties")
        let pids = listing.split(separator: "\n").filter { line in names.contains { line.contains("\"\($0)\"") } }
            .map { String($0.split(separator: "\t")[0]) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for pid in pids { group.addTask { try await rabbitmqctl("close_connection", pid, "forced by the test") } }
            try await group.waitForAll()
        }
        return pids.count
    }

    /// A name no other test (or run) uses.
    package static func uniqueName(_ prefix: String) -> String {
        "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// Runs `rabbitmqctl ARGS` against the test broker (`TASKER_TEST_RABBITMQ_CTL`); returns its output.
    @discardableResult
    package static func rabbitmqctl(_ arguments: String...) async throws -> String {
        guard let command = ProcessInfo.processInfo.environment["TASKER_TEST_RABBITMQ_CTL"], !command.isEmpty else {
            throw BrokerControlError(message: "TASKER_TEST_RABBITMQ_CTL is not set (scripts/test sets it)")
        }
        let parts = command.split(separator: " ").map(String.init)
        let (status, text) = try await run(parts[0], Array(parts.dropFirst()) + arguments)
        guard status == 0 else {
            throw BrokerControlError(message: "rabbitmqctl \(arguments.joined(separator: " ")) exited \(status): \(text)")
        }
        return text
    }

    /// Runs a program to its end; returns its exit status and output (stdout and stderr). Waits by
    /// the termination handler (never blocking the cooperative pool); the output goes to a file, not
    /// a pipe that a daemon it starts (epmd) could keep open.
    package static func run(_ executable: String, _ arguments: [String]) async throws -> (Int32, String) {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("amqp-test-\(UUID().uuidString).out")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let handle = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = handle
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try ProcessLaunch.run(process) } catch { continuation.resume(throwing: error) }
        }
        try handle.close()
        return (status, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
    }
}

struct BrokerControlError: Error, CustomStringConvertible {
    package let message: String
    package var description: String { message }
}
