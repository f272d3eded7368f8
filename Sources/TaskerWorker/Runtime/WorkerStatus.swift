import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres

/// The worker's status (the statistics behind `/health/detailed` and `/metrics/worker`):
/// `WorkerRuntime.status()`.
package struct WorkerStatus: Sendable {
    package var workerID: String
    package var publicID: String
    package var statistics: WorkerStatistics.Snapshot
    package var pool: PostgresPoolStatistics
    var acceptingSteps: Bool
    var handlerPermitsInUse: Int
    var handlerPermits: Int
    var overdueHandlers: Int
    package var namespaces: [String]
}
