import Foundation
import Logging
import TaskerPostgres

/// What an operator's action on a step did (``StepResolutionService``).
public enum StepResolutionOutcome: Sendable, Equatable {
    /// The step moved from `from` to `to`; `task` is its task's state afterwards.
    case moved(from: StepState, to: StepState, task: TaskState?)
    /// The task has no such step (or there is no such task).
    case stepNotFound
    /// The task is finished (`complete`, `cancelled`, `resolved_manually`): none of its steps may change.
    case taskFinished(TaskState)
    /// The action does not apply to a step in this state; nothing was written.
    case notAllowed(StepState)
    /// Another writer (a worker's claim or result, another orchestrator) moved the step from this state
    /// first; nothing was written.
    case changed(StepState)
}

/// An operator's action on a step (upstream `StepService::resolve_step_manually`, reached through
/// `PATCH /v1/tasks/{uuid}/workflow_steps/{step_uuid}` and the `resolveStep` command), in ONE
/// transaction under the task's lock: the step and its task are read; the step's transition is the
/// orchestration's compare-and-set from the state just read (`TransitionRepository.transitionStep`,
/// with who acted and why in its metadata: `ManualStepStatements.metadata`), so a worker's claim or
/// result that lands first wins and the action changes nothing (``StepResolutionOutcome/changed(_:)``);
/// then the step's columns (`ManualStepStatements.apply`) and the task (``TaskResumption``).
struct StepResolutionService: Sendable {
    let context: OrchestrationContext

    /// Applies `action` to step `stepUUID` of task `taskUUID`.
    /// - Throws: `TaskAPIError` `BAD_REQUEST` when `complete_manually`'s data cannot be stored as a
    ///   result; database errors.
    func resolve(task taskUUID: UUID, step stepUUID: UUID, action: StepManualAction) async throws -> StepResolutionOutcome {
        let (processor, logger) = (context.processorUUID, context.logger)
        let now = Date()
        let results = try action.resultsJSON(stepUUID: stepUUID, now: now)
        let outcome = try await context.locks.withLock(taskUUID) {
            try await context.transaction { c in
                try Self.resolve(
                    c, task: taskUUID, step: stepUUID, action: action, resultsJSON: results, processorUUID: processor,
                    logger: logger, now: now)
            }
        }
        if case .moved(let from, let to, let task) = outcome {
            logger.info(
                "step moved by an operator",
                metadata: [
                    "task_uuid": "\(taskUUID.lowercased)", "step_uuid": "\(stepUUID.lowercased)",
                    "action_type": "\(action.actionType)", "\(action.performer.field)": "\(action.performer.name)",
                    "from_state": "\(from.rawValue)", "to_state": "\(to.rawValue)", "task_state": "\(task?.rawValue ?? "none")",
                ])
        }
        return outcome
    }

    /// ``resolve(task:step:action:)`` inside the caller's transaction.
    static func resolve(
        _ c: isolated PostgresConnection, task taskUUID: UUID, step stepUUID: UUID, action: StepManualAction,
        resultsJSON: String?, processorUUID processor: UUID, logger: Logger, now: Date
    ) throws -> StepResolutionOutcome {
        guard let found = try ManualStepStatements.find(c, step: stepUUID, task: taskUUID) else { return .stepNotFound }
        if let task = found.task, task.isTerminal, task != .error { return .taskFinished(task) }
        guard action.allows(found.step) else { return .notAllowed(found.step) }
        let event: StepEvent
        switch action {
        case .resetForRetry: event = .resetForRetry
        case .resolveManually: event = .resolveManually
        case .completeManually: event = .completeManually(resultsJSON: resultsJSON ?? "null")
        }
        guard
            try TransitionRepository.transitionStep(
                c, stepUUID: stepUUID, from: found.step, to: action.targetState,
                metadata: ManualStepStatements.metadata(action, event: event, now: now))
        else { return .changed(found.step) }
        try ManualStepStatements.apply(c, action, step: stepUUID, resultsJSON: resultsJSON)
        let task = try TaskResumption.resume(
            c, taskUUID: taskUUID, stepUUID: stepUUID, action: action, processorUUID: processor, logger: logger)
        return .moved(from: found.step, to: action.targetState, task: task)
    }
}
