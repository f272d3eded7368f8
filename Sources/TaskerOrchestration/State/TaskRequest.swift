import Foundation
import TaskerModel
import TaskerPostgres
import TaskerStore

/// A request to run a workflow: which template, with which context (upstream `TaskRequest`).
public struct TaskRequest: Sendable, Equatable, Codable {
    public var namespace: String
    public var name: String
    public var version: String
    /// The task's input (`tasks.context`).
    public var context: JSONValue
    public var initiator: String
    public var sourceSystem: String
    public var reason: String
    public var tags: [String]
    public var priority: Int
    /// Defaults to a new UUID v7.
    public var correlationID: UUID?
    var parentCorrelationID: UUID?
    /// Identity under the `caller_provided` strategy.
    var idempotencyKey: String?

    public init(
        namespace: String, name: String, version: String, context: JSONValue = .emptyObject,
        initiator: String = "tasker-worker-swift", sourceSystem: String = "tasker-worker-swift",
        reason: String = "requested", tags: [String] = [], priority: Int = 0, correlationID: UUID? = nil,
        parentCorrelationID: UUID? = nil, idempotencyKey: String? = nil
    ) {
        self.namespace = namespace
        self.name = name
        self.version = version
        self.context = context
        self.initiator = initiator
        self.sourceSystem = sourceSystem
        self.reason = reason
        self.tags = tags
        self.priority = priority
        self.correlationID = correlationID
        self.parentCorrelationID = parentCorrelationID
        self.idempotencyKey = idempotencyKey
    }

    enum CodingKeys: String, CodingKey {
        case namespace, name, version, context, initiator, reason, tags, priority
        case sourceSystem = "source_system"
        case correlationID = "correlation_id"
        case parentCorrelationID = "parent_correlation_id"
        case idempotencyKey = "idempotency_key"
    }

    /// Lenient on everything but the template identity, as upstream's serde defaults are.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        namespace = try c.decode(String.self, forKey: .namespace)
        name = try c.decode(String.self, forKey: .name)
        version = try c.decode(String.self, forKey: .version)
        context = try c.decodeIfPresent(JSONValue.self, forKey: .context) ?? .emptyObject
        // A request read from a queue was only held to `UntrustedJSON.maximumDepth` as a whole; its
        // context is a value entering Tasker, held to the same rule as a request body's.
        if context.nestingDepth(stoppingAfter: UntrustedJSON.maximumValueDepth - 1) >= UntrustedJSON.maximumValueDepth {
            throw DecodingError.dataCorruptedError(
                forKey: .context, in: c,
                debugDescription: "context: arrays and objects are nested more than "
                    + "\(UntrustedJSON.maximumValueDepth - 1) levels deep")
        }
        initiator = try c.decodeIfPresent(String.self, forKey: .initiator) ?? "unknown"
        sourceSystem = try c.decodeIfPresent(String.self, forKey: .sourceSystem) ?? "unknown"
        reason = try c.decodeIfPresent(String.self, forKey: .reason) ?? "unknown"
        tags = try c.decodeIfPresent([String].self, forKey: .tags) ?? []
        priority = try c.decodeIfPresent(Int.self, forKey: .priority) ?? 0
        correlationID = try c.decodeIfPresent(UUID.self, forKey: .correlationID)
        parentCorrelationID = try c.decodeIfPresent(UUID.self, forKey: .parentCorrelationID)
        idempotencyKey = try c.decodeIfPresent(String.self, forKey: .idempotencyKey)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(namespace, forKey: .namespace)
        try c.encode(name, forKey: .name)
        try c.encode(version, forKey: .version)
        try c.encode(context, forKey: .context)
        try c.encode(initiator, forKey: .initiator)
        try c.encode(sourceSystem, forKey: .sourceSystem)
        try c.encode(reason, forKey: .reason)
        try c.encode(tags, forKey: .tags)
        try c.encode(priority, forKey: .priority)
        try c.encodeIfPresent(correlationID.map { $0.uuidString.lowercased() }, forKey: .correlationID)
        try c.encodeIfPresent(parentCorrelationID.map { $0.uuidString.lowercased() }, forKey: .parentCorrelationID)
        try c.encodeIfPresent(idempotencyKey, forKey: .idempotencyKey)
    }
}

/// The message on `orchestration_task_requests` (upstream `TaskRequestMessage`):
/// `{"request_id", "task_request": {...}, "metadata": {...}}`.
public struct TaskRequestMessage: Sendable, Equatable, Codable {
    public var requestID: UUID
    public var taskRequest: TaskRequest
    public var metadata: JSONValue

    public init(requestID: UUID = UUID.v7(), taskRequest: TaskRequest, metadata: JSONValue = .emptyObject) {
        self.requestID = requestID
        self.taskRequest = taskRequest
        self.metadata = metadata
    }

    enum CodingKeys: String, CodingKey {
        case requestID = "request_id"
        case taskRequest = "task_request"
        case metadata
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        requestID = try c.decodeIfPresent(UUID.self, forKey: .requestID) ?? UUID.v7()
        taskRequest = try c.decode(TaskRequest.self, forKey: .taskRequest)
        metadata = try c.decodeIfPresent(JSONValue.self, forKey: .metadata) ?? .emptyObject
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(requestID.uuidString.lowercased(), forKey: .requestID)
        try c.encode(taskRequest, forKey: .taskRequest)
        try c.encode(metadata, forKey: .metadata)
    }
}
