import Foundation
import TaskerText

/// The result a worker writes to `tasker.workflow_steps.results` (upstream
/// `tasker_shared::messaging::StepExecutionResult`).
///
/// Encoding reproduces serde's output: every key is written, `None` options as `null`
/// (except `error.status_code` and an empty `error.context`, which serde skips). Decoding
/// follows `#[serde(default)]` on the top level and on `metadata`: missing keys take their
/// defaults (nil step UUID, `success:false`, `result:null`, `status:""`).
public struct StepExecutionResult: Codable, Sendable, Equatable {
    /// Upstream status strings.
    public enum Status {
        public static let completed = "completed"
        public static let failed = "failed"
        /// System errors (upstream `StepExecutionResult::error`).
        public static let error = "error"
    }

    public var stepUUID: UUID
    public var success: Bool
    /// The handler's output (`{}` on failures).
    public var result: JSONValue
    public var metadata: StepExecutionMetadata
    /// `completed`, `failed` or `error`; orchestration derives it from `success` when empty.
    public var status: String
    public var error: StepExecutionError?
    public var orchestrationMetadata: OrchestrationMetadata?

    public init(
        stepUUID: UUID, success: Bool, result: JSONValue, metadata: StepExecutionMetadata,
        status: String, error: StepExecutionError? = nil,
        orchestrationMetadata: OrchestrationMetadata? = OrchestrationMetadata()
    ) {
        self.stepUUID = stepUUID
        self.success = success
        self.result = result
        self.metadata = metadata
        self.status = status
        self.error = error
        self.orchestrationMetadata = orchestrationMetadata
    }

    /// Whether the handler succeeded (`success`).
    public var isSuccess: Bool { success }

    /// Whether orchestration will retry the step (`metadata.retryable`, never `error.retryable`).
    public var isRetryable: Bool { metadata.retryable }

    /// The status orchestration uses: `status`, or `completed`/`failed` from `success` when empty.
    public var effectiveStatus: String {
        status.isEmpty ? (success ? Status.completed : Status.failed) : status
    }

    /// `metadata.error_code`.
    public var errorCode: String? { metadata.errorCode }

    // MARK: Codable

    enum CodingKeys: String, CodingKey {
        case stepUUID = "step_uuid"
        case success
        case result
        case metadata
        case status
        case error
        case orchestrationMetadata = "orchestration_metadata"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let text = try container.decodeIfPresent(String.self, forKey: .stepUUID) {
            guard let uuid = UUID(uuidString: text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .stepUUID, in: container, debugDescription: "step_uuid is not a UUID: \(text)")
            }
            stepUUID = uuid
        } else {
            stepUUID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        }
        success = try container.decodeIfPresent(Bool.self, forKey: .success) ?? false
        result = try container.decodeIfPresent(JSONValue.self, forKey: .result) ?? .null
        metadata =
            try container.decodeIfPresent(StepExecutionMetadata.self, forKey: .metadata)
            ?? StepExecutionMetadata()
        status = try container.decodeIfPresent(String.self, forKey: .status) ?? ""
        error = try container.decodeIfPresent(StepExecutionError.self, forKey: .error)
        orchestrationMetadata = try container.decodeIfPresent(
            OrchestrationMetadata.self, forKey: .orchestrationMetadata)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(stepUUID.uuidString.lowercased(), forKey: .stepUUID)
        try container.encode(success, forKey: .success)
        try container.encode(result, forKey: .result)
        try container.encode(metadata, forKey: .metadata)
        try container.encode(status, forKey: .status)
        try container.encode(error, forKey: .error)
        try container.encode(orchestrationMetadata, forKey: .orchestrationMetadata)
    }

    /// Compact JSON with sorted keys, ready for `workflow_steps.results`: what `JSONEncoder` with
    /// `[.sortedKeys, .withoutEscapingSlashes]` writes, without Foundation (`JSONWriter`). A result
    /// nested deeper than `UntrustedJSON.maximumValueDepth` (its own envelope included) is refused:
    /// it could not be read back inside `dependency_results` or a step event.
    public func jsonString() throws -> String {
        try storedJSON()
    }

    /// `jsonString()`, with the writer's refusal typed (what the worker's completion stage turns into
    /// a `result_not_storable` result).
    package func storedJSON() throws(JSONWriter.Refusal) -> String {
        var writer = JSONWriter(sortedKeys: true, escapeSlashes: false, maxDepth: UntrustedJSON.maximumValueDepth)
        try write(to: &writer)
        return writer.text
    }

    /// Decodes a `workflow_steps.results` blob.
    public static func decode(json: String) throws -> StepExecutionResult {
        try UntrustedJSON.decode(StepExecutionResult.self, from: json, what: "the step result")
    }

    /// Decodes a result already parsed as `JSONValue` (for example a `jsonb` cell).
    public static func decode(_ value: JSONValue) throws -> StepExecutionResult {
        try value.decode(StepExecutionResult.self)
    }
}

