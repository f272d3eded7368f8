import Synchronization
import TaskerMessaging
import TaskerTestSupport
import Testing

/// `CatchUpSchedule`, the delayed catch-up reads of the worker's and the orchestration's PGMQ
/// intakes, without a database: requests for the same second share one timer and one read, so a
/// flood of requests costs one read a second; every request is answered.
@Suite("Catch-up schedule")
struct CatchUpScheduleTests {
    @Test func aFloodOfRequestsForTheSameSecondIsOneRead() async throws {
        let reads = Atomic<Int>(0)
        let schedule = CatchUpSchedule { reads.add(1, ordering: .relaxed) }
        for _ in 0..<10_000 { schedule.schedule(after: .zero) }
        // Every request falls in this second or, at worst, the next one: one timer each.
        #expect(schedule.pendingCount <= 2)
        // A timer forgets its second just before it reads: wait for both.
        try await waitUntil { schedule.pendingCount == 0 && reads.load(ordering: .relaxed) >= 1 }
        #expect((1...2).contains(reads.load(ordering: .relaxed)))
    }

    @Test func requestsForDifferentSecondsAreEachAnswered() async throws {
        let reads = Atomic<Int>(0)
        let schedule = CatchUpSchedule { reads.add(1, ordering: .relaxed) }
        schedule.schedule(after: .zero)
        schedule.schedule(after: .seconds(2))
        #expect(schedule.pendingCount == 2)
        try await waitUntil { reads.load(ordering: .relaxed) == 2 }
        #expect(schedule.pendingCount == 0)
    }

    /// The shared rule of what each catch-up reason waits for (worker and orchestration route by it).
    @Test func catchUpReasonsWaitAsTheRuleSays() {
        #expect(NotificationIntake.CatchUpReason.connected.delay == nil)
        #expect(NotificationIntake.CatchUpReason.dropped.delay == nil)
        #expect(NotificationIntake.CatchUpReason.truncatedBatch.delay == .zero)
        #expect(NotificationIntake.CatchUpReason.unreadable.delay == .seconds(1))
    }
}
