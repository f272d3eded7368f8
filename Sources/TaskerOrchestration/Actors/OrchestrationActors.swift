import Foundation
import Logging
import TaskerModel

/// The commands the orchestration processes (upstream `OrchestrationCommand`).
public enum OrchestrationCommand: Sendable, Equatable {
    /// Create a task from a request and start it.
    case initializeTask(TaskRequest)
    /// Consume one step result (the message of `orchestration_step_results`).
    case processStepResult(StepMessage)
    /// Finalize a task (from `steps_in_process` or `evaluating_results`).
    case finalizeTask(UUID)
    /// (Re)start a task found by discovery (`get_next_ready_tasks`).
    case processTaskReadiness(UUID)
}

/// What a command produced.
public enum OrchestrationCommandResult: Sendable, Equatable {
    case taskInitialized(CreatedTask)
    case stepResultProcessed(StepResultOutcome)
    case taskFinalized(TaskState?)
    case taskReadinessProcessed(TaskState?)
}

/// Handles `InitializeTask` through ``TaskInitializationService``.
public actor TaskRequestActor {
    let service: TaskInitializationService
    public init(service: TaskInitializationService) { self.service = service }

    /// With `receipt`, the request message is archived with the task's creation (when this returns).
    public func handle(_ request: TaskRequest, archiving receipt: MessageReceipt? = nil) async throws -> CreatedTask {
        try await service.initialize(request, archiving: receipt)
    }
}

/// Handles `ProcessStepResult` through ``ResultProcessingService`` (under the task's lock).
public actor ResultProcessorActor {
    let service: ResultProcessingService
    let locks: TaskLocks
    public init(service: ResultProcessingService, locks: TaskLocks) {
        self.service = service
        self.locks = locks
    }

    /// With `receipt`, the result message is archived in the result's transaction (when this returns).
    public func handle(_ message: StepMessage, archiving receipt: MessageReceipt? = nil) async throws -> StepResultOutcome {
        try await locks.withLock(message.taskUUID) { try await service.process(message, archiving: receipt) }
    }
}

/// Handles `FinalizeTask` through ``TaskFinalizationService``.
public actor TaskFinalizerActor {
    let service: TaskFinalizationService
    public init(service: TaskFinalizationService) { self.service = service }

    public func handle(_ taskUUID: UUID) async throws -> TaskState? {
        try await service.finalizeTask(taskUUID)
    }
}

/// Handles `ProcessTaskReadiness` through ``TaskReadinessService`` and ``StepEnqueuerService``
/// (under the task's lock).
public actor StepEnqueuerActor {
    let service: TaskReadinessService
    let locks: TaskLocks
    public init(service: TaskReadinessService, locks: TaskLocks) {
        self.service = service
        self.locks = locks
    }

    public func handle(_ taskUUID: UUID) async throws -> TaskState? {
        try await locks.withLock(taskUUID) { try await service.process(taskUUID) }
    }
}

/// Routes every ``OrchestrationCommand`` to its actor (upstream `OrchestrationCommandProcessorActor`).
/// The actors are reentrant at their awaits, so commands for different tasks run concurrently;
/// commands for one task are serialized by ``TaskLocks``.
public actor OrchestrationCommandProcessorActor {
    public let context: OrchestrationContext
    public let taskRequests: TaskRequestActor
    public let resultProcessor: ResultProcessorActor
    public let taskFinalizer: TaskFinalizerActor
    public let stepEnqueuer: StepEnqueuerActor

    /// Wires the services and actors over one context.
    public init(context: OrchestrationContext) {
        self.context = context
        let enqueuer = StepEnqueuerService(context: context)
        let finalizer = TaskFinalizationService(context: context, enqueuer: enqueuer)
        let initializer = TaskInitializationService(context: context, enqueuer: enqueuer)
        let readiness = TaskReadinessService(context: context, initializer: initializer, finalizer: finalizer,
                                             enqueuer: enqueuer)
        taskRequests = TaskRequestActor(service: initializer)
        resultProcessor = ResultProcessorActor(service: ResultProcessingService(context: context, finalizer: finalizer),
                                               locks: context.locks)
        taskFinalizer = TaskFinalizerActor(service: finalizer)
        stepEnqueuer = StepEnqueuerActor(service: readiness, locks: context.locks)
    }

    /// Processes one command.
    public func process(_ command: OrchestrationCommand) async throws -> OrchestrationCommandResult {
        switch command {
        case .initializeTask(let request):
            return .taskInitialized(try await taskRequests.handle(request))
        case .processStepResult(let message):
            return .stepResultProcessed(try await resultProcessor.handle(message))
        case .finalizeTask(let task):
            return .taskFinalized(try await taskFinalizer.handle(task))
        case .processTaskReadiness(let task):
            return .taskReadinessProcessed(try await stepEnqueuer.handle(task))
        }
    }
}
