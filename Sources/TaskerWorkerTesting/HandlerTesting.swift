import Foundation
import TaskerHandlerSDK

/// What went wrong in a handler test itself (not in the handler).
public enum HandlerTestingError: Error, Equatable, CustomStringConvertible {
    /// No handler is registered under the callable.
    case handlerNotFound(callable: String)
    /// The handler's outcome is not a success, so it has no result to decode.
    case notASuccess(StepHandlerResult.Outcome)

    public var description: String {
        switch self {
        case .handlerNotFound(let callable): "no handler is registered as \(callable)"
        case .notASuccess(let outcome): "the handler did not succeed: \(outcome)"
        }
    }
}

extension StepHandler {
    /// Runs the handler on `context` and returns its outcome the way the worker sees it: a thrown
    /// ``StepFailure`` becomes that failure, and any other thrown error a retryable
    /// `handler_error` failure carrying the error's description (the worker stores the latter
    /// as a dispatch error of kind `handler_error`, which orchestration also retries).
    ///
    /// A ``StepHandlerResult/Outcome/checkpointYield(_:)`` is returned as it is: to test the
    /// next round, set ``StepContext/checkpoint`` and run again.
    ///
    /// The entry point is the one the worker would run: ``StepContext/handlerMethod`` (`call` unless
    /// the context names another, as a template's `handler.method` does).
    public func run(_ context: StepContext) async -> StepHandlerResult {
        do {
            return try await invoke(method: context.handlerMethod, context)
        } catch {
            return .failure(from: error)
        }
    }
}

extension HandlerRegistry {
    /// Runs the handler the registry resolves for `callable` (its resolver chain, or only the
    /// resolver `resolver` names) on `context`, at the entry point `method` (see ``StepHandler/run(_:)``).
    public func run(
        _ callable: String, method: String? = nil, resolver: String? = nil, _ context: StepContext
    ) async throws(HandlerTestingError) -> StepHandlerResult {
        let definition = HandlerDefinition(callable: callable, method: method, resolver: resolver)
        guard let handler = resolve(definition).handler else { throw .handlerNotFound(callable: callable) }
        var context = context
        context.handlerCallable = callable
        context.handlerMethod = definition.effectiveMethod
        return await handler.run(context)
    }
}

extension StepHandlerResult {
    /// The success's `result` decoded as `T`; a failure or a checkpoint yield throws
    /// ``HandlerTestingError/notASuccess(_:)``, a result that does not decode a ``StepFailure``
    /// naming the key path (`cannot decode result.total: missing`).
    public func decodedResult<T: Decodable>(as type: T.Type) throws -> T {
        guard case .success(let result, _) = outcome else { throw HandlerTestingError.notASuccess(outcome) }
        return try StepDataCoding.decode(T.self, from: result, source: .result)
    }

    /// The success's `metadata` (stored as `metadata.custom`), or nil for another outcome.
    public var customMetadata: [String: JSONValue]? {
        if case .success(_, let metadata) = outcome { return metadata }
        return nil
    }

    /// The checkpoint a handler yielded, or nil for another outcome.
    public var checkpointYield: CheckpointYield? {
        if case .checkpointYield(let yield) = outcome { return yield }
        return nil
    }

    /// The decision in a decision point's result (``StepHandlerResult/decision(createSteps:routingContext:)``).
    public var decisionOutcome: DecisionPointOutcome? {
        DecisionPointOutcome.from(executionResult)
    }

    /// The batch plan in a batchable step's result (``StepHandlerResult/batchAnalyzerSuccess(workerTemplate:cursorConfigs:totalItems:)``).
    public var batchProcessingOutcome: BatchProcessingOutcome? {
        BatchProcessingOutcome.from(executionResult)
    }

    /// The result as the worker would store it (for the outcome readers above).
    private var executionResult: StepExecutionResult {
        let now = Date()
        return toExecutionResult(stepUUID: UUID(), startedAt: now, completedAt: now, workerID: nil, hostname: nil)
    }
}
