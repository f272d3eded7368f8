import Foundation
import Logging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Creates a task from a request (upstream `TaskInitializer::create_and_enqueue_task_from_request`):
/// the rows in one transaction with the `NULL→pending` transitions, then `pending → initializing`
/// (`Start`) and either `initializing → enqueuing_steps` (`ReadyStepsFound(n)`) with the ready steps
/// enqueued, or `initializing → complete` (`NoStepsFound`) for a template without steps.
struct TaskInitializationService: Sendable {
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
    ///
    /// With `receipt`, the request message is archived in the creation's transaction (after the
    /// start's commit when the task had to be created alone), so it is archived when this returns.
    func initialize(_ request: TaskRequest, archiving receipt: MessageReceipt? = nil) async throws -> CreatedTask {
        try request.validate()
        guard
            let template = try await context.templates.template(
                namespace: request.namespace, name: request.name,
                version: request.version)
        else {
            throw OrchestrationError.templateNotFound(
                namespace: request.namespace, name: request.name,
                version: request.version)
        }
        let (processor, logger) = (context.processorUUID, context.logger)
        do {
            if let created = try await pipelined(request, template: template, receipt: receipt) {
                logCreated(created, template: template)
                return created
            }
        } catch  where !(error is OrchestrationError) && !error.isTransientOrchestrationFailure {
            // The step-by-step path below meets the same error and handles it.
            logger.debug("pipelined task creation failed; step by step", metadata: ["error": "\(error)"])
        }
        let created: CreatedTask
        do {
            created = try await context.transaction { c in
                let created = try TaskRepository.createTask(c, request: request, template: template, processorUUID: processor)
                let task = TaskIdentity(
                    taskUUID: created.taskUUID, correlationID: created.correlationID,
                    namespace: request.namespace, name: request.name, version: request.version)
                try Self.start(c, taskUUID: created.taskUUID, task: task, processorUUID: processor, logger: logger)
                if let receipt { try PGMQ.archive(c, queue: receipt.queue, msgID: receipt.msgID) }
                return created
            }
        } catch  where !(error is OrchestrationError) && !error.isTransientOrchestrationFailure {
            logger.warning(
                "task creation and start failed together; creating the task alone",
                metadata: ["template": "\(template.identifier)", "error": "\(error)"])
            let alone = try await context.transaction { c in
                try TaskRepository.createTask(c, request: request, template: template, processorUUID: processor)
            }
            try await context.locks.withLock(alone.taskUUID) { try await start(alone.taskUUID) }
            if let receipt {
                _ = try await context.pool.withConnection { c in
                    try await PGMQ.archive(c, queue: receipt.queue, msgID: receipt.msgID)
                }
            }
            created = alone
        }
        logCreated(created, template: template)
        return created
    }

    private func logCreated(_ created: CreatedTask, template: TaskTemplate) {
        context.logger.info(
            "task created",
            metadata: [
                "task_uuid": "\(created.taskUUID)", "template": "\(template.identifier)", "steps": "\(created.steps.count)",
            ])
    }

