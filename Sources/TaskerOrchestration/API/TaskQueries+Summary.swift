import Foundation
import TaskerHTTP

extension TaskQueries {
    /// The task's `TaskSummaryResponse` (`GET /v1/tasks/{uuid}/summary`, ``TaskSummaryStatements``),
    /// or nil when there is no such task. It carries no context and no step results (their errors'
    /// kind only), so it stays small whatever the task holds.
    public func summary(_ taskUUID: UUID) async throws(TaskAPIError) -> Data? {
        try await documents(TaskSummaryStatements.summary, [taskUUID], doing: "reading a task summary").first
    }
}
