import Testing

@testable import TaskerPostgres
@testable import TaskerWorker

/// `RetrySchedule`, the schedule of the step path's "until it is done" loops (a lost answer is looked
/// up, a write retried), without I/O. (Lost answers on the real PostgreSQL: `LostAnswerTests` in
/// TaskerSystemTests.)
@Suite("Lost answers: retry schedule", .timeLimit(.minutes(2)))
struct RetryScheduleTests {
    /// "Until it is done" loops keep going through any number of failures; they stop once the pool
    /// is shut down, or after 20 more failures once the task is cancelled.
    @Test func theRetryScheduleGivesUpOnlyOnShutdownOrCancellation() async {
        let backoff = ReconnectBackoff(initial: .milliseconds(1), maximum: .milliseconds(1), jitter: 0)
        var schedule = RetrySchedule(backoff: backoff)
        for _ in 0..<100 { #expect(schedule.failed(PostgresError(.connectionClosed, "broken")) == .milliseconds(1)) }
        #expect(schedule.failed(PostgresError(.shutdown, "the pool is shut down")) == nil)
        let cancelled = Task {
            while !Task.isCancelled { await Task.yield() }
            var schedule = RetrySchedule(backoff: backoff)
            var more = 0
            while schedule.failed(PostgresError(.connectionClosed, "broken")) != nil { more += 1 }
            return more
        }
        cancelled.cancel()
        #expect(await cancelled.value == 19)
    }
}
