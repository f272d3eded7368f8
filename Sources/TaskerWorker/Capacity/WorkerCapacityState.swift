import Foundation

/// The worker's capacity as one pure state machine: no I/O, no clock, no awaits. `WorkerCapacity`
/// holds it under one `Mutex`, performs what its answers say (resume a waiter, signal a re-read,
/// log a warning) outside the lock, and so every count below changes in one place only.
///
/// A claimed step moves through: claim in flight (`claimsInFlight`, keyed by step, for dedup) →
/// claimed, waiting for a handler permit (`dispatchBacklog`) → running (`permits.inUse`) → result
/// being stored (`unstored` counts from the claim until the result is settled).
///
/// Invariants, after every transition:
/// - `0 <= permits.inUse <= permits.limit`; a waiter queues only while every permit is in use, and a
///   released permit goes to the first waiter (FIFO); a cancelled waiter holds no permit.
/// - `dispatchBacklog >= 0` and `unstored >= 0`: a decrement without a matching increment changes
///   nothing (counts are never negative).
/// - A step is in `claimsInFlight` at most once (one message claims it at a time).
/// - No shed is lost: admission records a shed in the same transition that found no room, and every
///   release of capacity (a permit, a stored result) in a later transition answers `reRead` once
///   for all sheds before it. A release that came first was seen by the admission, which then had
///   room and shed nothing.
struct WorkerCapacityState: Sendable {
    /// Whether a claim may go ahead (`admitClaim`).
    enum ClaimAdmission: Sendable, Equatable {
        /// Registered as in flight; `warningUsage`: the usage in percent when at or above the
        /// warning threshold (to be logged), else nil.
        case admitted(warningUsage: Double?)
        /// The same message is being claimed already (listener and poller): handled by the first.
        case duplicate
        /// Another message for a step being claimed (a duplicate send): to be read again later.
        case stepBusy
        /// At the shedding threshold: left queued (a re-read follows the next release).
        case shed
    }

    /// What `releasePermit` decided.
    struct PermitRelease: Sendable, Equatable {
        /// The waiter that holds the released permit now (its step left the backlog), if any.
        var handedTo: Int?
        /// Load shedding refused work since the last release: read the queues again now.
        var reRead: Bool
    }

    /// Thresholds (`handler_dispatch.load_shedding`) and the unstored bound.
    let shedding: LoadShedding
    /// The handler permits (`max_concurrent_handlers`).
    private(set) var permits: PermitQueue
    /// Claimed steps not holding a permit yet (in the dispatch channel or waiting for one).
    private(set) var dispatchBacklog = 0
    /// Claimed steps whose result is not settled yet.
    private(set) var unstored = 0
    /// Steps being claimed now, with the message id that carries each.
    private(set) var claimsInFlight: [UUID: Int64] = [:]
    /// Load shedding refused work since capacity was last released.
    private(set) var shedSinceRelease = false
    /// Whether the worker holds its liveness lease (`Recovery/WorkerLeaseService`). While it
    /// does not, nothing is claimed: its steps could be recovered by other workers while it runs them.
    private(set) var holdsLiveness: Bool

    /// `requiresLiveness`: claiming waits for `setLiveness(true)` (a worker's pipeline); false for
    /// callers that run no liveness service.
    init(permits: Int, shedding: LoadShedding, requiresLiveness: Bool = false) {
        self.permits = PermitQueue(limit: permits)
        self.shedding = shedding
        self.holdsLiveness = !requiresLiveness
    }

    // MARK: Liveness

    /// The liveness lease is held (true) or not (false). True when it is held again after
    /// work was left unread meanwhile: read the queues again now.
    mutating func setLiveness(_ held: Bool) -> Bool {
        let regained = held && !holdsLiveness
        holdsLiveness = held
        if regained { shedSinceRelease = false }
        return regained
    }

    // MARK: Load shedding

