import AsyncAlgorithms
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore
import Tracing

/// Drains the completion channel: stores each result with `StepRepository.complete` (one
/// transaction: transition, `results`, `in_process = false`, message to orchestration), then fires
/// the step's domain events. Transient database errors are retried with backoff until the result is
/// stored: a result is never dropped while the process lives. A result that cannot be stored as it
/// is — it does not encode as JSON (NaN, infinity), is larger than `maxResultBytes`, or the database
/// refuses its data for good (`ResultWriter`) — is replaced by a non-retryable `result_not_storable`
/// error result saying why (`ResultRefusal`). `monitor` sees every result being stored (readiness).
/// On RabbitMQ the statement sends no message; the result message is published (confirmed, retried
/// until confirmed) after the commit, before the domain events (`RabbitMQMessaging.publishResult`).
final class CompletionProcessorService: Service, Sendable {
    private let completions: AsyncChannel<StepCompletion>
    private let bufferSize: Int
    private let pool: PostgresConnectionPool
    private let domainEvents: DomainEventActor
    private let statistics: WorkerStatistics
    private let identity: WorkerIdentity
    private let retryBackoff: ReconnectBackoff
    private let concurrency: Int
    private let eventDrainTimeout: Duration
    /// Told as each result is settled (its unstored count goes down), so that load shedding can claim again.
    private let capacity: WorkerCapacity?
    private let maxResultBytes: Int
    /// Every result being stored, for readiness (`ResultStorageMonitor`).
    let monitor: ResultStorageMonitor
    private let logger: Logger
    /// Static SQL or PGMQ's functions for the completion's send.
    private let queueStatements: QueueStatementSelection
    /// Announces stored results (PGMQ: nothing, the result's statement sent the message; RabbitMQ:
    /// published after the commit).
    private let transport: any StepTransport

