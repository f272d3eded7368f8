import Foundation
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres

/// A step the scan found: its `in_progress` transition names a worker that has no unexpired
/// liveness lease (`RecoveryStatements.scan`).
struct LostWorkerStep: Sendable, Equatable {
    /// The `in_progress` transition seen (the compare-and-set of the recovery write).
    var transitionUUID: UUID
    package var stepUUID: UUID
    package var taskUUID: UUID
    package var correlationID: UUID
    /// The claiming worker's uuid (`worker_uuid` of the transition).
    var workerUUID: UUID

    package init(transitionUUID: UUID, stepUUID: UUID, taskUUID: UUID, correlationID: UUID, workerUUID: UUID) {
        self.transitionUUID = transitionUUID
        self.stepUUID = stepUUID
        self.taskUUID = taskUUID
        self.correlationID = correlationID
        self.workerUUID = workerUUID
    }

    init(row: PostgresRow) throws(PostgresError) {
        transitionUUID = try row.decode("transition_uuid")
        stepUUID = try row.decode("step_uuid")
        taskUUID = try row.decode("task_uuid")
        correlationID = try row.decode("correlation_id")
        workerUUID = try row.decode("worker_uuid")
    }
}

extension StepExecutionResult {
    /// The `error_type` of the result stored for a step whose worker died while running it.
    static let workerLostErrorType = "worker_lost"

    /// The retryable `worker_lost` error result stored for `step` by the worker `recoveredBy`.
    static func workerLost(
        _ step: LostWorkerStep, recoveredBy identity: WorkerIdentity, grace: Duration,
        now: Date = Date()
    ) -> StepExecutionResult {
        let lost = WorkerIdentity(uuid: step.workerUUID, hostname: "").workerID
        let failure = StepFailure(
            message:
                "The worker \(lost) that claimed this step is gone (its liveness lease was not renewed for "
                + "\(grace.inMilliseconds) ms); the step is retried",
            errorType: workerLostErrorType, retryable: true,
            context: [
                "worker_uuid": .string(step.workerUUID.uuidString.lowercased()),
                "recovered_by": .string(identity.uuid.uuidString.lowercased()),
            ])
        return .failure(
            stepUUID: step.stepUUID, failure: failure, startedAt: now, completedAt: now,
            workerID: identity.workerID, hostname: identity.hostname)
    }
}
