import Foundation
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration

/// `orchestration_task_finalizations`: upstream's message (`{"task_uuid": …}`) read as a finalization
/// request, anything else refused naming what is wrong. (The queue handled by a running orchestration:
/// `OrchestrationFinalizationQueueTests` in TaskerSystemTests.)
@Suite(.serialized) struct TaskFinalizationRequestTests {
    @Test func requestParsing() throws {
        let task = UUID()
        func message(_ body: JSONValue, error: String? = nil) -> QueueMessage {
            QueueMessage(queue: QueueNames.taskFinalizations, msgID: 1, readCount: 1, message: body, bodyError: error)
        }
        #expect(try TaskFinalizationRequest(message(["task_uuid": .string(task.uuidString)])).taskUUID == task)
        #expect(throws: TaskFinalizationRequest.Refusal.self) { try TaskFinalizationRequest(message(["task_uuid": "x"])) }
        #expect(throws: TaskFinalizationRequest.Refusal.self) { try TaskFinalizationRequest(message(.null, error: "too deep")) }
        let refusal = #expect(throws: TaskFinalizationRequest.Refusal.self) { try TaskFinalizationRequest(message([1, 2])) }
        #expect(refusal?.description.contains("\"task_uuid\"") == true)
    }
}