    init(
        completions: AsyncChannel<StepCompletion>, bufferSize: Int, pool: PostgresConnectionPool,
        domainEvents: DomainEventActor, statistics: WorkerStatistics, identity: WorkerIdentity,
        concurrency: Int = 4, retryBackoff: ReconnectBackoff = ReconnectBackoff(initial: .milliseconds(50), maximum: .seconds(5)),
        eventDrainTimeout: Duration = .seconds(5), capacity: WorkerCapacity? = nil,
        maxResultBytes: Int = WorkerConfiguration.ResultStorage().maxResultBytes,
        monitor: ResultStorageMonitor = ResultStorageMonitor(),
        queueStatements: QueueStatementSelection = QueueStatementSelection(),
        transport: (any StepTransport)? = nil,
        logger: Logger = Logger(label: "tasker.completion")
    ) {
        self.transport = transport ?? PGMQTransport(pool: pool)
        self.queueStatements = queueStatements
        self.maxResultBytes = maxResultBytes
        self.monitor = monitor
        self.capacity = capacity
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
    ///
    /// Up to `concurrency` writers store results. A result that arrives while a writer is free is
    /// stored at once, alone (no added latency); results that pile up while all writers are busy
    /// are taken together by the next free writer and stored in one transaction (one commit for
    /// the batch instead of one per step). At most `bufferSize` results wait at once.
    package func run() async {
        let room = AsyncSemaphore(permits: bufferSize)
        let queue = CompletionQueue(writers: concurrency)
        await withDiscardingTaskGroup { group in
            for await completion in completions.buffer(policy: .bounded(bufferSize)) {
                // Only a forced cancellation ends the wait early; the result is stored all the same.
                try? await room.acquire()
                guard queue.add(completion) else { continue }
                group.addTask {
                    while let batch = queue.next(maximum: Self.maximumBatch) {
                        await self.store(batch)
                        for _ in batch { room.release() }
                    }
                }
            }
            // Every handler is done: the remaining results are stored whatever happens, their
            // domain events get `shutdown_drain_timeout_ms`.
            await domainEvents.beginShutdownDrain(timeout: eventDrainTimeout)
        }
        try? await gracefulShutdown()
    }

    /// The most results one transaction stores.
    static let maximumBatch = 64

    /// Stores a batch in one transaction; if that fails, stores each result on its own (with retries),
    /// so one bad write never holds back the others and nothing is lost.
    func store(_ batch: [StepCompletion]) async {
        guard batch.count > 1 else { return await store(batch[0]) }
        let storeStart = ContinuousClock.now
        var writes: [CompletionWrite] = []
        var written: [StepCompletion] = []
        for completion in batch {
            guard let (write, stored) = makeWrite(completion) else {
                settled(completion)
                continue
            }
            writes.append(write)
            written.append(stored)
        }
        guard !writes.isEmpty else { return }
        let outcomes: [CompletionOutcome]
        let tokens = written.map { _ in monitor.begin() }
        defer { for token in tokens { monitor.stored(token) } }
        do {
            let batchWrites = writes
            let queues = queueStatements.statements
            outcomes = try await pool.withConnection { c in
                try await StepRepository.completeBatch(c, batchWrites, queues: queues)
            }
        } catch {
            logger.info(
                "storing \(written.count) results in one transaction failed; storing them one by one",
                metadata: ["error": "\(error)"])
            for token in tokens { monitor.stored(token) }  // each is watched on its own from here
            let lost = LostAnswer(error)
            for (completion, write) in zip(written, writes) { await store(completion, write, lostAnswer: lost) }
            return
        }
        StepMetrics.completionsBatched(written.count, in: statistics)
        // The batch's stored results announced together (RabbitMQ: their confirms overlapping).
        await transport.announceResults(zip(written, outcomes).filter { $0.1 != .notInProgress }.map(\.0.step.message))
        for (completion, outcome) in zip(written, outcomes) {
            await finish(completion, outcome: outcome, since: storeStart, published: true)
            settled(completion)
        }
    }

    /// Stores one result, retrying database errors; then publishes its events.
    func store(_ completion: StepCompletion) async {
        guard let (write, stored) = makeWrite(completion) else { return settled(completion) }
        await store(stored, write, lostAnswer: nil)
    }

    /// Stores `write` (`ResultWriter`: retries with the same write; after a lost answer the
    /// database is asked first), then finishes the step.
    private func store(_ completion: StepCompletion, _ write: CompletionWrite, lostAnswer: LostAnswer?) async {
        let storeStart = ContinuousClock.now
        let token = monitor.begin()
        defer {
            monitor.stored(token)
            settled(completion)
        }
        let writer = ResultWriter(
            pool: pool, backoff: retryBackoff, logger: logger, queueStatements: queueStatements)
        let stored = await writer.store(write, lostAnswer: lostAnswer) { [statistics, logger, monitor] error, attempt, delay in
            monitor.failed(token, error)
            StepMetrics.completionRetry(completion, in: statistics)
            logger.warning(
                "storing a step result failed; retrying",
                metadata: StepLogMetadata.of(
                    completion.step,
                    [
                        "error": "\(error)", "attempt": "\(attempt)", "retry_in": "\(delay)",
                    ]))
        }
        guard let stored else {
            logger.critical(
                "giving up storing a step result during forced shutdown",
                metadata: StepLogMetadata.of(completion.step, ["result": "\(write.resultJSON)"]))
            return
        }
        guard let outcome = stored.outcome else { return }  // refused, and its replacement too (logged)
        // The step's result is now the `result_not_storable` one (its events follow from that).
        let finished = stored.replacement.map { StepCompletion(step: completion.step, result: $0) } ?? completion
        if outcome == .storedEarlier {
            StepMetrics.completionRecovered(in: statistics)
            logger.warning(
                "the connection broke after a result was stored; it is not stored again",
                metadata: StepLogMetadata.of(completion.step))
        }
        await finish(finished, outcome: outcome, since: storeStart)
    }

    /// The step is done with (stored, refused, or given up): it no longer counts against load shedding.
    private func settled(_ completion: StepCompletion) {
        // A step whose result was stored ended its span in `finish`; any other (not encodable, given up
        // at a forced stop, refused twice) ends it here, as not stored.
        completion.step.trace?.abandon("the step's result was not stored")
        StepMetrics.completionFinished(completion)
        capacity?.resultSettled()
    }

    /// The result encoded for the database, with the completion it stores: the handler's, or a
    /// `result_not_storable` error result when that one does not encode as JSON or is larger than
    /// `maxResultBytes`. nil (logged) only when not even that can be encoded.
    private func makeWrite(_ completion: StepCompletion) -> (CompletionWrite, StepCompletion)? {
        let message = completion.step.message
        let refusal: ResultRefusal
        do {
            let json = try completion.result.storedJSON()
            let bytes = json.utf8.count
            guard bytes > maxResultBytes else {
                return (
                    CompletionWrite(
                        message: message, success: completion.result.isSuccess, resultJSON: json,
                        workerUUID: identity.uuid), completion
                )
            }
            refusal = .tooLarge(bytes: bytes, limit: maxResultBytes)
        } catch {
            refusal = ResultRefusal(encoding: error)
        }
        logger.error(
            "a step result cannot be stored; storing a result_not_storable error result instead",
            metadata: StepLogMetadata.of(completion.step, ["reason": "\(refusal.message)"]))
        do {
            let (write, result) = try CompletionWrite.refusal(refusal, message: message, workerUUID: identity.uuid)
            return (write, StepCompletion(step: completion.step, result: result))
        } catch {
            logger.critical("cannot encode a step result", metadata: StepLogMetadata.of(completion.step, ["error": "\(error)"]))
            return nil
        }
    }

    /// After the write: statistics, metrics, logs, the result message on RabbitMQ (unless the
    /// caller `published` it already), and the step's domain events.
    private func finish(
        _ completion: StepCompletion, outcome: CompletionOutcome, since storeStart: ContinuousClock.Instant,
        published: Bool = false
    ) async {
        let result = completion.result
        if let trace = completion.step.trace {
            trace.phase("tasker.step.result", since: storeStart, attributes: ["tasker.result.stored": .bool(outcome != .notInProgress)])
                .end()
            trace.end(result)
        }
        let elapsed = completion.step.claimedAt.duration(to: .now)
        StepMetrics.executionTime(elapsed, in: statistics)
        StepMetrics.resultStored(completion, stored: outcome != .notInProgress, since: storeStart, in: statistics)
        if case .notInProgress = outcome {
            // Refused once, never retried: e.g. the step was recovered by another worker while this
            // worker could not renew its liveness lease (Recovery/), and is retried by orchestration.
            StepMetrics.lateResultRefused(namespace: completion.step.hydrated.namespace, in: statistics)
            logger.warning(
                "step was no longer in_progress; result not stored (recovered by another worker, or moved on by orchestration)",
                metadata: StepLogMetadata.of(completion.step))
            return
        }
        // The result is committed; orchestration learns of it (RabbitMQ: from the confirmed publish,
        // retried until confirmed; an earlier attempt whose answer was lost published nothing).
        if !published { await transport.announceResults([completion.step.message]) }
        if !result.isSuccess {
            logger.info(
                "step failed",
                metadata: StepLogMetadata.of(
                    completion.step,
                    [
                        "error_type": "\(result.error?.errorType ?? "unknown")", "retryable": "\(result.isRetryable)",
                    ]))
        }
        await domainEvents.publish(for: completion)
    }
}

/// The results waiting for a writer, and how many writers run (at most `writers`).
private final class CompletionQueue: Sendable {
    private struct State {
        var pending: [StepCompletion] = []
        var running = 0
    }
    private let state = Mutex(State())
    private let writers: Int

    init(writers: Int) { self.writers = writers }

    /// Queues a result; true when the caller must start a writer for it (one is free).
    func add(_ completion: StepCompletion) -> Bool {
        state.withLock { state in
            state.pending.append(completion)
            guard state.running < writers else { return false }
            state.running += 1
            return true
        }
    }

    /// The next batch for a writer, oldest first; nil (and the writer stops) when none is waiting.
    func next(maximum: Int) -> [StepCompletion]? {
        state.withLock { state in
            guard !state.pending.isEmpty else {
                state.running -= 1
                return nil
            }
            let batch = Array(state.pending.prefix(maximum))
            state.pending.removeFirst(batch.count)
            return batch
        }
    }
}