// MARK: - Constructors used by the worker

extension StepExecutionResult {
    /// A successful result, as upstream's `StepExecutionResult::success`: `status:"completed"`,
    /// `metadata.retryable:false` and the default `orchestration_metadata` object.
    public static func success(
        stepUUID: UUID, result: JSONValue, startedAt: Date, completedAt: Date, workerID: String?,
        hostname: String?, custom: [String: JSONValue] = [:], handlerVersion: String? = nil
    ) -> StepExecutionResult {
        StepExecutionResult(
            stepUUID: stepUUID, success: true, result: result,
            metadata: timing(
                startedAt, completedAt, workerID: workerID, hostname: hostname,
                custom: custom, handlerVersion: handlerVersion),
            status: Status.completed, error: nil, orchestrationMetadata: OrchestrationMetadata())
    }

    /// A handler-reported failure, as upstream's `StepExecutionResult::failure`: `status:"failed"`,
    /// `result:{}`, `error{message,error_type,backtrace:null,retryable}` and
    /// `metadata.{retryable,error_code,error_type,context}`. A backoff hint goes to
    /// `orchestration_metadata.backoff_hint`, response headers (`retry-after`) to
    /// `orchestration_metadata.headers`.
    public static func failure(
        stepUUID: UUID, failure: StepFailure, startedAt: Date, completedAt: Date, workerID: String?,
        hostname: String?, handlerVersion: String? = nil
    ) -> StepExecutionResult {
        var metadata = timing(
            startedAt, completedAt, workerID: workerID, hostname: hostname,
            custom: failure.metadata, handlerVersion: handlerVersion)
        metadata.retryable = failure.retryable
        metadata.errorCode = failure.errorCode
        metadata.errorType = failure.errorType
        metadata.context = failure.context
        let orchestration = OrchestrationMetadata(
            headers: failure.headers, errorContext: failure.errorContext, backoffHint: failure.backoffHint)
        return StepExecutionResult(
            stepUUID: stepUUID, success: false, result: .emptyObject, metadata: metadata,
            status: Status.failed,
            error: StepExecutionError(
                message: failure.message, errorType: failure.errorType,
                retryable: failure.retryable),
            orchestrationMetadata: orchestration)
    }

