import Foundation
import TaskerStepModel

/// How an HTTP status code is classified for retries (upstream `ErrorClassification` in
/// `handler_capabilities.rs`): 2xx success, 429 rate limited, other 4xx permanent, 5xx
/// transient, anything else a network error. Only rate-limited, transient and network
/// errors are retryable.
public enum HTTPErrorClassification: String, Sendable, Equatable, CaseIterable {
    case success
    case permanentError = "permanent_error"
    case rateLimited = "rate_limited"
    case transientError = "transient_error"
    case networkError = "network_error"

    /// Classifies a status code.
    public init(statusCode: Int) {
        switch statusCode {
        case 200...299: self = .success
        case 429: self = .rateLimited
        case 400...499: self = .permanentError
        case 500...599: self = .transientError
        default: self = .networkError
        }
    }

    /// The error type string (`rate_limited`, `permanent_error`, …).
    public var errorType: String { rawValue }

    /// Whether orchestration should retry.
    public var isRetryable: Bool {
        switch self {
        case .rateLimited, .transientError, .networkError: return true
        case .success, .permanentError: return false
        }
    }

    /// The error code upstream writes for a status: `HTTP_<status>`.
    public static func errorCode(statusCode: Int) -> String { "HTTP_\(statusCode)" }
}

extension StepHandlerResult {
    /// An API call's success: `{"data":..,"status_code":..}` plus `headers` when given,
    /// with `http_status` in `metadata.custom`.
    public static func apiSuccess(data: JSONValue, statusCode: Int, headers: JSONValue? = nil) -> StepHandlerResult {
        var result: [String: JSONValue] = ["data": data, "status_code": .int(Int64(statusCode))]
        if let headers { result["headers"] = headers }
        return .success(.object(result), metadata: ["http_status": .int(Int64(statusCode))])
    }

    /// An API call's failure, classified by status code: `error_code` `HTTP_<status>`,
    /// `retryable` from the classification, `metadata.context` `{http_status, classification}`.
    ///
    /// - Parameters:
    ///   - message: `error.message`.
    ///   - statusCode: the HTTP status of the response.
    ///   - errorType: defaults to the classification's type (`rate_limited`, …).
    ///   - retryAfterSeconds: a `Retry-After` value; written to
    ///     `orchestration_metadata.headers["retry-after"]` and as a backoff hint
    ///     (`RateLimit` for 429, else `ServerRequested`).
    public static func apiFailure(
        message: String, statusCode: Int, errorType: String? = nil, retryAfterSeconds: UInt32? = nil
    ) -> StepHandlerResult {
        .failure(
            httpFailure(
                message: message, statusCode: statusCode, errorType: errorType,
                retryAfterSeconds: retryAfterSeconds))
    }

    /// The `StepFailure` of ``apiFailure(message:statusCode:errorType:retryAfterSeconds:)``,
    /// for handlers that throw.
    public static func httpFailure(
        message: String, statusCode: Int, errorType: String? = nil, retryAfterSeconds: UInt32? = nil
    ) -> StepFailure {
        let classification = HTTPErrorClassification(statusCode: statusCode)
        var failure = StepFailure(
            message: message, errorType: errorType ?? classification.errorType,
            errorCode: HTTPErrorClassification.errorCode(statusCode: statusCode),
            retryable: classification.isRetryable,
            context: ["http_status": .int(Int64(statusCode)), "classification": .string(classification.errorType)])
        if let retryAfterSeconds {
            failure.headers["retry-after"] = String(retryAfterSeconds)
            failure.backoffHint = BackoffHint(
                backoffType: classification == .rateLimited ? .rateLimit : .serverRequested,
                delaySeconds: retryAfterSeconds, context: message)
        }
        return failure
    }
}
