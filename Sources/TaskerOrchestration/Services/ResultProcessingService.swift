import Foundation
import Logging
import TaskerModel
import TaskerPostgres
import TaskerStore

/// What processing one step result did.
public enum StepResultOutcome: Sendable, Equatable {
    /// `enqueued_for_orchestration → complete`; `created` are the steps a decision or batchable
    /// step's outcome created.
    case completed(created: [String])
    /// `enqueued_as_error_for_orchestration → waiting_for_retry`, with the backoff written
    /// (`BackoffCalculator`; always set by this orchestration).
    case waitingForRetry(backoffSeconds: Int?)
    /// `→ error`: not retryable, or out of attempts.
    case failed
    /// The step was not waiting for orchestration (a duplicate or stale message); nothing changed.
    case ignored(state: StepState)
}

/// Consumes one `orchestration_step_results` message (upstream `result_processing`): strict
/// hydration of `workflow_steps.results` as a `StepExecutionResult`, the backoff of a failure
/// (`BackoffCalculator`: `Retry-After`, else `[common.backoff]`'s exponential), the final step
/// transition, decision and batch step creation, then the task coordination
/// (`steps_in_process → evaluating_results`, finalization).
struct ResultProcessingService: Sendable {
    let context: OrchestrationContext
    let finalizer: TaskFinalizationService

    public init(context: OrchestrationContext, finalizer: TaskFinalizationService) {
        self.context = context
        self.finalizer = finalizer
    }

