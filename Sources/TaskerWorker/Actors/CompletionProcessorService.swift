import AsyncAlgorithms
import Foundation
import Logging
import ServiceLifecycle

/// Drains the completion channel: stores each result with `StepRepository.complete` (one
/// transaction: transition, `results`, `in_process = false`, message to orchestration), then fires
/// the step's domain events. Database errors are retried with backoff until the result is stored:
/// a result is never dropped while the process lives.
public final class CompletionProcessorService: Service, Sendable {
    private let completions: AsyncChannel<StepCompletion>
    private let bufferSize: Int
    private let pool: PostgresConnectionPool
    private let domainEvents: DomainEventActor
    private let statistics: WorkerStatistics
    private let identity: WorkerIdentity
    private let retryBackoff: ReconnectBackoff
    private let concurrency: Int
    private let eventDrainTimeout: Duration
    private let logger: Logger

    public init(completions: AsyncChannel<StepCompletion>, bufferSize: Int, pool: PostgresConnectionPool,
                domainEvents: DomainEventActor, statistics: WorkerStatistics, identity: WorkerIdentity,
                concurrency: Int = 4, retryBackoff: ReconnectBackoff = ReconnectBackoff(initial: .milliseconds(50), maximum: .seconds(5)),
                eventDrainTimeout: Duration = .seconds(5),
                logger: Logger = Logger(label: "tasker.completion")) {
        self.eventDrainTimeout = eventDrainTimeout
        self.completions = completions
        self.bufferSize = max(1, bufferSize)
        self.pool = pool
        self.domainEvents = domainEvents
        self.statistics = statistics
        self.identity = identity
        self.concurrency = max(1, concurrency)
        self.retryBackoff = retryBackoff
        self.logger = logger
    }

    /// Runs until the completion channel finishes (the dispatch service finishes it after the last
    /// handler), storing every result.
    public func run() async {
        let slots = AsyncSemaphore(permits: concurrency)
        await withDiscardingTaskGroup { group in
            for await completion in completions.buffer(policy: .bounded(bufferSize)) {
                await slots.acquire()
                group.addTask {
                    await self.store(completion)
                    slots.release()
                }
            }
            // Every handler is done: the remaining results are stored whatever happens, their
            // domain events get `shutdown_drain_timeout_ms`.
            await domainEvents.beginShutdownDrain(timeout: eventDrainTimeout)
        }
        try? await gracefulShutdown()
    }

    /// Stores one result, retrying database errors; then publishes its events.
    func store(_ completion: StepCompletion) async {
        let message = completion.step.message
        let result = completion.result
        let storeStart = ContinuousClock.now
        defer { StepMetrics.completionFinished(completion) }
        let resultJSON: String
        do {
            resultJSON = try result.jsonString()
        } catch {
            logger.critical("cannot encode a step result", metadata: StepLogMetadata.of(completion.step, ["error": "\(error)"]))
            return
        }
        var attempt = 0
        while true {
            do {
                let outcome = try await pool.withConnection { [identity] c in
                    try await StepRepository.complete(c, message: message, success: result.isSuccess,
                                                      resultJSON: resultJSON, workerUUID: identity.uuid)
                }
                let elapsed = completion.step.claimedAt.duration(to: .now)
                statistics.recordExecution(success: result.isSuccess,
                                           executionTimeMs: Int(elapsed.components.seconds * 1000
                                               + elapsed.components.attoseconds / 1_000_000_000_000_000))
                StepMetrics.resultStored(completion, stored: outcome != .notInProgress, since: storeStart)
                if case .notInProgress = outcome {
                    logger.warning("step was no longer in_progress; result not stored",
                                   metadata: StepLogMetadata.of(completion.step))
                    return
                }
                if !result.isSuccess {
                    logger.info("step failed", metadata: StepLogMetadata.of(completion.step, [
                        "error_type": "\(result.error?.errorType ?? "unknown")", "retryable": "\(result.isRetryable)"]))
                }
                await domainEvents.publish(for: completion)
                return
            } catch {
                attempt += 1
                statistics.completionRetries.wrappingIncrement(ordering: .relaxed)
                StepMetrics.completionRetry(completion)
                let delay = retryBackoff.delay(forAttempt: attempt - 1)
                logger.warning("storing a step result failed; retrying", metadata: StepLogMetadata.of(completion.step, [
                    "error": "\(error)", "attempt": "\(attempt)", "retry_in": "\(delay)"]))
                if Task.isCancelled && attempt >= 20 {
                    logger.critical("giving up storing a step result during forced shutdown",
                                    metadata: StepLogMetadata.of(completion.step, ["result": "\(resultJSON)"]))
                    return
                }
                try? await Task.sleep(for: delay)
            }
        }
    }
}
