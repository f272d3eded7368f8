import Foundation
import Logging
import ServiceLifecycle
import TaskerAuth
import TaskerHTTP
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Recovers the steps of dead workers (`[worker.crash_recovery]`, `enabled`): every `interval` it
/// looks (`RecoveryStatements.scan`, one round trip) for `in_progress` steps whose claiming worker
/// has no unexpired liveness lease (`WorkerLeaseService`); a step seen so for the rest of the grace
/// period (`LivenessTiming`, `AbsenceTracker`) gets a retryable `worker_lost` error result through
/// the normal completion statement, as a compare-and-set on the `in_progress` transition seen
/// (`ResultStatement(retiring: .lost, …)`), so that exactly one result is written however many workers
/// scan, and orchestration (any Tasker orchestration) retries the step like any retryable failure. The dead worker's id is logged at warning and each recovery
/// counted (`tasker_steps_recovered_total`).
///
/// One scanner for the whole fleet (`ScannerTurn`): a worker scans only while it holds the turn in
/// `tasker.recovery_scanner` (migration 0011), which a recovering worker's lease renewal takes when it
/// is free or expired and which only scanning keeps (each scan first extends it by `ScannerTurn.duration`,
/// two scan intervals): the fleet's scanning load on PostgreSQL does not grow with the number of
/// workers, and a worker that renews its lease without scanning (stuck, or a lease row with no worker
/// behind it) loses the turn. When the scanner dies, the turn expires and the next recovering
/// worker's renewal takes it; a new scanner knows no sightings yet (`AbsenceTracker`), so recovery
/// after the scanner's own death takes at most the turn, a renewal interval and two scan intervals
/// (about 9 s with the default 4 s grace and 2 s scans). At shutdown the scanner gives the turn up.
///
/// Steps whose transition records no `worker_uuid` (the upstream worker) are never returned by the
/// scan, so never touched.
final class RecoveryScanner: Service, Sendable {
    let pool: PostgresConnectionPool
    let identity: WorkerIdentity
    let statistics: WorkerStatistics
    let interval: Duration
    let grace: Duration
    let logger: Logger
    /// The recovery statement (sending in PGMQ or not) and the announcement of its result.
    let transport: any StepTransport
    /// The fleet's scanner turn this worker takes part in; nil: it scans every interval (tests).
    let turn: ScannerTurn?
    /// Steps looked at per scan at most (the oldest claims first; the rest at the next scan).
    static let scanLimit = 500
    /// Every this many scans, with a transport that announces results after their commit, the dead
    /// workers' unannounced results are announced (`announceDeadWorkersResults`).
    static let announceEvery = 15
    /// The recovery write's retries (`ResultWriter`).
    static let writeBackoff = ReconnectBackoff(initial: .milliseconds(50), maximum: .seconds(5))
    private let failureThrottle = Throttle(interval: .seconds(30))

    init(
        pool: PostgresConnectionPool, identity: WorkerIdentity, statistics: WorkerStatistics,
        interval: Duration, grace: Duration, transport: (any StepTransport)? = nil,
        turn: ScannerTurn? = nil, logger: Logger = Logger(label: "tasker.crash_recovery")
    ) {
        self.transport = transport ?? PGMQTransport(pool: pool)
        self.turn = turn
        self.pool = pool
        self.identity = identity
        self.statistics = statistics
        self.interval = interval
        self.grace = grace
        self.logger = logger
    }

    package func run() async throws {
        // Stopped right after the event system at shutdown: nothing is recovered while the worker drains.
        await cancelWhenGracefulShutdown { await self.scanUntilCancelled() }
        guard let turn else { return }
        // Another worker takes the turn at its next renewal, not when this one's would have expired.
        turn.stopRecovering()
        let (pool, uuid) = (pool, identity.uuid)
        _ = await withDeadline(interval) {
            try await pool.withConnection(lane: .background) { c in try await c.query(RecoveryStatements.releaseTurn, [uuid]) }
        }
    }

    private func scanUntilCancelled() async {
        var tracker = AbsenceTracker(grace: LivenessTiming(grace: grace).absenceWait)
        var scans = 0
        while !Task.isCancelled {
            do { try await Task.sleep(for: interval) } catch { return }
            guard await holdsTurn() else {
                // Not scanning: what was seen before says nothing about the leases now.
                tracker.reset()
                continue
            }
            await scanOnce(&tracker)
            scans += 1
            if scans % Self.announceEvery == 0 { await announceDeadWorkersResults() }
        }
    }

