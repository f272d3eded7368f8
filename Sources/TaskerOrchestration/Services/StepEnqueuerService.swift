import Foundation
import Logging
import TaskerModel
import TaskerPostgres
import TaskerTelemetry
import Tracing

/// Enqueues a task's ready steps (upstream `step_enqueuer.rs`): the viable steps are the
/// `ready_for_execution` rows of `get_step_readiness_status`; a step in `waiting_for_retry` first
/// goes `Retry → pending`; `pending → enqueued` is written and the step message is sent with
/// `pgmq_send_with_notify` to `worker_<namespace>_queue` in the same transaction, so the message
/// (and its notification) becomes visible exactly when the step is committed `enqueued` (on RabbitMQ,
/// with an `EnqueueJournal` set, nothing is sent in PostgreSQL: the message is recorded and published
/// after the commit by `OrchestrationBroker`). Then the task goes `enqueuing_steps → steps_in_process` (`StepsEnqueued([..])`).
///
/// The synchronous functions run inside the caller's transaction: a step result, an evaluation and
/// the enqueueing of the next steps are one transaction, one commit.
struct StepEnqueuerService: Sendable {
    let context: OrchestrationContext

    public init(context: OrchestrationContext) {
        self.context = context
    }

    /// Enqueues the ready steps of a task that is in `enqueuing_steps` and moves it to
    /// `steps_in_process`, in one transaction. Returns the enqueued steps. The caller holds the task's lock.
    @discardableResult
    func enqueueReadySteps(task: TaskIdentity) async throws -> [UUID] {
        let (processor, logger) = (context.processorUUID, context.logger)
        return try await context.transaction { c in
            let readiness = try TaskRepository.readiness(c, taskUUID: task.taskUUID)
            return try Self.enqueueReadySteps(c, task: task, readiness: readiness, processorUUID: processor, logger: logger)
        }
    }

    /// Inside the caller's transaction: enqueues the ready rows of `readiness` (read in this
    /// transaction) and moves the task out of `enqueuing_steps`.
    @discardableResult
    static func enqueueReadySteps(
        _ c: isolated PostgresConnection, task: TaskIdentity, readiness: [StepReadiness],
        processorUUID processor: UUID, logger: Logger
    ) throws -> [UUID] {
        let queue = QueueNames.workerQueue(namespace: task.namespace)
        var enqueued: [UUID] = []
        for step in readiness where step.readyForExecution {
            let message = Self.message(task: task, step: step.stepUUID)
            let journal = EnqueueJournal.current
            if try enqueue(
                c, step: step.stepUUID, state: step.currentState, queue: queue, message: try PostgresJSON(message),
                sendInPGMQ: journal == nil)
            {
                journal?.record(queue: queue, message: message)
                enqueued.append(step.stepUUID)
            }
        }
        let moved: Bool
        if enqueued.isEmpty {
            // Readiness changed under us (another orchestrator enqueued them): wait for discovery.
            moved = try TransitionRepository.transitionTask(
                c, taskUUID: task.taskUUID, from: .enqueuingSteps,
                to: .waitingForDependencies, event: .noDependenciesReady,
                processorUUID: processor)
        } else {
            moved = try TransitionRepository.transitionTask(
                c, taskUUID: task.taskUUID, from: .enqueuingSteps,
                to: .stepsInProcess, event: .stepsEnqueued(enqueued),
                processorUUID: processor)
        }
        if !moved {
            logger.warning("task left enqueuing_steps while its steps were enqueued", metadata: ["task_uuid": "\(task.taskUUID)"])
        }
        logger.debug("enqueued steps", metadata: ["task_uuid": "\(task.taskUUID)", "count": "\(enqueued.count)"])
        return enqueued
    }

    /// The pipelined form of `enqueueReadySteps` for the usual case: the statements that enqueue
    /// every ready row of `readiness` (`Retry` first for a step in `waiting_for_retry`) and move the
    /// task `enqueuing_steps → steps_in_process` (`StepsEnqueued`), each asserting its
    /// compare-and-set (`PostgresError.isFailedAssertion`), so they can be sent with the `COMMIT`.
    /// nil when no row is ready or a ready step is in another state: `enqueueReadySteps` decides.
    static func enqueueStatements(
        task: TaskIdentity, readiness: [StepReadiness],
        processorUUID processor: UUID
    ) throws -> (statements: [PipelineStatement], enqueued: [UUID])? {
        let queue = QueueNames.workerQueue(namespace: task.namespace)
        var statements: [PipelineStatement] = []
        var enqueued: [UUID] = []
        for step in readiness where step.readyForExecution {
            switch StepState(rawValue: step.currentState) {
            case .waitingForRetry?:
                statements.append(
                    try TransitionRepository.transitionStepAssertedStatement(
                        stepUUID: step.stepUUID, from: .waitingForRetry, to: .pending, event: .retry))
            case .pending?:
                break
            default:
                return nil
            }
            let message = Self.message(task: task, step: step.stepUUID)
            let journal = EnqueueJournal.current
            statements.append(
                try TransitionRepository.enqueueStepAssertedStatement(
                    stepUUID: step.stepUUID, queue: queue, message: try PostgresJSON(message), sendInPGMQ: journal == nil))
            // Recorded before the pipeline ran: published only if the step is `enqueued` after the command.
            journal?.record(queue: queue, message: message)
            enqueued.append(step.stepUUID)
        }
        guard !enqueued.isEmpty else { return nil }
        statements.append(
            try TransitionRepository.transitionTaskStatement(
                taskUUID: task.taskUUID, from: .enqueuingSteps, to: .stepsInProcess, event: .stepsEnqueued(enqueued),
                processorUUID: processor, asserting: true))
        return (statements, enqueued)
    }

    /// `waiting_for_retry → pending` (`Retry`) when needed and `pending → enqueued` (`Enqueue`)
    /// (compare-and-set on the state readiness reported), then the message. False when the step
    /// was not enqueueable.
    private static func enqueue(
        _ c: isolated PostgresConnection, step: UUID, state: String, queue: String,
        message: PostgresJSON, sendInPGMQ: Bool
    ) throws -> Bool {
        switch StepState(rawValue: state) {
        case .waitingForRetry?:
            guard
                try TransitionRepository.transitionStep(
                    c, stepUUID: step, from: .waitingForRetry, to: .pending,
                    event: .retry)
            else { return false }
        case .pending?:
            break
        default:
            return false
        }
        return try TransitionRepository.enqueueStep(c, stepUUID: step, queue: queue, message: message, sendInPGMQ: sendInPGMQ)
    }

    /// The step message of `step`, with its `tasker.step.enqueue` span (producer, under the current
    /// span: the task's initialization or the result processing that made the step ready) as its
    /// `traceparent`: the worker's `tasker.step` continues from it.
    static func message(task: TaskIdentity, step: UUID) -> StepMessage {
        let span = startSpan("tasker.step.enqueue", ofKind: .producer)
        defer { span.end() }
        span.updateAttributes { attributes in
            attributes["tasker.task_uuid"] = task.taskUUID.uuidString.lowercased()
            attributes["tasker.step_uuid"] = step.uuidString.lowercased()
            attributes["tasker.namespace"] = task.namespace
        }
        return StepMessage(
            taskUUID: task.taskUUID, stepUUID: step, correlationID: task.correlationID,
            traceparent: span.context.traceParent?.header)
    }
}
