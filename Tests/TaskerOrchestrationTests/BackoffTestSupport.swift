import Foundation

@testable import TaskerModel
@testable import TaskerOrchestration

/// What the backoff tests share: failed results shaped as workers store them, a seeded generator
/// for the jitter, and upstream's test-only defaults.
enum BackoffFixtures {
    /// A retryable failure with `orchestration_metadata` holding `headers`, `hint`, `errorContext`
    /// and `custom`; `withMetadata: false` gives tasker-py's shape (`orchestration_metadata: null`).
    static func failure(
        headers: [String: String] = [:], hint: BackoffHint? = nil, errorContext: String? = nil,
        custom: [String: JSONValue] = [:], withMetadata: Bool = true
    ) -> StepExecutionResult {
        StepExecutionResult(
            stepUUID: UUID(), success: false, result: .emptyObject, metadata: StepExecutionMetadata(retryable: true),
            status: StepExecutionResult.Status.failed,
            error: StepExecutionError(message: "boom", errorType: "handler_error", retryable: true),
            orchestrationMetadata: withMetadata
                ? OrchestrationMetadata(headers: headers, errorContext: errorContext, backoffHint: hint, custom: custom)
                : nil)
    }

    /// Upstream's `BackoffCalculatorConfig::default()` (1 s, 300 s, ×2, jitter 0.1), which its unit
    /// tests use (`make_calculator`); the running orchestration builds its policy from configuration.
    static let upstreamTestDefault = BackoffPolicy(
        baseDelaySeconds: 1, maxDelaySeconds: 300, multiplier: 2.0, jitterEnabled: true, maxJitter: 0.1)

    /// A policy without jitter, so delays are exact.
    static func exact(base: UInt32 = 1, max: UInt32 = 3600, multiplier: Double = 2.0) -> BackoffCalculator {
        BackoffCalculator(
            policy: BackoffPolicy(baseDelaySeconds: base, maxDelaySeconds: max, multiplier: multiplier, jitterEnabled: false))
    }

    /// 2015-10-21 07:26:00 UTC: two minutes before `Wed, 21 Oct 2015 07:28:00 GMT`.
    static let now = Date(timeIntervalSince1970: 1_445_412_360)
}
