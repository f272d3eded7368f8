import ArgumentParser
import TaskerModel
import TaskerStore
import TaskerWorker

/// `tasker-worker`: the Swift Tasker worker daemon and its operator tools. The development tools
/// (example handlers, companion orchestration, submit, progress) are in `tasker-dev`.
@main
struct TaskerWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tasker-worker",
        abstract: "A Tasker worker in Swift: claims PGMQ step messages, runs step handlers, reports results.",
        version: "tasker-worker \(TaskerWorkerVersion.current)",
        subcommands: [RunCommand.self, MigrateCommand.self, ConfigCommand.self, StatementsCommand.self],
        defaultSubcommand: RunCommand.self)
}
