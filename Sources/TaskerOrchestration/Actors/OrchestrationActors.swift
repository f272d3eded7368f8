import Foundation
import Logging
import TaskerModel
import TaskerTelemetry
import Tracing

/// The commands the orchestration processes (upstream `OrchestrationCommand`; `resolveStep` is ours:
/// upstream's API writes the step itself, here the task continues in the same command).
public enum OrchestrationCommand: Sendable, Equatable {
    /// Create a task from a request and start it. With a receipt, the request message is archived
    /// with the task's creation.
    case initializeTask(TaskRequest, archiving: MessageReceipt? = nil)
    /// Consume one step result (the message of `orchestration_step_results`), under the task's lock.
    /// With a receipt, the result message is archived in the result's transaction.
    case processStepResult(StepMessage, archiving: MessageReceipt? = nil)
    /// Finalize a task (from `steps_in_process` or `evaluating_results`).
    case finalizeTask(UUID)
    /// (Re)start a task found by discovery (`get_next_ready_tasks`), under the task's lock.
    case processTaskReadiness(UUID)
    /// An operator's action on a step (`PATCH /v1/tasks/{uuid}/workflow_steps/{step_uuid}`), under the
    /// task's lock: the step moves and the task continues (``StepResolutionService``).
    case resolveStep(task: UUID, step: UUID, action: StepManualAction)
}

/// What a command produced.
public enum OrchestrationCommandResult: Sendable, Equatable {
    case taskInitialized(CreatedTask)
    case stepResultProcessed(StepResultOutcome)
    case taskFinalized(TaskState?)
    case taskReadinessProcessed(TaskState?)
    case stepResolved(StepResolutionOutcome)
}

/// The one entry for ``OrchestrationCommand``s (upstream `OrchestrationCommandProcessorActor`):
/// routes each to its service. It is reentrant at its awaits, so commands for different tasks run
/// concurrently; step results and readiness for one task are serialized by ``TaskLocks``.
public actor OrchestrationCommandProcessorActor {
    public let context: OrchestrationContext
    private let initializer: TaskInitializationService
    private let results: ResultProcessingService
    private let finalizer: TaskFinalizationService
    private let readiness: TaskReadinessService
    private let resolution: StepResolutionService

    /// Wires the services over one context.
    public init(context: OrchestrationContext) {
        self.context = context
        let enqueuer = StepEnqueuerService(context: context)
        let finalizer = TaskFinalizationService(context: context, enqueuer: enqueuer)
        let initializer = TaskInitializationService(context: context, enqueuer: enqueuer)
        let readiness = TaskReadinessService(
            context: context, initializer: initializer, finalizer: finalizer,
            enqueuer: enqueuer)
        self.initializer = initializer
        self.results = ResultProcessingService(context: context, finalizer: finalizer)
        self.finalizer = finalizer
        self.readiness = readiness
        self.resolution = StepResolutionService(context: context)
    }

    /// Processes one command. On RabbitMQ, or with the queues in a database of their own, the step
    /// messages it enqueued are sent after its transactions committed, before it returns
    /// (`EnqueueJournal`, `EnqueuedStepSender`).
    ///
    /// Each command runs in a span (issue #30; ``OrchestrationCommand/span``): `tasker.task.initialize`
    /// under the current one (the task API request's), `tasker.step.result.process` under the worker's
    /// step span that the result message carries, `tasker.task.finalize` and `tasker.task.readiness`;
    /// the step messages it enqueues carry their `tasker.step.enqueue` spans.
    public func process(_ command: OrchestrationCommand) async throws -> OrchestrationCommandResult {
        let (name, kind, parent) = command.span
        return try await withSpan(name, context: parent ?? ServiceContext.current ?? .topLevel, ofKind: kind) { span in
            span.attributes = command.spanAttributes
            return try await processTraced(command)
        }
    }

    private func processTraced(_ command: OrchestrationCommand) async throws -> OrchestrationCommandResult {
        guard let sender = context.sender else { return try await run(command) }
        let journal = EnqueueJournal()
        do {
            let result = try await EnqueueJournal.$current.withValue(journal) { try await run(command) }
            await sender.sendCommitted(journal, pool: context.pool)
            return result
        } catch {
            // A command of several transactions may have committed an enqueue before it failed.
            await sender.sendCommitted(journal, pool: context.pool)
            throw error
        }
    }

    private func run(_ command: OrchestrationCommand) async throws -> OrchestrationCommandResult {
        switch command {
        case .initializeTask(let request, let receipt):
            return .taskInitialized(try await initializer.initialize(request, archiving: receipt))
        case .processStepResult(let message, let receipt):
            return .stepResultProcessed(
                try await context.locks.withLock(message.taskUUID) {
                    try await results.process(message, archiving: receipt)
                })
        case .finalizeTask(let task):
            return .taskFinalized(try await finalizer.finalizeTask(task))
        case .processTaskReadiness(let task):
            return .taskReadinessProcessed(try await context.locks.withLock(task) { try await readiness.process(task) })
        case .resolveStep(let task, let step, let action):
            // (The service takes the task's lock itself.)
            return .stepResolved(try await resolution.resolve(task: task, step: step, action: action))
        }
    }
}

extension OrchestrationCommand {
    /// The command's span: its name, kind, and the parent it continues (nil: the current context).
    var span: (name: String, kind: SpanKind, parent: ServiceContext?) {
        switch self {
        case .initializeTask: return ("tasker.task.initialize", .internal, nil)
        case .processStepResult(let message, _):
            var parent = ServiceContext.topLevel
            parent.traceParent = message.traceparent.flatMap { TraceParent(header: $0) }
            return ("tasker.step.result.process", .consumer, parent.traceParent == nil ? nil : parent)
        case .finalizeTask: return ("tasker.task.finalize", .internal, nil)
        case .processTaskReadiness: return ("tasker.task.readiness", .internal, nil)
        case .resolveStep: return ("tasker.step.resolve", .internal, nil)
        }
    }

    var spanAttributes: SpanAttributes {
        var attributes: SpanAttributes = [:]
        switch self {
        case .initializeTask(let request, _):
            attributes["tasker.namespace"] = request.namespace
            attributes["tasker.task_name"] = request.name
        case .processStepResult(let message, _):
            attributes["tasker.task_uuid"] = message.taskUUID.uuidString.lowercased()
            attributes["tasker.step_uuid"] = message.stepUUID.uuidString.lowercased()
        case .finalizeTask(let task), .processTaskReadiness(let task):
            attributes["tasker.task_uuid"] = task.uuidString.lowercased()
        case .resolveStep(let task, let step, let action):
            attributes["tasker.task_uuid"] = task.uuidString.lowercased()
            attributes["tasker.step_uuid"] = step.uuidString.lowercased()
            attributes["tasker.action_type"] = action.actionType
        }
        return attributes
    }
}
