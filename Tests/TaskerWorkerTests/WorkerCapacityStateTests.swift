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
            let answer1 = state.acquirePermit(waiter: id)
            #expect(answer1 == .granted)
        }
    }

    // MARK: Permits

    @Test func permitsAreGrantedUpToTheLimitThenCallersQueueInOrder() {
        var state = State(permits: 2, shedding: .disabled)
        for _ in 0..<5 { state.claimDispatched() }
        let answer2 = state.acquirePermit(waiter: 0)
        #expect(answer2 == .granted)
        let answer3 = state.acquirePermit(waiter: 1)
        #expect(answer3 == .granted)
        let answer4 = state.acquirePermit(waiter: 2)
        #expect(answer4 == .queued)
        let answer5 = state.acquirePermit(waiter: 3)
        #expect(answer5 == .queued)
        let answer6 = state.acquirePermit(waiter: 4)
        #expect(answer6 == .queued)
        #expect(state.permits.inUse == 2)
        #expect(state.permits.waiters == [2, 3, 4])
        // The queued steps are still in the backlog; the running ones left it.
        #expect(state.dispatchBacklog == 3)
        Self.checkInvariants(state)
    }

    @Test func aReleaseWithAWaiterHandsThePermitOverFirstComeFirstServed() {
        var state = State(permits: 1, shedding: .disabled)
        for _ in 0..<3 { state.claimDispatched() }
        let answer7 = state.acquirePermit(waiter: 0)
        #expect(answer7 == .granted)
        let answer8 = state.acquirePermit(waiter: 1)
        #expect(answer8 == .queued)
        let answer9 = state.acquirePermit(waiter: 2)
        #expect(answer9 == .queued)
        let answer10 = state.releasePermit()
        #expect(answer10.handedTo == 1)
        #expect(state.permits.inUse == 1)  // handed over, never freed in between
        #expect(state.dispatchBacklog == 1)  // waiter 1's step runs now
        Self.checkInvariants(state)
        let answer11 = state.releasePermit()
        #expect(answer11.handedTo == 2)
        #expect(state.dispatchBacklog == 0)
        let answer12 = state.releasePermit()
        #expect(answer12.handedTo == nil)
        #expect(state.permits.inUse == 0)
        Self.checkInvariants(state)
        // A free permit is not taken past a waiter: nobody waits now, so the next caller gets it.
        state.claimDispatched()
        let answer13 = state.acquirePermit(waiter: 3)
        #expect(answer13 == .granted)
    }

    @Test func aCancelledWaiterHoldsNothingAndLeavesTheBacklog() {
        var state = State(permits: 1, shedding: .disabled)
        for _ in 0..<3 { state.claimDispatched() }
        let answer14 = state.acquirePermit(waiter: 0)
        #expect(answer14 == .granted)
        let answer15 = state.acquirePermit(waiter: 1)
        #expect(answer15 == .queued)
        let answer16 = state.acquirePermit(waiter: 2)
        #expect(answer16 == .queued)
        let answer17 = state.cancelPermitWaiter(1)
        #expect(answer17)
        #expect(state.permits.waiters == [2])
        #expect(state.dispatchBacklog == 1)
        // The permit goes to the next waiter, not to the cancelled one.
        let answer18 = state.releasePermit()
        #expect(answer18.handedTo == 2)
        // Cancelling a waiter that already got its permit changes nothing: it releases it itself.
        let answer19 = state.cancelPermitWaiter(2)
        #expect(!answer19)
        #expect(state.permits.inUse == 1)
        let answer20 = state.releasePermit()
        #expect(answer20.handedTo == nil)
        #expect(state.permits.inUse == 0)
        // Cancelled before it waited: no permit, and its step left the backlog.
        state.claimDispatched()
        let answer21 = state.acquirePermit(waiter: 3, isCancelled: true)
        #expect(answer21 == .cancelled)
        #expect(state.permits.inUse == 0)
        #expect(state.dispatchBacklog == 0)
        Self.checkInvariants(state)
    }

    @Test func countsNeverGoNegative() {
        var state = State(permits: 2, shedding: Self.shedding)
        let answer22 = state.releasePermit()
        #expect(answer22 == .init(handedTo: nil, reRead: false))
        let answer23 = state.resultSettled()
        #expect(!answer23)
        let answer24 = state.acquirePermit(waiter: 0)
        #expect(answer24 == .granted)  // a permit for a step never counted in the backlog
        let answer25 = state.cancelPermitWaiter(7)
        #expect(!answer25)
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
        #expect(state.remainingClaims == 9)  // 8 claimed = 80 % < 85 %; the 9th reaches it
        Self.admit(&state, 4)
        #expect(state.remainingClaims == 5)
        Self.admit(&state, 5)
        #expect(state.remainingClaims == 0)
        #expect(State(permits: 10, shedding: .disabled).remainingClaims == nil)
        // The reader's capacity and the claim-time check agree at the boundary, for several thresholds.
        for threshold in [50.0, 80, 85, 100] {
            var check = State(
                permits: 10,
                shedding: LoadShedding(
                    enabled: true, capacityThresholdPercent: threshold,
                    warningThresholdPercent: 200))
            let remaining = check.remainingClaims ?? -1
            #expect(remaining == Int((threshold / 10).rounded(.up)), "threshold \(threshold)")
            Self.admit(&check, remaining)
            let answer26 = check.admitClaim(step: UUID(), message: 99)
            #expect(answer26 == .shed, "threshold \(threshold)")
        }
    }

    @Test func runningHandlersAndTheBacklogCountAgainstTheThreshold() {
        var state = State(permits: 10, shedding: Self.shedding)
        Self.run(&state, 6)
        state.claimDispatched()  // waiting for a permit
        #expect(state.usagePercent == 70)
        #expect(!state.isShedding)
        #expect(state.remainingClaims == 2)
        // At the warning threshold a claim is admitted with its usage, to be logged.
        let answer27 = state.admitClaim(step: UUID(), message: 1)
        #expect(answer27 == .admitted(warningUsage: 70))
        state.claimDispatched()
        Self.run(&state, 1, firstID: 6)
        #expect(state.usagePercent == 90)
        #expect(state.isShedding)
        let answer28 = state.admitNotification()
        #expect(answer28 == false)
        // Disabled: everything is admitted, with no warning.
        var off = State(permits: 1, shedding: .disabled)
        Self.run(&off, 1)
        let answer29 = off.admitClaim(step: UUID(), message: 1)
        #expect(answer29 == .admitted(warningUsage: nil))
        let answer30 = off.admitNotification()
        #expect(answer30)
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
        let answer31 = state.admitClaim(step: UUID(), message: 9)
        #expect(answer31 == .shed)
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
        let answer32 = state.admitClaim(step: step, message: 1)
        #expect(answer32 == .admitted(warningUsage: nil))
        let answer33 = state.admitClaim(step: step, message: 1)
        #expect(answer33 == .duplicate)  // listener and poller
        let answer34 = state.admitClaim(step: step, message: 2)
        #expect(answer34 == .stepBusy)  // a duplicate send
        #expect(state.claimsInFlight == [step: 1])
        state.claimEnded(step: step)
        let answer35 = state.admitClaim(step: step, message: 2)
        #expect(answer35 == .admitted(warningUsage: nil))
    }

    // MARK: Shed → re-read

    @Test func aReleaseAfterAShedYieldsExactlyOneReRead() {
        var state = State(
            permits: 1,
            shedding: LoadShedding(
                enabled: true, capacityThresholdPercent: 80,
                warningThresholdPercent: 70))
        Self.run(&state, 1)
        let answer36 = state.releasePermit()
        #expect(answer36.reRead == false)  // nothing was shed: no re-read
        Self.run(&state, 1, firstID: 1)
        let answer37 = state.admitNotification()
        #expect(!answer37)  // full: shed, recorded
        let answer38 = state.admitClaim(step: UUID(), message: 5)
        #expect(answer38 == .shed)
        let answer39 = state.releasePermit()
        #expect(answer39.reRead)  // → one re-read for both
        let answer40 = state.releasePermit()
        #expect(answer40.reRead == false)  // nothing shed since: nothing more
        // A stored result releases capacity too.
        Self.run(&state, 1, firstID: 2)
        let answer41 = state.admitNotification()
        #expect(!answer41)
        let answer42 = state.resultSettled()
        #expect(answer42)
        let answer43 = state.resultSettled()
        #expect(!answer43)
        // The poller's "no read capacity" is a shed as well.
        state.recordShed()
        let answer44 = state.releasePermit()
        #expect(answer44.reRead)
    }

    @Test func aShedAndAReleaseInEitherOrderLoseNoReRead() {
        let shedding = LoadShedding(enabled: true, capacityThresholdPercent: 100, warningThresholdPercent: 100)
        // Shed first: the release that follows answers a re-read.
        var shedFirst = State(permits: 1, shedding: shedding)
        Self.run(&shedFirst, 1)
        let answer45 = shedFirst.admitNotification()
        #expect(!answer45)
        let answer46 = shedFirst.releasePermit()
        #expect(answer46.reRead)
        // Release first: the admission sees the room and delivers (nothing to re-read).
        var releaseFirst = State(permits: 1, shedding: shedding)
        Self.run(&releaseFirst, 1)
        let answer47 = releaseFirst.releasePermit()
        #expect(answer47.reRead == false)
        let answer48 = releaseFirst.admitNotification()
        #expect(answer48)
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
        #expect(capacity.handlerPermitsInUse == 0)  // not handed to the cancelled waiter
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
        let capacity = WorkerCapacity(
            permits: 1,
            shedding: LoadShedding(
                enabled: true, capacityThresholdPercent: 80,
                warningThresholdPercent: 70))
        capacity.claimDispatched()
        try await capacity.acquireHandlerPermit()
        #expect(!capacity.admitNotification())
        #expect(!capacity.admitNotification())
        capacity.releaseHandlerPermit()  // → one re-read
        capacity.resultSettled()  // nothing shed since: nothing more
        capacity.finish()
        var count = 0
        for await _ in capacity.freed { count += 1 }
        #expect(count == 1)
    }
}