    /// Creation and start pipelined, in one transaction of four round trips: (1) `BEGIN`, settings,
    /// the task, the step names; (2) the steps; (3) their edges and transitions, `pending →
    /// initializing`, readiness; (4) `initializing → enqueuing_steps`, the enqueued steps, `→
    /// steps_in_process` (or `initializing → complete`), the archive, `COMMIT`. nil, with nothing
    /// written, when the step-by-step path must decide (a template without steps, a step made
    /// elsewhere, a lost compare-and-set). The task is new, so no lock is needed.
    private func pipelined(
        _ request: TaskRequest, template: TaskTemplate,
        receipt: MessageReceipt?
    ) async throws -> CreatedTask? {
        let initial = WorkflowGraph(template).initialSteps
        guard !initial.isEmpty else { return nil }
        let processor = context.processorUUID
        let correlationID = request.correlationID ?? UUID.v7()
        let taskParameters = try TaskRepository.createTaskParameters(
            request, correlationID: correlationID,
            processorUUID: processor)
        return try await context.pool.withConnection { c in
            let opened: [PostgresQueryResult]
            do {
                opened = try await c.pipeline(
                    OrchestrationContext.beginStatements + [
                        .prepared(TaskRepository.Statements.createTask, taskParameters),
                        .prepared(TaskRepository.Statements.ensureNamedSteps, TaskRepository.ensureNamedStepsParameters(initial)),
                    ])
            } catch {
                if let failed = error as? PostgresError, failed.isUniqueViolation {
                    throw TaskRepository.duplicateTask(request)  // rolled back by the pipeline
                }
                throw error
            }
            do {
                let taskUUID = try TaskRepository.createdTaskUUID(opened[2], request: request)
                let made = try await c.pipeline([
                    .prepared(
                        TaskRepository.Statements.createSteps,
                        try TaskRepository.createStepsParameters(taskUUID: taskUUID, initial: initial))
                ])
                let steps = try TaskRepository.createdSteps(made[0])
                guard initial.allSatisfy({ steps[$0.name] != nil }) else {
                    try await c.execute("ROLLBACK")
                    return nil
                }
                let started = try await c.pipeline([
                    .prepared(
                        TaskRepository.Statements.createEdgesAndTransitions,
                        TaskRepository.edgesAndTransitionsParameters(initial: initial, steps: steps)),
                    try TransitionRepository.transitionTaskStatement(
                        taskUUID: taskUUID, from: .pending, to: .initializing,
                        event: .start, processorUUID: processor, asserting: true),
                    TaskRepository.readinessStatement(taskUUID: taskUUID),
                ])
                let readiness = try TaskRepository.readiness(started[2])
                let ready = readiness.filter(\.readyForExecution).count
                let task = TaskIdentity(
                    taskUUID: taskUUID, correlationID: correlationID, namespace: request.namespace,
                    name: request.name, version: request.version)
                var writes: [PipelineStatement]
                if ready == 0 {
                    writes = [
                        try TransitionRepository.transitionTaskStatement(
                            taskUUID: taskUUID, from: .initializing, to: .complete, event: .noStepsFound,
                            processorUUID: processor, finalization: true, asserting: true),
                        TaskRepository.markCompleteStatement(taskUUID: taskUUID),
                    ]
                } else {
                    guard
                        let enqueue = try StepEnqueuerService.enqueueStatements(
                            task: task, readiness: readiness,
                            processorUUID: processor)
                    else {
                        try await c.execute("ROLLBACK")
                        return nil
                    }
                    writes =
                        [
                            try TransitionRepository.transitionTaskStatement(
                                taskUUID: taskUUID, from: .initializing, to: .enqueuingSteps, event: .readyStepsFound(ready),
                                processorUUID: processor, asserting: true)
                        ] + enqueue.statements
                }
                try await c.pipeline(writes + MessageReceipt.commit(archiving: receipt))
                return CreatedTask(taskUUID: taskUUID, correlationID: correlationID, steps: steps)
            } catch {
                if let failed = error as? PostgresError, failed.isFailedAssertion { return nil }  // rolled back by the pipeline
                _ = try? await c.execute("ROLLBACK")
                throw error
            }
        }
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
    static func start(
        _ c: isolated PostgresConnection, taskUUID: UUID, task: TaskIdentity?, processorUUID processor: UUID,
        logger: Logger
    ) throws {
        guard
            try TransitionRepository.transitionTask(
                c, taskUUID: taskUUID, from: .pending, to: .initializing,
                event: .start, processorUUID: processor)
        else { return }
        let readiness = try TaskRepository.readiness(c, taskUUID: taskUUID)
        let ready = readiness.filter(\.readyForExecution).count
        if ready == 0 {
            guard
                try TransitionRepository.transitionTask(
                    c, taskUUID: taskUUID, from: .initializing, to: .complete,
                    event: .noStepsFound, processorUUID: processor,
                    finalization: true)
            else { return }
            try TaskRepository.markComplete(c, taskUUID: taskUUID)
            return
        }
        guard
            try TransitionRepository.transitionTask(
                c, taskUUID: taskUUID, from: .initializing, to: .enqueuingSteps,
                event: .readyStepsFound(ready), processorUUID: processor)
        else { return }
        let identity = try task ?? TaskRepository.identity(c, taskUUID: taskUUID)
        try StepEnqueuerService.enqueueReadySteps(
            c, task: identity, readiness: readiness, processorUUID: processor,
            logger: logger)
    }
}

/// Picks up tasks whose work can (re)start (upstream `process_task_by_state`, fed by
/// `get_next_ready_tasks`): `pending` tasks are started; `waiting_for_dependencies` tasks whose
/// backoff has passed go `→ evaluating_results` (`DependenciesReady`) and are evaluated;
/// `waiting_for_retry` tasks go `→ enqueuing_steps` (`RetryReady`); `evaluating_results` tasks
/// are evaluated again.
struct TaskReadinessService: Sendable {
    let context: OrchestrationContext
    let initializer: TaskInitializationService
    let finalizer: TaskFinalizationService
    let enqueuer: StepEnqueuerService

    public init(
        context: OrchestrationContext, initializer: TaskInitializationService,
        finalizer: TaskFinalizationService, enqueuer: StepEnqueuerService
    ) {
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
                if try TransitionRepository.transitionTask(
                    c, taskUUID: taskUUID, from: .waitingForDependencies,
                    to: .evaluatingResults, event: .dependenciesReady,
                    processorUUID: processor)
                {
                    return try TaskFinalizationService.evaluate(
                        c, taskUUID: taskUUID, task: nil, processorUUID: processor,
                        logger: logger)
                }
            case .waitingForRetry?:
                if try TransitionRepository.transitionTask(
                    c, taskUUID: taskUUID, from: .waitingForRetry, to: .enqueuingSteps,
                    event: .retryReady, processorUUID: processor)
                {
                    let task = try TaskRepository.identity(c, taskUUID: taskUUID)
                    let readiness = try TaskRepository.readiness(c, taskUUID: taskUUID)
                    try StepEnqueuerService.enqueueReadySteps(
                        c, task: task, readiness: readiness, processorUUID: processor,
                        logger: logger)
                }
            case .evaluatingResults?:
                return try TaskFinalizationService.evaluate(
                    c, taskUUID: taskUUID, task: nil, processorUUID: processor,
                    logger: logger)
            default:
                break
            }
            return try TransitionRepository.currentTaskState(c, taskUUID: taskUUID)
        }
    }
}
