import Foundation
import Logging
import TaskerWorker

/// Enqueues a task's ready steps (upstream `step_enqueuer.rs`): the viable steps are the
/// `ready_for_execution` rows of `get_step_readiness_status`; a step in `waiting_for_retry` first
/// goes `Retry → pending`; `pending → enqueued` is COMMITTED before the step message is sent with
/// `pgmq_send_with_notify` to `worker_<namespace>_queue`. Then the task goes
/// `enqueuing_steps → steps_in_process` (`StepsEnqueued([..])`).
public struct StepEnqueuerService: Sendable {
    let context: OrchestrationContext

    public init(context: OrchestrationContext) {
        self.context = context
    }

    /// Enqueues the ready steps of a task that is in `enqueuing_steps` and moves it to
    /// `steps_in_process`. Returns the enqueued steps. The caller holds the task's lock.
    @discardableResult
    func enqueueReadySteps(task: TaskIdentity) async throws -> [UUID] {
        let processor = context.processorUUID
        let readiness = try await context.pool.withConnection { c in try await TaskRepository.readiness(c, taskUUID: task.taskUUID) }
        let queue = QueueNames.workerQueue(namespace: task.namespace)
        var enqueued: [UUID] = []
        for step in readiness where step.readyForExecution {
            let message = StepMessage(taskUUID: task.taskUUID, stepUUID: step.stepUUID, correlationID: task.correlationID)
            let body = try PostgresJSON(message)
            let sent = try await context.pool.withConnection { c in
                try await Self.enqueue(c, step: step.stepUUID, queue: queue, message: body)
            }
            if sent { enqueued.append(step.stepUUID) }
        }
        let moved: Bool
        if enqueued.isEmpty {
            // Readiness changed under us (another orchestrator enqueued them): wait for discovery.
            moved = try await context.transaction { c in
                try TransitionRepository.transitionTask(c, taskUUID: task.taskUUID, from: .enqueuingSteps,
                                                        to: .waitingForDependencies, event: .noDependenciesReady,
                                                        processorUUID: processor)
            }
        } else {
            let steps = enqueued
            moved = try await context.transaction { c in
                try TransitionRepository.transitionTask(c, taskUUID: task.taskUUID, from: .enqueuingSteps,
                                                        to: .stepsInProcess, event: .stepsEnqueued(steps),
                                                        processorUUID: processor)
            }
        }
        if !moved {
            context.logger.warning("task left enqueuing_steps while its steps were enqueued",
                                   metadata: ["task_uuid": "\(task.taskUUID)"])
        }
        context.logger.debug("enqueued steps", metadata: ["task_uuid": "\(task.taskUUID)", "count": "\(enqueued.count)"])
        return enqueued
    }

    /// `waiting_for_retry → pending` (`Retry`) when needed and `pending → enqueued` (`Enqueue`) in
    /// one committed transaction; then the message. False when the step was not enqueueable.
    private static func enqueue(_ c: isolated PostgresConnection, step: UUID, queue: String,
                                message: PostgresJSON) throws -> Bool {
        let transitioned: Bool
        do {
            transitioned = try c.transaction { c in
                let state = try TransitionRepository.currentStepState(c, stepUUID: step)
                switch state {
                case .waitingForRetry:
                    guard try TransitionRepository.transitionStep(c, stepUUID: step, from: .waitingForRetry, to: .pending,
                                                                  event: .retry) else { return false }
                case .pending:
                    break
                default:
                    return false
                }
                return try TransitionRepository.transitionStep(c, stepUUID: step, from: .pending, to: .enqueued,
                                                               event: .enqueue)
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            return false
        }
        guard transitioned else { return false }
        try PGMQ.sendWithNotify(c, queue: queue, message: message)
        return true
    }
}
