import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration

/// Issue #31 item 4: each failed step's delay as upstream's `BackoffCalculator` computes it for the
/// same configuration (`crates/tasker-orchestration/src/orchestration/backoff_calculator.rs`; its
/// tests are named where one is mirrored). The `Retry-After` parsing: `RetryAfterTests`,
/// `RFC2822DateTests`; the delay in the database: `RetryBackoffTests` (TaskerSystemTests).
@Suite struct BackoffCalculatorTests {
    typealias F = BackoffFixtures

    // MARK: The policy from [common.backoff]

    /// Mirrors `test_backoff_config_default` for the configuration the orchestration really runs
    /// (`From<&TaskerConfig>`: upstream's `Default` serves only its tests): the base file's values.
    @Test func theDefaultPolicyIsTheBaseFilesAsUpstreamReadsIt() {
        let policy = BackoffPolicy()
        #expect(policy == BackoffPolicy(settings: CommonConfiguration.BackoffSettings()))
        #expect(policy.baseDelaySeconds == 1 && policy.maxDelaySeconds == 3600 && policy.multiplier == 2.0)
        #expect(policy.jitterEnabled && policy.maxJitter == 0.15)
        #expect(OrchestrationSettings().backoff == BackoffCalculator(policy: policy))
    }

    /// Upstream's `From<&TaskerConfig>`: the base is `default_backoff_seconds.first()`, 1 when empty;
    /// the rest of the table is read by nothing.
    @Test func onlyTheFirstEntryOfTheTableIsTheBase() {
        var settings = CommonConfiguration.BackoffSettings()
        settings.defaultBackoffSeconds = [7, 1, 1]
        #expect(BackoffPolicy(settings: settings).baseDelaySeconds == 7)
        settings.defaultBackoffSeconds = []
        #expect(BackoffPolicy(settings: settings).baseDelaySeconds == 1)
    }

