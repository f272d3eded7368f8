import AsyncAlgorithms
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Runs step handlers concurrently, at most `maxConcurrentHandlers` at a time, and hands every
/// result to the completion channel.
///
/// - Each claimed step gets its handler by `handler.callable`; an unknown callable is a
///   `handler_not_found` failure (not retryable), a thrown error a `handler_error` failure
///   (retryable), and a handler still running after its timeout (the template's `timeout_seconds`,
///   else `handler_timeout_ms`) a `handler_timeout` failure (retryable).
/// - The permit is released before the result goes into the completion channel.
/// - **Timeouts and handlers that ignore cancellation.** At the timeout the handler's task is
///   cancelled and the timeout result is reported at once, so the step is never held hostage. The
///   permit, however, stays with the handler until its code really returns: a handler that ignores
///   cancellation keeps occupying its slot, so the number of handler bodies running never exceeds
///   `maxConcurrentHandlers`. `overdueHandlers` counts such handlers; when every permit is held by
///   overdue handlers, claiming stops (load shedding) rather than running more code concurrently.
public final class HandlerDispatchService: Service, Sendable {
    public let semaphore: AsyncSemaphore
    /// Claimed steps not yet holding a permit (load shedding counts them).
    public let backlog: DispatchBacklog
    private let dispatch: AsyncChannel<ClaimedStep>
    private let completions: AsyncChannel<StepCompletion>
    private let bufferSize: Int
    private let registry: HandlerRegistry
    private let pool: PostgresConnectionPool
    private let defaultTimeout: Duration
    private let identity: WorkerIdentity
    private let logger: Logger
    private let overdue = Atomic<Int>(0)

    public init(dispatch: AsyncChannel<ClaimedStep>, completions: AsyncChannel<StepCompletion>, bufferSize: Int,
                registry: HandlerRegistry, pool: PostgresConnectionPool, maxConcurrentHandlers: Int, defaultTimeout: Duration,
                identity: WorkerIdentity, backlog: DispatchBacklog = DispatchBacklog(),
                logger: Logger = Logger(label: "tasker.dispatch")) {
        self.backlog = backlog
        self.dispatch = dispatch
        self.completions = completions
        self.bufferSize = max(1, bufferSize)
        self.registry = registry
        self.pool = pool
        self.semaphore = AsyncSemaphore(permits: maxConcurrentHandlers)
        self.defaultTimeout = defaultTimeout
        self.identity = identity
        self.logger = logger
    }

    /// Handlers that passed their timeout and have not returned yet.
    public var overdueHandlers: Int { overdue.load(ordering: .relaxed) }

    /// Consumes the dispatch channel until it finishes (the worker finishes it on shutdown, after
    /// claiming has stopped), then waits for every running handler.
    public func run() async {
        await withDiscardingTaskGroup { group in
            for await step in dispatch.buffer(policy: .bounded(bufferSize)) {
                await semaphore.acquire()
                backlog.remove()
                group.addTask { await self.execute(step) }
            }
        }
        // Every handler has returned and every result is in the completion channel.
        completions.finish()
        // Return only when the group asks this service to stop (after the event system), so the
        // ServiceGroup sees the services end in their shutdown order.
        try? await gracefulShutdown()
    }

    private func execute(_ step: ClaimedStep) async {
        let startedAt = Date()
        guard let definition = step.definition,
              let handler = registry.resolve(callable: definition.handler.callable,
                                             templateStepName: step.hydrated.templateStepName) else {
            semaphore.release()
            let callable = step.definition?.handler.callable ?? step.hydrated.templateStepName
            logger.error("no handler for step", metadata: metadata(step, ["callable": "\(callable)"]))
            await finish(step, .dispatchError(
                stepUUID: step.message.stepUUID, kind: .handlerNotFound, callable: callable, timeoutMs: nil,
                taskUUID: step.message.taskUUID, message: nil, startedAt: startedAt, completedAt: Date(),
                workerID: identity.workerID, hostname: identity.hostname))
            return
        }
        let timeout = definition.timeoutSeconds.map { Duration.seconds($0) } ?? defaultTimeout
        var context = makeContext(step, definition: definition, timeout: timeout)
        let callable = definition.handler.callable
        while true {
            let invocation = context
            let work = Task { try await handler.call(invocation) }
            switch await Self.race(work, timeout: timeout) {
            case .finished(.success(let handlerResult)):
                if case .checkpointYield(let yield) = handlerResult.outcome {
                    // Persist, then call the handler again with its checkpoint (same claim and permit).
                    do {
                        context.checkpoint = try await pool.withConnection { c in
                            try await StepRepository.persistCheckpoint(c, stepUUID: step.message.stepUUID, yield: yield)
                        }
                        continue
                    } catch {
                        semaphore.release()
                        await finish(step, .dispatchError(
                            stepUUID: step.message.stepUUID, kind: .checkpointError, callable: callable, timeoutMs: nil,
                            taskUUID: step.message.taskUUID, message: "\(error)", startedAt: startedAt, completedAt: Date(),
                            workerID: identity.workerID, hostname: identity.hostname))
                        return
                    }
                }
                semaphore.release()
                await finish(step, result(of: .success(handlerResult), step: step, callable: callable,
                                          version: handler.version, startedAt: startedAt))
            case .finished(let outcome):
                semaphore.release()
                await finish(step, result(of: outcome, step: step, callable: callable, version: handler.version,
                                          startedAt: startedAt))
            case .timedOut:
                work.cancel()
                overdue.add(1, ordering: .relaxed)
                let timeoutMs = Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
                logger.warning("handler timed out", metadata: metadata(step, ["callable": "\(callable)", "timeout_ms": "\(timeoutMs)"]))
                await finish(step, .dispatchError(
                    stepUUID: step.message.stepUUID, kind: .handlerTimeout, callable: callable, timeoutMs: timeoutMs,
                    taskUUID: step.message.taskUUID, message: nil, startedAt: startedAt, completedAt: Date(),
                    workerID: identity.workerID, hostname: identity.hostname))
                // The permit stays with the handler's code until it really returns (see the type's doc).
                _ = await work.result
                overdue.subtract(1, ordering: .relaxed)
                semaphore.release()
            }
            return
        }
    }

