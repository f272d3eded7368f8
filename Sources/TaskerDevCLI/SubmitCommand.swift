import ArgumentParser
import Foundation
import TaskerModel
import TaskerOrchestration
import TaskerPostgres
import TaskerWorker

/// `tasker-worker submit NAMESPACE NAME VERSION --context JSON`: send a task request to
/// `orchestration_task_requests`, where a running `tasker-worker orchestrate` picks it up; or,
/// with `--direct`, create and start the task in this process and print its UUID.
struct SubmitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "submit",
        abstract: "Request a task run (through orchestration_task_requests, or --direct).")

    @Argument(help: "Template namespace (namespace_name).") var namespace: String
    @Argument(help: "Template name.") var name: String
    @Argument(help: "Template version.") var version: String

    @Option(help: "The task context as a JSON object.") var context: String = "{}"
    @Option(help: "initiator recorded on the task.") var initiator: String = "tasker-worker submit"
    @Option(help: "reason recorded on the task.") var reason: String = "submitted from the command line"
    @Flag(help: "Create and start the task here instead of queueing the request.") var direct = false

    @Option(name: .customLong("config"), help: "A pre-merged TOML file (default: TASKER_CONFIG_PATH, else config/tasker by TASKER_ENV).")
    var configPath: String?

    func run() async throws {
        WorkerLogging.bootstrap()
        let contextValue: JSONValue
        do {
            contextValue = try JSONDecoder().decode(JSONValue.self, from: Data(context.utf8))
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
        let configuration = try OrchestrateCommand.loadConfiguration(configPath, command: "submit")
        let request = TaskRequest(
            namespace: namespace, name: name, version: version, context: contextValue,
            initiator: initiator, sourceSystem: "tasker-worker-cli", reason: reason)
        let database = configuration.common.database
        var poolConfiguration = PostgresPoolConfiguration(database: database, applicationName: "tasker-submit")
        poolConfiguration.maxConnections = 2
        poolConfiguration.minConnections = 0
        let pool = PostgresConnectionPool(configuration: poolConfiguration)
        do {
            if direct {
                let service = OrchestrationService(pool: pool, databaseURL: database.url)
                guard case .taskInitialized(let created) = try await service.process(.initializeTask(request)) else { return }
                print(created.taskUUID.uuidString.lowercased())
            } else {
                let message = TaskRequestMessage(taskRequest: request)
                let body = try PostgresJSON(message)
                let msgID = try await pool.withConnection { c in
                    try await PGMQ.sendWithNotify(c, queue: QueueNames.taskRequests, message: body)
                }
                print("request \(message.requestID.uuidString.lowercased()) queued (msg_id \(msgID))")
            }
            await pool.close()
        } catch {
            await pool.close()
            FileHandle.standardError.write(Data("tasker-worker submit: \(error)\n".utf8))
            throw ExitCode.failure
        }
    }
}
