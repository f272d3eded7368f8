import Foundation

/// Capped exponential backoff with jitter, for reconnecting after a lost connection.
///
/// Attempt 0 waits `initial`, each later attempt `multiplier` times longer, never more than `maximum`;
/// the actual delay is drawn from ±`jitter` of that value so that many workers do not reconnect in step.
public struct ReconnectBackoff: Sendable, Equatable {
    public var initial: Duration
    public var maximum: Duration
    public var multiplier: Double
    /// Fraction of the delay to randomise, 0…1.
    public var jitter: Double

    public init(
        initial: Duration = .milliseconds(100), maximum: Duration = .seconds(30),
        multiplier: Double = 2, jitter: Double = 0.2
    ) {
        self.initial = initial
        self.maximum = maximum
        self.multiplier = multiplier
        self.jitter = min(max(jitter, 0), 1)
    }

    /// The delay before reconnect attempt `attempt` (0-based).
    public func delay(forAttempt attempt: Int) -> Duration {
        let base = initial.inSeconds * pow(multiplier, Double(max(0, min(attempt, 62))))
        let capped = min(base, maximum.inSeconds)
        let spread = jitter == 0 ? 1 : Double.random(in: (1 - jitter)...(1 + jitter))
        return .milliseconds(Int64(min(capped * spread, maximum.inSeconds) * 1000))
    }
}
