import Foundation
import TaskerHTTP

extension TaskQueries {
    /// Applies an operator's action to step `stepUUID` of task `taskUUID`
    /// (`PATCH /v1/tasks/{uuid}/workflow_steps/{step_uuid}`) through the orchestration's own command
    /// (`resolveStep`: the step's compare-and-set transition, then the task continues and the steps that
    /// can run now are enqueued, their messages sent after the commit on every transport); answers the
    /// step's `StepResponse` afterwards, as upstream does.
    /// - Throws: ``TaskAPIError`` `NOT_FOUND` when the task has no such step; `BAD_REQUEST` when the task
    ///   is finished or the action does not apply to the step's state (naming both); `CONFLICT` when a
    ///   worker or another orchestrator moved the step first (nothing was written: read it and decide
    ///   again); `SERVICE_UNAVAILABLE` when no database connection became free.
    public func resolveStep(_ taskUUID: UUID, _ stepUUID: UUID, _ action: StepManualAction) async throws(TaskAPIError) -> Data {
        let outcome: StepResolutionOutcome
        do {
            // Not cancelled with the request (its timeout, a client gone): once the step's move commits,
            // the messages of the steps it made ready must still be sent.
            let command = Task { [orchestration] in
                try await orchestration.process(.resolveStep(task: taskUUID, step: stepUUID, action: action))
            }
            guard case .stepResolved(let result) = try await command.value
            else { throw TaskAPIError(.internalError, "the step action was not processed") }
            outcome = result
        } catch let error as TaskAPIError {
            throw error
        } catch OrchestrationError.taskNotFound(let task) {
            throw TaskAPIError(.notFound, "task \(task.lowercased) does not exist")
        } catch {
            throw databaseError(error, doing: "acting on a step")
        }
        let subject = "step \(stepUUID.lowercased)"
        switch outcome {
        case .moved:
            break
        case .stepNotFound:
            throw TaskAPIError(.notFound, "task \(taskUUID.lowercased) has no workflow step \(stepUUID.lowercased)")
        case .taskFinished(let state):
            throw TaskAPIError(
                .badRequest, "cannot \(action.actionType) \(subject): its task \(taskUUID.lowercased) is \(state.rawValue)")
        case .notAllowed(let state):
            throw TaskAPIError(
                .badRequest,
                "cannot \(action.actionType) \(subject): it is \(state.rawValue); \(action.actionType) applies to a step in "
                    + action.acceptedStates)
        case .changed(let state):
            throw TaskAPIError(
                .conflict,
                "\(subject) left \(state.rawValue) while it was being changed (a worker or the orchestration moved it); "
                    + "read it and try again")
        }
        guard let document = try await self.step(taskUUID, stepUUID) else {
            throw TaskAPIError(.notFound, "task \(taskUUID.lowercased) has no workflow step \(stepUUID.lowercased)")
        }
        return document
    }
}
