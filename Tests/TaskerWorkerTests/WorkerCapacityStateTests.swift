import Foundation
import Testing
@testable import TaskerWorker

/// The worker's capacity (`WorkerCapacityState`) without I/O: every interleaving of the executor,
/// the dispatch service, the completion processor and the event system is a sequence of these
/// synchronous transitions, so the invariants are checked on them directly.
@Suite("Worker capacity state machine")
struct WorkerCapacityStateTests {
    typealias State = WorkerCapacityState

    static let shedding = LoadShedding(enabled: true, capacityThresholdPercent: 85, warningThresholdPercent: 70)

    /// The invariants written at the top of `WorkerCapacityState`.
    static func checkInvariants(_ state: State, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(state.permits.inUse >= 0 && state.permits.inUse <= state.permits.limit, sourceLocation: sourceLocation)
        #expect(state.permits.waiters.isEmpty || state.permits.inUse == state.permits.limit, sourceLocation: sourceLocation)
        #expect(state.dispatchBacklog >= 0, sourceLocation: sourceLocation)
        #expect(state.unstored >= 0, sourceLocation: sourceLocation)
    }

    /// Registers `count` claims of new steps; every one must be admitted.
    @discardableResult
    static func admit(_ state: inout State, _ count: Int) -> [UUID] {
        (0..<count).map { index in
            let step = UUID()
            guard case .admitted = state.admitClaim(step: step, message: Int64(index)) else {
                Issue.record("claim \(index) was not admitted")
                return step
            }
            return step
        }
    }

    /// `count` steps claimed, dispatched and running (each holds a permit; waiter ids from `firstID`).
    static func run(_ state: inout State, _ count: Int, firstID: Int = 0) {
        for id in firstID..<(firstID + count) {
            state.claimDispatched()
            #expect(state.acquirePermit(waiter: id) == .granted)
        }
    }

    // MARK: Permits

    @Test func permitsAreGrantedUpToTheLimitThenCallersQueueInOrder() {
        var state = State(permits: 2, shedding: .disabled)
        for _ in 0..<5 { state.claimDispatched() }
        #expect(state.acquirePermit(waiter: 0) == .granted)
        #expect(state.acquirePermit(waiter: 1) == .granted)
        #expect(state.acquirePermit(waiter: 2) == .queued)
        #expect(state.acquirePermit(waiter: 3) == .queued)
        #expect(state.acquirePermit(waiter: 4) == .queued)
        #expect(state.permits.inUse == 2)
        #expect(state.permits.waiters == [2, 3, 4])
        // The queued steps are still in the backlog; the running ones left it.
        #expect(state.dispatchBacklog == 3)
        Self.checkInvariants(state)
    }

    @Test func aReleaseWithAWaiterHandsThePermitOverFirstComeFirstServed() {
        var state = State(permits: 1, shedding: .disabled)
        for _ in 0..<3 { state.claimDispatched() }
        #expect(state.acquirePermit(waiter: 0) == .granted)
        #expect(state.acquirePermit(waiter: 1) == .queued)
        #expect(state.acquirePermit(waiter: 2) == .queued)
        #expect(state.releasePermit().handedTo == 1)
        #expect(state.permits.inUse == 1)       // handed over, never freed in between
        #expect(state.dispatchBacklog == 1)      // waiter 1's step runs now
        Self.checkInvariants(state)
        #expect(state.releasePermit().handedTo == 2)
        #expect(state.dispatchBacklog == 0)
        #expect(state.releasePermit().handedTo == nil)
        #expect(state.permits.inUse == 0)
        Self.checkInvariants(state)
        // A free permit is not taken past a waiter: nobody waits now, so the next caller gets it.
        state.claimDispatched()
        #expect(state.acquirePermit(waiter: 3) == .granted)
    }

    @Test func aCancelledWaiterHoldsNothingAndLeavesTheBacklog() {
        var state = State(permits: 1, shedding: .disabled)
        for _ in 0..<3 { state.claimDispatched() }
        #expect(state.acquirePermit(waiter: 0) == .granted)
        #expect(state.acquirePermit(waiter: 1) == .queued)
        #expect(state.acquirePermit(waiter: 2) == .queued)
        #expect(state.cancelPermitWaiter(1))
        #expect(state.permits.waiters == [2])
        #expect(state.dispatchBacklog == 1)
        // The permit goes to the next waiter, not to the cancelled one.
        #expect(state.releasePermit().handedTo == 2)
        // Cancelling a waiter that already got its permit changes nothing: it releases it itself.
        #expect(!state.cancelPermitWaiter(2))
        #expect(state.permits.inUse == 1)
        #expect(state.releasePermit().handedTo == nil)
        #expect(state.permits.inUse == 0)
        // Cancelled before it waited: no permit, and its step left the backlog.
        state.claimDispatched()
        #expect(state.acquirePermit(waiter: 3, isCancelled: true) == .cancelled)
        #expect(state.permits.inUse == 0)
        #expect(state.dispatchBacklog == 0)
        Self.checkInvariants(state)
    }

