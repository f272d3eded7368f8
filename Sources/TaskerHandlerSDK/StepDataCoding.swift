import Foundation
import TaskerStepModel

/// Where a value a handler decodes (or a result it encodes) lives; the first part of the key path
/// that ``StepDataCoding`` names in its failures.
public enum StepDataSource: Sendable, Hashable, CustomStringConvertible {
    /// The task context (`tasks.context`, ``StepContext/taskContext``): `context`.
    case taskContext
    /// The step's own inputs (`workflow_steps.inputs`, ``StepContext/stepInputs``): `inputs`.
    case stepInputs
    /// The handler configuration (`handler.initialization`, ``StepContext/stepConfig``).
    case handlerConfiguration
    /// The `result` of the named dependency: `dependency_results.<name>.result`.
    case dependencyResult(String)
    /// The last checkpoint yield (``StepContext/checkpoint``): `checkpoint`.
    case checkpoint
    /// The handler's own result (``StepHandlerResult/success(encoding:metadata:)``): `result`.
    case result

    /// The key path prefix, such as `context` or `dependency_results.validate.result`.
    public var description: String {
        switch self {
        case .taskContext: "context"
        case .stepInputs: "inputs"
        case .handlerConfiguration: "handler.initialization"
        case .dependencyResult(let name): "dependency_results.\(name).result"
        case .checkpoint: "checkpoint"
        case .result: "result"
        }
    }

    /// The `error_type` of a value from here that does not decode.
    var errorType: String {
        switch self {
        case .taskContext, .stepInputs, .checkpoint: "validation_error"
        case .handlerConfiguration: "configuration_error"
        case .dependencyResult: "dependency_error"
        case .result: "result_encoding_error"
        }
    }
}

/// Decoding a step's JSON into `Decodable` types and encoding a handler's `Encodable` result,
/// with failures that name what failed and where.
///
/// A value that does not decode is a **permanent** `StepFailure` (`retryable: false`: the same
/// data fails the same way on every attempt) whose message names the full key path, for example
/// `cannot decode context.items[2].amount: …`, and whose `StepFailure/context` holds
/// `source` (``StepDataSource``) and `path` (the key path). The `error_type` is
/// `validation_error` for the task context, inputs and checkpoint, `configuration_error` for the
/// handler configuration, `dependency_error` for a dependency's result and
/// `result_encoding_error` for a result that does not encode (a NaN, for example); the
/// `error_code` is ``decodingErrorCode``.
///
/// Decoding never traps: a number that does not fit the declared type (`1e300` into `Int64`) is
/// such a failure, so integers can be declared as `Int64` and read safely from any input.
public enum StepDataCoding {
    /// `metadata.error_code` of every failure made here.
    public static let decodingErrorCode = "DATA_DECODING_ERROR"

    /// Decodes `value`, which comes from `source` (under its member `member`, when it is one
    /// member of it: the key path then starts with that member, `context.amount`), as `T`.
    public static func decode<T: Decodable>(
        _ type: T.Type, from value: JSONValue, source: StepDataSource, member: String? = nil
    ) throws(StepFailure) -> T {
        let prefix: [any CodingKey] = member.map { [MemberKey($0)] } ?? []
        do {
            return try value.decode(T.self)
        } catch let error as DecodingError {
            throw failure(source: source, prefix: prefix, error: error)
        } catch {
            throw failure(source: source, path: prefix, reason: "\(error)")
        }
    }

    /// One member's name in a key path.
    private struct MemberKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Encodes `value` as the handler's `result`.
    public static func encode<T: Encodable>(_ value: T) throws(StepFailure) -> JSONValue {
        do {
            return try JSONValue(encoding: value)
        } catch let error as EncodingError {
            guard case .invalidValue(let invalid, let context) = error else {
                throw failure(source: .result, path: [], reason: "\(error)")
            }
            throw failure(
                source: .result, path: context.codingPath,
                reason: "\(invalid) is not representable in JSON (\(context.debugDescription))",
                verb: "encode")
        } catch {
            throw failure(source: .result, path: [], reason: "\(error)", verb: "encode")
        }
    }

    /// The key path of `codingPath` under `source`: `context.items[2].amount`.
    public static func keyPath(_ source: StepDataSource, _ codingPath: [any CodingKey]) -> String {
        var path = source.description
        for key in codingPath {
            if let index = key.intValue {
                path += "[\(index)]"
            } else {
                path += ".\(key.stringValue)"
            }
        }
        return path
    }

    /// The permanent failure for a value at `path` under `source` that is missing or unusable.
    static func failure(
        source: StepDataSource, path: [any CodingKey], reason: String,
        verb: String = "decode"
    ) -> StepFailure {
        let where_ = keyPath(source, path)
        return StepFailure(
            message: "cannot \(verb) \(where_): \(reason)", errorType: source.errorType,
            errorCode: decodingErrorCode, retryable: false,
            context: ["source": .string(source.description), "path": .string(where_)])
    }

    private static func failure(source: StepDataSource, prefix: [any CodingKey], error: DecodingError) -> StepFailure {
        switch error {
        case .keyNotFound(let key, let context):
            return failure(source: source, path: prefix + context.codingPath + [key], reason: "missing")
        case .valueNotFound(let type, let context):
            return failure(source: source, path: prefix + context.codingPath, reason: "expected \(type), found null")
        case .typeMismatch(let type, let context):
            return failure(
                source: source, path: prefix + context.codingPath,
                reason: "expected \(type) (\(context.debugDescription))")
        case .dataCorrupted(let context):
            // A number that does not fit the declared type (1e300 into Int64) lands here, and
            // Foundation reports it at the container's path with its cause underneath.
            let cause = context.underlyingError.map { " (\($0))" } ?? ""
            return failure(
                source: source, path: prefix + context.codingPath,
                reason: "a value does not fit its declared type: \(context.debugDescription)\(cause)")
        @unknown default:
            return failure(source: source, path: prefix, reason: "\(error)")
        }
    }
}
