/// The failures in a row of one operation retried until it succeeds, and the wait before the next
/// attempt: the one retry count of every retry loop (reconnecting the database listener, publishing
/// to the broker until confirmed, the start-up re-publish, the step path's writes and lookups through
/// `RetrySchedule`, a broker consumer's requeues, the orchestration's queue declarations and
/// re-publish). Each loop keeps its own stop condition and log line; the count and the delays are
/// this. (`TaskerAMQP`, which depends on no other module of ours, counts its reconnects itself and
/// takes the delay as a closure: `BrokerConnection` gives it `ReconnectBackoff.delay(forAttempt:)`.)
public struct RetryAttempts: Sendable {
    /// The delays: attempt n (0-based) after n + 1 failures waits `backoff.delay(forAttempt: n)`.
    public let backoff: ReconnectBackoff
    /// Failures since the start or the last success.
    public private(set) var failures = 0

    public init(backoff: ReconnectBackoff) {
        self.backoff = backoff
    }

    /// Records a failure; returns the wait before the next attempt (longer with each failure in a row).
    public mutating func failed() -> Duration {
        failures += 1
        return backoff.delay(forAttempt: failures - 1)
    }

    /// Records a success: the next failure waits the shortest delay again.
    public mutating func succeeded() {
        failures = 0
    }
}
