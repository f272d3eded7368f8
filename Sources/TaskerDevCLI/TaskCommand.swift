import ArgumentParser
import Foundation
import TaskerHTTP
import TaskerModel
import TaskerOrchestration
import TaskerWorker

/// `tasker-dev task show|list|cancel`: what happened to tasks, read from the database through the task
/// API's own queries (see `TaskDatabase`). Readable text by default; `--json` prints the API's documents.
struct TaskCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "task",
        abstract: "Show, list and cancel tasks (the orchestration REST API's answers, read from the database).",
        subcommands: [Show.self, List.self, Cancel.self])

    /// Options every `task` subcommand takes.
    struct Common: ParsableArguments {
        @Flag(help: "Print the orchestration API's JSON document instead of text.") var json = false
        @Option(
            name: .customLong("config"), help: "A pre-merged TOML file (default: TASKER_CONFIG_PATH, else config/tasker by TASKER_ENV).")
        var configPath: String?
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A task's status, context and steps (state, attempts, result or error).")
        @Argument(help: "The task uuid.") var id: String
        @OptionGroup var common: Common

        func run() async throws {
            WorkerLogging.bootstrap()
            let task = try TaskCommand.uuid(id, command: "task show")
            let configPath = common.configPath
            let json = common.json
            let output = try await TaskDatabase.withQueries(configPath: configPath, command: "task show") { queries in
                try await TaskCommand.report(task, queries: queries, json: json, command: "task show")
            }
            print(output)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Tasks, newest first, optionally of one namespace or state.")
        @Option(help: "Only tasks of this namespace.") var namespace: String?
        @Option(help: "Only tasks in this state (pending, steps_in_process, complete, error, cancelled, …).") var state: String?
        @Option(help: "Tasks per page (at most 100).") var limit: Int = 25
        @Option(help: "Page (1 = newest).") var page: Int = 1
        @OptionGroup var common: Common

        func run() async throws {
            WorkerLogging.bootstrap()
            var query = [("per_page", String(limit)), ("page", String(page))]
            if let namespace { query.append(("namespace", namespace)) }
            if let state { query.append(("status", state)) }
            let filter: TaskListFilter
            do {
                filter = try TaskListFilter(query: query)
            } catch {
                throw TaskDatabase.fail(
                    "task list",
                    error.message.replacingOccurrences(of: "per_page", with: "--limit")
                        .replacingOccurrences(of: "status", with: "--state"))
            }
            let configPath = common.configPath
            let json = common.json
            let output = try await TaskDatabase.withQueries(configPath: configPath, command: "task list") { queries in
                let document = try await TaskCommand.answer("task list") { () async throws(TaskAPIError) in try await queries.list(filter) }
                return json ? String(decoding: document, as: UTF8.self) : TaskReport.list(TaskReport.parse(document))
            }
            print(output)
        }
    }

    struct Cancel: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cancel a task: it and its steps no worker holds become cancelled (a running step finishes).")
        @Argument(help: "The task uuid.") var id: String
        @OptionGroup var common: Common

        func run() async throws {
            WorkerLogging.bootstrap()
            let task = try TaskCommand.uuid(id, command: "task cancel")
            let configPath = common.configPath
            let json = common.json
            let output = try await TaskDatabase.withQueries(configPath: configPath, command: "task cancel") { queries in
                _ = try await TaskCommand.answer("task cancel") { () async throws(TaskAPIError) in try await queries.cancel(task) }
                return try await TaskCommand.report(task, queries: queries, json: json, command: "task cancel")
            }
            print(output)
        }
    }

    /// `text` as a task uuid, or a clear failure.
    static func uuid(_ text: String, command: String) throws -> UUID {
        do {
            return try TaskAPIError.parseUUID(text, what: "ID")
        } catch {
            throw TaskDatabase.fail(command, error.message)
        }
    }

    /// The task and its steps, as text or as `{"task": TaskResponse, "workflow_steps": [StepResponse]}`.
    static func report(_ task: UUID, queries: TaskQueries, json: Bool, command: String) async throws -> String {
        let (taskDocument, stepsDocument) = try await answer(command) { () async throws(TaskAPIError) in
            guard let document = try await queries.task(task), let steps = try await queries.steps(task) else {
                throw TaskAPIError(.notFound, "task \(task.uuidString.lowercased()) does not exist")
            }
            return (document, steps)
        }
        if json {
            return #"{"task":"# + String(decoding: taskDocument, as: UTF8.self) + #","workflow_steps":"#
                + String(decoding: stepsDocument, as: UTF8.self) + "}"
        }
        return TaskReport.task(TaskReport.parse(taskDocument), steps: TaskReport.parse(stepsDocument))
    }

    /// `body`'s answer; a `TaskAPIError` becomes its message on stderr and exit status 1.
    static func answer<T: Sendable>(_ command: String, _ body: () async throws(TaskAPIError) -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw TaskDatabase.fail(command, error.message)
        }
    }
}