    /// Claims that still fit below the capacity threshold and the unstored bound (nil when shedding
    /// is disabled). Claims in flight count: they will hold permits soon.
    var remainingClaims: Int? {
        guard holdsLiveness else { return 0 }
        guard shedding.enabled else { return nil }
        let inFlight = claimsInFlight.count
        let allowed = Int((shedding.capacityThresholdPercent * Double(permits.limit) / 100).rounded(.up))
        let belowThreshold = allowed - permits.inUse - dispatchBacklog - inFlight
        guard let unstoredLimit = shedding.unstoredLimit else { return max(0, belowThreshold) }
        return max(0, min(belowThreshold, unstoredLimit - unstored - inFlight))
    }

    /// Claimed work as a percentage of the handler permits: running handlers plus claimed steps
    /// still queued for a permit, so a burst of claims is shed before it overfills the dispatch buffer.
    var usagePercent: Double {
        Double(permits.inUse + dispatchBacklog) * 100 / Double(permits.limit)
    }

    /// At or above the capacity threshold.
    var isShedding: Bool { shedding.enabled && usagePercent >= shedding.capacityThresholdPercent }

    /// Whether a notified message should be delivered now; when not, the shed is recorded (a later
    /// release answers `reRead`).
    mutating func admitNotification() -> Bool {
        guard remainingClaims == 0 else { return true }
        shedSinceRelease = true
        return false
    }

    /// Work was refused (or not read) for lack of capacity: the next release answers `reRead`.
    mutating func recordShed() { shedSinceRelease = true }

    /// Registers a claim of `step` carried by message `message`, or says why not.
    mutating func admitClaim(step: UUID, message: Int64) -> ClaimAdmission {
        if let current = claimsInFlight[step] { return current == message ? .duplicate : .stepBusy }
        guard holdsLiveness else {
            shedSinceRelease = true
            return .shed
        }
        var warningUsage: Double?
        if shedding.enabled {
            if remainingClaims == 0 {
                shedSinceRelease = true
                return .shed
            }
            let usage = usagePercent + Double(claimsInFlight.count) * 100 / Double(permits.limit)
            if usage >= shedding.warningThresholdPercent { warningUsage = usage }
        }
        claimsInFlight[step] = message
        return .admitted(warningUsage: warningUsage)
    }

    /// The claim of `step` is over (dispatched, or not claimed).
    mutating func claimEnded(step: UUID) { claimsInFlight[step] = nil }

    /// A claimed step goes into the dispatch channel: it waits for a permit and its result is unstored.
    mutating func claimDispatched() {
        dispatchBacklog += 1
        unstored += 1
    }

    // MARK: Handler permits

    /// A step of the backlog asks for a permit as `waiter`. Granted: the step left the backlog and
    /// runs. Cancelled (before it waited): it left the backlog without a permit.
    mutating func acquirePermit(waiter: Int, isCancelled: Bool = false) -> PermitQueue.Acquisition {
        let acquisition = permits.acquire(waiter: waiter, isCancelled: isCancelled)
        if acquisition != .queued { leaveBacklog() }
        return acquisition
    }

    /// A waiting step was cancelled. True when it was still waiting: it left the backlog and holds
    /// nothing. False: it already got its permit (and must release it).
    mutating func cancelPermitWaiter(_ waiter: Int) -> Bool {
        guard permits.cancel(waiter: waiter) else { return false }
        leaveBacklog()
        return true
    }

    /// A handler gave its permit back: handed to the first waiter (whose step leaves the backlog), or freed.
    mutating func releasePermit() -> PermitRelease {
        let handedTo = permits.release()
        if handedTo != nil { leaveBacklog() }
        return PermitRelease(handedTo: handedTo, reRead: takeShed())
    }

    // MARK: Results

    /// A claimed step's result is settled (stored, refused, or given up). True: read the queues again.
    mutating func resultSettled() -> Bool {
        unstored = max(0, unstored - 1)
        return takeShed()
    }

    private mutating func leaveBacklog() { dispatchBacklog = max(0, dispatchBacklog - 1) }

    private mutating func takeShed() -> Bool {
        defer { shedSinceRelease = false }
        return shedSinceRelease
    }
}
