import Foundation
import TaskerText

/// `StepExecutionResult.metadata` (upstream `StepExecutionMetadata`, `#[serde(default)]`).
///
/// Every field is always written; `None` options are written as `null`. On reading, any
/// missing field takes its default (`completed_at` defaults to "now", as upstream's `Default`).
public struct StepExecutionMetadata: Codable, Sendable, Equatable {
    public var executionTimeMs: Int64
    public var handlerVersion: String?
    /// The only flag orchestration reads to decide on a retry.
    public var retryable: Bool
    public var completedAt: Date
    public var workerID: String?
    public var workerHostname: String?
    public var startedAt: Date?
    public var custom: [String: JSONValue]
    public var errorCode: String?
    public var errorType: String?
    public var context: [String: JSONValue]

    public init(
        executionTimeMs: Int64 = 0, handlerVersion: String? = nil, retryable: Bool = false,
        completedAt: Date = Date(), workerID: String? = nil, workerHostname: String? = nil,
        startedAt: Date? = nil, custom: [String: JSONValue] = [:], errorCode: String? = nil,
        errorType: String? = nil, context: [String: JSONValue] = [:]
    ) {
        self.executionTimeMs = executionTimeMs
        self.handlerVersion = handlerVersion
        self.retryable = retryable
        self.completedAt = completedAt
        self.workerID = workerID
        self.workerHostname = workerHostname
        self.startedAt = startedAt
        self.custom = custom
        self.errorCode = errorCode
        self.errorType = errorType
        self.context = context
    }

    enum CodingKeys: String, CodingKey {
        case executionTimeMs = "execution_time_ms"
        case handlerVersion = "handler_version"
        case retryable
        case completedAt = "completed_at"
        case workerID = "worker_id"
        case workerHostname = "worker_hostname"
        case startedAt = "started_at"
        case custom
        case errorCode = "error_code"
        case errorType = "error_type"
        case context
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        executionTimeMs = try container.decodeIfPresent(Int64.self, forKey: .executionTimeMs) ?? 0
        handlerVersion = try container.decodeIfPresent(String.self, forKey: .handlerVersion)
        retryable = try container.decodeIfPresent(Bool.self, forKey: .retryable) ?? false
        completedAt = try container.decodeTimestamp(forKey: .completedAt) ?? Date()
        workerID = try container.decodeIfPresent(String.self, forKey: .workerID)
        workerHostname = try container.decodeIfPresent(String.self, forKey: .workerHostname)
        startedAt = try container.decodeTimestamp(forKey: .startedAt)
        custom = try container.decodeIfPresent([String: JSONValue].self, forKey: .custom) ?? [:]
        errorCode = try container.decodeIfPresent(String.self, forKey: .errorCode)
        errorType = try container.decodeIfPresent(String.self, forKey: .errorType)
        context = try container.decodeIfPresent([String: JSONValue].self, forKey: .context) ?? [:]
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(executionTimeMs, forKey: .executionTimeMs)
        try container.encode(handlerVersion, forKey: .handlerVersion)
        try container.encode(retryable, forKey: .retryable)
        try container.encode(ResultTimestamp.string(completedAt), forKey: .completedAt)
        try container.encode(workerID, forKey: .workerID)
        try container.encode(workerHostname, forKey: .workerHostname)
        try container.encode(startedAt.map(ResultTimestamp.string), forKey: .startedAt)
        try container.encode(custom, forKey: .custom)
        try container.encode(errorCode, forKey: .errorCode)
        try container.encode(errorType, forKey: .errorType)
        try container.encode(context, forKey: .context)
    }
}

/// `StepExecutionResult.error` (upstream `StepExecutionError`).
///
/// `message` and `retryable` are required on reading. `error_type` and `backtrace` are written
/// as `null` when absent; `status_code` is left out when absent and `context` when empty.
public struct StepExecutionError: Codable, Sendable, Equatable {
    public var message: String
    public var errorType: String?
    public var backtrace: [String]?
    /// Informational only: orchestration retries on `metadata.retryable`.
    public var retryable: Bool
    public var statusCode: UInt16?
    public var context: [String: JSONValue]

    public init(
        message: String, errorType: String? = nil, backtrace: [String]? = nil, retryable: Bool,
        statusCode: UInt16? = nil, context: [String: JSONValue] = [:]
    ) {
        self.message = message
        self.errorType = errorType
        self.backtrace = backtrace
        self.retryable = retryable
        self.statusCode = statusCode
        self.context = context
    }

