import Foundation
import TaskerStepModel

/// Typed reading of a step's data: declare a `Decodable` type for what the handler needs and
/// decode it in one call. A value that is missing or does not fit is a permanent `StepFailure`
/// naming its key path (see ``StepDataCoding``), so a handler can simply `try` these and let the
/// failure end the step.
///
/// ```swift
/// struct Order: Decodable { let orderID: Int64; let items: [Item] }
/// let order = try context.input(as: Order.self)   // "cannot decode context.items[1].price: missing"
/// ```
extension StepContext {
    /// The whole task context (``taskContext``, `tasks.context`) decoded as `T`.
    public func input<T: Decodable>(as type: T.Type) throws(StepFailure) -> T {
        try StepDataCoding.decode(T.self, from: taskContext, source: .taskContext)
    }

    /// The step's own inputs (``stepInputs``, `workflow_steps.inputs`) decoded as `T`.
    public func inputs<T: Decodable>(as type: T.Type) throws(StepFailure) -> T {
        try StepDataCoding.decode(T.self, from: stepInputs, source: .stepInputs)
    }

    /// The whole handler configuration (``stepConfig``, `handler.initialization`) decoded as `T`;
    /// a failure has `error_type` `configuration_error`.
    public func configuration<T: Decodable>(as type: T.Type) throws(StepFailure) -> T {
        try StepDataCoding.decode(T.self, from: stepConfig, source: .handlerConfiguration)
    }

    /// The `result` of the dependency `name` decoded as `T`; a dependency that is not among the
    /// processed ancestors is a permanent `dependency_error` too.
    public func dependencyResult<T: Decodable>(of name: String, as type: T.Type) throws(StepFailure) -> T {
        guard let value = dependencyResults[name]?.result else {
            throw StepDataCoding.failure(
                source: .dependencyResult(name), path: [],
                reason: "\(name) is not among the step's processed dependencies")
        }
        return try StepDataCoding.decode(T.self, from: value, source: .dependencyResult(name))
    }
}

extension StepHandlerResult {
    /// A success whose `result` is `value` encoded as JSON; a value that does not encode (a NaN,
    /// an infinity) is a permanent `result_encoding_error` `StepFailure` naming its key path.
    public static func success<T: Encodable>(
        encoding value: T, metadata: [String: JSONValue] = [:]
    ) throws(StepFailure) -> StepHandlerResult {
        .success(try StepDataCoding.encode(value), metadata: metadata)
    }
}