    @Test func countsNeverGoNegative() {
        var state = State(permits: 2, shedding: Self.shedding)
        #expect(state.releasePermit() == .init(handedTo: nil, reRead: false))
        #expect(!state.resultSettled())
        #expect(state.acquirePermit(waiter: 0) == .granted)  // a permit for a step never counted in the backlog
        #expect(!state.cancelPermitWaiter(7))
        state.claimEnded(step: UUID())
        #expect(state.permits.inUse == 1)
        #expect(state.dispatchBacklog == 0)
        #expect(state.unstored == 0)
        #expect(state.claimsInFlight.isEmpty)
        Self.checkInvariants(state)
        _ = state.releasePermit()
        _ = state.releasePermit()
        #expect(state.permits.inUse == 0)
        Self.checkInvariants(state)
    }

    // MARK: Thresholds

    @Test func remainingClaimsFollowTheThreshold() {
        var state = State(permits: 10, shedding: Self.shedding)
        #expect(state.remainingClaims == 9)   // 8 claimed = 80 % < 85 %; the 9th reaches it
        Self.admit(&state, 4)
        #expect(state.remainingClaims == 5)
        Self.admit(&state, 5)
        #expect(state.remainingClaims == 0)
        #expect(State(permits: 10, shedding: .disabled).remainingClaims == nil)
        // The reader's capacity and the claim-time check agree at the boundary, for several thresholds.
        for threshold in [50.0, 80, 85, 100] {
            var check = State(permits: 10, shedding: LoadShedding(enabled: true, capacityThresholdPercent: threshold,
                                                                  warningThresholdPercent: 200))
            let remaining = check.remainingClaims ?? -1
            #expect(remaining == Int((threshold / 10).rounded(.up)), "threshold \(threshold)")
            Self.admit(&check, remaining)
            #expect(check.admitClaim(step: UUID(), message: 99) == .shed, "threshold \(threshold)")
        }
    }

    @Test func runningHandlersAndTheBacklogCountAgainstTheThreshold() {
        var state = State(permits: 10, shedding: Self.shedding)
        Self.run(&state, 6)
        state.claimDispatched()                  // waiting for a permit
        #expect(state.usagePercent == 70)
        #expect(!state.isShedding)
        #expect(state.remainingClaims == 2)
        // At the warning threshold a claim is admitted with its usage, to be logged.
        #expect(state.admitClaim(step: UUID(), message: 1) == .admitted(warningUsage: 70))
        state.claimDispatched()
        Self.run(&state, 1, firstID: 6)
        #expect(state.usagePercent == 90)
        #expect(state.isShedding)
        #expect(state.admitNotification() == false)
        // Disabled: everything is admitted, with no warning.
        var off = State(permits: 1, shedding: .disabled)
        Self.run(&off, 1)
        #expect(off.admitClaim(step: UUID(), message: 1) == .admitted(warningUsage: nil))
        #expect(off.admitNotification())
        #expect(!off.isShedding)
    }

    @Test func claimedStepsWithoutAStoredResultAreBounded() {
        var bounded = LoadShedding(enabled: true, capacityThresholdPercent: 85, warningThresholdPercent: 70)
        bounded.unstoredLimit = 5
        var state = State(permits: 10, shedding: bounded)
        // Three handlers ran and gave their permits back; their results are not stored yet.
        Self.run(&state, 3)
        for _ in 0..<3 { _ = state.releasePermit() }
        #expect(state.unstored == 3)
        #expect(state.remainingClaims == 2)
        let first = Self.admit(&state, 1)[0]
        #expect(state.remainingClaims == 1)
        let second = Self.admit(&state, 1)[0]
        #expect(state.admitClaim(step: UUID(), message: 9) == .shed)
        state.claimEnded(step: first)
        state.claimEnded(step: second)
        _ = state.resultSettled()
        #expect(state.remainingClaims == 3)
        Self.checkInvariants(state)
    }

    // MARK: Claims in flight

    @Test func aStepIsClaimedByOneMessageAtATime() {
        var state = State(permits: 4, shedding: Self.shedding)
        let step = UUID()
        #expect(state.admitClaim(step: step, message: 1) == .admitted(warningUsage: nil))
        #expect(state.admitClaim(step: step, message: 1) == .duplicate)  // listener and poller
        #expect(state.admitClaim(step: step, message: 2) == .stepBusy)   // a duplicate send
        #expect(state.claimsInFlight == [step: 1])
        state.claimEnded(step: step)
        #expect(state.admitClaim(step: step, message: 2) == .admitted(warningUsage: nil))
    }