    /// With a transport that announces results after their commit (RabbitMQ, the queues' own
    /// database): announces, once each, the results that workers without a lease stored more than a
    /// grace period ago and never announced (`UnannouncedResults.announceOfDeadWorkers`), so that a
    /// worker dying between a commit and its announcement loses nothing even when no worker of its
    /// namespaces starts again. Returns how many were announced.
    @discardableResult
    func announceDeadWorkersResults() async -> Int {
        guard transport.announcesAfterCommit else { return 0 }
        let transport = self.transport
        return await UnannouncedResults(stopped: OneShotSignal(), logger: logger).announceOfDeadWorkers(
            pool: pool, olderThan: grace, announce: { message in await transport.announceDurably(message) })
    }

    /// Whether this worker may scan now: no turn to hold, or the last renewal said it holds the turn
    /// and extending it found it still this worker's.
    private func holdsTurn() async -> Bool {
        guard let turn else { return true }
        guard turn.heldByRenewal() else { return false }
        let (uuid, seconds) = (identity.uuid, turn.duration.inSeconds)
        do {
            return try await pool.withConnection(lane: .background) { c in
                try await !c.query(RecoveryStatements.keepTurn, [uuid, seconds]).isEmpty
            }
        } catch {
            return false
        }
    }

    /// One scan: look, then recover what has been seen without a lease long enough. Returns how
    /// many steps this call recovered.
    @discardableResult
    func scanOnce(_ tracker: inout AbsenceTracker) async -> Int {
        let steps: [LostWorkerStep]
        StepMetrics.recoveryScanned(in: statistics)
        do {
            steps = try await pool.withConnection(lane: .background) { c in
                try await RecoveryRepository.scan(c, limit: Self.scanLimit)
            }
        } catch {
            tracker.reset()
            if failureThrottle.allow() {
                logger.warning("crash recovery scan failed; retrying", metadata: ["error": "\(error)"])
            }
            return 0
        }
        var recovered = 0
        for step in tracker.observe(steps, at: .now) where !Task.isCancelled {
            if await recover(step) { recovered += 1 }
        }
        return recovered
    }

    /// Writes the `worker_lost` result of `step`; true when this call wrote it.
    func recover(_ step: LostWorkerStep) async -> Bool {
        let lostWorker = WorkerIdentity(uuid: step.workerUUID, hostname: "").workerID
        let metadata: Logger.Metadata = [
            "lost_worker_id": "\(lostWorker)", "step_uuid": "\(step.stepUUID)", "task_uuid": "\(step.taskUUID)",
            "correlation_id": "\(step.correlationID)",
        ]
        let result = StepExecutionResult.workerLost(step, recoveredBy: identity, grace: grace)
        let message = StepMessage(taskUUID: step.taskUUID, stepUUID: step.stepUUID, correlationID: step.correlationID)
        let write: CompletionWrite
        do {
            write = CompletionWrite(message: message, success: false, resultJSON: try result.storedJSON(), workerUUID: identity.uuid)
        } catch {
            // Cannot happen for the result built above; still in the next scan's answer if it did.
            logger.error("cannot encode the worker_lost result of a step", metadata: metadata.merging(["error": "\(error)"]) { $1 })
            return false
        }
        // The one result writer: retried until stored, an answer lost with its connection looked up.
        let writer = ResultWriter(pool: pool, backoff: Self.writeBackoff, logger: logger)
        let stored = await writer.store(write, recovering: (step, transport.recoveryStatement)) { [logger] error, attempt, delay in
            logger.warning(
                "could not store the worker_lost result of a step; retrying",
                metadata: metadata.merging(["error": "\(error)", "attempt": "\(attempt)", "retry_in": "\(delay)"]) { $1 })
        }
        guard let outcome = stored?.outcome, outcome != .notInProgress else {
            // Given up (shutdown: still in the next scan's answer), or nothing written.
            logger.debug("step of a lost worker not recovered here (already recovered, moved on, or stopping)", metadata: metadata)
            return false
        }
        await transport.announceResults([message])
        StepMetrics.stepRecovered(in: statistics)
        logger.warning(
            "worker lost while running a step: stored a retryable worker_lost result so that orchestration retries it",
            metadata: metadata)
        return true
    }
}

/// This worker's part in the fleet's one crash-recovery scanner turn (`RecoveryScanner`): how long a
/// scan keeps the turn, what the last lease renewal said about it (`WorkerLeaseService.isScanner`),
/// and how to stop taking it (`WorkerLeaseService.stopRecovering`).
struct ScannerTurn: Sendable {
    /// Two scan intervals: a scanner whose scans stop loses the turn after this long.
    let duration: Duration
    let heldByRenewal: @Sendable () -> Bool
    let stopRecovering: @Sendable () -> Void
}
