import TaskerModel
import TaskerPostgres
import TaskerStore
import TaskerWorker

/// The statements pinned whole in `Tests/Fixtures/statements` (`StatementCatalogPinTests`, TaskerWorkerTests)
/// and prepared by PostgreSQL (`StatementCatalogTests`, TaskerSystemTests).
package enum PinnedStatements {
    /// The worker queue the worker's variants are rendered for.
    package static let workerQueue = "worker_example_queue"

    /// Every variant: the worker's (claim, result and recovery, static SQL on a queue of PGMQ's current
    /// layout), then `orchestration`'s (the orchestration's transitions: `TransitionRepository.Statements.catalog`,
    /// internal to TaskerOrchestration, which the tests pass).
    package static func all(orchestration: [NamedStatement]) throws -> [NamedStatement] {
        try WorkerStatementCatalog.statements(workerQueue: workerQueue, layout: .withLastReadAt) + orchestration
    }
}
