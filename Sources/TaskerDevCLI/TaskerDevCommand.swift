import ArgumentParser
import TaskerWorker

/// `tasker-dev`: the development tools next to the production `tasker-worker`: the worker with the
/// example workflows' handlers, the companion orchestration (with its task REST API), task submission,
/// task status (`task show|list|cancel`) and the live progress
/// display of `scripts/dev`.
@main
struct TaskerDevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tasker-dev",
        abstract: "Development tools for the Swift Tasker worker: examples, companion orchestration, submit, task, progress.",
        version: "tasker-dev \(TaskerWorkerVersion.current)",
        subcommands: [DevRunCommand.self, OrchestrateCommand.self, SubmitCommand.self, TaskCommand.self, ProgressCommand.self])
}