    private func result(of outcome: Result<StepHandlerResult, any Error>, step: ClaimedStep, callable: String,
                        version: String, startedAt: Date) -> StepExecutionResult {
        switch outcome {
        case .success(let handlerResult):
            return handlerResult.toExecutionResult(
                stepUUID: step.message.stepUUID, startedAt: startedAt, completedAt: Date(),
                workerID: identity.workerID, hostname: identity.hostname, handlerVersion: version)
        case .failure(let error as StepFailure):
            return StepHandlerResult.failure(error).toExecutionResult(
                stepUUID: step.message.stepUUID, startedAt: startedAt, completedAt: Date(),
                workerID: identity.workerID, hostname: identity.hostname, handlerVersion: version)
        case .failure(let error):
            logger.info("handler failed", metadata: metadata(step, ["callable": "\(callable)", "error": "\(error)"]))
            return .dispatchError(
                stepUUID: step.message.stepUUID, kind: .handlerError, callable: callable, timeoutMs: nil,
                taskUUID: step.message.taskUUID, message: "\(error)", startedAt: startedAt, completedAt: Date(),
                workerID: identity.workerID, hostname: identity.hostname)
        }
    }

    private func finish(_ step: ClaimedStep, _ result: StepExecutionResult) async {
        await completions.send(StepCompletion(step: step, result: result))
    }

    private func makeContext(_ step: ClaimedStep, definition: StepDefinition, timeout: Duration) -> StepContext {
        let hydrated = step.hydrated
        return StepContext(
            taskUUID: hydrated.taskUUID, stepUUID: hydrated.stepUUID, correlationID: hydrated.correlationID,
            namespace: hydrated.namespace, taskName: hydrated.taskName, taskVersion: hydrated.taskVersion,
            stepName: hydrated.stepName, templateStepName: hydrated.templateStepName,
            taskContext: hydrated.taskContext, stepInputs: hydrated.inputs,
            stepConfig: definition.handler.initialization, dependencyResults: step.dependencyResults,
            attempt: step.attempts, maxAttempts: hydrated.maxAttempts,
            checkpoint: hydrated.checkpoint.isNull ? nil : hydrated.checkpoint, timeout: timeout)
    }

    private func metadata(_ step: ClaimedStep, _ extra: Logger.Metadata = [:]) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "task_uuid": "\(step.message.taskUUID)", "step_uuid": "\(step.message.stepUUID)",
            "correlation_id": "\(step.message.correlationID)", "step_name": "\(step.hydrated.stepName)",
        ]
        metadata.merge(extra) { _, new in new }
        return metadata
    }

    enum RaceOutcome {
        case finished(Result<StepHandlerResult, any Error>)
        case timedOut
    }

    /// Waits for `work` or the timeout, whichever comes first, without waiting for a handler that
    /// ignores cancellation.
    static func race(_ work: Task<StepHandlerResult, any Error>, timeout: Duration) async -> RaceOutcome {
        let settled = OnceFlag()
        return await withCheckedContinuation { (continuation: CheckedContinuation<RaceOutcome, Never>) in
            let timer = Task {
                try? await Task.sleep(for: timeout)
                guard !Task.isCancelled else { return }
                if settled.claim() {
                    continuation.resume(returning: .timedOut)
                }
            }
            Task {
                let outcome = await work.result
                timer.cancel()
                if settled.claim() {
                    continuation.resume(returning: .finished(outcome))
                }
            }
        }
    }
}

/// True for the first caller of `claim()` only.
final class OnceFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func claim() -> Bool { !flag.exchange(true, ordering: .acquiringAndReleasing) }
}
