import Foundation
import TaskerOrchestration
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// Next to upstream's worker on one database (issue #15; the live run is
/// bindings/python/tests/test_mixed_fleet.py): our worker never stores a result over upstream's
/// claim, and our orchestration handles the results upstream's worker stores for handlers of other
/// languages (tasker-py: `status` `permanent_error`/`retryable_error`, `result` and
/// `orchestration_metadata` null).
@Suite(.serialized, .timeLimit(.minutes(2))) struct MixedFleetTests {
    static let gatedYAML = """
        name: gated
        namespace_name: fleet
        version: 1.0.0
        steps:
          - name: gated
            handler: { callable: test.gate }
        """

    /// Upstream's claim as it writes it: check-then-write (the state it read, `enqueued`, as
    /// `from_state`, over whatever is most recent now), `{"type":"Start"}` and no `worker_uuid`.
    static func upstreamClaim(_ harness: PipelineHarness, _ step: UUID) async throws {
        try await harness.transition(step, from: "enqueued", to: "in_progress", event: #"{"type":"Start"}"#)
    }

    /// Upstream's worker claims a step our worker already claimed and is running (its claim lands
    /// over ours): the attempt is upstream's from then on, so our result is refused (counted as a
    /// late result) and nothing is stored or sent to orchestration; upstream's claim stays the most
    /// recent transition for upstream's own result.
    @Test func ourResultIsNeverStoredOverUpstreamsClaim() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.gatedYAML)
            let (handlers, gate) = HandlerRegistry.withGate(returning: .object(["ran_by": .string("ours")]))
            let worker = harness.startWorker(handlers, configuration: harness.configuration())
            let task = try await harness.createTask(steps: ["gated"])
            try await harness.enqueue(task, "gated")
            try await harness.waitForState(task["gated"], ["in_progress"])
            try await Self.upstreamClaim(harness, task["gated"])

            gate.trigger()
            try await waitUntil(timeout: .seconds(10)) { worker.daemon.statistics.snapshot.lateResultsRefused == 1 }
            let transitions = try await harness.transitions(task["gated"])
            #expect(transitions.map(\.to) == ["pending", "enqueued", "in_progress", "in_progress"])
            #expect(transitions[2].metadata["worker_uuid"]?.stringValue == worker.daemon.identity.uuid.uuidString.lowercased())
            #expect(transitions[3].metadata["worker_uuid"] == nil)
            let unstored: Bool = try await harness.admin.query(
                "SELECT results IS NULL AS unstored FROM tasker.workflow_steps WHERE workflow_step_uuid = $1", [task["gated"]])[0]
                .decode("unstored")
            #expect(unstored)
            let sent: Int = try await harness.admin.query(
                "SELECT count(*)::int AS n FROM pgmq.q_orchestration_step_results")[0].decode("n")
            #expect(sent == 0)
            try await worker.stop()
        }
    }

    // MARK: Results of tasker-py handlers, as upstream's worker stores them

    /// Plays upstream's worker for one step: `enqueued → in_progress → enqueued_as_error_for_orchestration`,
    /// `results`, `attempts + 1`, `in_process = false`.
    static func storeAsUpstream(_ harness: OrchestrationHarness, step: UUID, results: String) async throws {
        for (from, to) in [("enqueued", "in_progress"), ("in_progress", "enqueued_as_error_for_orchestration")] {
            try await SchemaTests.transition(harness.admin, step: step, from: from, to: to)
        }
        try await harness.admin.query(
            """
            UPDATE tasker.workflow_steps SET results = $2::jsonb, attempts = COALESCE(attempts, 0) + 1,
                   in_process = false, updated_at = NOW() WHERE workflow_step_uuid = $1
            """, [step, PostgresJSON(raw: results)])
    }

    /// A `retryable_error` with null `result` and `orchestration_metadata`: retried after the
    /// `[common.backoff]` delay its attempt gets (issue #31 item 4). Upstream's orchestration writes no
    /// backoff without `orchestration_metadata` and retries such a step at once; ours backs off as upstream
    /// does for the results of its own Rust worker (README, "Retries").
    @Test func aRetryableErrorOfATaskerPyHandlerIsRetriedAfterItsBackoff() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let orchestration = harness.startOrchestration()
            let created = try await orchestration.submit(OrchestrationHarness.request("retry_workflow", ["number": 4]))
            let fetch = created.steps["retry_fetch"]!
            try await Self.storeAsUpstream(harness, step: fetch, results: taskerPyFailure(step: fetch, retryable: true))
            let message = StepMessage(taskUUID: created.taskUUID, stepUUID: fetch, correlationID: created.correlationID)
            let reply = try await orchestration.service.process(.processStepResult(message))
            guard case .stepResultProcessed(let outcome) = reply else {
                Issue.record("processStepResult answered \(reply)")
                return
            }
            // Attempt 1 with the base file's policy: 1 s · 2¹, whose 15 % jitter truncates to 0.
            #expect(outcome == .waitingForRetry(backoffSeconds: 2))
            let row = try await harness.admin.query(
                "SELECT backoff_request_seconds FROM tasker.workflow_steps WHERE workflow_step_uuid = $1", [fetch])[0]
            #expect(try row.decode("backoff_request_seconds", as: Int?.self) == 2)
            // Orchestration enqueues it again once the backoff has passed.
            try await waitUntil(timeout: .seconds(20)) {
                try await harness.stepTransitions(created.taskUUID, "retry_fetch").last == "enqueued"
            }
            #expect(
                try await harness.stepTransitions(created.taskUUID, "retry_fetch") == [
                    "pending", "enqueued", "in_progress", "enqueued_as_error_for_orchestration", "waiting_for_retry",
                    "pending", "enqueued",
                ])
            let waited: Double = try await harness.admin.query(
                """
                SELECT EXTRACT(EPOCH FROM (e.created_at - w.created_at))::float8 AS waited
                  FROM tasker.workflow_step_transitions w, tasker.workflow_step_transitions e
                 WHERE w.workflow_step_uuid = $1 AND e.workflow_step_uuid = $1
                   AND w.to_state = 'waiting_for_retry' AND e.to_state = 'enqueued' AND e.sort_key > w.sort_key
                """, [fetch])[0].decode("waited")
            #expect(waited >= 2)
            try await orchestration.stop()
        }
    }

    /// A `permanent_error` with null `result` and `orchestration_metadata`: the step fails for good
    /// and the task ends in `error`.
    @Test func aPermanentErrorOfATaskerPyHandlerFailsTheTask() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let orchestration = harness.startOrchestration()
            let created = try await orchestration.submit(OrchestrationHarness.request("retry_workflow", ["number": 4]))
            let fetch = created.steps["retry_fetch"]!
            try await Self.storeAsUpstream(harness, step: fetch, results: taskerPyFailure(step: fetch, retryable: false))
            let message = StepMessage(taskUUID: created.taskUUID, stepUUID: fetch, correlationID: created.correlationID)
            _ = try await orchestration.service.process(.processStepResult(message))
            #expect(try await harness.waitForTask(created.taskUUID, in: ["complete", "error"]) == "error")
            #expect(try await harness.stepTransitions(created.taskUUID, "retry_fetch").last == "error")
            let stored = try await harness.result(created.taskUUID, "retry_fetch")
            #expect(stored.status == "permanent_error" && stored.result == .null && stored.orchestrationMetadata == nil)
            try await orchestration.stop()
        }
    }
}
