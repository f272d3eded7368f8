import Foundation
import Logging
import TaskerWorker

/// Creates a task from a request (upstream `TaskInitializer::create_and_enqueue_task_from_request`):
/// the rows in one transaction with the `NULL→pending` transitions, then `pending → initializing`
/// (`Start`) and either `initializing → enqueuing_steps` (`ReadyStepsFound(n)`) with the ready steps
/// enqueued, or `initializing → complete` (`NoStepsFound`) for a template without steps.
public struct TaskInitializationService: Sendable {
    let context: OrchestrationContext
    let enqueuer: StepEnqueuerService

    public init(context: OrchestrationContext, enqueuer: StepEnqueuerService) {
        self.context = context
        self.enqueuer = enqueuer
    }

    /// Creates and starts the task. Throws ``OrchestrationError/templateNotFound(namespace:name:version:)``
    /// when no worker registered the template, ``OrchestrationError/duplicateTask(namespace:name:version:existingTaskUUID:)``
    /// for a second task with the same identity.
    public func initialize(_ request: TaskRequest) async throws -> CreatedTask {
        guard let template = try await context.templates.template(namespace: request.namespace, name: request.name,
                                                                   version: request.version)
        else {
            throw OrchestrationError.templateNotFound(namespace: request.namespace, name: request.name,
                                                      version: request.version)
        }
        let processor = context.processorUUID
        let created = try await context.transaction { c in
            try TaskRepository.createTask(c, request: request, template: template, processorUUID: processor)
        }
        context.logger.info("task created", metadata: [
            "task_uuid": "\(created.taskUUID)", "template": "\(template.identifier)", "steps": "\(created.steps.count)",
        ])
        try await context.locks.withLock(created.taskUUID) {
            try await start(created.taskUUID)
        }
        return created
    }

    /// `pending → initializing → enqueuing_steps → steps_in_process` (or `→ complete` without
    /// ready steps). The caller holds the task's lock; a task no longer `pending` is left alone.
    func start(_ taskUUID: UUID) async throws {
        let processor = context.processorUUID
        let started = try await context.transaction { c in
            try TransitionRepository.transitionTask(c, taskUUID: taskUUID, from: .pending, to: .initializing,
                                                    event: .start, processorUUID: processor)
        }
        guard started else { return }
        let ready = try await context.pool.withConnection { c in
            try await TaskRepository.readiness(c, taskUUID: taskUUID).filter(\.readyForExecution).count
        }
        if ready == 0 {
            _ = try await context.transaction { c in
                guard try TransitionRepository.transitionTask(c, taskUUID: taskUUID, from: .initializing, to: .complete,
                                                              event: .noStepsFound, processorUUID: processor,
                                                              finalization: true) else { return false }
                try TaskRepository.markComplete(c, taskUUID: taskUUID)
                return true
            }
            return
        }
        let moved = try await context.transaction { c in
            try TransitionRepository.transitionTask(c, taskUUID: taskUUID, from: .initializing, to: .enqueuingSteps,
                                                    event: .readyStepsFound(ready), processorUUID: processor)
        }
        guard moved else { return }
        let task = try await context.pool.withConnection { c in try await TaskRepository.identity(c, taskUUID: taskUUID) }
        try await enqueuer.enqueueReadySteps(task: task)
    }
}

/// Picks up tasks whose work can (re)start (upstream `process_task_by_state`, fed by
/// `get_next_ready_tasks`): `pending` tasks are started; `waiting_for_dependencies` tasks whose
/// backoff has passed go `→ evaluating_results` (`DependenciesReady`) and are evaluated;
/// `waiting_for_retry` tasks go `→ enqueuing_steps` (`RetryReady`); `evaluating_results` tasks
/// are evaluated again.
public struct TaskReadinessService: Sendable {
    let context: OrchestrationContext
    let initializer: TaskInitializationService
    let finalizer: TaskFinalizationService
    let enqueuer: StepEnqueuerService

    public init(context: OrchestrationContext, initializer: TaskInitializationService,
                finalizer: TaskFinalizationService, enqueuer: StepEnqueuerService) {
        self.context = context
        self.initializer = initializer
        self.finalizer = finalizer
        self.enqueuer = enqueuer
    }

    /// Processes one task by its current state (the caller holds its lock). Returns the state reached.
    @discardableResult
    func process(_ taskUUID: UUID) async throws -> TaskState? {
        let processor = context.processorUUID
        let state = try await context.pool.withConnection { c in try await TransitionRepository.currentTaskState(c, taskUUID: taskUUID) }
        switch state {
        case .pending?:
            try await initializer.start(taskUUID)
        case .waitingForDependencies?:
            let moved = try await context.transaction { c in
                try TransitionRepository.transitionTask(c, taskUUID: taskUUID, from: .waitingForDependencies,
                                                        to: .evaluatingResults, event: .dependenciesReady,
                                                        processorUUID: processor)
            }
            if moved { return try await finalizer.evaluate(taskUUID) }
        case .waitingForRetry?:
            let moved = try await context.transaction { c in
                try TransitionRepository.transitionTask(c, taskUUID: taskUUID, from: .waitingForRetry, to: .enqueuingSteps,
                                                        event: .retryReady, processorUUID: processor)
            }
            if moved {
                let task = try await context.pool.withConnection { c in try await TaskRepository.identity(c, taskUUID: taskUUID) }
                try await enqueuer.enqueueReadySteps(task: task)
            }
        case .evaluatingResults?:
            return try await finalizer.evaluate(taskUUID)
        default:
            break
        }
        return try await context.pool.withConnection { c in try await TransitionRepository.currentTaskState(c, taskUUID: taskUUID) }
    }
}
