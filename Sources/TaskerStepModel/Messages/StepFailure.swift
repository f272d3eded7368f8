import Foundation
import TaskerText

/// A handler failure: returned in ``StepHandlerResult/failure(_:)`` or thrown (as
/// ``StepHandlerError``). Only ``retryable`` decides whether orchestration retries.
public struct StepFailure: Sendable, Error, Equatable, CustomStringConvertible {
    /// `handler_error`, the type upstream gives handler errors.
    public static let defaultErrorType = "handler_error"

    /// `error.message`.
    public var message: String
    /// `error.error_type` and `metadata.error_type` (for example `permanent_error`,
    /// `retryable_error`, `validation_error`, `timeout`, `handler_error`).
    public var errorType: String
    /// `metadata.error_code` (for example `DECISION_ERROR`, `BATCH_ERROR`, `HTTP_503`).
    public var errorCode: String?
    /// `metadata.retryable` (and `error.retryable`).
    public var retryable: Bool
    /// `orchestration_metadata.backoff_hint`.
    public var backoffHint: BackoffHint?
    /// `orchestration_metadata.headers` (for example `retry-after`).
    public var headers: [String: String]
    /// `orchestration_metadata.error_context`.
    public var errorContext: String?
    /// `metadata.context`.
    public var context: [String: JSONValue]
    /// `metadata.custom`.
    public var metadata: [String: JSONValue]

    public init(
        message: String, errorType: String = StepFailure.defaultErrorType, errorCode: String? = nil,
        retryable: Bool = true, backoffHint: BackoffHint? = nil, headers: [String: String] = [:],
        errorContext: String? = nil, context: [String: JSONValue] = [:], metadata: [String: JSONValue] = [:]
    ) {
        self.message = message
        self.errorType = errorType
        self.errorCode = errorCode
        self.retryable = retryable
        self.backoffHint = backoffHint
        self.headers = headers
        self.errorContext = errorContext
        self.context = context
        self.metadata = metadata
    }

    /// A ``StepFailure`` keeps its fields; any other error becomes a retryable `handler_error`
    /// whose message is the error's `LocalizedError.errorDescription` or its description.
    public init(error: any Error) {
        if let failure = error as? StepFailure {
            self = failure
            return
        }
        let text = (error as? any LocalizedError)?.errorDescription ?? String(describing: error)
        self.init(message: text)
    }

    public var description: String { message }

    /// A permanent (not retryable) failure.
    public static func permanent(
        _ message: String, errorType: String = "permanent_error",
        errorCode: String? = nil
    ) -> StepFailure {
        StepFailure(message: message, errorType: errorType, errorCode: errorCode, retryable: false)
    }

    /// A retryable failure, optionally with a backoff hint.
    public static func retryable(
        _ message: String, errorType: String = "retryable_error",
        errorCode: String? = nil, backoffHint: BackoffHint? = nil
    ) -> StepFailure {
        StepFailure(
            message: message, errorType: errorType, errorCode: errorCode, retryable: true,
            backoffHint: backoffHint)
    }
}
