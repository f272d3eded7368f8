import Foundation
import Logging
import TaskerPostgres

/// What a task does once an operator moved one of its steps (``StepResolutionService``): in the same
/// transaction, under the task's lock, the task is brought to where the orchestration's own machinery
/// takes it on, through the transitions upstream's task state machine allows and the same evaluation
/// and enqueueing a step result or discovery runs (`TaskFinalizationService.evaluate`,
/// `StepEnqueuerService.enqueueReadySteps`), so the steps that can run now are enqueued before the
/// answer and a task with nothing left to run is finalized.
///
/// Upstream's `PATCH` writes the step's transition only; its guide promises that "the task state machine
/// automatically progresses" and that a failed task resumes (`error → enqueuing_steps`, which its state
/// machine does not allow). Here, by the task's state:
///
/// | task | after the step moved |
/// |---|---|
/// | `error` | stays `error` while another step is in error (the evaluation would fail it again); else `Reset` → `pending`, `Start` → `initializing`, then: ready steps → `enqueuing_steps` (`ReadyStepsFound`), enqueued, `→ steps_in_process`; only steps waiting out a backoff → `waiting_for_dependencies` (discovery resumes it); all done or steps still with workers → `waiting_for_dependencies` → `evaluating_results` and evaluated (`complete`, or left for the running steps' results) |
/// | `steps_in_process` | resolved or completed: `StepCompleted(step)` → `evaluating_results`, evaluated, as a worker's result would be; reset: the same with `AllStepsCompleted` once no step is with a worker (else the running steps' results evaluate it) |
/// | `evaluating_results` | evaluated |
/// | `waiting_for_dependencies` | `DependenciesReady` → `evaluating_results`, evaluated (discovery's path) |
/// | `waiting_for_retry` | with a step ready: `RetryReady` → `enqueuing_steps`, enqueued (discovery's path) |
/// | `pending`, `initializing`, `enqueuing_steps`, `blocked_by_failures` | left to the orchestration |
///
/// Every task transition is the orchestration's compare-and-set (`TransitionRepository.transitionTask`):
/// one that finds the task moved by another orchestrator stops the resumption there.
enum TaskResumption {
    /// Resumes the task after `action` moved `stepUUID`; returns the task's state afterwards.
    static func resume(
        _ c: isolated PostgresConnection, taskUUID: UUID, stepUUID: UUID, action: StepManualAction,
        processorUUID processor: UUID, logger: Logger
    ) throws -> TaskState? {
        let state = try TransitionRepository.currentTaskState(c, taskUUID: taskUUID)
        switch state {
        case .error?:
            return try revive(c, taskUUID: taskUUID, processorUUID: processor, logger: logger)
        case .stepsInProcess?:
            let event: TaskEvent
            if case .resetForRetry = action {
                let readiness = try TaskRepository.readiness(c, taskUUID: taskUUID)
                // Steps still with workers: their results evaluate the task (and enqueue this one).
                guard !readiness.contains(where: { Self.withWorkers.contains($0.currentState) }) else { return state }
                event = .allStepsCompleted
            } else {
                event = .stepCompleted(stepUUID)
            }
            guard
                try TransitionRepository.transitionTask(
                    c, taskUUID: taskUUID, from: .stepsInProcess, to: .evaluatingResults, event: event, processorUUID: processor)
            else { return try TransitionRepository.currentTaskState(c, taskUUID: taskUUID) }
            return try evaluate(c, taskUUID: taskUUID, processorUUID: processor, logger: logger)
        case .evaluatingResults?:
            return try evaluate(c, taskUUID: taskUUID, processorUUID: processor, logger: logger)
        case .waitingForDependencies?:
            guard
                try TransitionRepository.transitionTask(
                    c, taskUUID: taskUUID, from: .waitingForDependencies, to: .evaluatingResults, event: .dependenciesReady,
                    processorUUID: processor)
            else { return try TransitionRepository.currentTaskState(c, taskUUID: taskUUID) }
            return try evaluate(c, taskUUID: taskUUID, processorUUID: processor, logger: logger)
        case .waitingForRetry?:
            let readiness = try TaskRepository.readiness(c, taskUUID: taskUUID)
            guard readiness.contains(where: \.readyForExecution),
                try TransitionRepository.transitionTask(
                    c, taskUUID: taskUUID, from: .waitingForRetry, to: .enqueuingSteps, event: .retryReady,
                    processorUUID: processor)
            else { return state }
            try StepEnqueuerService.enqueueReadySteps(
                c, task: try TaskRepository.identity(c, taskUUID: taskUUID), readiness: readiness, processorUUID: processor,
                logger: logger)
            return try TransitionRepository.currentTaskState(c, taskUUID: taskUUID)
        default:
            return state
        }
    }

