import Foundation
import Testing

@testable import TaskerWorker

/// The worker's view of its liveness lease (`WorkerLeaseState`), without I/O: when it may claim,
/// when it renews, and what readiness says.
@Suite("Liveness lease state")
struct WorkerLeaseStateTests {
    let start = ContinuousClock.now

    @Test func noClaimsBeforeTheFirstRenewal() {
        let lease = WorkerLeaseState(duration: .seconds(4))
        #expect(!lease.claimsAllowed(at: start))
        #expect(lease.problem(at: start) == "liveness lease not taken yet")
        #expect(lease.delayBeforeRenewal(at: start) == .milliseconds(100))
        #expect(lease.renewalBudget(at: start) == .seconds(6))
    }

    /// A lease renewed at t lasts until t + duration by the worker's clock; once a renewal failed,
    /// claiming stops a quarter of it earlier; renewals are due every quarter. A renewal that is only
    /// late (the process was not scheduled) stops nothing.
    @Test func claimsStopAQuarterBeforeTheLeaseCouldExpireOnceARenewalFailed() {
        var lease = WorkerLeaseState(duration: .seconds(4))
        lease.renewed(sentAt: start)
        #expect(lease.claimsAllowed(at: start + .seconds(3)), "late, not failed")
        #expect(lease.delayBeforeRenewal(at: start + .milliseconds(200)) == .milliseconds(800))
        lease.renewalFailed("timeout")
        #expect(lease.claimsAllowed(at: start + .seconds(3)), "one failure alone stops nothing")
        lease.renewalFailed("timeout")
        #expect(lease.claimsAllowed(at: start + .milliseconds(2999)))
        #expect(!lease.claimsAllowed(at: start + .seconds(3)))
        #expect(lease.problem(at: start + .seconds(1)) == nil)
        #expect(lease.problem(at: start + .seconds(3))?.hasPrefix("liveness lease about to lapse or lapsed") == true)
    }

    /// Failed renewals back off from a tenth of the interval, doubling up to the interval, never
    /// sleeping past the claim deadline; a renewal started near it may only take until it.
    @Test func failuresBackOffAndNeverSleepPastTheClaimDeadline() {
        var lease = WorkerLeaseState(duration: .seconds(4))
        lease.renewed(sentAt: start)
        let at = start + .seconds(1)
        lease.renewalFailed("connection refused")
        #expect(lease.delayBeforeRenewal(at: at) == .milliseconds(100))
        lease.renewalFailed("connection refused")
        #expect(lease.delayBeforeRenewal(at: at) == .milliseconds(200))
        for _ in 0..<10 { lease.renewalFailed("connection refused") }
        #expect(lease.delayBeforeRenewal(at: at) == .milliseconds(800))
        #expect(lease.delayBeforeRenewal(at: start + .milliseconds(2900)) == .milliseconds(100))
        // Up to the claim deadline, however long that is (a slow database still renews); past it,
        // a whole lease.
        #expect(lease.renewalBudget(at: start + .seconds(1)) == .seconds(2))
        #expect(lease.renewalBudget(at: start + .milliseconds(2500)) == .milliseconds(500))
        #expect(lease.renewalBudget(at: start + .seconds(3)) == .seconds(6))
        #expect(lease.renewalBudget(at: start + .milliseconds(2990)) == .milliseconds(100))
        #expect(lease.claimsAllowed(at: start + .milliseconds(2900)))
        let problem = lease.problem(at: start + .seconds(3))
        #expect(problem == "liveness lease about to lapse or lapsed (not renewed for 12 attempts: connection refused)")
    }

    /// A lapsed lease renewed again is held again; a late answer of an older renewal never
    /// shortens it; release ends it.
    @Test func aLapsedLeaseIsTakenBackAndNeverShortened() {
        var lease = WorkerLeaseState(duration: .seconds(4))
        lease.renewed(sentAt: start)
        lease.renewalFailed("timeout")
        lease.renewalFailed("timeout")
        #expect(!lease.claimsAllowed(at: start + .seconds(10)))
        lease.renewed(sentAt: start + .seconds(10))
        #expect(lease.claimsAllowed(at: start + .seconds(10)))
        #expect(lease.failures == 0 && lease.lastFailure == nil)
        lease.renewed(sentAt: start + .seconds(9))
        #expect(lease.validUntil == start + .seconds(14))
        #expect(lease.delayBeforeRenewal(at: start + .seconds(10)) == .seconds(1))
        lease.released()
        #expect(!lease.claimsAllowed(at: start + .seconds(10)))
    }

    /// A claim the database refused (the lease lapses by its clock) stops claiming at once,
    /// whatever the worker's own clock says, until a renewal sent after the refusal is stored; one
    /// sent before it (perhaps the one the database had not stored yet) does not resume claiming.
    @Test func aClaimRefusedByTheDatabaseStopsClaimingUntilALaterRenewal() {
        var lease = WorkerLeaseState(duration: .seconds(4))
        lease.renewed(sentAt: start)
        lease.refusedByDatabase(at: start + .seconds(1))
        #expect(!lease.claimsAllowed(at: start + .seconds(1)))
        #expect(lease.problem(at: start + .seconds(1))?.hasPrefix("the database refused a claim") == true)
        lease.renewed(sentAt: start + .milliseconds(900))
        #expect(!lease.claimsAllowed(at: start + .seconds(1)), "sent before the refusal")
        lease.renewed(sentAt: start + .milliseconds(1100))
        #expect(lease.claimsAllowed(at: start + .milliseconds(1100)))
        #expect(lease.problem(at: start + .milliseconds(1100)) == nil)
    }
}
