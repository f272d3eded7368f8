import AsyncAlgorithms
import Foundation
import Logging
import Synchronization
import TaskerAuth
import TaskerHTTP
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore
import TaskerTelemetry

/// A message that arrived for a worker queue, by notification or by polling.
package struct StepDelivery: Sendable {
    package let queue: String
    package let msgID: Int64
    package let message: JSONValue
    /// True when this worker read the message (poll, read by id), which hid it for its visibility
    /// timeout; a delivery shed for load is then made visible again at once.
    let hiddenByRead: Bool
    /// Why the body read from the queue could not be decoded (`QueueMessage.bodyError`): poison.
    package let bodyError: String?

    package init(queue: String, msgID: Int64, message: JSONValue, hiddenByRead: Bool = false, bodyError: String? = nil) {
        self.queue = queue
        self.msgID = msgID
        self.message = message
        self.hiddenByRead = hiddenByRead
        self.bodyError = bodyError
    }

    /// A message this worker read from `queue` (poll, read by id).
    init(read message: QueueMessage) {
        self.init(
            queue: message.queue, msgID: message.msgID, message: message.message, hiddenByRead: true,
            bodyError: message.bodyError)
    }
}

/// What became of a delivery.
package enum DeliveryOutcome: Sendable, Equatable {
    /// Claimed and dispatched, or settled for good (poison or stale archived, race lost, duplicate).
    case handled
    /// Left queued (database trouble, the step being claimed by another delivery): the queue must
    /// be read again later.
    case retryLater
    /// Left queued for lack of room (load shedding, or no liveness lease): read again once capacity
    /// is released (`WorkerCapacity.freed`; a broker's intake waits in `waitForRelease`).
    case shed
    /// Claiming is off.
    case notAccepting
}

