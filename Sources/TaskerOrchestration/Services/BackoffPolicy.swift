import TaskerModel

/// The numbers a ``BackoffCalculator`` works with: upstream's `BackoffCalculatorConfig`
/// (`crates/tasker-orchestration/src/orchestration/backoff_calculator.rs`), built from
/// `[common.backoff]` exactly as upstream's `From<&TaskerConfig>` builds it.
///
/// Upstream reads only the **first** entry of `default_backoff_seconds` (its base delay); the rest of
/// the table is carried in configuration but used by no code, and neither is a template's
/// `retry.backoff` / `backoff_base_ms` / `max_backoff_ms` (upstream's orchestration reads only the
/// template's `retryable` and `max_attempts`, into `workflow_steps`).
public struct BackoffPolicy: Sendable, Equatable {
    /// `default_backoff_seconds[0]` (1 when the table is empty): the delay of attempt 0.
    public var baseDelaySeconds: UInt32
    /// `max_backoff_seconds`: caps the exponential delay and a `Retry-After` (before jitter).
    public var maxDelaySeconds: UInt32
    /// `backoff_multiplier`: the exponential's base.
    public var multiplier: Double
    /// `jitter_enabled`: randomize the exponential delay (never a `Retry-After`).
    public var jitterEnabled: Bool
    /// `jitter_max_percentage` (0–1): the jitter's spread as a fraction of the delay.
    public var maxJitter: Double

    /// A policy with explicit values; the defaults are those of `config/tasker/base/common.toml`
    /// (`[1, 5, 15, 30, 60]`, 3600, 2.0, jitter on at 0.15), what a deployment without overrides runs.
    public init(
        baseDelaySeconds: UInt32 = 1, maxDelaySeconds: UInt32 = 3600, multiplier: Double = 2.0,
        jitterEnabled: Bool = true, maxJitter: Double = 0.15
    ) {
        self.baseDelaySeconds = baseDelaySeconds
        self.maxDelaySeconds = maxDelaySeconds
        self.multiplier = multiplier
        self.jitterEnabled = jitterEnabled
        self.maxJitter = maxJitter
    }

    /// `[common.backoff]` as upstream reads it (`BackoffCalculatorConfig::from`): the first entry of
    /// `default_backoff_seconds` as the base (1 when empty), the other keys as they are. The loader
    /// has already refused values outside upstream's bounds, naming the key.
    public init(settings: CommonConfiguration.BackoffSettings) {
        self.init(
            baseDelaySeconds: settings.defaultBackoffSeconds.first.map { UInt32(clamping: $0) } ?? 1,
            maxDelaySeconds: UInt32(clamping: settings.maxBackoffSeconds),
            multiplier: settings.backoffMultiplier,
            jitterEnabled: settings.jitterEnabled,
            maxJitter: settings.jitterMaxPercentage)
    }
}
