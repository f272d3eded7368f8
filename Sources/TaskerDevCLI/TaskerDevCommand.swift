import ArgumentParser
import TaskerWorker

/// `tasker-dev`: the development tools next to the production `tasker-worker`: the worker with the
/// example workflows' handlers, the companion orchestration, task submission and the live progress
/// display of `scripts/dev`.
@main
struct TaskerDevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tasker-dev",
        abstract: "Development tools for the Swift Tasker worker: examples, companion orchestration, submit, progress.",
        version: "tasker-dev \(TaskerWorkerVersion.current)",
        subcommands: [DevRunCommand.self, OrchestrateCommand.self, SubmitCommand.self, ProgressCommand.self])
}