    /// Mirrors `test_backoff_config_custom_values` (5 s, 600 s, ×3, no jitter, 0.2), through `[common.backoff]`.
    @Test func customValuesAreKept() {
        var settings = CommonConfiguration.BackoffSettings()
        settings.defaultBackoffSeconds = [5]
        settings.maxBackoffSeconds = 600
        settings.backoffMultiplier = 3.0
        settings.jitterEnabled = false
        settings.jitterMaxPercentage = 0.2
        #expect(
            BackoffPolicy(settings: settings)
                == BackoffPolicy(baseDelaySeconds: 5, maxDelaySeconds: 600, multiplier: 3.0, jitterEnabled: false, maxJitter: 0.2))
        // 5 · 3² = 45; 5 · 3⁵ = 1215 → 600.
        let calculator = BackoffCalculator(settings: settings)
        #expect(calculator.backoff(for: F.failure(), attempts: 2).delaySeconds == 45)
        #expect(calculator.backoff(for: F.failure(), attempts: 5).delaySeconds == 600)
    }

    /// The orchestration's settings carry the loaded `[common.backoff]`.
    @Test func theOrchestrationSettingsCarryTheConfiguredPolicy() {
        var configuration = TaskerConfiguration()
        configuration.common.backoff.defaultBackoffSeconds = [1, 2, 4]
        configuration.common.backoff.maxBackoffSeconds = 10
        let policy = OrchestrationSettings(configuration: configuration).backoff.policy
        #expect(policy == BackoffPolicy(baseDelaySeconds: 1, maxDelaySeconds: 10, multiplier: 2.0, jitterEnabled: true, maxJitter: 0.15))
    }

    // MARK: The exponential

    /// `base · multiplier^attempts`, capped: `attempts` is the stored count (1 after the first run).
    @Test func theExponentialGrowsWithTheAttemptsUpToTheCap() {
        let calculator = F.exact()
        let delays = [0, 1, 2, 3, 4, 5, 11, 12, 13, 40].map { calculator.backoff(for: F.failure(), attempts: $0) }
        #expect(delays.map(\.delaySeconds) == [1, 2, 4, 8, 16, 32, 2048, 3600, 3600, 3600])
        #expect(delays.allSatisfy { $0.kind == .exponential })
        // The test overlay ([1, 2, 4], 10 s): 2, 4, 8, then the cap.
        let test = F.exact(max: 10)
        #expect([1, 2, 3, 4, 5].map { test.backoff(for: F.failure(), attempts: $0).delaySeconds } == [2, 4, 8, 10, 10])
    }

    /// The base-file table `[1, 5, 15, 30, 60]` does not give 5, 15, 30, 60: only its first entry is used.
    @Test func attemptsBeyondTheFirstEntryDoNotIndexTheTable() {
        var settings = CommonConfiguration.BackoffSettings()
        settings.jitterEnabled = false
        let calculator = BackoffCalculator(settings: settings)
        #expect([1, 2, 3, 4, 5, 6].map { calculator.backoff(for: F.failure(), attempts: $0).delaySeconds } == [2, 4, 8, 16, 32, 64])
    }

    /// Rust's `as u32` truncates: 5 · 1.5³ = 16.875 is 16 s, 1 · 1.9 is 1 s; a negative count (never
    /// stored) gives 2⁻¹ = 0.5, so 0.
    @Test func wholeSecondsAreTruncated() {
        #expect(F.exact(base: 5, multiplier: 1.5).backoff(for: F.failure(), attempts: 3).delaySeconds == 16)
        #expect(F.exact(multiplier: 1.9).backoff(for: F.failure(), attempts: 1).delaySeconds == 1)
        #expect(F.exact().backoff(for: F.failure(), attempts: -1).delaySeconds == 0)
        #expect(BackoffCalculator.wholeSeconds(.nan) == 0 && BackoffCalculator.wholeSeconds(-3.5) == 0)
        #expect(BackoffCalculator.wholeSeconds(.infinity) == .max && BackoffCalculator.wholeSeconds(4_294_967_295.9) == .max)
    }

    /// A count so large the power is infinite gives the cap; with a base of 0 the product is NaN, and
    /// `f64::min` then gives the cap too (Swift's `min` would give NaN).
    @Test func anInfiniteOrNaNProductGivesTheCap() {
        #expect(F.exact(max: 60).backoff(for: F.failure(), attempts: 5000).delaySeconds == 60)
        #expect(F.exact(base: 0, max: 60).backoff(for: F.failure(), attempts: 5000).delaySeconds == 60)
        #expect(F.exact(base: 0, max: 60).backoff(for: F.failure(), attempts: 3).delaySeconds == 0)
    }

    /// `f64::powi` is compiler-builtins' square-and-multiply, not `pow`.
    @Test func powiIsSquareAndMultiply() {
        let x = 1.1
        #expect(BackoffCalculator.powi(x, 5) == x * ((x * x) * (x * x)))
        #expect(BackoffCalculator.powi(x, 6) == (x * x) * ((x * x) * (x * x)))
        #expect(BackoffCalculator.powi(2, 10) == 1024 && BackoffCalculator.powi(2, -2) == 0.25 && BackoffCalculator.powi(3, 0) == 1)
        #expect(BackoffCalculator.powi(2, Int32.min) == 0)
    }

    // MARK: Jitter (upstream `apply_jitter`)

    /// Mirrors `test_apply_jitter_within_bounds` (100 s, 10 % → 90…110) and
    /// `test_apply_jitter_large_delay` (10 000 s → 9 000…11 000).
    @Test func jitterStaysWithinItsPercentage() {
        let calculator = BackoffCalculator(policy: F.upstreamTestDefault)
        var generator = SeededGenerator(seed: 31)
        let small = (0..<500).map { _ in calculator.jittered(100, using: &generator) }
        #expect(small.allSatisfy { (90...110).contains($0) })
        #expect(Set(small).count > 1)
        let large = (0..<500).map { _ in calculator.jittered(10_000, using: &generator) }
        #expect(large.allSatisfy { (9_000...11_000).contains($0) })
    }

    /// Mirrors `test_apply_jitter_zero_delay`, `test_apply_jitter_small_delay_no_underflow` (1 s at
    /// 10 %: a range of 0.1, truncated to 0) and `test_apply_jitter_zero_max_jitter`.
    @Test func noJitterWhenItsRangeTruncatesToZero() {
        var generator = SeededGenerator(seed: 4)
        let calculator = BackoffCalculator(policy: F.upstreamTestDefault)
        #expect(calculator.jittered(0, using: &generator) == 0)
        #expect(calculator.jittered(1, using: &generator) == 1)
        #expect(calculator.jittered(9, using: &generator) == 9)
        var none = F.upstreamTestDefault
        none.maxJitter = 0
        #expect(BackoffCalculator(policy: none).jittered(100, using: &generator) == 100)
    }

    /// Mirrors `test_apply_jitter_saturating_behavior`: at `u32::MAX` and 50 %, adding saturates and
    /// subtracting stays above 0.
    @Test func jitterSaturates() {
        var policy = F.upstreamTestDefault
        policy.maxJitter = 0.5
        let calculator = BackoffCalculator(policy: policy)
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<200 {
            let value = calculator.jittered(.max, using: &generator)
            #expect(value > 0 && value >= UInt32.max - UInt32.max / 2)
        }
    }

    /// With the base file's 15 %: attempts 1 and 2 (2 s, 4 s) have no jitter at all (0.3 and 0.6
    /// truncate to 0); 8 s varies by 1, 32 s by 4. Jitter comes after the cap, so a capped delay can
    /// exceed it (the test overlay's 10 s: 9…11), as upstream's.
    @Test func theDefaultJitterOfEachAttempt() {
        let calculator = BackoffCalculator()
        var generator = SeededGenerator(seed: 2026)
        for _ in 0..<200 {
            #expect(calculator.backoff(for: F.failure(), attempts: 1, now: F.now, using: &generator).delaySeconds == 2)
            #expect(calculator.backoff(for: F.failure(), attempts: 2, now: F.now, using: &generator).delaySeconds == 4)
            #expect((7...9).contains(calculator.backoff(for: F.failure(), attempts: 3, now: F.now, using: &generator).delaySeconds))
            #expect((28...36).contains(calculator.backoff(for: F.failure(), attempts: 5, now: F.now, using: &generator).delaySeconds))
        }
        var overlay = BackoffPolicy()
        overlay.maxDelaySeconds = 10
        let capped = (0..<300).map { _ in
            BackoffCalculator(policy: overlay).backoff(for: F.failure(), attempts: 6, now: F.now, using: &generator).delaySeconds
        }
        #expect(capped.allSatisfy { (9...11).contains($0) })
    }

    // MARK: Which rule applies

    /// A `Retry-After` wins over the exponential and a hint, is capped at `max_backoff_seconds`, and
    /// gets no jitter (upstream `apply_server_requested_backoff`).
    @Test func aRetryAfterHeaderGivesTheDelayCappedAndWithoutJitter() {
        let calculator = BackoffCalculator()
        var generator = SeededGenerator(seed: 1)
        for _ in 0..<50 {
            let result = F.failure(headers: ["Retry-After": "100"], hint: .serverRequested(30))
            #expect(
                calculator.backoff(for: result, attempts: 3, now: F.now, using: &generator)
                    == StepBackoff(delaySeconds: 100, kind: .serverRequested))
        }
        #expect(calculator.backoff(for: F.failure(headers: ["retry-after": "86400"]), attempts: 1).delaySeconds == 3600)
        #expect(F.exact(max: 10).backoff(for: F.failure(headers: ["retry-after": "30"]), attempts: 1).delaySeconds == 10)
        // `0` is a delay of 0: the step is ready at once.
        #expect(
            calculator.backoff(for: F.failure(headers: ["retry-after": "0"]), attempts: 4)
                == StepBackoff(delaySeconds: 0, kind: .serverRequested))
    }

    /// Mirrors `test_backoff_context_full_builder_chain`: `Retry-After` among other headers, with an
    /// error context and custom metadata.
    @Test func theRetryAfterIsFoundAmongOtherMetadata() {
        let result = F.failure(
            headers: ["Retry-After": "60", "X-RateLimit-Reset": "1700000000"], errorContext: "429 Too Many Requests",
            custom: ["endpoint": "/api/v1/tasks"])
        #expect(BackoffCalculator().backoff(for: result, attempts: 1) == StepBackoff(delaySeconds: 60, kind: .serverRequested))
    }

    /// Upstream's metadata processor turns hints into context the calculator never reads
    /// (`test_process_metadata_with_backoff_hint_server_requested` and its rate-limit, service
    /// unavailable and custom siblings): the delay is the exponential.
    @Test(arguments: BackoffHint.BackoffType.allCases)
    func aBackoffHintDoesNotChangeTheDelay(_ type: BackoffHint.BackoffType) {
        let result = F.failure(hint: BackoffHint(backoffType: type, delaySeconds: 30, context: "busy"))
        #expect(F.exact().backoff(for: result, attempts: 1) == StepBackoff(delaySeconds: 2, kind: .exponential))
    }

    /// An unusable `Retry-After` (a date in the past, text, a negative number) falls back to the exponential.
    @Test func anUnusableRetryAfterFallsBackToTheExponential() {
        for value in ["Wed, 21 Oct 2015 07:25:00 GMT", "soon", "-30", "", " 30"] {
            #expect(
                F.exact().backoff(for: F.failure(headers: ["Retry-After": value]), attempts: 2, now: F.now)
                    == StepBackoff(delaySeconds: 4, kind: .exponential), "\(value)")
        }
    }

    /// Ours: a failure without `orchestration_metadata` (tasker-py's shape; upstream's orchestration
    /// writes no backoff for it and retries at once) gets the exponential, as the empty object would.
    @Test func aFailureWithoutOrchestrationMetadataGetsTheExponential() throws {
        let stored = try StepExecutionResult.decode(json: taskerPyLikeFailure)
        #expect(stored.orchestrationMetadata == nil)
        #expect(F.exact().backoff(for: stored, attempts: 1) == StepBackoff(delaySeconds: 2, kind: .exponential))
        #expect(F.exact().backoff(for: F.failure(withMetadata: false), attempts: 2).delaySeconds == 4)
    }

    /// tasker-py's stored failure (`TaskerTestSupport.taskerPyFailure`'s shape).
    let taskerPyLikeFailure = """
        {"step_uuid":"0190a6c4-0000-7000-8000-000000000001","success":false,"result":null,"status":"retryable_error",\
        "error":{"message":"python says no","error_type":"retryable_error","backtrace":null,"retryable":true},\
        "metadata":{"retryable":true},"orchestration_metadata":null}
        """
}
