import Foundation
import TaskerExamples
import TaskerOrchestration
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// End to end through the companion orchestration and a real worker: the task and step transition
/// logs must be the ones upstream writes (db-and-orchestration.md §3.8).
@Suite(.serialized) struct OrchestrationLifecycleTests {
    static let stepLog = ["pending", "enqueued", "in_progress", "enqueued_for_orchestration", "complete"]

    /// §3.8's own scenario: step_a then step_b; step_b fails once with `Retry-After: 2`.
    static let transitionLogYAML = """
        name: transition_log
        namespace_name: examples
        version: 1.0.0
        steps:
          - name: log_step_a
            handler:
              callable: tasker.noop
          - name: log_step_b
            dependencies: [log_step_a]
            handler:
              callable: tests.fail_once_retry_after
        """

    @Test func verifiedTransitionLogOfSection38() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db, extra: ["transition_log.yaml": Self.transitionLogYAML])
            let handlers = OrchestrationHarness.exampleHandlers()
            handlers.register("tests.fail_once_retry_after") { context in
                if context.attempt <= 1 {
                    throw StepFailure(
                        message: "rate limited", errorType: "rate_limited", retryable: true,
                        headers: ["Retry-After": "2"])
                }
                return .success(["attempt": .int(Int64(context.attempt))])
            }
            let worker = harness.startWorker(handlers)
            let orchestration = harness.startOrchestration()
            let created = try await orchestration.submit(OrchestrationHarness.request("transition_log", ["n": 1]))
            let task = created.taskUUID
            // During the backoff the task waits for its dependencies and discovery does not return it.
            let stepB = try await harness.stepUUID(task, "log_step_b")
            try await harness.waitForTask(task, in: ["waiting_for_dependencies"])
            let backoff: Int? = try await harness.admin.query(
                "SELECT backoff_request_seconds FROM tasker.workflow_steps WHERE workflow_step_uuid = $1", [stepB])[0]
                .decode("backoff_request_seconds")
            #expect(backoff == 2)
            let started = ContinuousClock.now
            try await harness.waitForTask(task, in: ["complete", "error"])
            #expect(ContinuousClock.now - started > .milliseconds(1000))
            #expect(
                try await harness.taskTransitions(task) == [
                    "pending", "initializing", "enqueuing_steps", "steps_in_process", "evaluating_results", "enqueuing_steps",
                    "steps_in_process", "evaluating_results", "waiting_for_dependencies", "evaluating_results",
                    "enqueuing_steps", "steps_in_process", "evaluating_results", "complete",
                ])
            #expect(try await harness.stepTransitions(task, "log_step_a") == Self.stepLog)
            #expect(
                try await harness.stepTransitions(task, "log_step_b") == [
                    "pending", "enqueued", "in_progress", "enqueued_as_error_for_orchestration", "waiting_for_retry",
                    "pending", "enqueued", "in_progress", "enqueued_for_orchestration", "complete",
                ])
            try await Self.expectUpstreamMetadata(harness, task: task, stepB: stepB)
            try await orchestration.stop()
            try await worker.stop()
        }
    }

    /// Columns and metadata as upstream writes them.
    static func expectUpstreamMetadata(_ harness: OrchestrationHarness, task: UUID, stepB: UUID) async throws {
        let row = try await harness.admin.query(
            "SELECT complete, completed_at IS NOT NULL AS has_completed_at FROM tasker.tasks WHERE task_uuid = $1", [task])[0]
        #expect(try row.decode("complete", as: Bool.self))
        #expect(try row.decode("has_completed_at", as: Bool.self))
        let taskRows = try await harness.admin.query(
            """
            SELECT to_state, from_state, metadata, processor_uuid IS NOT NULL AS owned FROM tasker.task_transitions
             WHERE task_uuid = $1 ORDER BY sort_key
            """, [task])
        let events = try taskRows.map { try $0.decode("metadata", as: JSONValue.self)["event"]?.stringValue }
        #expect(
            try taskRows[0].decode("metadata", as: JSONValue.self)
                == ["initial_state": "pending", "from_service": "task_initializer"])
        #expect(events[1] == "Start" && events[2] == "ReadyStepsFound(1)")
        #expect(events[3]?.hasPrefix("StepsEnqueued([") == true)
        #expect(events[4] == "StepCompleted(\(try await harness.stepUUID(task, "log_step_a").uuidString.lowercased()))")
        #expect(events[8] == "NoDependenciesReady" && events[9] == "DependenciesReady")
        #expect(events[13] == "AllStepsSuccessful")
        #expect(try taskRows[13].decode("metadata", as: JSONValue.self)["atomic_finalization"] == true)
        #expect(try taskRows.allSatisfy { try $0.decode("owned", as: Bool.self) })
        let stepRows = try await harness.admin.query(
            """
            SELECT to_state, metadata FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1 ORDER BY sort_key
            """, [stepB])
        let stepEvents = try stepRows.map { try $0.decode("metadata", as: JSONValue.self)["event"]?.stringValue ?? "" }
        #expect(stepEvents[1] == #"{"type":"Enqueue"}"#)
        #expect(stepEvents[4].hasPrefix(#"{"type":"WaitForRetry","data":"rate limited"#))
        #expect(stepEvents[5] == #"{"type":"Retry"}"#)
        #expect(stepEvents[9].hasPrefix(#"{"type":"Complete","data":{"#))
        let step = try await harness.admin.query(
            """
            SELECT processed, in_process, attempts, processed_at IS NOT NULL AS has_processed_at
              FROM tasker.workflow_steps WHERE workflow_step_uuid = $1
            """, [stepB])[0]
        #expect(try step.decode("processed", as: Bool.self) && !step.decode("in_process", as: Bool.self))
        #expect(try step.decode("attempts", as: Int.self) == 2 && step.decode("has_processed_at", as: Bool.self))
    }

    @Test func linearWorkflowCompletesWithTheUpstreamTransitionLog() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let worker = harness.startWorker()
            let orchestration = harness.startOrchestration()
            let created = try await orchestration.submit(OrchestrationHarness.request("linear_workflow", ["number": 6]))
            #expect(try await harness.waitForTask(created.taskUUID, in: ["complete", "error"]) == "complete")
            #expect(try await harness.result(created.taskUUID, "linear_verify").result["value"] == .int((36 + 5) * 3))
            let cycle = ["evaluating_results", "enqueuing_steps", "steps_in_process"]
            #expect(
                try await harness.taskTransitions(created.taskUUID)
                    == ["pending", "initializing", "enqueuing_steps", "steps_in_process"] + cycle + cycle + cycle
                    + ["evaluating_results", "complete"])
            for step in ["linear_square", "linear_add", "linear_multiply", "linear_verify"] {
                #expect(try await harness.stepTransitions(created.taskUUID, step) == Self.stepLog)
            }
            try await orchestration.stop()
            try await worker.stop()
        }
    }

    @Test func retryWorkflowWaitsForRetryThenCompletesAfterItsBackoff() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let worker = harness.startWorker()
            let orchestration = harness.startOrchestration()
            let started = ContinuousClock.now
            let created = try await orchestration.submit(OrchestrationHarness.request("retry_workflow", ["number": 41]))
            #expect(try await harness.waitForTask(created.taskUUID, in: ["complete", "error"]) == "complete")
            #expect(ContinuousClock.now - started > .seconds(1))
            #expect(
                try await harness.stepTransitions(created.taskUUID, "retry_fetch") == [
                    "pending", "enqueued", "in_progress", "enqueued_as_error_for_orchestration", "waiting_for_retry",
                    "pending", "enqueued", "in_progress", "enqueued_for_orchestration", "complete",
                ])
            #expect(try await harness.result(created.taskUUID, "retry_confirm").result["confirmed"] == true)
            let fetch = try await harness.stepUUID(created.taskUUID, "retry_fetch")
            let row = try await harness.admin.query(
                "SELECT attempts, backoff_request_seconds FROM tasker.workflow_steps WHERE workflow_step_uuid = $1", [fetch])[0]
            #expect(try row.decode("attempts", as: Int.self) == 2)
            // The handler's one-second backoff hint does not set the delay (as upstream's orchestration):
            // attempt 1's exponential does, 1 s · 2¹ (its 15 % jitter truncates to 0).
            #expect(try row.decode("backoff_request_seconds", as: Int?.self) == 2)
            let transitions = try await harness.taskTransitions(created.taskUUID)
            #expect(transitions.contains("waiting_for_dependencies") && transitions.last == "complete")
            try await orchestration.stop()
            try await worker.stop()
        }
    }

    @Test func permanentlyFailingStepEndsTheTaskBlockedThenInError() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let worker = harness.startWorker()
            let orchestration = harness.startOrchestration()
            let created = try await orchestration.submit(OrchestrationHarness.request("failure_workflow", ["number": 2]))
            #expect(try await harness.waitForTask(created.taskUUID, in: ["complete", "error"]) == "error")
            #expect(
                try await harness.taskTransitions(created.taskUUID) == [
                    "pending", "initializing", "enqueuing_steps", "steps_in_process", "evaluating_results", "enqueuing_steps",
                    "steps_in_process", "evaluating_results", "blocked_by_failures", "error",
                ])
            #expect(
                try await harness.stepTransitions(created.taskUUID, "failure_explode")
                    == ["pending", "enqueued", "in_progress", "enqueued_as_error_for_orchestration", "error"])
            #expect(try await harness.stepTransitions(created.taskUUID, "failure_prepare") == Self.stepLog)
            let complete: Bool = try await harness.admin.query(
                "SELECT complete FROM tasker.tasks WHERE task_uuid = $1", [created.taskUUID])[0].decode("complete")
            #expect(!complete)
            try await orchestration.stop()
            try await worker.stop()
        }
    }

    @Test func requestsForUnknownTemplatesAndDuplicateIdentitiesAreRefused() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let orchestration = harness.startOrchestration()
            await #expect(throws: OrchestrationError.self) {
                _ = try await orchestration.submit(OrchestrationHarness.request("no_such_workflow", [:]))
            }
            _ = try await orchestration.submit(OrchestrationHarness.request("linear_workflow", ["number": 9]))
            do {
                _ = try await orchestration.submit(OrchestrationHarness.request("linear_workflow", ["number": 9]))
                Issue.record("a second task with the same identity was created")
            } catch OrchestrationError.duplicateTask {
            }
            let tasks: Int = try await harness.admin.query("SELECT count(*) AS n FROM tasker.tasks")[0].decode("n")
            #expect(tasks == 1)
            try await orchestration.stop()
        }
    }

    @Test func resultsThatAreNotAStepExecutionResultAreRejected() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let orchestration = harness.startOrchestration()
            // No worker: play its part by hand with a malformed result (step_uuid is not a UUID).
            let created = try await orchestration.submit(OrchestrationHarness.request("linear_workflow", ["number": 1]))
            let step = created.steps["linear_square"]!
            try await harness.admin.query(
                """
                WITH retired AS (UPDATE tasker.workflow_step_transitions SET most_recent = false
                                  WHERE workflow_step_uuid = $1 AND most_recent RETURNING sort_key)
                INSERT INTO tasker.workflow_step_transitions
                    (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
                SELECT $1, 'enqueued_for_orchestration', 'enqueued', '{}', sort_key + 1, true, NOW(), NOW() FROM retired
                """, [step])
            try await harness.admin.query(
                #"UPDATE tasker.workflow_steps SET results = '{"step_uuid":"nope","success":true}' WHERE workflow_step_uuid = $1"#,
                [step])
            let message = StepMessage(taskUUID: created.taskUUID, stepUUID: step, correlationID: created.correlationID)
            await #expect(throws: OrchestrationError.self) {
                _ = try await orchestration.service.process(.processStepResult(message))
            }
            #expect(try await harness.stepTransitions(created.taskUUID, "linear_square").last == "enqueued_for_orchestration")
            try await orchestration.stop()
        }
    }

    /// A transient database error while creating a decision's children (a simulated deadlock,
    /// SQLSTATE 40P01) must not complete the decision step without them: the transaction rolls
    /// back, the result message stays queued, and once the error passes the children are created.
    @Test(.timeLimit(.minutes(1))) func transientFailureCreatingDecisionStepsKeepsTheResultQueued() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            // Only decision children are inserted after task initialization; refuse them for now.
            try await harness.admin.injectFault(
                "test_refuse_decision_children", before: "INSERT", on: "tasker.workflow_steps",
                """
                IF EXISTS (SELECT 1 FROM tasker.named_steps WHERE named_step_uuid = NEW.named_step_uuid
                            AND name = 'decision_auto_approve') THEN
                    RAISE EXCEPTION 'simulated deadlock' USING ERRCODE = 'deadlock_detected';
                END IF;
                """)
            let worker = harness.startWorker()
            let orchestration = harness.startOrchestration(visibilityTimeoutSeconds: 1)
            let created = try await orchestration.submit(OrchestrationHarness.request("decision_workflow", ["amount": 250]))
            let route = created.steps["decision_route"]!
            // The route result is read, fails, and is read again after its visibility timeout.
            let deadline = ContinuousClock.now.advanced(by: .seconds(20))
            var reads = 0
            while ContinuousClock.now < deadline && reads < 2 {
                reads =
                    try await harness.admin.query(
                        """
                        SELECT read_ct FROM pgmq.q_orchestration_step_results WHERE message->>'step_uuid' = $1
                        """, [route.uuidString.lowercased()]
                    ).first?.decode("read_ct") ?? 0
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(reads >= 2, "the decision step's result message was not kept queued")
            let archived: Int = try await harness.admin.query(
                """
                SELECT count(*) AS n FROM pgmq.a_orchestration_step_results WHERE message->>'step_uuid' = $1
                """, [route.uuidString.lowercased()])[0].decode("n")
            #expect(archived == 0)
            #expect(try await harness.stepTransitions(created.taskUUID, "decision_route").last == "enqueued_for_orchestration")
            // The error passes: the retried message completes the step and creates the chosen branch.
            try await harness.admin.execute("DROP TRIGGER test_refuse_decision_children ON tasker.workflow_steps")
            let final = try await harness.waitForTask(created.taskUUID, in: ["complete", "error"])
            #expect(final == "complete")
            #expect(
                try await harness.stepNames(created.taskUUID)
                    == ["decision_auto_approve", "decision_finalize", "decision_route", "decision_validate"])
            try await orchestration.stop()
            try await worker.stop()
        }
    }
}
