import Foundation
import Logging
import TaskerWorker

/// Decides what a task in `evaluating_results` does next from `get_task_execution_context`
/// (upstream `task_finalization/completion_handler.rs` and the evaluating state handler):
///
/// | execution_status | transition |
/// |---|---|
/// | `all_complete` | `→ complete` (`AllStepsSuccessful`), `complete = true`, `completed_at` |
/// | `blocked_by_failures` | `→ blocked_by_failures` (`PermanentFailure`), then `→ error` (`GiveUp`) |
/// | `has_ready_steps` | `→ enqueuing_steps` (`ReadyStepsFound(n)`), enqueue, `→ steps_in_process` |
/// | `waiting_for_dependencies` | `→ waiting_for_dependencies` (`NoDependenciesReady`) |
/// | `processing` | stays in `evaluating_results` |
public struct TaskFinalizationService: Sendable {
    let context: OrchestrationContext
    let enqueuer: StepEnqueuerService

    public init(context: OrchestrationContext, enqueuer: StepEnqueuerService) {
        self.context = context
        self.enqueuer = enqueuer
    }

    /// Finalizes a task (taking its lock): a task in `steps_in_process` first moves to
    /// `evaluating_results`; other states are left alone. Returns the state reached.
    @discardableResult
    public func finalizeTask(_ taskUUID: UUID) async throws -> TaskState? {
        try await context.locks.withLock(taskUUID) {
            let processor = context.processorUUID
            let state = try await context.pool.withConnection { c in
                try await TransitionRepository.currentTaskState(c, taskUUID: taskUUID)
            }
            if state == .stepsInProcess {
                _ = try await context.transaction { c in
                    try TransitionRepository.transitionTask(c, taskUUID: taskUUID, from: .stepsInProcess,
                                                            to: .evaluatingResults, event: .allStepsCompleted,
                                                            processorUUID: processor)
                }
            } else if state != .evaluatingResults {
                return state
            }
            return try await evaluate(taskUUID)
        }
    }

    /// Acts on a task in `evaluating_results` (the caller holds its lock). Returns the state reached.
    @discardableResult
    func evaluate(_ taskUUID: UUID) async throws -> TaskState {
        let processor = context.processorUUID
        let (status, readyCount) = try await context.pool.withConnection { c in
            let status = try await TaskRepository.executionStatus(c, taskUUID: taskUUID)
            let ready = try await TaskRepository.readiness(c, taskUUID: taskUUID).filter(\.readyForExecution).count
            return (status, ready)
        }
        switch status {
        case "all_complete":
            let done = try await context.transaction { c in
                try c.query("SELECT task_uuid FROM tasker.tasks WHERE task_uuid = $1 FOR UPDATE", [taskUUID])
                guard try TransitionRepository.transitionTask(c, taskUUID: taskUUID, from: .evaluatingResults, to: .complete,
                                                              event: .allStepsSuccessful, processorUUID: processor,
                                                              finalization: true) else { return false }
                try TaskRepository.markComplete(c, taskUUID: taskUUID)
                return true
            }
            if done { context.logger.info("task complete", metadata: ["task_uuid": "\(taskUUID)"]) }
            return done ? .complete : .evaluatingResults
        case "blocked_by_failures":
            let failed = try await context.transaction { c in
                try c.query("SELECT task_uuid FROM tasker.tasks WHERE task_uuid = $1 FOR UPDATE", [taskUUID])
                guard try TransitionRepository.transitionTask(
                    c, taskUUID: taskUUID, from: .evaluatingResults, to: .blockedByFailures,
                    event: .permanentFailure("Task has steps in error that cannot be retried"),
                    processorUUID: processor, finalization: true) else { return false }
                return try TransitionRepository.transitionTask(c, taskUUID: taskUUID, from: .blockedByFailures, to: .error,
                                                               event: .giveUp, processorUUID: processor, finalization: true)
            }
            if failed { context.logger.warning("task failed: steps in error", metadata: ["task_uuid": "\(taskUUID)"]) }
            return failed ? .error : .evaluatingResults
        case "has_ready_steps":
            let moved = try await context.transaction { c in
                try TransitionRepository.transitionTask(c, taskUUID: taskUUID, from: .evaluatingResults, to: .enqueuingSteps,
                                                        event: .readyStepsFound(readyCount), processorUUID: processor)
            }
            guard moved else { return .evaluatingResults }
            let task = try await context.pool.withConnection { c in try await TaskRepository.identity(c, taskUUID: taskUUID) }
            try await enqueuer.enqueueReadySteps(task: task)
            return .stepsInProcess
        case "waiting_for_dependencies":
            let moved = try await context.transaction { c in
                try TransitionRepository.transitionTask(c, taskUUID: taskUUID, from: .evaluatingResults,
                                                        to: .waitingForDependencies, event: .noDependenciesReady,
                                                        processorUUID: processor)
            }
            return moved ? .waitingForDependencies : .evaluatingResults
        default:
            // `processing`: other steps are still out with workers; their results finalize the task.
            return .evaluatingResults
        }
    }
}
