import ArgumentParser
import TaskerStore
import TaskerWorker

/// `tasker-worker statements`: every statement of the step path and crash recovery, whole, as the
/// worker prepares it (`WorkerStatementCatalog`). Needs no database.
struct StatementsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "statements",
        abstract: "Print the SQL the worker prepares for claims, results and crash recovery, with its parameters.")

    @Option(help: "The worker queue the static statements address.")
    var queue = "worker_example_queue"

    @Option(help: "The PGMQ table layout of the static statements (\(WorkerStatementCatalog.layoutNames.joined(separator: ", "))).")
    var layout = WorkerStatementCatalog.layoutNames[0]

    @Flag(help: "Print JSON: {\"statements\":[{\"name\",\"parameters\",\"sql\"}]}.")
    var json = false

    func run() throws {
        do {
            print(try WorkerStatementCatalog.render(workerQueue: queue, layout: layout, json: json), terminator: "")
        } catch {
            throw ValidationError(error.description)
        }
    }
}
