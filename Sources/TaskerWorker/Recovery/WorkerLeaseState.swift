import Foundation

/// How `worker.crash_recovery.grace_period_ms` (how long a worker must be absent before its steps are
/// recovered) is split: two thirds are the lease's duration (a dead worker's lease expires at most
/// that long after its death), the last third the wait of the scanners that see it expired
/// (`AbsenceTracker`), which gives live workers time to renew after PostgreSQL was unreachable (every
/// lease expires by the database's clock during an outage). Renewals come every quarter of the lease:
/// with the default 4 s, a lease of 2.67 s renewed every 667 ms, claiming stopped 2 s after the last
/// renewal that answered, recovery at most 4 s + one scan interval after a kill.
struct LivenessTiming: Sendable, Equatable {
    let grace: Duration
    var leaseDuration: Duration { grace * 2 / 3 }
    var absenceWait: Duration { grace - leaseDuration }
}

/// The worker's liveness lease as the worker sees it: pure, tested without I/O; driven by
/// `WorkerLeaseService`, which renews the row in `tasker.worker_leases`.
///
/// The database computes each renewed lease's expiry from its own clock (`clock_timestamp() +
/// duration`), at some moment after the worker sent the renewal. So, by the worker's monotonic
/// clock, the lease lasts at least until `sentAt + duration` of the last renewal that answered
/// (clock rates assumed equal; no clock values are compared across machines). The worker claims
/// only until `margin` before that (`claimsAllowed`), so that a claim in flight commits while the
/// lease still holds, and renews every `interval`.
///
/// Invariants: `validUntil` only grows (a late answer of an older renewal never shortens it);
/// `claimsAllowed(at:)` is false before the first renewal and from `validUntil - margin` on.
struct WorkerLeaseState: Sendable, Equatable {
    /// How long a renewed lease lasts (`LivenessTiming.leaseDuration`).
    let duration: Duration
    /// How often the lease is renewed, and how long before `validUntil` claiming stops: a quarter of
    /// `duration`, so three renewals in a row may fail before the worker stops claiming.
    let interval: Duration
    /// The lease lasts at least until this instant (nil: never renewed, or released).
    private(set) var validUntil: ContinuousClock.Instant?
    /// When the last renewal that answered was sent (the next is due `interval` later).
    private(set) var lastRenewalSent: ContinuousClock.Instant?
    /// Renewals that failed in a row since the last that answered.
    private(set) var failures = 0
    /// Why the last renewal failed (nil after a success).
    private(set) var lastFailure: String?
    /// When the database last refused a claim because the lease was lapsing by its clock
    /// (`ClaimOutcome.leaseLapsed`); cleared by a renewal sent after it.
    private(set) var refusedAt: ContinuousClock.Instant?
    /// Whether the last renewal that answered elected this worker the fleet's crash-recovery
    /// scanner (`WorkerLeaseRepository.renewLease`); false once released.
    private(set) var scanner = false

    init(duration: Duration) {
        self.duration = duration
        self.interval = duration / 4
    }

    var margin: Duration { interval }

    /// The instant from which the worker must not claim (nil: it may not claim at all).
    var claimDeadline: ContinuousClock.Instant? { validUntil.map { $0 - margin } }

    /// Whether the worker may claim at `now`: once the lease was taken, as long as fewer than two
    /// renewals in a row have failed since the last one that answered; after two failures (errors,
    /// or renewals that did not answer within their budget), only until the claim deadline. A renewal that is merely
    /// late because this process was not scheduled (a loaded host stalls every task for seconds)
    /// is not a failure: a stalled worker claims nothing meanwhile anyway, and the steps recovered
    /// from it refuse its late results (the completion writes only over its own claim). Stopping on
    /// the clock alone stopped every worker of a loaded CI run, again and again.
    ///
    /// This leniency is safe because the database has the last word: the claim statement itself
    /// refuses to claim under a lease that lapses within `margin` by the database's clock, and then
    /// (`refusedByDatabase`) no claim is allowed until a renewal sent after that refusal answered.
    func claimsAllowed(at now: ContinuousClock.Instant) -> Bool {
        guard let deadline = claimDeadline, refusedAt == nil else { return false }
        return failures < 2 || now < deadline
    }

    /// The database refused a claim at `now`: its lease row expires within `margin` (or is gone).
    mutating func refusedByDatabase(at now: ContinuousClock.Instant) {
        if refusedAt.map({ now > $0 }) ?? true { refusedAt = now }
    }

    /// A renewal sent at `sentAt` was stored.
    mutating func renewed(sentAt: ContinuousClock.Instant, scanner: Bool = false) {
        // The answer of the latest renewal sent decides (a late answer of an older one does not).
        if lastRenewalSent.map({ sentAt >= $0 }) ?? true { self.scanner = scanner }
        let until = sentAt + duration
        if validUntil.map({ until > $0 }) ?? true { validUntil = until }
        if lastRenewalSent.map({ sentAt > $0 }) ?? true { lastRenewalSent = sentAt }
        // A renewal sent before the refusal may have been the one the database had not stored yet.
        if let refused = refusedAt, sentAt > refused { refusedAt = nil }
        failures = 0
        lastFailure = nil
    }

    /// A renewal did not answer or failed, for `reason`.
    mutating func renewalFailed(_ reason: String) {
        failures += 1
        lastFailure = reason
    }

    /// The row was deleted (shutdown): no lease any more.
    mutating func released() {
        scanner = false
        validUntil = nil
        lastRenewalSent = nil
    }

    /// How long the renewal started at `now` may take: until the claim deadline (so that a renewal
    /// that hangs ends when claiming must stop, and the worker says so on time), at least a tenth of
    /// `interval`; with no claim deadline ahead (not taken yet, or lapsed), a whole `duration`. Never
    /// capped at `interval`: a slow database (a loaded host, a busy pool) still renews, whereas a
    /// renewal abandoned after `interval` and sent again would never get through and only add load.
    func renewalBudget(at now: ContinuousClock.Instant) -> Duration {
        let floor = interval / 10
        guard let deadline = claimDeadline, deadline > now else { return duration * 3 / 2 }
        return max(floor, now.duration(to: deadline))
    }

    /// How long to wait at `now` before the next renewal: `interval` after the last renewal that
    /// answered; after failures, a backoff from a tenth of `interval`, doubling, at most `interval`;
    /// never past the claim deadline, so that claiming stops on time.
    func delayBeforeRenewal(at now: ContinuousClock.Instant) -> Duration {
        var wake: ContinuousClock.Instant
        if failures == 0, let sent = lastRenewalSent {
            wake = sent + interval
        } else {
            let shift = min(failures, 4)
            wake = now + min(interval, interval / 10 * (1 << max(0, shift - 1)))
        }
        if let deadline = claimDeadline, deadline > now, deadline < wake { wake = deadline }
        return max(.zero, now.duration(to: wake))
    }

    /// Why the worker does not claim at `now` (nil when it does): what readiness shows.
    func problem(at now: ContinuousClock.Instant) -> String? {
        guard !claimsAllowed(at: now) else { return nil }
        let cause = lastFailure.map { ": \($0)" } ?? ""
        if validUntil == nil, failures == 0 { return "liveness lease not taken yet" }
        if validUntil == nil { return "liveness lease not taken (\(failures) attempts failed\(cause))" }
        if refusedAt != nil {
            return "the database refused a claim: the liveness lease expires within a quarter of its duration by the "
                + "database's clock (renewals not stored in time)"
        }
        return "liveness lease about to lapse or lapsed (not renewed for \(failures) attempts\(cause))"
    }
}
