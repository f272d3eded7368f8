import Foundation
import Logging
import Synchronization
import TaskerAuth
import TaskerHTTP
import TaskerPostgres

/// The worker's one capacity state: handler permits, claimed steps waiting for a permit, claimed
/// steps whose result is not stored, claims in flight, and the shed → re-read signal. The decisions
/// are `WorkerCapacityState`'s (pure; its invariants are written there); this wrapper holds it under
/// one `Mutex` with the continuations of the callers waiting for a permit, and performs the answers
/// outside the lock: resume a waiter, yield `freed`, log the capacity warning.
///
/// Shared by the executor (admission, claims), the dispatch service (permits), the completion
/// processor (settled results) and the event system (re-read on `freed`).
package final class WorkerCapacity: Sendable {
    /// How a waiter for a permit is resumed: with its permit, or cancelled without one.
    private typealias Waiter = CheckedContinuation<Result<Void, CancellationError>, Never>

    private struct Locked {
        var state: WorkerCapacityState
        var waiting: [Int: Waiter] = [:]
        var nextWaiter = 0
        /// Callers of `waitForRelease` (a broker's deliveries refused for lack of room).
        var releaseWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// True once `finish()` ran: `waitForRelease` returns at once.
        var finished = false
        /// Why the worker does not hold its liveness lease (readiness shows it).
        var livenessProblem: String?
    }

    private let locked: Mutex<Locked>
    private let freedContinuation: AsyncStream<Void>.Continuation
    /// Yields when capacity is released after a shed (coalesced: at most one pending element), so
    /// that the refused messages are read again at once instead of at the next catch-up or poll
    /// tick (with few permits, waiting for those made throughput collapse: see docs/benchmarks.md).
    package let freed: AsyncStream<Void>
    /// The number of handler permits (`max_concurrent_handlers`, at least 1).
    let handlerPermits: Int
    /// The thresholds applied.
    let shedding: LoadShedding
    private let warningThrottle = Throttle(interval: .seconds(10))
    private let logger: Logger

    /// `requiresLiveness`: nothing is claimed until `setLiveness(true)` (the worker's pipeline,
    /// whose `WorkerLeaseService` renews the liveness lease).
    package init(
        permits: Int, shedding: LoadShedding = .disabled, requiresLiveness: Bool = false,
        logger: Logger = Logger(label: "tasker.load_shedding")
    ) {
        let state = WorkerCapacityState(permits: permits, shedding: shedding, requiresLiveness: requiresLiveness)
        locked = Mutex(Locked(state: state))
        handlerPermits = state.permits.limit
        self.shedding = shedding
        self.logger = logger
        (freed, freedContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    // MARK: Reading

    /// Handler permits held.
    var handlerPermitsInUse: Int { locked.withLock { $0.state.permits.inUse } }
    /// Steps waiting for a handler permit (suspended in `acquireHandlerPermit`).
    var permitWaiters: Int { locked.withLock { $0.state.permits.waiters.count } }
    /// Claimed steps not holding a permit yet (the dispatch channel's load).
    var dispatchBacklog: Int { locked.withLock { $0.state.dispatchBacklog } }
    /// Claimed steps whose result is not settled yet.
    var unstoredResults: Int { locked.withLock { $0.state.unstored } }
    /// Claims under way.
    var claimsInFlight: Int { locked.withLock { $0.state.claimsInFlight.count } }
    /// Running handlers plus the backlog, in percent of the permits.
    var usagePercent: Double { locked.withLock { $0.state.usagePercent } }
    /// At or above the capacity threshold.
    var isShedding: Bool { locked.withLock { $0.state.isShedding } }
    /// Whether the worker holds its liveness lease (claims are refused while it does not).
    var holdsLiveness: Bool { locked.withLock { $0.state.holdsLiveness } }
    /// Why the worker does not hold its liveness lease (nil while it does, or when not told).
    var livenessProblem: String? { locked.withLock { $0.state.holdsLiveness ? nil : $0.livenessProblem } }
    /// Claims that fit before load shedding starts (nil: shedding is off).
    var remainingClaims: Int? { locked.withLock { $0.state.remainingClaims } }

    // MARK: Admission (executor, event system)

    /// Whether a notified message should be delivered now; when not, the shed is recorded and the
    /// next release of capacity yields `freed`.
    func admitNotification() -> Bool { locked.withLock { $0.state.admitNotification() } }

    /// Work was refused or left unread for lack of capacity: the next release yields `freed`.
    func recordShed() { locked.withLock { $0.state.recordShed() } }

    /// Registers a claim of `step` by message `message`, or says why not (logs the capacity warning,
    /// at most every 10 s).
    func admitClaim(step: UUID, message: Int64) -> WorkerCapacityState.ClaimAdmission {
        let admission = locked.withLock { $0.state.admitClaim(step: step, message: message) }
        if case .admitted(let usage?) = admission, warningThrottle.allow() {
            logger.warning("handler capacity nearly exhausted", metadata: ["usage_percent": "\(Int(usage))"])
        }
        return admission
    }

    /// The claim of `step` is over.
    func claimEnded(step: UUID) { locked.withLock { $0.state.claimEnded(step: step) } }

    /// A claimed step goes into the dispatch channel.
    func claimDispatched() { locked.withLock { $0.state.claimDispatched() } }

    // MARK: Handler permits (dispatch service)

    /// Takes a handler permit for a step of the backlog, waiting (FIFO) while all are in use. A
    /// cancelled caller stops waiting, holds no permit, and its step leaves the backlog.
    func acquireHandlerPermit() async throws(CancellationError) {
        let id = locked.withLock { locked in
            defer { locked.nextWaiter += 1 }
            return locked.nextWaiter
        }
        let result: Result<Void, CancellationError> = await withTaskCancellationHandler {
            await withCheckedContinuation { (done: Waiter) in
                // The task's cancelled flag is set before its cancellation handler runs: checked
                // under the lock, a cancellation is either seen here or finds the waiter queued.
                let acquisition = locked.withLock { locked in
                    let acquisition = locked.state.acquirePermit(waiter: id, isCancelled: Task.isCancelled)
                    if acquisition == .queued {
                        locked.waiting[id] = done
                    }
                    return acquisition
                }
                switch acquisition {
                case .granted: done.resume(returning: .success(()))
                case .cancelled: done.resume(returning: .failure(CancellationError()))
                case .queued: break
                }
            }
        } onCancel: {
            let waiter = locked.withLock { locked -> Waiter? in
                guard locked.state.cancelPermitWaiter(id) else { return nil }
                return locked.waiting.removeValue(forKey: id)
            }
            waiter?.resume(returning: .failure(CancellationError()))
        }
        try result.get()
    }

    /// A handler gives its permit back (to the first waiter, if any); yields `freed` after a shed.
    func releaseHandlerPermit() {
        let (waiter, reRead) = locked.withLock { locked -> (Waiter?, Bool) in
            let release = locked.state.releasePermit()
            return (release.handedTo.flatMap { locked.waiting.removeValue(forKey: $0) }, release.reRead)
        }
        waiter?.resume(returning: .success(()))
        if reRead { released() }
    }

    // MARK: Results (completion processor)

    /// A claimed step's result is settled (stored, refused, or given up); yields `freed` after a shed.
    func resultSettled() {
        if locked.withLock({ $0.state.resultSettled() }) { released() }
    }

    // MARK: Liveness (Recovery/WorkerLeaseService)

    /// The liveness lease is held (true) or not (false, for `problem`); held again, the queues are
    /// read at once.
    func setLiveness(_ held: Bool, problem: String? = nil) {
        let regained = locked.withLock { locked in
            locked.livenessProblem = held ? nil : problem
            return locked.state.setLiveness(held)
        }
        if regained { released() }
    }

    /// Ends `freed` (shutdown) and releases every `waitForRelease`.
    package func finish() {
        freedContinuation.finish()
        let waiters = locked.withLock { locked in
            locked.finished = true
            defer { locked.releaseWaiters = [:] }
            return Array(locked.releaseWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: Waiting for room (a broker's intake)

    /// Returns at the next release of capacity after a shed (the moment `freed` yields), after
    /// `timeout` (a bound, should a room freed by a failed claim go unannounced), or at
    /// cancellation or `finish()`. The RabbitMQ intake waits here with a delivery refused for lack
    /// of room, instead of requeueing it: the delivery stays unacked (the broker's `prefetch_count`
    /// bounds how many), and claims never run ahead of the handler permits.
    func waitForRelease(atMost timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { await self.nextRelease() }
            await group.next()
            group.cancelAll()
        }
    }

    private func nextRelease() async {
        let id = locked.withLock { locked in
            defer { locked.nextWaiter += 1 }
            return locked.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                // Checked under the lock: a cancellation (or finish) either is seen here or finds the waiter registered.
                let now = locked.withLock { locked -> Bool in
                    guard !locked.finished, !Task.isCancelled else { return true }
                    locked.releaseWaiters[id] = done
                    return false
                }
                if now { done.resume() }
            }
        } onCancel: {
            locked.withLock { $0.releaseWaiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Capacity was released after a shed: the event system reads the queues again (`freed`), and
    /// the intake's waiters try their deliveries again.
    private func released() {
        freedContinuation.yield()
        let waiters = locked.withLock { locked in
            defer { locked.releaseWaiters = [:] }
            return Array(locked.releaseWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }
}
