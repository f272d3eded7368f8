import Foundation
import TaskerStepModel

/// Documentation metadata of a template. Dates are kept as the strings the file holds
/// (upstream parses them as RFC 3339 timestamps).
public struct TemplateMetadata: Codable, Sendable, Equatable {
    public var author: String?
    public var tags: [String]
    public var documentationURL: String?
    public var createdAt: String?
    public var updatedAt: String?

    public init(
        author: String? = nil, tags: [String] = [], documentationURL: String? = nil,
        createdAt: String? = nil, updatedAt: String? = nil
    ) {
        self.author = author
        self.tags = tags
        self.documentationURL = documentationURL
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case author, tags
        case documentationURL = "documentation_url"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        author = try c.decodeIfPresent(String.self, forKey: .author)
        tags = try c.decodeIfPresent([String].self, forKey: .tags) ?? []
        documentationURL = try c.decodeIfPresent(String.self, forKey: .documentationURL)
        createdAt = try c.decodeIfPresent(String.self, forKey: .createdAt)
        updatedAt = try c.decodeIfPresent(String.self, forKey: .updatedAt)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeOrNull(author, forKey: .author)
        try c.encode(tags, forKey: .tags)
        try c.encodeOrNull(documentationURL, forKey: .documentationURL)
        try c.encodeOrNull(createdAt, forKey: .createdAt)
        try c.encodeOrNull(updatedAt, forKey: .updatedAt)
    }
}

/// External systems a task interacts with.
public struct SystemDependencies: Codable, Sendable, Equatable {
    /// Primary system (default `"default"`).
    public var primary: String
    public var secondary: [String]

    public init(primary: String = "default", secondary: [String] = []) {
        self.primary = primary
        self.secondary = secondary
    }

    enum CodingKeys: String, CodingKey { case primary, secondary }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        primary = try c.decodeIfPresent(String.self, forKey: .primary) ?? "default"
        secondary = try c.decodeIfPresent([String].self, forKey: .secondary) ?? []
    }
}

/// A task-level domain event definition (`domain_events[]`).
public struct DomainEventDefinition: Codable, Sendable, Equatable {
    public var name: String
    public var description: String?
    /// JSON Schema of the payload.
    public var schema: JSONValue?

    public init(name: String, description: String? = nil, schema: JSONValue? = nil) {
        self.name = name
        self.description = description
        self.schema = schema
    }

    enum CodingKeys: String, CodingKey { case name, description, schema }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        description = try c.decodeIfPresent(String.self, forKey: .description)
        schema = try c.decodeOptionalJSON(forKey: .schema)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encodeOrNull(description, forKey: .description)
        try c.encodeOrNull(schema, forKey: .schema)
    }
}

/// Per-template staleness thresholds (`lifecycle`), overriding the orchestration's global ones.
public struct LifecycleConfiguration: Codable, Sendable, Equatable {
    public var maxDurationMinutes: Int?
    public var maxWaitingForDependenciesMinutes: Int?
    public var maxWaitingForRetryMinutes: Int?
    public var maxStepsInProcessMinutes: Int?
    /// `dlq` (default), `error` or `none`.
    public var stalenessAction: String
    public var autoFailOnTimeout: Bool?
    public var autoDLQOnTimeout: Bool?

    public init(
        maxDurationMinutes: Int? = nil, maxWaitingForDependenciesMinutes: Int? = nil,
        maxWaitingForRetryMinutes: Int? = nil, maxStepsInProcessMinutes: Int? = nil,
        stalenessAction: String = "dlq", autoFailOnTimeout: Bool? = nil, autoDLQOnTimeout: Bool? = nil
    ) {
        self.maxDurationMinutes = maxDurationMinutes
        self.maxWaitingForDependenciesMinutes = maxWaitingForDependenciesMinutes
        self.maxWaitingForRetryMinutes = maxWaitingForRetryMinutes
        self.maxStepsInProcessMinutes = maxStepsInProcessMinutes
        self.stalenessAction = stalenessAction
        self.autoFailOnTimeout = autoFailOnTimeout
        self.autoDLQOnTimeout = autoDLQOnTimeout
    }

