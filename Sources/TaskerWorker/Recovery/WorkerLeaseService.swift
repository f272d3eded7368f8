import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TaskerHandlerSDK
import TaskerModel
import TaskerPostgres

/// Keeps the worker's liveness lease (`tasker.worker_leases`, docs/security.md "Liveness") for the
/// worker's whole life: a row per worker whose expiry the database computes from its own clock,
/// renewed every `grace / 4` through the pool, deleted at shutdown. Other workers recover the steps
/// of a worker whose lease has expired (`RecoveryScanner`). Only worker roles may write the table,
/// so, unlike the advisory lock it replaces, no role that can merely connect can hold a dead
/// worker's liveness or take a live one's away; and it needs no session of its own, so it works
/// through any pool of connections.
///
/// Claiming waits for the lease (`WorkerCapacity.setLiveness`) and stops a quarter of the grace
/// period before the lease could expire when renewals fail (`WorkerLeaseState`); readiness then
/// says why. A renewal after a lapse takes the lease back: the steps recovered meanwhile refuse
/// this worker's late results (the completion writes only over its own `in_progress` claim).
///
/// Runs in the worker's group right after the pool, so it stops after the pipeline drained.
final class WorkerLeaseService: Service, Sendable {
    let pool: PostgresConnectionPool
    let identity: WorkerIdentity
    let capacity: WorkerCapacity
    let logger: Logger
    /// Failed renewals while the database is down: one explained line per 30 s, not one per attempt.
    private let renewalFailures = RepeatedFailureLog()
    /// Whether this worker scans for dead workers' steps when elected (`[worker.crash_recovery]
    /// enabled`), until its scanner stops (`stopRecovering`): sent with each renewal.
    private let recoversFlag: Atomic<Bool>
    /// How long a renewal takes the free scanner turn for (`ScannerTurn.duration`).
    let scannerTurn: Duration
    var recovers: Bool { recoversFlag.load(ordering: .relaxed) }
    private let state: Mutex<WorkerLeaseState>

    package init(
        pool: PostgresConnectionPool, identity: WorkerIdentity, capacity: WorkerCapacity, duration: Duration,
        recovers: Bool = true, scannerTurn: Duration = .seconds(4), logger: Logger = Logger(label: "tasker.liveness")
    ) {
        self.scannerTurn = scannerTurn
        self.recoversFlag = Atomic(recovers)
        self.pool = pool
        self.identity = identity
        self.capacity = capacity
        self.logger = logger
        self.state = Mutex(WorkerLeaseState(duration: duration))
    }

    /// The lease as the worker sees it now.
    var snapshot: WorkerLeaseState { state.withLock { $0 } }

    /// Whether the last renewal found this worker holding the fleet's crash-recovery scanner turn
    /// (`RecoveryScanner` then keeps it by scanning).
    var isScanner: Bool { state.withLock { $0.scanner } }

    /// The scanner stopped (shutdown began): renewals no longer take the turn (the scanner gave it
    /// up), so another worker scans while this one drains.
    func stopRecovering() {
        recoversFlag.store(false, ordering: .relaxed)
    }

    package func run() async throws {
        defer { capacity.setLiveness(false, problem: "liveness lease released: the worker is stopping") }
        try await cancelWhenGracefulShutdown { try await self.renewUntilCancelled() }
        await release()
    }