    enum CodingKeys: String, CodingKey {
        case message
        case errorType = "error_type"
        case backtrace
        case retryable
        case statusCode = "status_code"
        case context
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        message = try container.decode(String.self, forKey: .message)
        errorType = try container.decodeIfPresent(String.self, forKey: .errorType)
        backtrace = try container.decodeIfPresent([String].self, forKey: .backtrace)
        retryable = try container.decode(Bool.self, forKey: .retryable)
        statusCode = try container.decodeIfPresent(UInt16.self, forKey: .statusCode)
        context = try container.decodeIfPresent([String: JSONValue].self, forKey: .context) ?? [:]
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(message, forKey: .message)
        try container.encode(errorType, forKey: .errorType)
        try container.encode(backtrace, forKey: .backtrace)
        try container.encode(retryable, forKey: .retryable)
        try container.encodeIfPresent(statusCode, forKey: .statusCode)
        if !context.isEmpty { try container.encode(context, forKey: .context) }
    }
}

/// `StepExecutionResult.orchestration_metadata` (upstream `OrchestrationMetadata`).
///
/// Upstream's orchestration runs its backoff calculation for any non-null value; of it, only a
/// `retry-after` in `headers` changes the delay (`error_context`, `backoff_hint` and `custom` are
/// carried, not used). The companion orchestration backs off every failure, this object or not.
/// `headers` and `custom` are always written.
public struct OrchestrationMetadata: Codable, Sendable, Equatable {
    /// Response headers from external calls (`retry-after`, rate-limit headers).
    public var headers: [String: String]
    public var errorContext: String?
    public var backoffHint: BackoffHint?
    public var custom: [String: JSONValue]

    public init(
        headers: [String: String] = [:], errorContext: String? = nil, backoffHint: BackoffHint? = nil,
        custom: [String: JSONValue] = [:]
    ) {
        self.headers = headers
        self.errorContext = errorContext
        self.backoffHint = backoffHint
        self.custom = custom
    }

    enum CodingKeys: String, CodingKey {
        case headers
        case errorContext = "error_context"
        case backoffHint = "backoff_hint"
        case custom
    }

    /// Lenient: `headers` and `custom` default to empty when missing (upstream requires them,
    /// and this type always writes them).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        headers = try container.decodeIfPresent([String: String].self, forKey: .headers) ?? [:]
        errorContext = try container.decodeIfPresent(String.self, forKey: .errorContext)
        backoffHint = try container.decodeIfPresent(BackoffHint.self, forKey: .backoffHint)
        custom = try container.decodeIfPresent([String: JSONValue].self, forKey: .custom) ?? [:]
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(headers, forKey: .headers)
        try container.encode(errorContext, forKey: .errorContext)
        try container.encode(backoffHint, forKey: .backoffHint)
        try container.encode(custom, forKey: .custom)
    }
}

/// A handler's explicit backoff request (upstream `BackoffHint`):
/// `{"backoff_type":"RateLimit","delay_seconds":60,"context":null}`. Stored with the result for
/// whoever reads it; upstream's orchestration (and so the companion one) does not take its delay: a
/// `retry-after` header does (`StepFailure.headers`).
public struct BackoffHint: Codable, Sendable, Equatable {
    /// Upstream `BackoffHintType`, serialized by its Rust variant name.
    public enum BackoffType: String, Codable, Sendable, Equatable, CaseIterable {
        case serverRequested = "ServerRequested"
        case rateLimit = "RateLimit"
        case serviceUnavailable = "ServiceUnavailable"
        case custom = "Custom"
    }

    public var backoffType: BackoffType
    public var delaySeconds: UInt32
    public var context: String?

    public init(backoffType: BackoffType, delaySeconds: UInt32, context: String? = nil) {
        self.backoffType = backoffType
        self.delaySeconds = delaySeconds
        self.context = context
    }

    /// The server asked for this delay (a `Retry-After` header).
    public static func serverRequested(_ delaySeconds: UInt32, context: String? = nil) -> BackoffHint {
        BackoffHint(backoffType: .serverRequested, delaySeconds: delaySeconds, context: context)
    }

    /// A rate limit was hit.
    public static func rateLimit(_ delaySeconds: UInt32, context: String? = nil) -> BackoffHint {
        BackoffHint(backoffType: .rateLimit, delaySeconds: delaySeconds, context: context)
    }

    enum CodingKeys: String, CodingKey {
        case backoffType = "backoff_type"
        case delaySeconds = "delay_seconds"
        case context
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(backoffType, forKey: .backoffType)
        try container.encode(delaySeconds, forKey: .delaySeconds)
        try container.encode(context, forKey: .context)
    }
}
