import Foundation
import TaskerModel
import TaskerPostgres

/// Everything the worker can be asked to do (upstream `WorkerCommand`, without the cases nothing
/// here sends). The `ActorCommandProcessor` routes each command to the actor that owns it.
package enum WorkerCommand: Sendable {
    /// Claim and run a step from a raw queue message (decoded by the executor; poison is archived).
    case executeStepFromMessage(StepDelivery)
    /// Claim and run the steps of one poll read together (one transaction for their claims).
    case executeStepsFromMessages([StepDelivery])
    /// Report the worker's status.
    case getWorkerStatus
    /// Turn claiming (event integration) on or off.
    case setEventIntegration(enabled: Bool)
    /// Stop claiming; in-flight work drains through the pipeline.
    case shutdown
}

/// What a command answers.
package enum WorkerCommandResponse: Sendable {
    case accepted
    /// The outcome of `executeStepFromMessage`.
    case delivery(DeliveryOutcome)
    /// The outcomes of `executeStepsFromMessages`, in order.
    case deliveries([DeliveryOutcome])
    case status(WorkerStatus)
}

/// The worker's status (the statistics behind `/health/detailed` and `/metrics/worker`).
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