/// Claims steps and hands them to the dispatch channel (fire-and-forget).
///
/// For each delivery: decode the `StepMessage`, then hydrate and claim in one round trip (the claim
/// also archives the message, atomically), then send the claimed step to the dispatch channel.
/// - Only messages of this worker's own queues (`worker_<ns>_queue` of the namespaces it serves)
///   are touched: any other delivery is refused (counted, nothing read, claimed or archived).
/// - A message that cannot be decoded, or names a task or step that does not exist, or a step of
///   another namespace than its queue's (misrouted), is archived with an error log and counted
///   (`poisonMessages`): never retried forever, never a crash. A body that came embedded in a
///   notification is not trusted for that: the message itself is read by id first.
/// - A message whose step is already past `enqueued` (a stale duplicate) is archived and counted.
/// - A lost claim race is not acked; the message is someone else's now.
/// - The same message arriving twice at once (listener and poller) is handled once; another message
///   for a step being claimed is left queued and read again (catch-up), so it is still settled.
/// - With the handler permits at `capacity_threshold_percent`, nothing is claimed (load shedding):
///   messages stay queued for later.
///
/// Not an actor: its only state of its own is whether claiming is on and whether intake closed, two
/// atomics any thread reads without a hop; everything else it uses keeps its own state (the capacity
/// behind a lock, the pool, the statistics).
package final class StepExecutor: Sendable {
    let pool: PostgresConnectionPool
    /// The registered templates (cached), where a claimed step's template step is looked up.
    let templates: TaskTemplateRegistry
    private let dispatch: AsyncChannel<ClaimedStep>
    let statistics: WorkerStatistics
    /// Load shedding, the claims in flight (dedup) and the backlog they join (`WorkerCapacity`).
    let capacity: WorkerCapacity
    /// `timing.claim_timeout_seconds`: the claim transaction's statement timeout.
    let claimTimeout: Duration?
    /// Static SQL or `pgmq.archive` for the claim's archive, per queue.
    let queueStatements: QueueStatementSelection
    /// Names this worker in the error result of a step it claimed but cannot run.
    let identity: WorkerIdentity
    /// `worker_<ns>_queue` of every namespace this worker serves: the only queues it reads,
    /// claims from or archives in.
    let servedQueues: Set<String>
    let refusedLog = Throttle(interval: .seconds(10))
    /// PGMQ (poison and stale messages archived) or RabbitMQ (acked by the intake; results of
    /// steps failed here published after their commit).
    /// Where the transports differ: settling, releasing and announcing (`StepTransport`).
    let transport: any StepTransport
    /// Told when the database refuses a claim because this worker's liveness lease is lapsing
    /// (`ClaimOutcome.leaseLapsed`): the lease service stops claiming until a renewal is stored.
    let leaseLapsed: @Sendable () -> Void
    let logger: Logger
    /// Whether claiming is switched on (`setAccepting`).
    var accepting: Bool { acceptingFlag.load(ordering: .relaxed) }
    /// Whether claims hydrate the rows of FFI step events (`StepStatements.hydrateWithRows`).
    let eventDocuments: Bool
    /// Behind a transaction pooler: claims whose answer was lost and that the lookup took for not
    /// committed, looked up again by `OrphanedClaimAudit` (nil when connected directly: the broken
    /// session is fenced before the lookup, so a late commit cannot happen).
    let unresolvedClaims: UnresolvedClaims?
    private let acceptingFlag = Atomic<Bool>(true)
    /// Set once by `closeIntake()` (shutdown) and never cleared: no claim starts after it.
    private let intakeClosedFlag = Atomic<Bool>(false)

    /// `namespaces`: the namespaces this worker serves; deliveries from any other queue are refused.
    /// `eventDocuments`: a foreign runtime is attached, so hydrate also reads the task and step rows
    /// its step events carry.
    init(
        pool: PostgresConnectionPool, templates: TaskTemplateRegistry, dispatch: AsyncChannel<ClaimedStep>,
        statistics: WorkerStatistics, capacity: WorkerCapacity, namespaces: [String], claimTimeout: Duration? = nil,
        identity: WorkerIdentity = WorkerIdentity(), eventDocuments: Bool = false,
        queueStatements: QueueStatementSelection = QueueStatementSelection(),
        transport: (any StepTransport)? = nil, leaseLapsed: @escaping @Sendable () -> Void = {},
        logger: Logger = Logger(label: "tasker.step_executor")
    ) {
        self.transport = transport ?? PGMQTransport(pool: pool)
        self.leaseLapsed = leaseLapsed
        self.queueStatements = queueStatements
        self.identity = identity
        self.eventDocuments = eventDocuments
        self.servedQueues = Set(namespaces.map(QueueNames.workerQueue(namespace:)))
        self.claimTimeout = claimTimeout
        self.pool = pool
        self.templates = templates
        self.dispatch = dispatch
        self.statistics = statistics
        self.capacity = capacity
        self.logger = logger
        self.unresolvedClaims =
            pool.configuration.route == .transactionPooler ? UnresolvedClaims(logger: logger) : nil
    }

    /// Turns claiming on or off (off for shutdown); deliveries while off stay in their queues.
    func setAccepting(_ accepting: Bool) { acceptingFlag.store(accepting, ordering: .relaxed) }

    /// Whether claiming is on: switched on (`setAccepting`) and intake not closed for shutdown.
    var isAccepting: Bool { accepting && !intakeIsClosed }

    /// Stops intake for good (shutdown): from now on no claim starts, whatever `setAccepting` says.
    /// Any thread. A claim already in its round trip finishes; its steps go to dispatch as usual (the
    /// drain runs them or gives them their result). Messages read but not claimed are left to their
    /// visibility timeout (never archived).
    func closeIntake() {
        intakeClosedFlag.store(true, ordering: .sequentiallyConsistent)
    }

    /// True once `closeIntake()` was called: no message is read or claimed any more.
    var intakeIsClosed: Bool { intakeClosedFlag.load(ordering: .sequentiallyConsistent) }

    /// How many more steps may be claimed before load shedding starts (nil: no limit, shedding is
    /// off; 0 while not accepting). The poller reads no more than this, so that it does not hide
    /// messages for their visibility timeout only to shed them.
    var readCapacity: Int? {
        guard accepting, !intakeIsClosed else { return 0 }
        return capacity.remainingClaims
    }

    /// Whether a notified message on `queue` should be delivered now. Not while claiming is off, nor
    /// at the shedding threshold: then the notification is counted as shed, its message stays
    /// queued, and the released capacity triggers a read of the queue (`WorkerCapacity.freed`).
    /// A lock, nothing awaited: the listener asks for every notification. A stale answer is
    /// harmless: a delivery admitted at the threshold is shed by `execute` as before.
    func admitsNotification(forQueue queue: String) -> Bool {
        guard acceptingFlag.load(ordering: .relaxed), !intakeIsClosed else { return false }
        // Checked and recorded in one transition: a release after it triggers a read (no shed lost).
        guard !capacity.admitNotification() else { return true }
        StepMetrics.shed(queue: queue, in: statistics)
        return false
    }

    /// Processes one delivery. Never throws: every failure is logged, and the message is either
    /// archived (poison, stale) or left for its visibility timeout (database trouble, lost race).
    @discardableResult
    package func execute(_ delivery: StepDelivery) async -> DeliveryOutcome {
        await execute(batch: [delivery])[0]
    }

    /// Registers the message as in flight, or says why not: the same message twice (listener and
    /// poller) is handled by the first; another message for a step being claimed (a duplicate send)
    /// must still be settled, so it is read again after this claim; at the shedding threshold the
    /// message stays queued (made visible again if this worker's read hid it).
    func admit(_ message: StepMessage, _ delivery: StepDelivery) async -> DeliveryOutcome? {
        switch capacity.admitClaim(step: message.stepUUID, message: delivery.msgID) {
        case .admitted:
            return nil
        case .duplicate:
            return .handled
        case .stepBusy:
            return .retryLater
        case .shed:
            StepMetrics.shed(queue: delivery.queue, in: statistics)
            await makeVisibleAgain(delivery)
            return .shed
        }
    }

    func claimAndDispatch(_ delivery: StepDelivery, _ message: StepMessage) async throws -> DeliveryOutcome {
        let claimStart = ContinuousClock.now
        // One round trip: the step's state and context, and the claim itself when it is claimable.
        let attempt = try await claimSteps([request(message, delivery)])[0]
        let outcome = try await settle(delivery, message, attempt, since: claimStart)
        // The claim committed: its message can go now (a no-op where the claim archived it).
        if case .claimed = attempt.claim { await transport.settleClaimed([delivery]) }
        return outcome
    }

    /// What follows a claim attempt: dispatch a claimed step; archive a poison or stale message;
    /// count a lost race (the message is someone else's now). `.retryLater` only for a step not
    /// claimed that is still claimable on a broker (the delivery is requeued, not acked: with PGMQ
    /// the unarchived message stays queued by itself).
    @discardableResult
    func settle(
        _ delivery: StepDelivery, _ message: StepMessage, _ attempt: ClaimAttempt,
        since claimStart: ContinuousClock.Instant
    ) async throws -> DeliveryOutcome {
        let outcome = attempt.claim
        let hydrated: HydratedStep?
        switch (attempt.hydrated, outcome) {
        case (.success(let step), _):
            hydrated = step
        case (.failure(let error), .claimed) where error.kind == .decoding:
            // Claimed, but its stored data cannot be read (e.g. a context nested past
            // `UntrustedJSON.maximumDepth`, stored before the limit existed): reading it again gives
            // the same answer, so the step fails for good; its message went with the claim.
            await failClaimedStep(
                message,
                failure: StepFailure(
                    message: "The step's stored data cannot be read: \(error.message)",
                    errorType: Self.unreadableDataErrorType, retryable: false))
            return .handled
        case (.failure(let error), .claimed):
            // Claimed, but its row cannot be read: the step gets a retryable error result instead of
            // staying in_progress with nobody to run it.
            await failClaimedStep(message, reason: "the worker could not read the claimed step: \(error)")
            return .handled
        case (.failure(let error), .notClaimable), (.failure(let error), .leaseLapsed):
            throw error
        }
        guard let hydrated else {
            StepMetrics.failure(queue: delivery.queue, .stepNotFound, in: statistics)
            await archivePoison(delivery, reason: "task \(message.taskUUID) has no step \(message.stepUUID)")
            return .handled
        }
        guard delivery.queue == QueueNames.workerQueue(namespace: hydrated.namespace) else {
            // The claim statement refused it: a step of another namespace in this queue.
            StepMetrics.failure(queue: delivery.queue, .stepNotFound, in: statistics)
            await archivePoison(
                delivery,
                reason: "misrouted: step \(message.stepUUID) belongs to namespace "
                    + "\(hydrated.namespace), not to the namespace of queue \(delivery.queue); not claimed")
            return .handled
        }
        guard case .claimed(let attempts) = outcome else {
            if outcome == .leaseLapsed { return await claimRefusedForLease(delivery, message) }
            if hydrated.currentState == "enqueued" || hydrated.currentState == "pending" {
                // Claimable a moment ago: another worker won, or a parent is not complete yet.
                StepMetrics.failure(namespace: hydrated.namespace, .claimFailed, in: statistics)
                logger.debug("step not claimed (claimed elsewhere or moved on)", metadata: Self.metadata(message))
                // PGMQ: the message stays queued; a broker's delivery is requeued (acked, it would be
                // gone) and seen again, stale by then.
                return transport.unclaimedOutcome
            }
            StepMetrics.stale(namespace: hydrated.namespace, in: statistics)
            logger.info(
                "settling a stale message: the step is already \(hydrated.currentState)",
                metadata: Self.metadata(message, ["msg_id": "\(delivery.msgID)"]))
            _ = try await transport.settle(delivery)
            return .handled
        }
        let definition: StepDefinition?
        do {
            definition = try await stepDefinition(for: hydrated)
        } catch {
            // The database could not say which template step this is: not a missing handler (that
            // would fail the step for good); a retryable error result sends it round again.
            await failClaimedStep(message, reason: "the worker could not look up the step's task template: \(error)")
            return .handled
        }
        var dependencies: [String: StepExecutionResult] = [:]
        for (name, value) in hydrated.dependencyResults {
            dependencies[name] = try? StepExecutionResult.decode(value)
        }
        StepMetrics.claimed(message.stepUUID, namespace: hydrated.namespace, since: claimStart, in: statistics)
        capacity.claimDispatched()
        // From here the step's message carries the worker's step span (its result message to
        // orchestration continues the trace from there).
        let trace = StepTrace.claimed(message, hydrated, since: claimStart)
        var traced = message
        traced.traceparent = trace.traceParent?.header
        await dispatch.send(
            ClaimedStep(
                message: traced, hydrated: hydrated, definition: definition,
                dependencyResults: dependencies, attempts: attempts, trace: trace))
        return .handled
    }

    /// The `error_type` of the permanent error result of a claimed step whose stored data cannot be
    /// read (`PostgresError.Kind.decoding` while hydrating it).
    static let unreadableDataErrorType = "step_data_unreadable"

    /// Stores a retryable error result for a step this worker claimed but cannot run.
    func failClaimedStep(_ message: StepMessage, reason: String) async {
        let now = Date()
        let result = StepExecutionResult.dispatchError(
            stepUUID: message.stepUUID, kind: .handlerError, callable: "", timeoutMs: nil, taskUUID: message.taskUUID,
            message: reason, startedAt: now, completedAt: now, workerID: identity.workerID, hostname: identity.hostname)
        await failClaimedStep(message, result: result, reason: reason)
    }

    /// Stores `failure` as the error result of a step this worker claimed but cannot run.
    private func failClaimedStep(_ message: StepMessage, failure: StepFailure) async {
        let now = Date()
        let result = StepExecutionResult.failure(
            stepUUID: message.stepUUID, failure: failure, startedAt: now, completedAt: now,
            workerID: identity.workerID, hostname: identity.hostname)
        await failClaimedStep(message, result: result, reason: failure.message)
    }

    private func failClaimedStep(_ message: StepMessage, result: StepExecutionResult, reason: String) async {
        logger.error("claimed a step it cannot run; storing an error result", metadata: Self.metadata(message, ["reason": "\(reason)"]))
        let write: CompletionWrite
        do {
            write = CompletionWrite(
                message: message, success: false, resultJSON: try result.storedJSON(),
                workerUUID: identity.uuid)
        } catch {
            logger.critical(
                "could not encode the error result; the step stays in_progress for orchestration's staleness handling",
                metadata: Self.metadata(message, ["error": "\(error)"]))
            return
        }
        let writer = ResultWriter(
            pool: pool, backoff: Self.recoveryBackoff, logger: logger, queueStatements: queueStatements)
        let outcome = await writer.store(write) { [logger] error, attempt, delay in
            logger.warning(
                "storing the error result failed; retrying",
                metadata: Self.metadata(
                    message,
                    [
                        "error": "\(error)", "attempt": "\(attempt)", "retry_in": "\(delay)",
                    ]))
        }
        guard let outcome else {
            logger.critical(
                "stopped before the error result was stored; the step stays in_progress for orchestration's staleness handling",
                metadata: Self.metadata(message))
            return
        }
        // Stored (not refused, not given up): orchestration learns of it (RabbitMQ: from the publish).
        if let stored = outcome.outcome, stored != .notInProgress { await transport.announceResults([message]) }
    }

    /// The database refused the claim: this worker's liveness lease has expired or is about to, by
    /// the database's clock, although its own clock still allowed claiming (renewals that hang
    /// rather than fail). Claiming stops until a renewal is stored, and the message goes back at once
    /// for a worker whose lease holds (PGMQ: visible again; a broker: requeued).
    func claimRefusedForLease(_ delivery: StepDelivery, _ message: StepMessage) async -> DeliveryOutcome {
        leaseLapsed()
        StepMetrics.claimRefusedForLease(in: statistics)
        logger.warning(
            """
            the database refused a claim: this worker's liveness lease has expired or expires within a quarter of its \
            duration; not claiming until a renewal is stored
            """,
            metadata: Self.metadata(message, ["queue": "\(delivery.queue)", "msg_id": "\(delivery.msgID)"]))
        await makeVisibleAgain(delivery)
        return transport.unclaimedOutcome
    }

    /// A message this worker had hidden by reading it and will not claim now goes back to the queue
    /// at once (another worker, or this one when it has room, can take it without waiting for the
    /// visibility timeout; `StepTransport.release`).
    func makeVisibleAgain(_ delivery: StepDelivery) async {
        do {
            try await transport.release(delivery)
        } catch {
            logger.debug(
                "could not make a shed message visible again; it returns after its visibility timeout",
                metadata: ["queue": "\(delivery.queue)", "msg_id": "\(delivery.msgID)", "error": "\(error)"])
        }
    }

    /// Settles a message that can never be processed (PGMQ: archived; a broker: acked by the
    /// intake). Counted and logged once, by whoever settles it (the listener and the poller may
    /// both hold the same message).
    func archivePoison(_ delivery: StepDelivery, reason: String) async {
        let metadata: Logger.Metadata = ["queue": "\(delivery.queue)", "msg_id": "\(delivery.msgID)", "reason": "\(reason)"]
        do {
            guard try await transport.settle(delivery) else {
                logger.debug("a poison message was already settled", metadata: metadata)
                return
            }
            StepMetrics.poison(queue: delivery.queue, in: statistics)
            logger.error("settled a poison message (\(transport.summary))", metadata: metadata)
        } catch {
            logger.warning(
                "could not archive a poison message; it is read again",
                metadata: metadata.merging(
                    ["error": "\(error)"], uniquingKeysWith: { $1 }))
        }
    }

    static func metadata(_ message: StepMessage, _ extra: Logger.Metadata = [:]) -> Logger.Metadata {
        StepLogMetadata.of(message, extra)
    }
}
