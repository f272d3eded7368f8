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
    ///
    /// Creation and start are one transaction (one commit before the first step message is
    /// visible). Should the start fail for a reason that is neither transient nor about the request,
    /// the task is created alone and started in a second transaction, as the two-step path always did,
    /// so that it exists (`pending`, for discovery) even when its start fails.
    public func initialize(_ request: TaskRequest) async throws -> CreatedTask {
        guard let template = try await context.templates.template(namespace: request.namespace, name: request.name,
                                                                   version: request.version)
        else {
            throw OrchestrationError.templateNotFound(namespace: request.namespace, name: request.name,
                                                      version: request.version)
        }
        let (processor, logger) = (context.processorUUID, context.logger)
        let created: CreatedTask
        do {
            created = try await context.transaction { c in
                let created = try TaskRepository.createTask(c, request: request, template: template, processorUUID: processor)
                let task = TaskIdentity(taskUUID: created.taskUUID, correlationID: created.correlationID,
                                        namespace: request.namespace, name: request.name, version: request.version)
                try Self.start(c, taskUUID: created.taskUUID, task: task, processorUUID: processor, logger: logger)
                return created
            }
        } catch where !(error is OrchestrationError) && !error.isTransientOrchestrationFailure {
            logger.warning("task creation and start failed together; creating the task alone",
                           metadata: ["template": "\(template.identifier)", "error": "\(error)"])
            let alone = try await context.transaction { c in
                try TaskRepository.createTask(c, request: request, template: template, processorUUID: processor)
            }
            try await context.locks.withLock(alone.taskUUID) { try await start(alone.taskUUID) }
            created = alone
        }
        logger.info("task created", metadata: [
            "task_uuid": "\(created.taskUUID)", "template": "\(template.identifier)", "steps": "\(created.steps.count)",
        ])
        return created
    }

    /// `pending → initializing → enqueuing_steps → steps_in_process` (or `→ complete` without
    /// ready steps), in one transaction. The caller holds the task's lock; a task no longer
    /// `pending` is left alone.
    func start(_ taskUUID: UUID) async throws {
        let (processor, logger) = (context.processorUUID, context.logger)
        try await context.transaction { c in
            try Self.start(c, taskUUID: taskUUID, task: nil, processorUUID: processor, logger: logger)
        }
    }

    /// `start` inside the caller's transaction; `task` is the identity when the caller has it.
    static func start(_ c: isolated PostgresConnection, taskUUID: UUID, task: TaskIdentity?, processorUUID processor: UUID,
                      logger: Logger) throws {
        guard try TransitionRepository.transitionTask(c, taskUUID: taskUUID, from: .pending, to: .initializing,
                                                      event: .start, processorUUID: processor) else { return }
        let readiness = try TaskRepository.readiness(c, taskUUID: taskUUID)
        let ready = readiness.filter(\.readyForExecution).count
        if ready == 0 {
            guard try TransitionRepository.transitionTask(c, taskUUID: taskUUID, from: .initializing, to: .complete,
                                                          event: .noStepsFound, processorUUID: processor,
                                                          finalization: true) else { return }
            try TaskRepository.markComplete(c, taskUUID: taskUUID)
            return
        }
        guard try TransitionRepository.transitionTask(c, taskUUID: taskUUID, from: .initializing, to: .enqueuingSteps,
                                                      event: .readyStepsFound(ready), processorUUID: processor) else { return }
        let identity = try task ?? TaskRepository.identity(c, taskUUID: taskUUID)
        try StepEnqueuerService.enqueueReadySteps(c, task: identity, readiness: readiness, processorUUID: processor,
                                                  logger: logger)
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

    /// Processes one task by its current state (the caller holds its lock), in one transaction.
    /// Returns the state reached.
    @discardableResult
    func process(_ taskUUID: UUID) async throws -> TaskState? {
        let (processor, logger) = (context.processorUUID, context.logger)
        return try await context.transaction { c in
            let state = try TransitionRepository.currentTaskState(c, taskUUID: taskUUID)
            switch state {
            case .pending?:
                try TaskInitializationService.start(c, taskUUID: taskUUID, task: nil, processorUUID: processor, logger: logger)
            case .waitingForDependencies?:
                if try TransitionRepository.transitionTask(c, taskUUID: taskUUID, from: .waitingForDependencies,
                                                           to: .evaluatingResults, event: .dependenciesReady,
                                                           processorUUID: processor) {
                    return try TaskFinalizationService.evaluate(c, taskUUID: taskUUID, task: nil, processorUUID: processor,
                                                                logger: logger)
                }
            case .waitingForRetry?:
                if try TransitionRepository.transitionTask(c, taskUUID: taskUUID, from: .waitingForRetry, to: .enqueuingSteps,
                                                           event: .retryReady, processorUUID: processor) {
                    let task = try TaskRepository.identity(c, taskUUID: taskUUID)
                    let readiness = try TaskRepository.readiness(c, taskUUID: taskUUID)
                    try StepEnqueuerService.enqueueReadySteps(c, task: task, readiness: readiness, processorUUID: processor,
                                                              logger: logger)
                }
            case .evaluatingResults?:
                return try TaskFinalizationService.evaluate(c, taskUUID: taskUUID, task: nil, processorUUID: processor,
                                                            logger: logger)
            default:
                break
            }
            return try TransitionRepository.currentTaskState(c, taskUUID: taskUUID)
        }
    }
}