    // MARK: Shed → re-read

    @Test func aReleaseAfterAShedYieldsExactlyOneReRead() {
        var state = State(permits: 1, shedding: LoadShedding(enabled: true, capacityThresholdPercent: 80,
                                                             warningThresholdPercent: 70))
        Self.run(&state, 1)
        #expect(state.releasePermit().reRead == false)  // nothing was shed: no re-read
        Self.run(&state, 1, firstID: 1)
        #expect(!state.admitNotification())              // full: shed, recorded
        #expect(state.admitClaim(step: UUID(), message: 5) == .shed)
        #expect(state.releasePermit().reRead)            // → one re-read for both
        #expect(state.releasePermit().reRead == false)   // nothing shed since: nothing more
        // A stored result releases capacity too.
        Self.run(&state, 1, firstID: 2)
        #expect(!state.admitNotification())
        #expect(state.resultSettled())
        #expect(!state.resultSettled())
        // The poller's "no read capacity" is a shed as well.
        state.recordShed()
        #expect(state.releasePermit().reRead)
    }

    @Test func aShedAndAReleaseInEitherOrderLoseNoReRead() {
        let shedding = LoadShedding(enabled: true, capacityThresholdPercent: 100, warningThresholdPercent: 100)
        // Shed first: the release that follows answers a re-read.
        var shedFirst = State(permits: 1, shedding: shedding)
        Self.run(&shedFirst, 1)
        #expect(!shedFirst.admitNotification())
        #expect(shedFirst.releasePermit().reRead)
        // Release first: the admission sees the room and delivers (nothing to re-read).
        var releaseFirst = State(permits: 1, shedding: shedding)
        Self.run(&releaseFirst, 1)
        #expect(releaseFirst.releasePermit().reRead == false)
        #expect(releaseFirst.admitNotification())
        #expect(!releaseFirst.shedSinceRelease)
    }
}

/// `WorkerCapacity`: the async waiting around the state machine (no database).
@Suite("Worker capacity waiters", .timeLimit(.minutes(1)))
struct WorkerCapacityWaiterTests {
    /// Waits until `count` callers wait for a permit.
    static func waitForWaiters(_ capacity: WorkerCapacity, _ count: Int) async {
        while capacity.permitWaiters < count { await Task.yield() }
    }

    @Test func aReleaseResumesTheFirstWaiter() async throws {
        let capacity = WorkerCapacity(permits: 1)
        for _ in 0..<2 { capacity.claimDispatched() }
        try await capacity.acquireHandlerPermit()
        let waiter = Task { try await capacity.acquireHandlerPermit() }
        await Self.waitForWaiters(capacity, 1)
        capacity.releaseHandlerPermit()
        try await waiter.value
        #expect(capacity.handlerPermitsInUse == 1)
        #expect(capacity.dispatchBacklog == 0)
        capacity.releaseHandlerPermit()
        #expect(capacity.handlerPermitsInUse == 0)
    }

    @Test func aCancelledAcquireThrowsAndLeaksNoPermit() async throws {
        let capacity = WorkerCapacity(permits: 1)
        for _ in 0..<2 { capacity.claimDispatched() }
        try await capacity.acquireHandlerPermit()
        let waiter = Task { try await capacity.acquireHandlerPermit() }
        await Self.waitForWaiters(capacity, 1)
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(capacity.permitWaiters == 0)
        #expect(capacity.dispatchBacklog == 0)
        #expect(capacity.handlerPermitsInUse == 1)
        capacity.releaseHandlerPermit()
        #expect(capacity.handlerPermitsInUse == 0)   // not handed to the cancelled waiter
        // Cancelled before asking: no permit taken.
        capacity.claimDispatched()
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await capacity.acquireHandlerPermit()
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        #expect(capacity.handlerPermitsInUse == 0)
        #expect(capacity.dispatchBacklog == 0)
    }

    @Test func freedYieldsOnceForTheShedsBeforeARelease() async throws {
        let capacity = WorkerCapacity(permits: 1, shedding: LoadShedding(enabled: true, capacityThresholdPercent: 80,
                                                                         warningThresholdPercent: 70))
        capacity.claimDispatched()
        try await capacity.acquireHandlerPermit()
        #expect(!capacity.admitNotification())
        #expect(!capacity.admitNotification())
        capacity.releaseHandlerPermit()   // → one re-read
        capacity.resultSettled()          // nothing shed since: nothing more
        capacity.finish()
        var count = 0
        for await _ in capacity.freed { count += 1 }
        #expect(count == 1)
    }
}
