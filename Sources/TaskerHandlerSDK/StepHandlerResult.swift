import Foundation
import TaskerStepModel

/// What a handler returns: a success with its output, or a `StepFailure`.
///
/// The dispatcher turns it into a `StepExecutionResult` with
/// ``toExecutionResult(stepUUID:startedAt:completedAt:workerID:hostname:handlerVersion:)``.
public struct StepHandlerResult: Sendable, Equatable {
    /// The two outcomes.
    public enum Outcome: Sendable, Equatable {
        /// `result` becomes `results.result`; `metadata` becomes `results.metadata.custom`.
        case success(result: JSONValue, metadata: [String: JSONValue])
        case failure(StepFailure)
        /// Progress saved; the worker persists it and calls the handler again with
        /// `StepContext.checkpoint` set (see ``CheckpointYield``).
        case checkpointYield(CheckpointYield)
    }

    public var outcome: Outcome

    public init(outcome: Outcome) {
        self.outcome = outcome
    }

    /// A success; `metadata` is written to `metadata.custom`.
    public static func success(_ result: JSONValue, metadata: [String: JSONValue] = [:]) -> StepHandlerResult {
        StepHandlerResult(outcome: .success(result: result, metadata: metadata))
    }

    /// Saves progress and asks to be called again (long batch work): the worker persists the
    /// checkpoint in `workflow_steps.checkpoint` and re-dispatches the handler in-process, still
    /// `in_progress` and without a new claim, with `StepContext.checkpoint` holding the record.
    public static func checkpoint(cursor: JSONValue, itemsProcessed: Int, accumulatedResults: JSONValue? = nil) -> StepHandlerResult {
        StepHandlerResult(
            outcome: .checkpointYield(
                CheckpointYield(
                    cursor: cursor, itemsProcessed: itemsProcessed, accumulatedResults: accumulatedResults)))
    }

    /// A handler-reported failure (`status:"failed"`).
    public static func failure(_ failure: StepFailure) -> StepHandlerResult {
        StepHandlerResult(outcome: .failure(failure))
    }

    /// A failure built from its parts.
    public static func failure(
        message: String, errorType: String = StepFailure.defaultErrorType, errorCode: String? = nil,
        retryable: Bool = true, context: [String: JSONValue] = [:]
    ) -> StepHandlerResult {
        .failure(
            StepFailure(
                message: message, errorType: errorType, errorCode: errorCode,
                retryable: retryable, context: context))
    }

    /// Maps a thrown error: a `StepFailure` (alias ``StepHandlerError``) keeps its fields;
    /// any other error becomes a retryable `handler_error` with the error's description.
    public static func failure(from error: any Error) -> StepHandlerResult {
        .failure(StepFailure(error: error))
    }

    /// Whether this is a success.
    public var isSuccess: Bool {
        if case .success = outcome { return true }
        return false
    }

    /// The success output, or nil for a failure.
    public var result: JSONValue? {
        if case .success(let result, _) = outcome { return result }
        return nil
    }

    /// The failure, or nil for a success.
    public var failure: StepFailure? {
        if case .failure(let failure) = outcome { return failure }
        return nil
    }

    /// The stored result for this outcome.
    public func toExecutionResult(
        stepUUID: UUID, startedAt: Date, completedAt: Date, workerID: String?, hostname: String?,
        handlerVersion: String? = nil
    ) -> StepExecutionResult {
        switch outcome {
        case .success(let result, let metadata):
            return .success(
                stepUUID: stepUUID, result: result, startedAt: startedAt, completedAt: completedAt,
                workerID: workerID, hostname: hostname, custom: metadata,
                handlerVersion: handlerVersion)
        case .failure(let failure):
            return .failure(
                stepUUID: stepUUID, failure: failure, startedAt: startedAt, completedAt: completedAt,
                workerID: workerID, hostname: hostname, handlerVersion: handlerVersion)
        case .checkpointYield:
            // The dispatcher handles yields itself; a yield that reaches this point was not persisted.
            return .dispatchError(
                stepUUID: stepUUID, kind: .checkpointError, callable: "", timeoutMs: nil,
                taskUUID: nil, message: "checkpoint yield was not persisted",
                startedAt: startedAt, completedAt: completedAt, workerID: workerID, hostname: hostname)
        }
    }
}

/// The error handlers throw to fail a step with chosen `retryable`, `errorType`, `errorCode`
/// and backoff; identical to returning ``StepHandlerResult/failure(_:)``.
public typealias StepHandlerError = StepFailure

/// A handler's checkpoint: where it got to, how many items it processed, and what it has
/// accumulated so far.
public struct CheckpointYield: Sendable, Equatable {
    public var cursor: JSONValue
    public var itemsProcessed: Int
    public var accumulatedResults: JSONValue?

    public init(cursor: JSONValue, itemsProcessed: Int, accumulatedResults: JSONValue? = nil) {
        self.cursor = cursor
        self.itemsProcessed = itemsProcessed
        self.accumulatedResults = accumulatedResults
    }
}
