import ArgumentParser
import Foundation
import TaskerModel
import TaskerOrchestration
import TaskerPostgres
import TaskerStore
import TaskerWorker

/// `tasker-dev submit NAMESPACE NAME VERSION --context JSON`: create and start the task in this process
/// (the task API's creation, `TaskQueries.create`: the orchestration's own task initialization) and
/// print its uuid; an unknown template or a duplicate identity fails (exit 1) with the reason. `--wait`
/// then waits for the outcome and prints it with the step results (exit 0 complete, 1 error or
/// cancelled, 2 still running after `--timeout`). `--queue` instead sends a task request to
/// `orchestration_task_requests` (PGMQ's, or the broker's on RabbitMQ: `TaskRequestSender`) for a
/// running `tasker-dev orchestrate` (prints the request id; its outcome shows only in that
/// orchestration's log and the database).
struct SubmitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "submit",
        abstract: "Create and start a task and print its uuid (--wait: and its outcome; --queue: queue a request instead).")

    @Argument(help: "Template namespace (namespace_name).") var namespace: String
    @Argument(help: "Template name.") var name: String
    @Argument(help: "Template version.") var version: String

    @Option(help: "The task context as a JSON object.") var context: String = "{}"
    @Option(help: "initiator recorded on the task.") var initiator: String = "tasker-dev submit"
    @Option(help: "reason recorded on the task.") var reason: String = "submitted from the command line"
    @Flag(help: "Create and start the task here (the default; kept for scripts).") var direct = false
    @Flag(help: "Queue a task request for a running orchestrate instead (prints the request id, not the task uuid).")
    var queue = false
    @Flag(help: "After the uuid, wait for the task's outcome and print it with the step results.") var wait = false
    @Option(help: "Seconds --wait waits at most (then exit status 2).") var timeout: Int = 300
    @Flag(help: "With --wait: print the outcome as the task API's JSON.") var json = false

    @Option(name: .customLong("config"), help: "A pre-merged TOML file (default: TASKER_CONFIG_PATH, else config/tasker by TASKER_ENV).")
    var configPath: String?

    func validate() throws {
        if queue && (direct || wait) { throw ValidationError("--queue cannot be combined with --direct or --wait") }
        if json && !wait { throw ValidationError("--json needs --wait") }
        guard timeout > 0 else { throw ValidationError("--timeout must be a positive number of seconds") }
    }

    func run() async throws {
        WorkerLogging.bootstrap()
        let contextValue: JSONValue
        do {
            contextValue = try UntrustedJSON.decode(
                JSONValue.self, from: context, limit: UntrustedJSON.maximumValueDepth, what: "--context")
        } catch let error as JSONNestingError {
            throw ValidationError("\(error)")
        } catch let DecodingError.dataCorrupted(corrupted) {
            // JSONDecoder only says "not valid JSON"; JSONSerialization's parser says where
            // ("Invalid value around character 1.").
            var reason = corrupted.debugDescription
            do { _ = try JSONSerialization.jsonObject(with: Data(context.utf8), options: .fragmentsAllowed) } catch {
                reason = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? reason
            }
            throw ValidationError("--context is not valid JSON: \(reason)\n  got: \(context.prefix(200))")
        } catch {
            throw ValidationError("--context is not valid JSON: \(error)")
        }
        guard case .object = contextValue else { throw ValidationError("--context must be a JSON object") }
        let request = TaskRequest(
            namespace: namespace, name: name, version: version, context: contextValue,
            initiator: initiator, sourceSystem: "tasker-dev", reason: reason)
        guard queue else { return try await createAndWait(request) }
        let configuration = try OrchestrateCommand.loadConfiguration(configPath, command: "submit")
        let database = configuration.common.database
        var poolConfiguration = PostgresPoolConfiguration(database: database, applicationName: "tasker-submit")
        poolConfiguration.maxConnections = 2
        poolConfiguration.minConnections = 0
        let pool = PostgresConnectionPool(configuration: poolConfiguration)
        do {
            let message = TaskRequestMessage(taskRequest: request)
            let transport = try await TaskRequestSender.with(
                configuration.common, pool: pool, connectionName: "tasker-dev submit"
            ) { sender in
                try await sender.send(message)
                return sender.transportName
            }
            print("request \(message.requestID.uuidString.lowercased()) queued on \(transport)")
            await pool.close()
        } catch {
            await pool.close()
            FileHandle.standardError.write(Data("tasker-dev submit: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }

    /// Creates the task, prints its uuid at once; with `--wait`, polls until it finishes and prints the
    /// outcome with its steps.
    private func createAndWait(_ request: TaskRequest) async throws {
        let (wait, timeout, json) = (self.wait, self.timeout, self.json)
        let outcome = try await TaskDatabase.withQueries(configPath: configPath, command: "submit") { queries in
            let created = try await TaskCommand.answer("submit") { () async throws(TaskAPIError) in try await queries.create(request) }
            guard let task = TaskReport.parse(created)["task_uuid"]?.stringValue.flatMap(UUID.init(uuidString:)) else {
                throw TaskDatabase.fail("submit", "the created task's answer has no task_uuid")
            }
            // Written at once (not through print's buffer): a script reads the uuid while the task runs.
            FileHandle.standardOutput.write(Data((task.uuidString.lowercased() + "\n").utf8))
            guard wait else { return Int32(0) }
            let deadline = ContinuousClock.now.advanced(by: .seconds(timeout))
            var status = "pending"
            while ContinuousClock.now < deadline {
                let document = try await TaskCommand.answer("submit") { () async throws(TaskAPIError) in try await queries.task(task) }
                status = document.flatMap { TaskReport.parse($0)["status"]?.stringValue } ?? "missing"
                if Self.finishedStates.contains(status) {
                    let report = try await TaskCommand.report(task, queries: queries, json: json, command: "submit")
                    FileHandle.standardOutput.write(Data((report + "\n").utf8))
                    return status == "complete" ? 0 : 1
                }
                try await Task.sleep(for: .milliseconds(250))
            }
            FileHandle.standardError.write(
                Data("tasker-dev submit: task \(task.uuidString.lowercased()) is still \(status) after \(timeout) s\n".utf8))
            return 2
        }
        if outcome != 0 { throw ExitCode(outcome) }
    }

    /// The states a task never leaves on its own.
    static let finishedStates: Set<String> = ["complete", "error", "cancelled", "resolved_manually"]
}