    enum CodingKeys: String, CodingKey {
        case maxDurationMinutes = "max_duration_minutes"
        case maxWaitingForDependenciesMinutes = "max_waiting_for_dependencies_minutes"
        case maxWaitingForRetryMinutes = "max_waiting_for_retry_minutes"
        case maxStepsInProcessMinutes = "max_steps_in_process_minutes"
        case stalenessAction = "staleness_action"
        case autoFailOnTimeout = "auto_fail_on_timeout"
        case autoDLQOnTimeout = "auto_dlq_on_timeout"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        maxDurationMinutes = try c.decodeIfPresent(Int.self, forKey: .maxDurationMinutes)
        maxWaitingForDependenciesMinutes = try c.decodeIfPresent(Int.self, forKey: .maxWaitingForDependenciesMinutes)
        maxWaitingForRetryMinutes = try c.decodeIfPresent(Int.self, forKey: .maxWaitingForRetryMinutes)
        maxStepsInProcessMinutes = try c.decodeIfPresent(Int.self, forKey: .maxStepsInProcessMinutes)
        stalenessAction = try c.decodeIfPresent(String.self, forKey: .stalenessAction) ?? "dlq"
        autoFailOnTimeout = try c.decodeIfPresent(Bool.self, forKey: .autoFailOnTimeout)
        autoDLQOnTimeout = try c.decodeIfPresent(Bool.self, forKey: .autoDLQOnTimeout)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeOrNull(maxDurationMinutes, forKey: .maxDurationMinutes)
        try c.encodeOrNull(maxWaitingForDependenciesMinutes, forKey: .maxWaitingForDependenciesMinutes)
        try c.encodeOrNull(maxWaitingForRetryMinutes, forKey: .maxWaitingForRetryMinutes)
        try c.encodeOrNull(maxStepsInProcessMinutes, forKey: .maxStepsInProcessMinutes)
        try c.encode(stalenessAction, forKey: .stalenessAction)
        try c.encodeOrNull(autoFailOnTimeout, forKey: .autoFailOnTimeout)
        try c.encodeOrNull(autoDLQOnTimeout, forKey: .autoDLQOnTimeout)
    }
}

/// Overrides for one environment (`environments.<env>`).
public struct EnvironmentOverride: Codable, Sendable, Equatable {
    public var steps: [StepOverride]

    public init(steps: [StepOverride] = []) { self.steps = steps }

    enum CodingKeys: String, CodingKey { case steps }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        steps = try c.decodeIfPresent([StepOverride].self, forKey: .steps) ?? []
    }
}

/// An override of one step (or of every step when `name` is `"ALL"`).
public struct StepOverride: Codable, Sendable, Equatable {
    public var name: String
    public var handler: HandlerOverride?
    public var timeoutSeconds: Int?
    /// Replaces the step's whole retry configuration.
    public var retry: RetryConfiguration?

    public init(
        name: String, handler: HandlerOverride? = nil, timeoutSeconds: Int? = nil,
        retry: RetryConfiguration? = nil
    ) {
        self.name = name
        self.handler = handler
        self.timeoutSeconds = timeoutSeconds
        self.retry = retry
    }

    enum CodingKeys: String, CodingKey {
        case name, handler, retry
        case timeoutSeconds = "timeout_seconds"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        handler = try c.decodeIfPresent(HandlerOverride.self, forKey: .handler)
        timeoutSeconds = try c.decodeUnsignedIfPresent(forKey: .timeoutSeconds)
        retry = try c.decodeIfPresent(RetryConfiguration.self, forKey: .retry)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encodeOrNull(handler, forKey: .handler)
        try c.encodeOrNull(timeoutSeconds, forKey: .timeoutSeconds)
        try c.encodeOrNull(retry, forKey: .retry)
    }
}

/// Handler override: initialization entries merged over the step's.
public struct HandlerOverride: Codable, Sendable, Equatable {
    /// An object, or nil.
    public var initialization: JSONValue?

    public init(initialization: JSONValue? = nil) { self.initialization = initialization }

    enum CodingKeys: String, CodingKey { case initialization }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let value = try c.decodeOptionalJSON(forKey: .initialization) {
            guard case .object = value else {
                throw DecodingError.dataCorruptedError(
                    forKey: .initialization, in: c,
                    debugDescription: "expected a map")
            }
            initialization = value
        } else {
            initialization = nil
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeOrNull(initialization, forKey: .initialization)
    }
}
