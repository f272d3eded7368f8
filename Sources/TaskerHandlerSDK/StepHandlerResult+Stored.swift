import Foundation
import TaskerStepModel

extension StepHandlerResult {
    /// The result stored for a handler's run: its ``StepHandlerResult``, a thrown ``StepFailure``
    /// as that failure, any other thrown error a retryable `handler_error` dispatch error carrying
    /// the error's description. The one rule of the worker's dispatcher and of `TaskerHandlerHost`.
    package static func storedResult(
        of outcome: Result<StepHandlerResult, any Error>, stepUUID: UUID, taskUUID: UUID?, callable: String,
        version: String?, startedAt: Date, workerID: String?, hostname: String?
    ) -> StepExecutionResult {
        switch outcome {
        case .success(let handlerResult):
            return handlerResult.toExecutionResult(
                stepUUID: stepUUID, startedAt: startedAt, completedAt: Date(), workerID: workerID, hostname: hostname,
                handlerVersion: version)
        case .failure(let error as StepFailure):
            return StepHandlerResult.failure(error).toExecutionResult(
                stepUUID: stepUUID, startedAt: startedAt, completedAt: Date(), workerID: workerID, hostname: hostname,
                handlerVersion: version)
        case .failure(let error):
            return .dispatchError(
                stepUUID: stepUUID, kind: .handlerError, callable: callable, timeoutMs: nil, taskUUID: taskUUID,
                message: "\(error)", startedAt: startedAt, completedAt: Date(), workerID: workerID, hostname: hostname)
        }
    }
}
