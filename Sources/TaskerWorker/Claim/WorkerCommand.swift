import Foundation
import TaskerPostgres
import TaskerModel

/// Everything the worker can be asked to do (upstream `WorkerCommand`). The
/// `ActorCommandProcessor` routes each command to the actor that owns it.
public enum WorkerCommand: Sendable {
    /// Claim and run a step named by an already-decoded message.
    case executeStep(StepMessage, queue: String, msgID: Int64)
    /// As `executeStep`, carrying the correlation id explicitly (it wins over the message's).
    case executeStepWithCorrelation(StepMessage, queue: String, msgID: Int64, correlationID: UUID)
    /// Claim and run a step from a raw queue message (decoded by the executor; poison is archived).
    case executeStepFromMessage(StepDelivery)
    /// Claim and run the steps of one poll read together (one transaction for their claims).
    case executeStepsFromMessages([StepDelivery])
    /// Store a result produced outside the dispatch service (e.g. a handler running elsewhere).
    case sendStepResult(StepCompletion)
    /// Hand a finished step to the completion pipeline.
    case processStepCompletion(StepCompletion)
    /// Report the worker's status.
    case getWorkerStatus
    /// Turn claiming (event integration) on or off.
    case setEventIntegration(enabled: Bool)
    /// Check the worker's health.
    case healthCheck
    /// Stop claiming; in-flight work drains through the pipeline.
    case shutdown
}

/// What a command answers.
public enum WorkerCommandResponse: Sendable {
    case accepted
    /// The outcome of an `executeStep…` command.
    case delivery(DeliveryOutcome)
    /// The outcomes of `executeStepsFromMessages`, in order.
    case deliveries([DeliveryOutcome])
    case status(WorkerStatus)
    case health(WorkerHealth)
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

/// A health verdict with the reason when not healthy.
public struct WorkerHealth: Sendable, Equatable {
    public enum Status: String, Sendable { case healthy, degraded, unhealthy }
    public var status: Status
    public var reasons: [String]
}
