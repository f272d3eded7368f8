import Foundation
import TaskerStepModel

/// A step handler, resolved by `handler.callable`.
///
/// A thrown error becomes a retryable `handler_error` failure (the dispatcher's
/// `DispatchErrorKind/handlerError`); throw a ``StepHandlerError`` to choose the error type,
/// code, retryability and backoff instead. Handlers must honour task cancellation: the
/// dispatcher cancels them when the handler timeout expires.
///
/// A handler with several entry points (a template's `handler.method`, e.g. `charge`, `refund`,
/// `void` of one payment handler) routes them in ``invoke(method:_:)``, as upstream's
/// `invoke_method`:
///
/// ```swift
/// struct PaymentHandler: StepHandler {
///     func call(_ context: StepContext) async throws -> StepHandlerResult { try await charge(context) }
///     func invoke(method: String, _ context: StepContext) async throws -> StepHandlerResult {
///         switch method {
///         case "refund": try await refund(context)
///         default: try await defaultInvoke(method: method, context)
///         }
///     }
/// }
/// ```
public protocol StepHandler: Sendable {
    /// Runs the step (the entry point `call`, used when the template names no `handler.method`).
    func call(_ context: StepContext) async throws -> StepHandlerResult

    /// Runs the entry point the template names with `handler.method` (`"call"` when it names none).
    /// The default runs ``call(_:)`` for `"call"` and fails the step for good for any other name
    /// (`StepFailure.methodNotFound(_:callable:known:)`); never falls back to `call` silently.
    func invoke(method: String, _ context: StepContext) async throws -> StepHandlerResult

    /// The handler's version, for observability (default `1.0.0`).
    var version: String { get }
}

extension StepHandler {
    public var version: String { "1.0.0" }

    public func invoke(method: String, _ context: StepContext) async throws -> StepHandlerResult {
        try await defaultInvoke(method: method, context)
    }

    /// What ``invoke(method:_:)`` does unless overridden: `call` for `"call"`, else a permanent
    /// `method_not_found` failure naming the callable and the method.
    public func defaultInvoke(method: String, _ context: StepContext) async throws -> StepHandlerResult {
        guard method == HandlerDefinition.defaultMethod else {
            throw StepFailure.methodNotFound(method, callable: context.handlerCallable, known: [HandlerDefinition.defaultMethod])
        }
        return try await call(context)
    }
}

extension StepFailure {
    /// The template names an entry point (`handler.method`) the handler does not have: a
    /// permanent `method_not_found` failure (retrying cannot add the method).
    public static func methodNotFound(_ method: String, callable: String, known: [String]) -> StepFailure {
        StepFailure(
            message:
                "handler \(callable) has no method \"\(method)\" (the template's handler.method); its methods: \(known.sorted().joined(separator: ", "))",
            errorType: "method_not_found", retryable: false)
    }
}

extension HandlerDefinition {
    /// The entry point of a template that names no `handler.method`.
    public static let defaultMethod = "call"
}

/// A handler made from closures: `call`, and optionally more entry points by method name.
public struct ClosureStepHandler: StepHandler {
    /// One entry point.
    public typealias Body = @Sendable (StepContext) async throws -> StepHandlerResult

    public let version: String
    private let body: Body
    private let methods: [String: Body]

    /// `body` is `call`; `methods` are the other entry points a template may name.
    public init(version: String = "1.0.0", methods: [String: Body] = [:], _ body: @escaping Body) {
        self.version = version
        self.body = body
        self.methods = methods
    }

    public func call(_ context: StepContext) async throws -> StepHandlerResult {
        try await body(context)
    }

    public func invoke(method: String, _ context: StepContext) async throws -> StepHandlerResult {
        if method == HandlerDefinition.defaultMethod { return try await body(context) }
        guard let entry = methods[method] else {
            throw StepFailure.methodNotFound(
                method, callable: context.handlerCallable, known: [HandlerDefinition.defaultMethod] + methods.keys)
        }
        return try await entry(context)
    }
}
