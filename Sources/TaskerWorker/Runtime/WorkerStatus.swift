import TaskerModel
import TaskerPostgres

/// The worker's status (the statistics behind `/health/detailed` and `/metrics/worker`):
/// `WorkerRuntime.status()`.
package struct WorkerStatus: Sendable {
    package var workerID: String
    package var publicID: String
    package var statistics: WorkerStatistics.Snapshot
    package var pool: PostgresPoolStatistics
    package var acceptingSteps: Bool
    package var handlerPermitsInUse: Int
    package var handlerPermits: Int
    package var overdueHandlers: Int
    package var namespaces: [String]
}
