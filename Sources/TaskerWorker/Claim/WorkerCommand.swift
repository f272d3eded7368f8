import Foundation
import TaskerModel
import TaskerPostgres

/// Everything the worker can be asked to do (upstream `WorkerCommand`, without the cases nothing
/// here sends). The `ActorCommandProcessor` routes each command to the actor that owns it.
public enum WorkerCommand: Sendable {
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
public enum WorkerCommandResponse: Sendable {
    case accepted
    /// The outcome of `executeStepFromMessage`.
    case delivery(DeliveryOutcome)
    /// The outcomes of `executeStepsFromMessages`, in order.
    case deliveries([DeliveryOutcome])
    case status(WorkerStatus)
}

/// The worker's status (the statistics behind `/health/detailed` and `/metrics/worker`).
public struct WorkerStatus: Sendable {
    public var workerID: String
    public var publicID: String
    public var statistics: WorkerStatistics.Snapshot
    public var pool: PostgresPoolStatistics
    public var acceptingSteps: Bool
    public var handlerPermitsInUse: Int
    public var handlerPermits: Int
    public var overdueHandlers: Int
    public var namespaces: [String]
}