    /// Processes the result of `message.stepUUID` (the caller holds the task's lock) on one pooled
    /// connection, in ONE transaction: the read (step, state, results and task identity), the step
    /// transition, the task coordination, the enqueueing of the next steps and, with `receipt`, the
    /// archive of the result message (so it is acked exactly when the work commits).
    ///
    /// The usual case (a successful step without dynamic steps) is pipelined: three round trips
    /// (`pipelined`). Anything else, and any compare-and-set the pipeline finds lost, goes step by step.
    func process(_ message: StepMessage, archiving receipt: MessageReceipt? = nil) async throws -> StepResultOutcome {
        let context = self.context
        return try await context.pool.withConnection { c in
            if let outcome = try await Self.pipelined(c, message: message, receipt: receipt, context: context) {
                return outcome
            }
            try await c.execute("BEGIN; " + OrchestrationContext.transactionSettings)
            do {
                let outcome = try await Self.process(c, message: message, context: context)
                if let receipt { try await PGMQ.archive(c, queue: receipt.queue, msgID: receipt.msgID) }
                try await c.execute("COMMIT")
                return outcome
            } catch {
                // A broken connection fails this too; the pool discards it on release.
                _ = try? await c.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// The pipelined transaction: (1) `BEGIN`, settings, load; (2) complete the step,
    /// `steps_in_process → evaluating_results`, the task's state, readiness; (3) the evaluation's
    /// writes (asserting compare-and-sets), the archive, `COMMIT`. nil, with nothing written, when
    /// the step-by-step path must decide (a lost compare-and-set, or a state it does not handle).
    private static func pipelined(
        _ c: PostgresConnection, message: StepMessage, receipt: MessageReceipt?,
        context: OrchestrationContext
    ) async throws -> StepResultOutcome? {
        let stepUUID = message.stepUUID
        let opened = try await c.pipeline(OrchestrationContext.beginStatements + [StepResultRepository.loadStatement(stepUUID: stepUUID)])
        do {
            let plan: Plan
            switch try await Self.plan(
                try StepResultRepository.load(opened[2], stepUUID: stepUUID), message: message,
                context: context)
            {
            case .ignored(let state):
                try await c.pipeline(MessageReceipt.commit(archiving: receipt))
                return .ignored(state: state)
            case .plan(let planned):
                plan = planned
            }
            guard plan.isPlainCompletion else {
                // Failures, retries, decision and batch steps: step by step, in this transaction.
                let outcome = try await apply(c, plan: plan, processorUUID: context.processorUUID, logger: context.logger)
                try await c.pipeline(MessageReceipt.commit(archiving: receipt))
                return outcome
            }
            return try await complete(c, plan: plan, receipt: receipt, context: context)
        } catch {
            _ = try? await c.execute("ROLLBACK")
            throw error
        }
    }

    /// Round trips (2) and (3) of `pipelined` for a plain completion; nil (rolled back) when a
    /// compare-and-set was lost.
    private static func complete(
        _ c: PostgresConnection, plan: Plan, receipt: MessageReceipt?,
        context: OrchestrationContext
    ) async throws -> StepResultOutcome? {
        let (row, processor, logger) = (plan.row, context.processorUUID, context.logger)
        let taskUUID = row.task.taskUUID
        let coordinated = try await c.pipeline([
            try TransitionRepository.completeStepStatement(stepUUID: row.stepUUID, from: row.state, resultsJSON: plan.resultsJSON),
            try TransitionRepository.transitionTaskStatement(
                taskUUID: taskUUID, from: .stepsInProcess, to: .evaluatingResults,
                event: .stepCompleted(row.stepUUID), processorUUID: processor,
                asserting: false),
            TransitionRepository.currentTaskStateStatement(taskUUID: taskUUID),
            TaskRepository.readinessStatement(taskUUID: taskUUID),
        ])
        guard !coordinated[0].isEmpty else {
            // The step moved under us: the step-by-step path reports it.
            try await c.execute("ROLLBACK")
            return nil
        }
        var writes: [PipelineStatement] = []
        var reached: TaskState?
        var enqueued: [UUID] = []
        // As `coordinate`: the task is evaluated when it is (now) in `evaluating_results`.
        if try TransitionRepository.taskState(coordinated[2], taskUUID: taskUUID) == .evaluatingResults {
            let readiness = try TaskRepository.readiness(coordinated[3])
            // The writes of `TaskFinalizationService.evaluate`, each asserting its compare-and-set.
            switch TaskRepository.executionStatus(of: readiness) {
            case "all_complete":
                writes = [
                    TaskRepository.lockStatement(taskUUID: taskUUID),
                    try TransitionRepository.transitionTaskStatement(
                        taskUUID: taskUUID, from: .evaluatingResults, to: .complete, event: .allStepsSuccessful,
                        processorUUID: processor, finalization: true, asserting: true),
                    TaskRepository.markCompleteStatement(taskUUID: taskUUID),
                ]
                reached = .complete
            case "blocked_by_failures":
                writes = [
                    TaskRepository.lockStatement(taskUUID: taskUUID),
                    try TransitionRepository.transitionTaskStatement(
                        taskUUID: taskUUID, from: .evaluatingResults, to: .blockedByFailures,
                        event: .permanentFailure("Task has steps in error that cannot be retried"),
                        processorUUID: processor, finalization: true, asserting: true),
                    try TransitionRepository.transitionTaskStatement(
                        taskUUID: taskUUID, from: .blockedByFailures, to: .error, event: .giveUp,
                        processorUUID: processor, finalization: true, asserting: true),
                ]
                reached = .error
            case "has_ready_steps":
                guard
                    let enqueue = try StepEnqueuerService.enqueueStatements(
                        task: row.task, readiness: readiness,
                        processorUUID: processor)
                else {
                    try await c.execute("ROLLBACK")
                    return nil
                }
                writes =
                    [
                        try TransitionRepository.transitionTaskStatement(
                            taskUUID: taskUUID, from: .evaluatingResults, to: .enqueuingSteps,
                            event: .readyStepsFound(readiness.filter(\.readyForExecution).count), processorUUID: processor,
                            asserting: true)
                    ] + enqueue.statements
                enqueued = enqueue.enqueued
            case "waiting_for_dependencies":
                // Not asserted: a task that left `evaluating_results` stays where it is, as in `evaluate`.
                writes = [
                    try TransitionRepository.transitionTaskStatement(
                        taskUUID: taskUUID, from: .evaluatingResults, to: .waitingForDependencies,
                        event: .noDependenciesReady, processorUUID: processor, asserting: false)
                ]
            default:
                break  // `processing`: the other steps' results finalize the task.
            }
        }
        do {
            try await c.pipeline(writes + MessageReceipt.commit(archiving: receipt))
        } catch {
            if error.isFailedAssertion { return nil }  // rolled back by the pipeline
            throw error
        }
        switch reached {
        case .complete?: logger.info("task complete", metadata: ["task_uuid": "\(taskUUID)"])
        case .error?: logger.warning("task failed: steps in error", metadata: ["task_uuid": "\(taskUUID)"])
        default: break
        }
        if !enqueued.isEmpty {
            logger.debug("enqueued steps", metadata: ["task_uuid": "\(taskUUID)", "count": "\(enqueued.count)"])
        }
        return .completed(created: [])
    }

    /// The body of `process`, inside its transaction on `c` (held by the caller, so nothing else
    /// runs on it between the awaits).
    private static func process(
        _ c: PostgresConnection, message: StepMessage,
        context: OrchestrationContext
    ) async throws -> StepResultOutcome {
        switch try await Self.plan(
            try await StepResultRepository.load(c, stepUUID: message.stepUUID), message: message,
            context: context)
        {
        case .ignored(let state):
            return .ignored(state: state)
        case .plan(let plan):
            return try await apply(c, plan: plan, processorUUID: context.processorUUID, logger: context.logger)
        }
    }

    private enum Planned {
        case ignored(StepState)
        case plan(Plan)
    }

    /// What to do with a loaded step result: nothing (the step is no longer waiting for
    /// orchestration), or a `Plan`. Throws for a missing step or results that cannot be decoded.
    private static func plan(
        _ loaded: StepResultRow?, message: StepMessage,
        context: OrchestrationContext
    ) async throws -> Planned {
        let stepUUID = message.stepUUID
        guard let row = loaded, row.taskUUID == message.taskUUID else { throw OrchestrationError.stepNotFound(stepUUID) }
        guard row.state == .enqueuedForOrchestration || row.state == .enqueuedAsErrorForOrchestration else {
            return .ignored(row.state)
        }
        guard let resultsJSON = row.resultsJSON else {
            throw OrchestrationError.resultHydrationFailed(step: stepUUID, reason: "results is NULL")
        }
        let result: StepExecutionResult
        do {
            result = try StepExecutionResult.decode(json: resultsJSON)
        } catch {
            throw OrchestrationError.resultHydrationFailed(step: stepUUID, reason: "\(error)")
        }
        let template = try await context.template(of: row.task)
        return .plan(Plan(row: row, result: result, resultsJSON: resultsJSON, template: template, backoff: context.backoff))
    }

    /// The writes of one result, on the connection's own thread.
    private static func apply(
        _ c: isolated PostgresConnection, plan: Plan, processorUUID: UUID,
        logger: Logger
    ) throws -> StepResultOutcome {
        let outcome = try plan.apply(c, logger: logger)
        if case .ignored = outcome { return outcome }
        try coordinate(c, task: plan.row.task, stepUUID: plan.row.stepUUID, processorUUID: processorUUID, logger: logger)
        return outcome
    }

    /// Task coordination after a step result, in the result's transaction: `steps_in_process →
    /// evaluating_results` (`StepCompleted(step)`) then evaluation; a task already evaluating is
    /// evaluated again; any other state is left alone.
    private static func coordinate(
        _ c: isolated PostgresConnection, task: TaskIdentity, stepUUID: UUID,
        processorUUID processor: UUID, logger: Logger
    ) throws {
        // Compare-and-set first (the usual case); the state is read only when the task was not in
        // `steps_in_process`.
        if try TransitionRepository.transitionTask(
            c, taskUUID: task.taskUUID, from: .stepsInProcess, to: .evaluatingResults,
            event: .stepCompleted(stepUUID), processorUUID: processor)
            || TransitionRepository.currentTaskState(c, taskUUID: task.taskUUID) == .evaluatingResults
        {
            try TaskFinalizationService.evaluate(
                c, taskUUID: task.taskUUID, task: task, processorUUID: processor,
                logger: logger)
        }
    }

    /// The step-level decision for one result, applied in one transaction.
    private struct Plan: Sendable {
        let row: StepResultRow
        let result: StepExecutionResult
        let resultsJSON: String
        let template: TaskTemplate
        let backoff: BackoffCalculator

        /// A successful step that creates no steps: `complete` and nothing else at the step level.
        var isPlainCompletion: Bool {
            guard row.state == .enqueuedForOrchestration && result.success else { return false }
            guard result.effectiveStatus == StepExecutionResult.Status.completed,
                let definition = template.step(named: row.templateStepName)
            else { return true }
            return definition.type != .decision && definition.type != .batchable
        }

        func apply(_ c: isolated PostgresConnection, logger: Logger) throws -> StepResultOutcome {
            let step = row.stepUUID
            if row.state == .enqueuedForOrchestration && result.success {
                guard try TransitionRepository.completeStep(c, stepUUID: step, from: row.state, resultsJSON: resultsJSON)
                else { return .ignored(state: row.state) }
                let created = try createDynamicSteps(c, logger: logger)
                return .completed(created: created.sorted())
            }
            let message = result.error?.message ?? "Step failed with status \(result.effectiveStatus)"
            var delay: Int?
            if !result.success {
                // Every failure, retried or not, as upstream's metadata processing before the transition.
                let seconds = Int(backoff.backoff(for: result, attempts: row.attempts).delaySeconds)
                try StepResultRepository.writeBackoff(c, stepUUID: step, seconds: seconds)
                delay = seconds
            }
            let retry = row.state == .enqueuedAsErrorForOrchestration && result.isRetryable && row.attempts < row.maxAttempts
            if retry {
                guard
                    try TransitionRepository.transitionStep(
                        c, stepUUID: step, from: row.state, to: .waitingForRetry,
                        event: .waitForRetry("\(message) - retryable"))
                else { return .ignored(state: row.state) }
                try StepResultRepository.markNotInProcess(c, stepUUID: step)
                return .waitingForRetry(backoffSeconds: delay)
            }
            guard
                try TransitionRepository.transitionStep(
                    c, stepUUID: step, from: row.state, to: .error,
                    event: .fail(message))
            else { return .ignored(state: row.state) }
            try StepResultRepository.markNotInProcess(c, stepUUID: step)
            return .failed
        }

        /// Decision and batch outcomes (only of `completed` results) inside a savepoint: an invalid
        /// outcome is logged and creates nothing, as upstream treats it as non-fatal. Any other error
        /// (e.g. a deadlock or a lost connection) is rethrown: the whole transaction rolls back and the
        /// result message stays queued, so the children are created when it is processed again.
        private func createDynamicSteps(_ c: isolated PostgresConnection, logger: Logger) throws -> [String] {
            guard result.effectiveStatus == StepExecutionResult.Status.completed,
                let definition = template.step(named: row.templateStepName),
                definition.type == .decision || definition.type == .batchable
            else { return [] }
            do {
                try c.execute("SAVEPOINT dynamic_steps")
                var created: [String: UUID] = [:]
                switch definition.type {
                case .decision:
                    if let outcome = DecisionPointOutcome.from(result), outcome.requiresStepCreation {
                        created = try StepCreation.createDecisionSteps(
                            c, taskUUID: row.taskUUID, decisionStep: row.stepUUID, decisionName: definition.name,
                            requested: outcome.stepNames, graph: WorkflowGraph(template))
                    }
                case .batchable:
                    guard let outcome = BatchProcessingOutcome.from(result) else {
                        throw OrchestrationError.invalidBatchOutcome(
                            step: row.stepUUID, reason: "result has no batch_processing_outcome")
                    }
                    created = try StepCreation.createBatchWorkers(
                        c, taskUUID: row.taskUUID, batchableStep: row.stepUUID, batchableName: definition.name,
                        outcome: outcome, template: template)
                default:
                    break
                }
                try c.execute("RELEASE SAVEPOINT dynamic_steps")
                return Array(created.keys)
            } catch let error as OrchestrationError {
                switch error {
                case .invalidDecisionOutcome, .invalidBatchOutcome:
                    logger.error(
                        "invalid dynamic step outcome; the step completes without creating steps",
                        metadata: ["step_uuid": "\(row.stepUUID)", "error": "\(error)"])
                    try c.execute("ROLLBACK TO SAVEPOINT dynamic_steps")
                    return []
                default:
                    throw error
                }
            }
        }
    }
}
