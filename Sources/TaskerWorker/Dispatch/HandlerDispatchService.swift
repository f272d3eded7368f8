import AsyncAlgorithms
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import Tracing

/// Runs step handlers concurrently, at most `maxConcurrentHandlers` at a time, and hands every
/// result to the completion channel.
///
/// - Each claimed step gets its handler by `handler.callable`; an unknown callable is a
///   `handler_not_found` failure (not retryable), a thrown error a `handler_error` failure
///   (retryable), and a handler still running after its timeout (the template's `timeout_seconds`,
///   else `handler_timeout_ms`) a `handler_timeout` failure (retryable).
/// - With a foreign runtime attached (`foreign`), a callable without a Swift handler goes to the
///   FFI dispatch channel instead of failing (`HandlerDispatchService+Foreign`), under its permit.
/// - The permit is released before the result goes into the completion channel.
/// - **Timeouts and handlers that ignore cancellation.** At the timeout the handler's task is
///   cancelled and the timeout result is reported at once, so the step is never held hostage. The
///   permit, however, stays with the handler until its code really returns: a handler that ignores
///   cancellation keeps occupying its slot, so the number of handler bodies running never exceeds
///   `maxConcurrentHandlers`. `overdueHandlers` counts such handlers; when every permit is held by
///   overdue handlers, claiming stops (load shedding) rather than running more code concurrently.
/// - **Drain deadline.** Shutdown arms `drainDeadline` (`timing.processing_timeout_seconds`). A
///   handler still running when it fires, or a claimed step whose handler has not started, gets a
///   retryable `handler_timeout` result naming the shutdown, and its permit is given back without
///   waiting for the abandoned code; so the drain ends and every claimed step has a result.
package final class HandlerDispatchService: Service, Sendable {
    /// The handler permits (and the claimed steps waiting for one), shared with load shedding.
    package let capacity: WorkerCapacity
    private let dispatch: AsyncChannel<ClaimedStep>
    private let completions: AsyncChannel<StepCompletion>
    private let bufferSize: Int
    private let registry: HandlerRegistry
    let pool: PostgresConnectionPool
    private let defaultTimeout: Duration
    let identity: WorkerIdentity
    let logger: Logger
    /// Where steps whose callable has no Swift handler go when a foreign runtime is attached
    /// (the embedded library); nil: they fail with `handler_not_found`.
    package let foreign: ForeignDispatchChannel?
    private let overdue = Atomic<Int>(0)
    /// Fired when the shutdown drain deadline passes (armed by the event system's shutdown).
    let drainDeadline: DrainDeadline

    package init(
        dispatch: AsyncChannel<ClaimedStep>, completions: AsyncChannel<StepCompletion>, bufferSize: Int,
        registry: HandlerRegistry, pool: PostgresConnectionPool, capacity: WorkerCapacity, defaultTimeout: Duration,
        identity: WorkerIdentity, drainDeadline: DrainDeadline = DrainDeadline(),
        foreign: ForeignDispatchChannel? = nil, logger: Logger = Logger(label: "tasker.dispatch")
    ) {
        self.foreign = foreign
        self.capacity = capacity
        self.drainDeadline = drainDeadline
        self.dispatch = dispatch
        self.completions = completions
        self.bufferSize = max(1, bufferSize)
        self.registry = registry
        self.pool = pool
        self.defaultTimeout = defaultTimeout
        self.identity = identity
        self.logger = logger
    }

    /// Handlers that passed their timeout and have not returned yet.
    var overdueHandlers: Int { overdue.load(ordering: .relaxed) }

    /// Consumes the dispatch channel until it finishes (the worker finishes it on shutdown, after
    /// claiming has stopped), then waits for every running handler.
    package func run() async {
        await withDiscardingTaskGroup { group in
            for await step in dispatch.buffer(policy: .bounded(bufferSize)) {
                do {
                    try await capacity.acquireHandlerPermit()
                } catch {
                    // Only a forced stop (the group cancelled) gets here: no permit was taken.
                    logger.critical(
                        "forced stop before the handler started: the step stays in_progress without a result",
                        metadata: metadata(step))
                    continue
                }
                group.addTask { await self.execute(step) }
            }
        }
        // Every handler has returned (or was abandoned at the drain deadline) and every result is
        // in the completion channel.
        drainDeadline.disarm()
        completions.finish()
        // Return only when the group asks this service to stop (after the event system), so the
        // ServiceGroup sees the services end in their shutdown order.
        try? await gracefulShutdown()
    }

    /// Runs `step` under its `tasker.step.handler` span: the handler's task sees it as
    /// `ServiceContext.current` (its own spans nest under it, its log lines carry its ids, a foreign
    /// handler's event carries them as `trace_id`/`span_id`).
    private func execute(_ step: ClaimedStep) async {
        let callable = step.definition?.handler.callable ?? step.hydrated.templateStepName
        let span = step.trace?.phase("tasker.step.handler", attributes: ["tasker.handler": .string(callable)])
        defer { span?.end() }  // a forced stop; otherwise `finish` ended it (a span ends once)
        await ServiceContext.withValue(span?.context ?? .topLevel) {
            await Self.$handlerSpan.withValue(span) { await executeTraced(step) }
        }
    }

    /// The running step's `tasker.step.handler` span, ended by `finish` when the handler's outcome is
    /// known (not after the result is queued for storage, nor when an overdue handler finally returns).
    @TaskLocal static var handlerSpan: (any Span)?

    private func executeTraced(_ step: ClaimedStep) async {
        let startedAt = Date()
        let resolution = step.definition.map { registry.resolve($0.handler, templateStepName: step.hydrated.templateStepName) }
        guard let definition = step.definition, let handler = resolution?.handler else {
            if let foreign, let definition = step.definition {
                // No Swift handler: a foreign runtime runs it (its SDK's resolver chain and method
                // dispatch), under the same permit.
                await executeForeign(step, definition: definition, channel: foreign, startedAt: startedAt)
                return
            }
            releasePermit()
            let callable = step.definition?.handler.callable ?? step.hydrated.templateStepName
            var reason: String?
            if case .notFound(let text)? = resolution { reason = text }
            // Upstream's message alone unless a resolver hint was involved.
            let hinted = step.definition?.handler.resolver.map { !$0.isEmpty } ?? false
            logger.error(
                "no handler for step", metadata: metadata(step, ["callable": "\(callable)", "reason": "\(reason ?? "no step definition")"]))
            await finish(
                step,
                dispatchError(step, .handlerNotFound, callable, message: hinted ? reason : nil, startedAt: startedAt))
            return
        }
        let timeout = definition.timeoutSeconds.map { Duration.seconds($0) } ?? defaultTimeout
        var context = makeContext(step, definition: definition, timeout: timeout)
        let callable = definition.handler.callable
        while true {
            if drainDeadline.hasFired {
                releasePermit()
                await finishAtDrainDeadline(step, callable: callable, startedAt: startedAt, started: false)
                return
            }
            let invocation = context
            let work = Task { try await handler.invoke(method: invocation.handlerMethod, invocation) }
            switch await Self.race(work, timeout: timeout, deadline: drainDeadline) {
            case .finished(.success(let handlerResult)):
                if case .checkpointYield(let yield) = handlerResult.outcome {
                    // Persist, then call the handler again with its checkpoint (same claim and permit).
                    do {
                        context.checkpoint = try await pool.withConnection { c in
                            try await StepRepository.persistCheckpoint(c, stepUUID: step.message.stepUUID, yield: yield)
                        }
                        continue
                    } catch {
                        releasePermit()
                        await finish(
                            step,
                            dispatchError(step, .checkpointError, callable, message: "\(error)", startedAt: startedAt))
                        return
                    }
                }
                releasePermit()
                await finish(
                    step,
                    result(
                        of: .success(handlerResult), step: step, callable: callable,
                        version: handler.version, startedAt: startedAt))
            case .finished(let outcome):
                releasePermit()
                await finish(
                    step,
                    result(
                        of: outcome, step: step, callable: callable, version: handler.version,
                        startedAt: startedAt))
            case .timedOut:
                work.cancel()
                overdue.wrappingAdd(1, ordering: .relaxed)
                let timeoutMs = Int(timeout.inMilliseconds)
                logger.warning("handler timed out", metadata: metadata(step, ["callable": "\(callable)", "timeout_ms": "\(timeoutMs)"]))
                await finish(
                    step,
                    dispatchError(step, .handlerTimeout, callable, timeoutMs: timeoutMs, startedAt: startedAt))
                // The permit stays with the handler's code until it really returns (see the type's
                // doc), or until the shutdown drain deadline abandons it.
                _ = await Self.race(work, timeout: nil, deadline: drainDeadline)
                overdue.wrappingSubtract(1, ordering: .relaxed)
                releasePermit()
            case .drainDeadline:
                work.cancel()
                releasePermit()
                await finishAtDrainDeadline(step, callable: callable, startedAt: startedAt, started: true)
            case .cancelled:
                // Only a forced stop (the group cancelled, not gracefully shut down) gets here; the
                // completion channel no longer takes results, so say loudly what is left behind.
                work.cancel()
                releasePermit()
                logger.critical(
                    "forced stop while the handler ran: the step stays in_progress without a result",
                    metadata: metadata(step, ["handler": "\(callable)"]))
            }
            return
        }
    }

    private func result(
        of outcome: Result<StepHandlerResult, any Error>, step: ClaimedStep, callable: String,
        version: String, startedAt: Date
    ) -> StepExecutionResult {
        if case .failure(let error) = outcome, !(error is StepFailure) {
            logger.info("handler failed", metadata: metadata(step, ["callable": "\(callable)", "error": "\(error)"]))
        }
        return StepHandlerResult.storedResult(
            of: outcome, stepUUID: step.message.stepUUID, taskUUID: step.message.taskUUID, callable: callable,
            version: version, startedAt: startedAt, workerID: identity.workerID, hostname: identity.hostname)
    }

    /// A dispatch error result of `step` (`handler_not_found`, `handler_error`, `handler_timeout`,
    /// `checkpoint_error`), stamped with this worker and the times.
    func dispatchError(
        _ step: ClaimedStep, _ kind: DispatchErrorKind, _ callable: String, timeoutMs: Int? = nil, message: String? = nil,
        startedAt: Date
    ) -> StepExecutionResult {
        .dispatchError(
            stepUUID: step.message.stepUUID, kind: kind, callable: callable, timeoutMs: timeoutMs,
            taskUUID: step.message.taskUUID, message: message, startedAt: startedAt, completedAt: Date(),
            workerID: identity.workerID, hostname: identity.hostname)
    }

    func releasePermit() {
        capacity.releaseHandlerPermit()
    }

    /// The retryable result of a step the shutdown drain did not let finish (or start).
    func finishAtDrainDeadline(_ step: ClaimedStep, callable: String, startedAt: Date, started: Bool) async {
        logger.warning(
            started ? "handler abandoned at the shutdown drain deadline" : "step not started before the shutdown drain deadline",
            metadata: metadata(step, ["handler": "\(callable)"]))
        let elapsed = Int(Date().timeIntervalSince(startedAt) * 1000)
        await finish(
            step,
            dispatchError(
                step, .handlerTimeout, callable, timeoutMs: elapsed,
                message: started
                    ? "Handler did not finish before the worker's shutdown drain deadline"
                    : "Handler not started before the worker's shutdown drain deadline",
                startedAt: startedAt))
    }

    func finish(_ step: ClaimedStep, _ result: StepExecutionResult) async {
        if let span = Self.handlerSpan {
            if !result.success { span.setStatus(SpanStatus(code: .error, message: result.error?.message)) }
            span.end()
        }
        StepMetrics.handlerFinished(step, result)
        await completions.send(StepCompletion(step: step, result: result))
        if Task.isCancelled {
            // `send` returns without delivering once the task is cancelled (a forced stop only).
            logger.critical(
                "forced stop: a step result may not have been stored",
                metadata: metadata(
                    step,
                    [
                        "result": "\((try? result.jsonString()) ?? "unencodable")"
                    ]))
        }
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
            checkpoint: hydrated.checkpoint.isNull ? nil : hydrated.checkpoint, timeout: timeout,
            logger: StepLogMetadata.logger(logger, metadata(step)),
            handlerCallable: definition.handler.callable, handlerMethod: definition.handler.effectiveMethod)
    }

    func metadata(_ step: ClaimedStep, _ extra: Logger.Metadata = [:]) -> Logger.Metadata {
        StepLogMetadata.of(step, extra)
    }

    enum RaceOutcome: Sendable {
        case finished(Result<StepHandlerResult, any Error>)
        case timedOut
        case drainDeadline
        /// The dispatching task itself was cancelled (a forced stop of the service group).
        case cancelled
    }

    /// Waits for `work`, its timeout (none when nil) or the drain deadline, whichever comes first,
    /// without waiting for a handler that ignores cancellation.
    static func race(_ work: Task<StepHandlerResult, any Error>, timeout: Duration?, deadline: DrainDeadline) async -> RaceOutcome {
        var contenders: [@Sendable () async -> RaceOutcome?] = [
            { .finished(await work.result) },
            {
                await deadline.wait()
                return Task.isCancelled ? nil : .drainDeadline
            },
        ]
        if let timeout {
            contenders.append {
                try? await Task.sleep(for: timeout)
                return Task.isCancelled ? nil : .timedOut
            }
        }
        return await firstOutcome(onCancel: .cancelled, of: contenders)
    }
}
