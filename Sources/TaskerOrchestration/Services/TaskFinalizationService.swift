import Foundation
import Logging
import TaskerPostgres

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
struct TaskFinalizationService: Sendable {
    let context: OrchestrationContext
    let enqueuer: StepEnqueuerService

    public init(context: OrchestrationContext, enqueuer: StepEnqueuerService) {
        self.context = context
        self.enqueuer = enqueuer
    }

    /// Finalizes a task (taking its lock), in one transaction: a task in `steps_in_process` first
    /// moves to `evaluating_results`; other states are left alone. Returns the state reached.
    @discardableResult
    func finalizeTask(_ taskUUID: UUID) async throws -> TaskState? {
        let (processor, logger) = (context.processorUUID, context.logger)
        return try await context.locks.withLock(taskUUID) {
            try await context.transaction { c in
                let state = try TransitionRepository.currentTaskState(c, taskUUID: taskUUID)
                if state == .stepsInProcess {
                    _ = try TransitionRepository.transitionTask(
                        c, taskUUID: taskUUID, from: .stepsInProcess,
                        to: .evaluatingResults, event: .allStepsCompleted,
                        processorUUID: processor)
                } else if state != .evaluatingResults {
                    return state
                }
                return try Self.evaluate(c, taskUUID: taskUUID, task: nil, processorUUID: processor, logger: logger)
            }
        }
    }

    /// Acts on a task in `evaluating_results` (the caller holds its lock), in one transaction.
    /// Returns the state reached.
    @discardableResult
    func evaluate(_ taskUUID: UUID) async throws -> TaskState {
        let (processor, logger) = (context.processorUUID, context.logger)
        return try await context.transaction { c in
            try Self.evaluate(c, taskUUID: taskUUID, task: nil, processorUUID: processor, logger: logger)
        }
    }

    /// Acts on a task in `evaluating_results` inside the caller's transaction (the caller holds its
    /// lock). `task` is the task's identity when the caller has it (read here otherwise, only when
    /// steps are enqueued). Readiness is read once: the execution status is derived from it
    /// (`TaskRepository.executionStatus(of:)`) and its ready rows are the steps enqueued.
    @discardableResult
    static func evaluate(
        _ c: isolated PostgresConnection, taskUUID: UUID, task: TaskIdentity?, processorUUID processor: UUID,
        logger: Logger
    ) throws -> TaskState {
        let readiness = try TaskRepository.readiness(c, taskUUID: taskUUID)
        let status = TaskRepository.executionStatus(of: readiness)
        let readyCount = readiness.filter(\.readyForExecution).count
        switch status {
        case "all_complete":
            try TaskRepository.lock(c, taskUUID: taskUUID)
            guard
                try TransitionRepository.transitionTask(
                    c, taskUUID: taskUUID, from: .evaluatingResults, to: .complete,
                    event: .allStepsSuccessful, processorUUID: processor,
                    finalization: true)
            else { return .evaluatingResults }
            try TaskRepository.markComplete(c, taskUUID: taskUUID)
            logger.info("task complete", metadata: ["task_uuid": "\(taskUUID)"])
            return .complete
        case "blocked_by_failures":
            try TaskRepository.lock(c, taskUUID: taskUUID)
            guard
                try TransitionRepository.transitionTask(
                    c, taskUUID: taskUUID, from: .evaluatingResults, to: .blockedByFailures,
                    event: .permanentFailure("Task has steps in error that cannot be retried"),
                    processorUUID: processor, finalization: true)
            else { return .evaluatingResults }
            guard
                try TransitionRepository.transitionTask(
                    c, taskUUID: taskUUID, from: .blockedByFailures, to: .error,
                    event: .giveUp, processorUUID: processor, finalization: true)
            else { return .evaluatingResults }
            logger.warning("task failed: steps in error", metadata: ["task_uuid": "\(taskUUID)"])
            return .error
        case "has_ready_steps":
            guard
                try TransitionRepository.transitionTask(
                    c, taskUUID: taskUUID, from: .evaluatingResults, to: .enqueuingSteps,
                    event: .readyStepsFound(readyCount), processorUUID: processor)
            else { return .evaluatingResults }
            let identity = try task ?? TaskRepository.identity(c, taskUUID: taskUUID)
            try StepEnqueuerService.enqueueReadySteps(
                c, task: identity, readiness: readiness, processorUUID: processor,
                logger: logger)
            return .stepsInProcess
        case "waiting_for_dependencies":
            let moved = try TransitionRepository.transitionTask(
                c, taskUUID: taskUUID, from: .evaluatingResults,
                to: .waitingForDependencies, event: .noDependenciesReady,
                processorUUID: processor)
            return moved ? .waitingForDependencies : .evaluatingResults
        default:
            // `processing`: other steps are still out with workers; their results finalize the task.
            return .evaluatingResults
        }
    }
}