    /// A failure produced by the dispatcher itself (see ``DispatchErrorKind``), with the
    /// `error_type`, retryability, message and context of upstream's `dispatch_service.rs`.
    ///
    /// - Parameters:
    ///   - stepUUID: the step the result is for.
    ///   - kind: what went wrong in the dispatcher.
    ///   - callable: `handler.callable` (reported as `handler_name`).
    ///   - timeoutMs: the configured handler timeout (``DispatchErrorKind/handlerTimeout``).
    ///   - message: the thrown error's text (``DispatchErrorKind/handlerError``), the panic
    ///     text (``DispatchErrorKind/handlerPanic``), the checkpoint failure, or a timeout's own
    ///     text (the shutdown drain deadline).
    ///   - taskUUID: the step's task, when known.
    ///   - startedAt: when the handler (or the attempt) started.
    ///   - completedAt: when the result was made.
    ///   - workerID: the worker reporting the result.
    ///   - hostname: the worker's host.
    public static func dispatchError(
        stepUUID: UUID, kind: DispatchErrorKind, callable: String, timeoutMs: Int?, taskUUID: UUID?,
        message: String?, startedAt: Date, completedAt: Date, workerID: String?, hostname: String?
    ) -> StepExecutionResult {
        var context: [String: JSONValue] = [:]
        let taskValue = taskUUID.map { JSONValue.string($0.uuidString.lowercased()) }
        let text: String
        switch kind {
        case .handlerNotFound:
            // Upstream's text; ours adds why when there is more to say (a resolver hint).
            text = "Handler not found: \(callable)" + (message.map { " (\($0))" } ?? "")
        case .handlerError:
            text = message ?? "Handler returned an error"
            context["handler_name"] = .string(callable)
            context["task_uuid"] = taskValue
        case .handlerPanic:
            text = "Handler panicked: \(message ?? "Unknown panic")"
            context["handler_name"] = .string(callable)
            context["task_uuid"] = taskValue
        case .handlerTimeout:
            let millis = timeoutMs ?? 0
            text = message ?? "Handler timed out after \(millis)ms"
            context["handler_name"] = .string(callable)
            context["task_uuid"] = taskValue
            context["timeout_ms"] = .int(Int64(millis))
        case .semaphoreAcquisitionFailed:
            text = message ?? "Handler execution failed - semaphore closed during acquisition"
            context["service_id"] = .string(workerID ?? "handler-dispatch")
            context["reason"] = .string("semaphore closed")
            context["task_uuid"] = taskValue
        case .checkpointError:
            text = "Checkpoint persistence failed: \(message ?? "unknown error")"
            context["handler_name"] = .string(callable)
            context["task_uuid"] = taskValue
        }
        let failure = StepFailure(
            message: text, errorType: kind.errorType, retryable: kind.isRetryable, context: context)
        return .failure(
            stepUUID: stepUUID, failure: failure, startedAt: startedAt,
            completedAt: completedAt, workerID: workerID, hostname: hostname)
    }

    private static func timing(
        _ startedAt: Date, _ completedAt: Date, workerID: String?, hostname: String?,
        custom: [String: JSONValue], handlerVersion: String?
    ) -> StepExecutionMetadata {
        let start = ResultTimestamp.rounded(startedAt)
        let end = ResultTimestamp.rounded(completedAt)
        let elapsed = max(0, (ResultTimestamp.microseconds(end) - ResultTimestamp.microseconds(start)) / 1000)
        return StepExecutionMetadata(
            executionTimeMs: elapsed, handlerVersion: handlerVersion, retryable: false, completedAt: end,
            workerID: workerID, workerHostname: hostname, startedAt: start, custom: custom)
    }
}

/// Failures the dispatcher produces without a handler result (upstream `dispatch_service.rs`).
public enum DispatchErrorKind: String, Sendable, Equatable, CaseIterable {
    /// No handler is registered for `handler.callable`. Not retryable.
    case handlerNotFound = "handler_not_found"
    /// The handler threw. Retryable.
    case handlerError = "handler_error"
    /// The handler crashed. Not retryable.
    case handlerPanic = "handler_panic"
    /// The handler outran the worker's handler timeout. Retryable.
    case handlerTimeout = "handler_timeout"
    /// The concurrency limiter was closed. Retryable.
    case semaphoreAcquisitionFailed = "semaphore_acquisition_failed"
    /// A checkpoint yield could not be persisted. Retryable.
    case checkpointError = "checkpoint_error"

    /// The `error_type` written to `error` and `metadata`.
    public var errorType: String { rawValue }

    /// The `metadata.retryable` upstream writes for this kind.
    public var isRetryable: Bool {
        switch self {
        case .handlerNotFound, .handlerPanic: return false
        case .handlerError, .handlerTimeout, .semaphoreAcquisitionFailed, .checkpointError: return true
        }
    }
}
