import Foundation
import TaskerStepModel

/// The only message on `worker_<ns>_queue` and `orchestration_step_results`:
/// `{"task_uuid","step_uuid","correlation_id"}`, all required, and ours, optional: `traceparent`.
public struct StepMessage: Codable, Sendable, Hashable {
    public var taskUUID: UUID
    public var stepUUID: UUID
    public var correlationID: UUID
    /// Ours (issue #30): the W3C `traceparent` of the span that sent the message (the orchestration's
    /// enqueue of the step; the worker's step, on a result), so that one trace spans the whole task.
    /// Upstream's readers ignore the added key. Kept as sent when at most ``maximumTraceParentLength``
    /// bytes (a longer value is dropped when decoded); whether it is a valid trace context is decided
    /// where it is used (`TraceParent(header:)`: an invalid one starts a trace of its own).
    public var traceparent: String?

    /// The longest `traceparent` kept from a message.
    public static let maximumTraceParentLength = 512

    public init(taskUUID: UUID, stepUUID: UUID, correlationID: UUID, traceparent: String? = nil) {
        self.taskUUID = taskUUID
        self.stepUUID = stepUUID
        self.correlationID = correlationID
        self.traceparent = traceparent
    }

    enum CodingKeys: String, CodingKey {
        case taskUUID = "task_uuid"
        case stepUUID = "step_uuid"
        case correlationID = "correlation_id"
        case traceparent
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        taskUUID = try container.decode(UUID.self, forKey: .taskUUID)
        stepUUID = try container.decode(UUID.self, forKey: .stepUUID)
        correlationID = try container.decode(UUID.self, forKey: .correlationID)
        // Any other type, or too long: no trace parent (the step is not refused for it).
        let trace = try? container.decodeIfPresent(String.self, forKey: .traceparent)
        traceparent = trace.flatMap { $0.utf8.count <= Self.maximumTraceParentLength ? $0 : nil }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(taskUUID.uuidString.lowercased(), forKey: .taskUUID)
        try container.encode(stepUUID.uuidString.lowercased(), forKey: .stepUUID)
        try container.encode(correlationID.uuidString.lowercased(), forKey: .correlationID)
        try container.encodeIfPresent(traceparent, forKey: .traceparent)
    }
}

extension StepMessage {
    /// The message as `JSONEncoder().encode(self)` writes it (members in sorted order), without Foundation.
    package func jsonString() -> String {
        var writer = JSONWriter(sortedKeys: true, escapeSlashes: true)
        writer.open("{")
        writer.key("correlation_id", first: true)
        writer.uuid(correlationID)
        writer.key("step_uuid")
        writer.uuid(stepUUID)
        writer.key("task_uuid")
        writer.uuid(taskUUID)
        if let traceparent { writer.member("traceparent", traceparent) }
        writer.close("}")
        return writer.text
    }
}
