import Foundation
import TaskerOrchestration
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Issue #31 item 4: a template without a `retry:` block, whose step keeps failing retryably, was
/// retried three times in 41 ms. Each failure now gets `[common.backoff]`'s delay, written where the
/// readiness functions read it (`backoff_request_seconds`, `last_attempted_at`), and the step is not
/// enqueued again before it has passed. Judged from the stored rows and transition times, not from
/// the clock. The calculation itself: `BackoffCalculatorTests` (TaskerOrchestrationTests).
@Suite(.serialized, .timeLimit(.minutes(2))) struct RetryBackoffTests {
    /// One step, no `retry:` block (so retryable, 3 attempts), failing retryably on every attempt.
    static let alwaysFailingYAML = """
        name: backoff_default
        namespace_name: examples
        version: 1.0.0
        steps:
          - name: backoff_always_fails
            handler:
              callable: tasker.fail
              initialization:
                message: "fails on purpose"
        """

    /// `[common.backoff]` of the test environment: `[1, 2, 4]`, 10 s, ×2, jitter 0.15.
    static func testEnvironmentBackoff() throws -> BackoffCalculator {
        let loaded = try ConfigurationLoader(
            environment: ["TASKER_ENV": "test"], configRoot: repositoryConfigRoot, context: "orchestration"
        ).load()
        return OrchestrationSettings(configuration: loaded.configuration).backoff
    }

    @Test func aStepWithoutARetryBlockWaitsOutEachBackoffBeforeItsNextAttempt() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db, extra: ["backoff_default.yaml": Self.alwaysFailingYAML])
            let backoff = try Self.testEnvironmentBackoff()
            #expect(backoff.policy.baseDelaySeconds == 1 && backoff.policy.maxDelaySeconds == 10)
            let worker = harness.startWorker()
            let orchestration = harness.startOrchestration { $0.backoff = backoff }
            let created = try await orchestration.submit(OrchestrationHarness.request("backoff_default", [:]))
            #expect(try await harness.waitForTask(created.taskUUID, in: ["complete", "error"]) == "error")
            let step = try #require(created.steps["backoff_always_fails"])
            let attempt = ["enqueued", "in_progress", "enqueued_as_error_for_orchestration"]
            #expect(
                try await harness.stepTransitions(created.taskUUID, "backoff_always_fails")
                    == ["pending"] + attempt + ["waiting_for_retry", "pending"] + attempt + ["waiting_for_retry", "pending"]
                    + attempt + ["error"])
            // Between each failure and the next attempt: at least that attempt's delay, 1 s · 2^attempts
            // (2 s, then 4 s; no jitter below 0.15 · 8). Both times are the statements' NOW().
            let waits: [Double] = try await harness.admin.query(
                """
                SELECT EXTRACT(EPOCH FROM (
                         (SELECT min(e.created_at) FROM tasker.workflow_step_transitions e
                           WHERE e.workflow_step_uuid = w.workflow_step_uuid AND e.to_state = 'enqueued'
                             AND e.sort_key > w.sort_key) - w.created_at))::float8 AS waited
                  FROM tasker.workflow_step_transitions w
                 WHERE w.workflow_step_uuid = $1 AND w.to_state = 'waiting_for_retry'
                 ORDER BY w.sort_key
                """, [step]
            ).map { try $0.decode("waited") }
            #expect(waits.count == 2)
            #expect(waits.first.map { $0 >= 2 } == true && waits.last.map { $0 >= 4 } == true, "\(waits)")
            // The last failure got its delay too (8 s ± 1, jitter after the cap of 10), stamped with
            // the failure's own time, as upstream writes it before the step's final transition.
            let row = try await harness.admin.query(
                """
                SELECT ws.attempts, ws.max_attempts, ws.retryable, ws.backoff_request_seconds,
                       ws.last_attempted_at = t.created_at AS stamped_with_the_failure
                  FROM tasker.workflow_steps ws
                  JOIN tasker.workflow_step_transitions t
                    ON t.workflow_step_uuid = ws.workflow_step_uuid AND t.most_recent AND t.to_state = 'error'
                 WHERE ws.workflow_step_uuid = $1
                """, [step])[0]
            #expect(try row.decode("attempts", as: Int.self) == 3 && row.decode("max_attempts", as: Int.self) == 3)
            #expect(try row.decode("retryable", as: Bool.self))
            #expect(try (7...9).contains(row.decode("backoff_request_seconds", as: Int.self)))
            #expect(try row.decode("stamped_with_the_failure", as: Bool.self))
            try await orchestration.stop()
            try await worker.stop()
        }
    }

    /// Without a worker and without waiting: a failure stored as upstream's Rust worker stores it gets
    /// the configured delay; the readiness function then gives `last_attempted_at + backoff` as the
    /// next retry and the step is not ready; once that time is moved into the past the orchestration's
    /// discovery enqueues the step again.
    @Test func theReadinessFunctionHoldsTheStepUntilItsBackoffHasPassed() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db, extra: ["backoff_default.yaml": Self.alwaysFailingYAML])
            let policy = BackoffPolicy(baseDelaySeconds: 30, maxDelaySeconds: 3600, multiplier: 2, jitterEnabled: false)
            let orchestration = harness.startOrchestration { $0.backoff = BackoffCalculator(policy: policy) }
            let created = try await orchestration.submit(OrchestrationHarness.request("backoff_default", [:]))
            let step = try #require(created.steps["backoff_always_fails"])
            let failure = StepExecutionResult.failure(
                stepUUID: step, failure: StepFailure(message: "fails on purpose"), startedAt: Date(), completedAt: Date(),
                workerID: "worker_test", hostname: nil)
            try await MixedFleetTests.storeAsUpstream(harness, step: step, results: try failure.jsonString())
            let message = StepMessage(taskUUID: created.taskUUID, stepUUID: step, correlationID: created.correlationID)
            let reply = try await orchestration.service.process(.processStepResult(message))
            guard case .stepResultProcessed(let outcome) = reply else {
                Issue.record("processStepResult answered \(reply)")
                return
            }
            // Attempt 1: 30 s · 2¹.
            #expect(outcome == .waitingForRetry(backoffSeconds: 60))
            let readiness = """
                SELECT ready_for_execution, backoff_request_seconds,
                       next_retry_at = last_attempted_at + interval '60 seconds' AS waits_out_the_backoff
                  FROM tasker.get_step_readiness_status($1::uuid) WHERE workflow_step_uuid = $2::uuid
                """
            let held = try await harness.admin.query(readiness, [created.taskUUID, step])[0]
            #expect(try !held.decode("ready_for_execution", as: Bool.self))
            #expect(try held.decode("backoff_request_seconds", as: Int?.self) == 60)
            #expect(try held.decode("waits_out_the_backoff", as: Bool.self))
            try await harness.admin.query(
                """
                UPDATE tasker.workflow_steps SET last_attempted_at = last_attempted_at - interval '61 seconds'
                 WHERE workflow_step_uuid = $1
                """, [step])
            try await waitUntil(timeout: .seconds(20)) {
                try await harness.stepTransitions(created.taskUUID, "backoff_always_fails").last == "enqueued"
            }
            try await orchestration.stop()
        }
    }
}
