import Foundation
import TaskerStepModel
import TaskerText

/// A task template: the workflow definition a worker registers at boot and reads back (from
/// `tasker.named_tasks.configuration`) when it hydrates a step.
///
/// The JSON form is the wire format shared with the Rust orchestration and workers: `encode(to:)`
/// writes the same keys, enum spellings and explicit `null`s as upstream's serde, and `init(from:)`
/// accepts what upstream accepts (YAML files go through `TemplateYAML` first). Keys upstream does not
/// know are ignored and dropped, as serde does.
public struct TaskTemplate: Codable, Sendable, Equatable {
    /// Task name, unique within the namespace (with the version).
    public var name: String
    /// Namespace; the worker serves `worker_<namespaceName>_queue`.
    public var namespaceName: String
    /// Version string (conventionally semver).
    public var version: String
    public var description: String?
    public var metadata: TemplateMetadata?
    /// External systems the task talks to (default primary `"default"`).
    public var systemDependencies: SystemDependencies
    /// Task-level domain event definitions (documentation; steps declare what they publish).
    public var domainEvents: [DomainEventDefinition]
    /// JSON Schema for the task context.
    public var inputSchema: JSONValue?
    public var steps: [StepDefinition]
    /// Per-environment overrides, keyed by environment name.
    public var environments: [String: EnvironmentOverride]
    /// Staleness thresholds overriding the orchestration defaults.
    public var lifecycle: LifecycleConfiguration?

    public init(
        name: String, namespaceName: String, version: String, description: String? = nil,
        metadata: TemplateMetadata? = nil, systemDependencies: SystemDependencies = SystemDependencies(),
        domainEvents: [DomainEventDefinition] = [], inputSchema: JSONValue? = nil,
        steps: [StepDefinition] = [], environments: [String: EnvironmentOverride] = [:],
        lifecycle: LifecycleConfiguration? = nil
    ) {
        self.name = name
        self.namespaceName = namespaceName
        self.version = version
        self.description = description
        self.metadata = metadata
        self.systemDependencies = systemDependencies
        self.domainEvents = domainEvents
        self.inputSchema = inputSchema
        self.steps = steps
        self.environments = environments
        self.lifecycle = lifecycle
    }

    /// The step called `name`, if any.
    public func step(named name: String) -> StepDefinition? {
        steps.first { $0.name == name }
    }

    /// `"<namespace>/<name>/<version>"`, for messages and logs.
    public var identifier: String { "\(namespaceName)/\(name)/\(version)" }

    enum CodingKeys: String, CodingKey {
        case name, version, description, metadata, steps, environments, lifecycle
        case namespaceName = "namespace_name"
        case systemDependencies = "system_dependencies"
        case domainEvents = "domain_events"
        case inputSchema = "input_schema"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        namespaceName = try c.decode(String.self, forKey: .namespaceName)
        version = try c.decode(String.self, forKey: .version)
        description = try c.decodeIfPresent(String.self, forKey: .description)
        metadata = try c.decodeIfPresent(TemplateMetadata.self, forKey: .metadata)
        systemDependencies =
            try c.decodeIfPresent(SystemDependencies.self, forKey: .systemDependencies)
            ?? SystemDependencies()
        domainEvents = try c.decodeIfPresent([DomainEventDefinition].self, forKey: .domainEvents) ?? []
        inputSchema = try c.decodeOptionalJSON(forKey: .inputSchema)
        steps = try c.decodeIfPresent([StepDefinition].self, forKey: .steps) ?? []
        environments = try c.decodeIfPresent([String: EnvironmentOverride].self, forKey: .environments) ?? [:]
        lifecycle = try c.decodeIfPresent(LifecycleConfiguration.self, forKey: .lifecycle)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(namespaceName, forKey: .namespaceName)
        try c.encode(version, forKey: .version)
        try c.encodeOrNull(description, forKey: .description)
        try c.encodeOrNull(metadata, forKey: .metadata)
        try c.encode(systemDependencies, forKey: .systemDependencies)
        try c.encode(domainEvents, forKey: .domainEvents)
        try c.encodeOrNull(inputSchema, forKey: .inputSchema)
        try c.encode(steps, forKey: .steps)
        try c.encode(environments, forKey: .environments)
        try c.encodeOrNull(lifecycle, forKey: .lifecycle)
    }
}

// MARK: - JSON form

extension TaskTemplate {
    /// Decodes a template from its JSON form (e.g. a `named_tasks.configuration` value).
    public static func fromJSON(_ value: JSONValue) throws -> TaskTemplate {
        try JSONDecoder().decode(TaskTemplate.self, from: JSONEncoder().encode(value))
    }

    /// Decodes a template from JSON text.
    public static func fromJSON(text: String) throws -> TaskTemplate {
        try UntrustedJSON.decode(TaskTemplate.self, from: text, what: "the template JSON")
    }

    /// The JSON written to `named_tasks.configuration` (upstream's serde shape).
    public func jsonValue() throws -> JSONValue {
        try JSONValue(encoding: self)
    }

    /// Compact JSON text of `jsonValue()`, keys sorted.
    public func jsonString() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }
}
