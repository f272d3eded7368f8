import Foundation
import TaskerModel

/// The delay written for a failed step (`workflow_steps.backoff_request_seconds`, with
/// `last_attempted_at = NOW()`): the readiness functions make the step ready again only once
/// `last_attempted_at + backoff_request_seconds` has passed.
public struct StepBackoff: Sendable, Equatable {
    /// Which rule gave the delay (upstream `BackoffType`).
    public enum Kind: String, Sendable, Equatable {
        /// A `Retry-After` header in `orchestration_metadata.headers`, capped at `max_backoff_seconds`.
        case serverRequested
        /// `base · multiplier^attempts`, capped at `max_backoff_seconds`, with jitter when enabled.
        case exponential
    }

    public var delaySeconds: UInt32
    public var kind: Kind

    public init(delaySeconds: UInt32, kind: Kind) {
        self.delaySeconds = delaySeconds
        self.kind = kind
    }
}

/// Retry delays as upstream's `BackoffCalculator` computes them
/// (`crates/tasker-orchestration/src/orchestration/backoff_calculator.rs`, `calculate_and_apply_backoff`):
///
/// 1. A `Retry-After` header (any case) in `orchestration_metadata.headers`: whole seconds (`u32`),
///    or an RFC 2822 date at least a second ahead; the delay is `min(value, max_backoff_seconds)`, no jitter.
/// 2. Otherwise `default_backoff_seconds[0] · backoff_multiplier^attempts` (`attempts` as stored:
///    1 after the first run), `min` with `max_backoff_seconds`, truncated to whole seconds; then, with
///    `jitter_enabled`, a uniform jitter of `0…⌊delay · jitter_max_percentage⌋` seconds, added or
///    subtracted with equal odds (never below 0).
///
/// A backoff hint (`orchestration_metadata.backoff_hint`) does not change the delay: upstream passes
/// it to the calculator as context, which the calculation never reads. Upstream runs this only for a
/// result with `orchestration_metadata` (its Rust worker always writes the object, tasker-py writes
/// null); this orchestration runs it for every failed result, a missing object read as the empty one.
public struct BackoffCalculator: Sendable, Equatable {
    public var policy: BackoffPolicy

    public init(policy: BackoffPolicy = BackoffPolicy()) {
        self.policy = policy
    }

    /// A calculator for `[common.backoff]`.
    public init(settings: CommonConfiguration.BackoffSettings) {
        self.init(policy: BackoffPolicy(settings: settings))
    }

    /// The backoff of a failed `result` whose step has run `attempts` times (`workflow_steps.attempts`).
    public func backoff(for result: StepExecutionResult, attempts: Int, now: Date = Date()) -> StepBackoff {
        var generator = SystemRandomNumberGenerator()
        return backoff(for: result, attempts: attempts, now: now, using: &generator)
    }

    /// `backoff(for:attempts:now:)` with the jitter drawn from `generator`.
    public func backoff<Generator: RandomNumberGenerator>(
        for result: StepExecutionResult, attempts: Int, now: Date, using generator: inout Generator
    ) -> StepBackoff {
        if let requested = RetryAfter.seconds(in: result.orchestrationMetadata?.headers ?? [:], now: now) {
            return StepBackoff(delaySeconds: min(requested, policy.maxDelaySeconds), kind: .serverRequested)
        }
        return StepBackoff(delaySeconds: exponentialDelay(attempts: attempts, using: &generator), kind: .exponential)
    }

    /// Upstream's `apply_exponential_backoff`: `attempts` is read as its `i32` (`as u32` then
    /// `powi(attempts as i32)`), the power is `f64::powi`'s, the cap `f64::min`'s (a NaN product gives
    /// the cap) and the cast to whole seconds Rust's saturating `as u32`.
    func exponentialDelay<Generator: RandomNumberGenerator>(attempts: Int, using generator: inout Generator) -> UInt32 {
        let exponent = Int32(truncatingIfNeeded: attempts)
        let exponential = Double(policy.baseDelaySeconds) * Self.powi(policy.multiplier, exponent)
        let delay = Self.wholeSeconds(Double.minimum(exponential, Double(policy.maxDelaySeconds)))
        return policy.jitterEnabled ? jittered(delay, using: &generator) : delay
    }

    /// Upstream's `apply_jitter`: a range of `⌊delay · max_jitter⌋` (none when 0), a draw in `0…range`,
    /// then added or subtracted with equal odds, saturating at 0 and `u32::MAX`.
    func jittered<Generator: RandomNumberGenerator>(_ delay: UInt32, using generator: inout Generator) -> UInt32 {
        let range = Self.wholeSeconds(Double(delay) * policy.maxJitter)
        guard range > 0 else { return delay }
        let jitter = UInt32.random(in: 0...range, using: &generator)
        if Bool.random(using: &generator) {
            let (sum, overflowed) = delay.addingReportingOverflow(jitter)
            return overflowed ? .max : sum
        }
        return delay >= jitter ? delay - jitter : 0
    }

    /// Rust's `f64::powi` at run time (compiler-builtins' `__powidf2`): square-and-multiply over the
    /// exponent's magnitude, the reciprocal for a negative one. Its rounding can differ from `pow`'s
    /// in the last bit, which truncation to whole seconds could show.
    static func powi(_ base: Double, _ exponent: Int32) -> Double {
        var factor = base
        var remaining = exponent.magnitude
        var product = 1.0
        while true {
            if remaining & 1 != 0 { product *= factor }
            remaining >>= 1
            if remaining == 0 { break }
            factor *= factor
        }
        return exponent < 0 ? 1 / product : product
    }

    /// Rust's `value as u32`: truncation toward zero, NaN and negatives 0, past the range `u32::MAX`.
    static func wholeSeconds(_ value: Double) -> UInt32 {
        guard !value.isNaN, value > 0 else { return 0 }
        guard value < 4_294_967_296 else { return .max }
        return UInt32(value)
    }
}
