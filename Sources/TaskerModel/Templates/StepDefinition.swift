import Foundation
import TaskerStepModel

/// One step of a template (`steps[]`).
public struct StepDefinition: Codable, Sendable, Equatable {
    public var name: String
    public var description: String?
    public var handler: HandlerDefinition
    /// Written as `type`; `step_type` is accepted as an alias when decoding.
    public var type: StepType
    public var systemDependency: String?
    /// Names of the steps this one depends on; `depends_on` is accepted as an alias when decoding.
    public var dependencies: [String]
    /// Defaults to `RetryConfiguration.default` when the file has no `retry` block.
    public var retry: RetryConfiguration
    public var timeoutSeconds: Int?
    public var publishesEvents: [EventDeclaration]
    public var batchConfig: BatchConfiguration?
    /// JSON Schema of the result (tooling only); omitted from the JSON when nil.
    public var resultSchema: JSONValue?
    /// Composition spec of a virtual handler step (opaque); omitted from the JSON when nil.
    public var composition: JSONValue?

    public init(
        name: String, description: String? = nil, handler: HandlerDefinition, type: StepType = .standard,
        systemDependency: String? = nil, dependencies: [String] = [],
        retry: RetryConfiguration = .default, timeoutSeconds: Int? = nil,
        publishesEvents: [EventDeclaration] = [], batchConfig: BatchConfiguration? = nil,
        resultSchema: JSONValue? = nil, composition: JSONValue? = nil
    ) {
        self.name = name
        self.description = description
        self.handler = handler
        self.type = type
        self.systemDependency = systemDependency
        self.dependencies = dependencies
        self.retry = retry
        self.timeoutSeconds = timeoutSeconds
        self.publishesEvents = publishesEvents
        self.batchConfig = batchConfig
        self.resultSchema = resultSchema
        self.composition = composition
    }

    /// Whether orchestration creates this step when the task is created (batch worker templates
    /// and deferred convergence steps are created later).
    public var isCreatedAtInitialization: Bool {
        type != .batchWorker && type != .deferredConvergence
    }

    enum CodingKeys: String, CodingKey {
        case name, description, handler, type, dependencies, retry, composition
        case stepType = "step_type"
        case dependsOn = "depends_on"
        case systemDependency = "system_dependency"
        case timeoutSeconds = "timeout_seconds"
        case publishesEvents = "publishes_events"
        case batchConfig = "batch_config"
        case resultSchema = "result_schema"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        description = try c.decodeIfPresent(String.self, forKey: .description)
        handler = try c.decode(HandlerDefinition.self, forKey: .handler)
        if c.contains(.type) && c.contains(.stepType) {
            throw DecodingError.dataCorruptedError(
                forKey: .stepType, in: c,
                debugDescription: "duplicate field `type` (alias `step_type`)")
        }
        type =
            try c.decodeIfPresent(StepType.self, forKey: .type)
            ?? c.decodeIfPresent(StepType.self, forKey: .stepType) ?? .standard
        systemDependency = try c.decodeIfPresent(String.self, forKey: .systemDependency)
        if c.contains(.dependencies) && c.contains(.dependsOn) {
            throw DecodingError.dataCorruptedError(
                forKey: .dependsOn, in: c,
                debugDescription: "duplicate field `dependencies` (alias `depends_on`)")
        }
        dependencies =
            try c.decodeIfPresent([String].self, forKey: .dependencies)
            ?? c.decodeIfPresent([String].self, forKey: .dependsOn) ?? []
        retry = try c.decodeIfPresent(RetryConfiguration.self, forKey: .retry) ?? .default
        timeoutSeconds = try c.decodeUnsignedIfPresent(forKey: .timeoutSeconds)
        publishesEvents = try c.decodeIfPresent([EventDeclaration].self, forKey: .publishesEvents) ?? []
        batchConfig = try c.decodeIfPresent(BatchConfiguration.self, forKey: .batchConfig)
        resultSchema = try c.decodeOptionalJSON(forKey: .resultSchema)
        composition = try c.decodeOptionalJSON(forKey: .composition)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encodeOrNull(description, forKey: .description)
        try c.encode(handler, forKey: .handler)
        try c.encode(type, forKey: .type)
        try c.encodeOrNull(systemDependency, forKey: .systemDependency)
        try c.encode(dependencies, forKey: .dependencies)
        try c.encode(retry, forKey: .retry)
        try c.encodeOrNull(timeoutSeconds, forKey: .timeoutSeconds)
        try c.encode(publishesEvents, forKey: .publishesEvents)
        try c.encodeOrNull(batchConfig, forKey: .batchConfig)
        // Upstream skips these two when absent (the only skipped optionals).
        try c.encodeIfPresent(resultSchema, forKey: .resultSchema)
        try c.encodeIfPresent(composition, forKey: .composition)
    }
}