    private func renewUntilCancelled() async throws {
        let duration = snapshot.duration
        // Leases of dead workers are kept by nobody: remove them (bounded table; best effort).
        _ = await withDeadline(duration / 4) { [pool] in
            try await pool.withConnection(lane: .background) { c in try await WorkerLeaseRepository.purgeExpired(c) }
        }
        var everHeld = false
        while !Task.isCancelled {
            let sentAt = ContinuousClock.now
            let budget = snapshot.renewalBudget(at: sentAt)
            let (pool, uuid, hostname, recovers, turn) = (pool, identity.uuid, identity.hostname, self.recovers, scannerTurn)
            let outcome = await withDeadline(budget) {
                try await pool.withConnection(lane: .background) { c in
                    let renewal = try await WorkerLeaseRepository.renew(
                        c, worker: uuid, hostname: hostname, duration: duration, recovers: recovers, turn: turn)
                    try await SessionPoolerError.check(c, serverPID: renewal.serverPID)
                    return renewal.scanner
                }
            }
            if Task.isCancelled { return }
            switch outcome {
            case .value(let scanner):
                let wasAllowed = snapshot.claimsAllowed(at: .now)
                let wasScanner = snapshot.scanner
                state.withLock { $0.renewed(sentAt: sentAt, scanner: scanner) }
                if scanner != wasScanner {
                    logger.info(
                        scanner
                            ? "took the fleet's crash-recovery scanner turn"
                            : "no longer holds the fleet's crash-recovery scanner turn")
                }
                let unlogged = renewalFailures.recovered()
                if !wasAllowed {
                    logger.log(
                        level: everHeld ? .warning : .info,
                        everHeld ? "liveness lease renewed again; claiming resumes" : "liveness lease taken",
                        metadata: [
                            "worker_uuid": "\(uuid.uuidString.lowercased())", "lease_ms": "\(duration.inMilliseconds)",
                            "failures_not_logged": "\(unlogged)",
                        ])
                }
                everHeld = true
            case .failed(let error as SessionPoolerError):
                capacity.setLiveness(false, problem: error.description)
                logger.critical("\(error.description)")
                throw error
            case .failed(let error):
                // Readiness bodies are generic (no libpq text, no URL): the detail goes to the log.
                let summary = (error as? PostgresError)?.summary ?? "\(type(of: error))"
                state.withLock { $0.renewalFailed(summary) }
                renewalFailures.failed(logger, "could not renew the liveness lease", error: error)
            case .timedOut:
                state.withLock { $0.renewalFailed("the renewal did not answer within \(budget)") }
                renewalFailures.failed(
                    logger, "the liveness lease renewal did not answer", error: RenewalTimeout(budget: budget))
            }
            publish()
            do { try await Task.sleep(for: snapshot.delayBeforeRenewal(at: .now)) } catch { return }
            publish()
        }
    }

    /// The database refused a claim because the lease lapses by its clock (`ClaimOutcome.leaseLapsed`):
    /// no claim until a renewal sent from now on is stored. The renewal loop goes on as before.
    func claimRefusedByDatabase() {
        state.withLock { $0.refusedByDatabase(at: .now) }
        publish()
    }

    /// Tells the capacity whether claiming is allowed now, and why not.
    private func publish() {
        let now = ContinuousClock.now
        let lease = snapshot
        let allowed = lease.claimsAllowed(at: now)
        if !allowed, capacity.holdsLiveness {
            logger.warning(
                "not claiming steps until the liveness lease is renewed", metadata: ["reason": "\(lease.problem(at: now) ?? "")"])
        }
        capacity.setLiveness(allowed, problem: lease.problem(at: now))
    }

    /// Deletes the row (shutdown, after the pipeline drained): other workers need not wait for it to
    /// expire. Bounded by a quarter of the lease; left to expire when the database does not answer.
    private func release() async {
        capacity.setLiveness(false, problem: "liveness lease released: the worker is stopping")
        let (pool, uuid) = (pool, identity.uuid)
        let outcome = await withDeadline(snapshot.interval) {
            try await pool.withConnection(lane: .background) { c in try await WorkerLeaseRepository.release(c, worker: uuid) }
        }
        switch outcome {
        case .value:
            state.withLock { $0.released() }
            logger.info("liveness lease released")
        case .failed(let error):
            logger.warning("could not release the liveness lease; it expires by itself", metadata: ["error": "\(error)"])
        case .timedOut:
            logger.warning("the liveness lease release did not answer; it expires by itself")
        }
    }
}

/// A lease renewal that did not answer within its budget (logged through the renewals' `RepeatedFailureLog`).
struct RenewalTimeout: Error, CustomStringConvertible {
    var budget: Duration
    var description: String { "no answer within \(budget)" }
}
