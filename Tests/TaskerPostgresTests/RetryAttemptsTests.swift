import Testing

@testable import TaskerPostgres

@Suite("Retry attempts")
struct RetryAttemptsTests {
    static let backoff = ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(1), multiplier: 2, jitter: 0)

    @Test func eachFailureInARowWaitsLongerUpToTheMaximum() {
        var attempts = RetryAttempts(backoff: Self.backoff)
        #expect(attempts.failures == 0)
        let delays = (0..<6).map { _ in attempts.failed() }
        #expect(delays == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)])
        #expect(attempts.failures == 6)
    }

    @Test func aSuccessStartsTheDelaysOver() {
        var attempts = RetryAttempts(backoff: Self.backoff)
        _ = attempts.failed()
        _ = attempts.failed()
        attempts.succeeded()
        #expect(attempts.failures == 0)
        #expect(attempts.failed() == .milliseconds(100))
    }

    @Test func jitterStaysWithinItsSpreadAndTheMaximum() {
        var attempts = RetryAttempts(backoff: ReconnectBackoff(initial: .milliseconds(100), maximum: .milliseconds(300), jitter: 0.2))
        let first = attempts.failed()
        #expect(first >= .milliseconds(80) && first <= .milliseconds(120))
        for _ in 0..<20 { #expect(attempts.failed() <= .milliseconds(300)) }
    }
}