/// Kind of step (`type`), spelled in snake_case on the wire.
public enum StepType: String, Codable, Sendable, Equatable, CaseIterable {
    case standard
    /// Returns a `decision_point_outcome` choosing which declared children to create.
    case decision
    /// Convergence step whose dependencies are resolved at run time.
    case deferredConvergence = "deferred_convergence"
    /// Returns a `batch_processing_outcome`; orchestration creates batch workers.
    case batchable
    /// Template for batch workers (never enqueued itself).
    case batchWorker = "batch_worker"
}

/// Retry policy of a step (`retry`).
public struct RetryConfiguration: Codable, Sendable, Equatable {
    public var retryable: Bool
    public var maxAttempts: Int
    public var backoff: BackoffStrategy
    public var backoffBaseMs: Int?
    public var maxBackoffMs: Int?

    /// What a step without a `retry` block gets: upstream's `Default`, which (unlike a partial
    /// `retry` block) also sets `backoff_base_ms` 1000 and `max_backoff_ms` 30000.
    public static let `default` = RetryConfiguration(backoffBaseMs: 1000, maxBackoffMs: 30000)

    public init(
        retryable: Bool = true, maxAttempts: Int = 3, backoff: BackoffStrategy = .exponential,
        backoffBaseMs: Int? = nil, maxBackoffMs: Int? = nil
    ) {
        self.retryable = retryable
        self.maxAttempts = maxAttempts
        self.backoff = backoff
        self.backoffBaseMs = backoffBaseMs
        self.maxBackoffMs = maxBackoffMs
    }

    enum CodingKeys: String, CodingKey {
        case retryable, backoff
        case maxAttempts = "max_attempts"
        case backoffBaseMs = "backoff_base_ms"
        case maxBackoffMs = "max_backoff_ms"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        retryable = try c.decodeIfPresent(Bool.self, forKey: .retryable) ?? true
        maxAttempts = try c.contains(.maxAttempts) ? c.decodeUnsigned(forKey: .maxAttempts) : 3
        backoff = try c.decodeIfPresent(BackoffStrategy.self, forKey: .backoff) ?? .exponential
        backoffBaseMs = try c.decodeUnsignedIfPresent(forKey: .backoffBaseMs)
        maxBackoffMs = try c.decodeUnsignedIfPresent(forKey: .maxBackoffMs)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(retryable, forKey: .retryable)
        try c.encode(maxAttempts, forKey: .maxAttempts)
        try c.encode(backoff, forKey: .backoff)
        try c.encodeOrNull(backoffBaseMs, forKey: .backoffBaseMs)
        try c.encodeOrNull(maxBackoffMs, forKey: .maxBackoffMs)
    }
}

/// Backoff between retries.
public enum BackoffStrategy: String, Codable, Sendable, Equatable, CaseIterable {
    case none, linear, exponential, fibonacci
}

/// Batch processing parameters (`batch_config`). Every field is required, as upstream.
public struct BatchConfiguration: Codable, Sendable, Equatable {
    public var batchSize: Int
    public var parallelism: Int
    public var cursorField: String
    /// Name of the `batch_worker` step that workers are instantiated from.
    public var workerTemplate: String
    public var failureStrategy: BatchFailureStrategy

    public init(
        batchSize: Int = 1000, parallelism: Int = 10, cursorField: String = "id", workerTemplate: String,
        failureStrategy: BatchFailureStrategy = .continueOnFailure
    ) {
        self.batchSize = batchSize
        self.parallelism = parallelism
        self.cursorField = cursorField
        self.workerTemplate = workerTemplate
        self.failureStrategy = failureStrategy
    }

    enum CodingKeys: String, CodingKey {
        case parallelism
        case batchSize = "batch_size"
        case cursorField = "cursor_field"
        case workerTemplate = "worker_template"
        case failureStrategy = "failure_strategy"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        batchSize = try c.decodeUnsigned(forKey: .batchSize)
        parallelism = try c.decodeUnsigned(forKey: .parallelism)
        cursorField = try c.decode(String.self, forKey: .cursorField)
        workerTemplate = try c.decode(String.self, forKey: .workerTemplate)
        failureStrategy = try c.decode(BatchFailureStrategy.self, forKey: .failureStrategy)
    }
}

/// What a failed batch worker does to the task.
public enum BatchFailureStrategy: String, Codable, Sendable, Equatable, CaseIterable {
    case continueOnFailure = "continue_on_failure"
    case failFast = "fail_fast"
    case isolate
}
