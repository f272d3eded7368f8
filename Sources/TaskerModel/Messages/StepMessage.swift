import Foundation

/// The only message on `worker_<ns>_queue` and `orchestration_step_results`:
/// `{"task_uuid","step_uuid","correlation_id"}`, all required.
public struct StepMessage: Codable, Sendable, Hashable {
    public var taskUUID: UUID
    public var stepUUID: UUID
    public var correlationID: UUID

    public init(taskUUID: UUID, stepUUID: UUID, correlationID: UUID) {
        self.taskUUID = taskUUID
        self.stepUUID = stepUUID
        self.correlationID = correlationID
    }

    enum CodingKeys: String, CodingKey {
        case taskUUID = "task_uuid"
        case stepUUID = "step_uuid"
        case correlationID = "correlation_id"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(taskUUID.uuidString.lowercased(), forKey: .taskUUID)
        try container.encode(stepUUID.uuidString.lowercased(), forKey: .stepUUID)
        try container.encode(correlationID.uuidString.lowercased(), forKey: .correlationID)
    }
}