    /// The step states of a step a worker holds or has answered for (its result not yet processed).
    static let withWorkers: Set<String> = [
        "enqueued", "in_progress", "enqueued_for_orchestration", "enqueued_as_error_for_orchestration",
    ]

    /// A failed task that can run again: `error → pending → initializing`, then by its steps.
    private static func revive(
        _ c: isolated PostgresConnection, taskUUID: UUID, processorUUID processor: UUID, logger: Logger
    ) throws -> TaskState? {
        let readiness = try TaskRepository.readiness(c, taskUUID: taskUUID)
        let status = TaskRepository.executionStatus(of: readiness)
        guard status != "blocked_by_failures" else {
            logger.info(
                "task stays in error: another of its steps is in error", metadata: ["task_uuid": "\(taskUUID.lowercased)"])
            return .error
        }
        guard
            try TransitionRepository.transitionTask(
                c, taskUUID: taskUUID, from: .error, to: .pending, event: .reset, processorUUID: processor),
            try TransitionRepository.transitionTask(
                c, taskUUID: taskUUID, from: .pending, to: .initializing, event: .start, processorUUID: processor)
        else { return try TransitionRepository.currentTaskState(c, taskUUID: taskUUID) }
        logger.info("failed task resumed", metadata: ["task_uuid": "\(taskUUID.lowercased)", "execution_status": "\(status)"])
        switch status {
        case "has_ready_steps":
            let ready = readiness.filter(\.readyForExecution).count
            guard
                try TransitionRepository.transitionTask(
                    c, taskUUID: taskUUID, from: .initializing, to: .enqueuingSteps, event: .readyStepsFound(ready),
                    processorUUID: processor)
            else { break }
            try StepEnqueuerService.enqueueReadySteps(
                c, task: try TaskRepository.identity(c, taskUUID: taskUUID), readiness: readiness, processorUUID: processor,
                logger: logger)
        case "waiting_for_dependencies":
            // Steps waiting out a backoff: discovery resumes the task once one is ready.
            _ = try TransitionRepository.transitionTask(
                c, taskUUID: taskUUID, from: .initializing, to: .waitingForDependencies, event: .noDependenciesReady,
                processorUUID: processor)
        default:
            // `all_complete` (finalized now) or `processing` (the running steps' results finalize it).
            guard
                try TransitionRepository.transitionTask(
                    c, taskUUID: taskUUID, from: .initializing, to: .waitingForDependencies, event: .noDependenciesReady,
                    processorUUID: processor),
                try TransitionRepository.transitionTask(
                    c, taskUUID: taskUUID, from: .waitingForDependencies, to: .evaluatingResults, event: .dependenciesReady,
                    processorUUID: processor)
            else { break }
            return try evaluate(c, taskUUID: taskUUID, processorUUID: processor, logger: logger)
        }
        return try TransitionRepository.currentTaskState(c, taskUUID: taskUUID)
    }

    /// The evaluation every step result runs on a task in `evaluating_results`.
    private static func evaluate(
        _ c: isolated PostgresConnection, taskUUID: UUID, processorUUID processor: UUID, logger: Logger
    ) throws -> TaskState? {
        try TaskFinalizationService.evaluate(c, taskUUID: taskUUID, task: nil, processorUUID: processor, logger: logger)
    }
}
