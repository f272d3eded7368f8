import Foundation
import TaskerModel

/// A step handler, resolved by `handler.callable`.
///
/// A thrown error becomes a retryable `handler_error` failure (the dispatcher's
/// `DispatchErrorKind/handlerError`); throw a ``StepHandlerError`` to choose the error type,
/// code, retryability and backoff instead. Handlers must honour task cancellation: the
/// dispatcher cancels them when the handler timeout expires.
public protocol StepHandler: Sendable {
    /// Runs the step.
    func call(_ context: StepContext) async throws -> StepHandlerResult

    /// The handler's version, for observability (default `1.0.0`).
    var version: String { get }
}

extension StepHandler {
    public var version: String { "1.0.0" }
}

/// A handler made from a closure.
public struct ClosureStepHandler: StepHandler {
    public let version: String
    private let body: @Sendable (StepContext) async throws -> StepHandlerResult

    public init(version: String = "1.0.0", _ body: @escaping @Sendable (StepContext) async throws -> StepHandlerResult) {
        self.version = version
        self.body = body
    }

    public func call(_ context: StepContext) async throws -> StepHandlerResult {
        try await body(context)
    }
}
