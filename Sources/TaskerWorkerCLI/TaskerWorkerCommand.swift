import ArgumentParser

/// `tasker-worker`: the Swift Tasker worker daemon and its tools.
@main
struct TaskerWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tasker-worker",
        abstract: "A Tasker worker in Swift: claims PGMQ step messages, runs step handlers, reports results.",
        subcommands: [RunCommand.self, MigrateCommand.self, ConfigCommand.self, OrchestrateCommand.self, SubmitCommand.self,
                      ProgressCommand.self],
        defaultSubcommand: RunCommand.self)
}
