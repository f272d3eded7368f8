import Foundation
import TaskerStepModel

/// A domain event a step publishes (`publishes_events[]`).
///
/// As upstream, `description` and `schema` must be present in the file (`schema` may be `null`);
/// they are optional here only so that code can build declarations without them. A nil
/// `description` is written as `""` so that the Rust side can still read the template.
public struct EventDeclaration: Codable, Sendable, Equatable {
    /// Dotted event name, e.g. `order.created`.
    public var name: String
    public var description: String?
    /// When to publish (default `success`).
    public var condition: EventCondition
    /// JSON Schema the payload (`result.result`) must satisfy.
    public var schema: JSONValue?
    /// Where to publish (default `durable`).
    public var deliveryMode: DeliveryMode
    /// Custom publisher name; nil means the default publisher.
    public var publisher: String?

    public init(
        name: String, description: String? = nil, condition: EventCondition = .success,
        schema: JSONValue? = nil, deliveryMode: DeliveryMode = .durable, publisher: String? = nil
    ) {
        self.name = name
        self.description = description
        self.condition = condition
        self.schema = schema
        self.deliveryMode = deliveryMode
        self.publisher = publisher
    }

    enum CodingKeys: String, CodingKey {
        case name, description, condition, schema, publisher
        case deliveryMode = "delivery_mode"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        description = try c.decode(String.self, forKey: .description)
        condition = try c.decodeIfPresent(EventCondition.self, forKey: .condition) ?? .success
        guard c.contains(.schema) else {
            throw DecodingError.keyNotFound(
                CodingKeys.schema,
                DecodingError.Context(
                    codingPath: c.codingPath, debugDescription: "missing field `schema`"))
        }
        schema = try c.decodeOptionalJSON(forKey: .schema)
        deliveryMode = try c.decodeIfPresent(DeliveryMode.self, forKey: .deliveryMode) ?? .durable
        publisher = try c.decodeIfPresent(String.self, forKey: .publisher)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(description ?? "", forKey: .description)
        try c.encode(condition, forKey: .condition)
        try c.encodeOrNull(schema, forKey: .schema)
        try c.encode(deliveryMode, forKey: .deliveryMode)
        try c.encodeOrNull(publisher, forKey: .publisher)
    }
}

/// When an event is published, given the step's outcome.
public enum EventCondition: String, Codable, Sendable, Equatable, CaseIterable {
    case success
    case failure
    /// Declared upstream, but the Rust worker never publishes these (it has no retryability info).
    case retryableFailure = "retryable_failure"
    /// Declared upstream, but the Rust worker never publishes these (it has no retryability info).
    case permanentFailure = "permanent_failure"
    case always
}

/// How an event is delivered.
public enum DeliveryMode: String, Codable, Sendable, Equatable, CaseIterable {
    /// `pgmq_send_with_notify('<ns>_domain_events', …)`.
    case durable
    /// In-process bus only.
    case fast
    /// Both.
    case broadcast
}
