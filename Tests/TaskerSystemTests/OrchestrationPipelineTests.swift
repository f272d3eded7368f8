import Foundation
import TaskerExamples
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerPostgres
@testable import TaskerWorker

/// The pipelined orchestration transactions (task start, step result): a compare-and-set the
/// pipeline finds lost rolls everything back (no step message, no transition) and the step-by-step
/// path writes the very same transitions; the result message is archived with the work.
@Suite struct OrchestrationPipelineTests {
    /// Makes the next `pending → …` retire of a step transition match no row, once: a sequence (not
    /// rolled back with the transaction) counts the attempts.
    static func skipNextPendingRetire(_ c: PostgresConnection) async throws {
        try await c.execute(
            """
            CREATE SEQUENCE IF NOT EXISTS public.test_skip_retire;
            SELECT setval('public.test_skip_retire', 1, false);
            """)
        try await c.injectFault(
            "test_skip_pending_retire", before: "UPDATE", on: "tasker.workflow_step_transitions",
            """
            IF OLD.to_state = 'pending' AND OLD.most_recent AND NOT NEW.most_recent
               AND nextval('public.test_skip_retire') = 1 THEN
                RETURN NULL;
            END IF;
            """)
    }

    static func skipped(_ c: PostgresConnection) async throws -> Bool {
        try await c.query("SELECT is_called FROM public.test_skip_retire")[0].decode("is_called")
    }

    static func queued(_ c: PostgresConnection, _ queue: String) async throws -> [UUID] {
        try await c.query("SELECT (message->>'step_uuid')::uuid AS step FROM pgmq.q_\(queue) ORDER BY msg_id")
            .map { try $0.decode("step") }
    }

    @Test func lostCompareAndSetFallsBackToTheSameTransitions() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let c = harness.admin
            try await Self.skipNextPendingRetire(c)
            let orchestration = harness.startOrchestration()
            // Task start: the pipelined enqueue of the first step loses its compare-and-set.
            let created = try await orchestration.submit(OrchestrationHarness.request("linear_workflow", ["number": 3]))
            #expect(try await Self.skipped(c))
            let task = created.taskUUID
            #expect(try await harness.taskTransitions(task) == ["pending", "initializing", "enqueuing_steps", "steps_in_process"])
            let first = try #require(created.steps["linear_square"])
            #expect(try await harness.stepTransitions(task, "linear_square") == ["pending", "enqueued"])
            let queue = QueueNames.workerQueue(namespace: ExampleHandlers.namespace)
            #expect(try await Self.queued(c, queue) == [first])

            // Play the worker: the first step's result is stored and sent.
            try await OrchestrationQueryTests.move(c, step: first, from: "enqueued", to: "in_progress")
            try await OrchestrationQueryTests.move(c, step: first, from: "in_progress", to: "enqueued_for_orchestration")
            let result = StepExecutionResult.success(
                stepUUID: first, result: ["square": 9], startedAt: Date(),
                completedAt: Date(), workerID: "test", hostname: nil)
            try await c.query(
                "UPDATE tasker.workflow_steps SET results = $2::jsonb WHERE workflow_step_uuid = $1",
                [first, PostgresJSON(raw: try result.jsonString())])
            let message = StepMessage(taskUUID: task, stepUUID: first, correlationID: created.correlationID)
            // Delayed: the running service neither polls nor claims it (it would race the direct call below).
            let msgID = try await PGMQ.sendWithNotify(
                c, queue: QueueNames.stepResults, message: try PostgresJSON(message),
                delaySeconds: 60)

            // Step result: the pipelined enqueue of the next step loses its compare-and-set.
            try await Self.skipNextPendingRetire(c)
            let outcome = try await orchestration.service.process(
                .processStepResult(
                    message, archiving: MessageReceipt(queue: QueueNames.stepResults, msgID: msgID)))
            #expect(outcome == .stepResultProcessed(.completed(created: [])))
            #expect(try await Self.skipped(c))
            #expect(
                try await harness.taskTransitions(task) == [
                    "pending", "initializing", "enqueuing_steps", "steps_in_process",
                    "evaluating_results", "enqueuing_steps", "steps_in_process",
                ])
            #expect(try await harness.stepTransitions(task, "linear_square").last == "complete")
            let second = try await harness.stepUUID(task, "linear_add")
            #expect(try await harness.stepTransitions(task, "linear_add") == ["pending", "enqueued"])
            #expect(try await Self.queued(c, queue) == [first, second])
            // Archived in the result's transaction.
            let left: Int = try await c.query("SELECT count(*) AS n FROM pgmq.q_orchestration_step_results")[0].decode("n")
            let archived: Int = try await c.query(
                "SELECT count(*) AS n FROM pgmq.a_orchestration_step_results WHERE msg_id = $1", [msgID])[0].decode("n")
            #expect(left == 0 && archived == 1)
            // A duplicate of the message changes nothing.
            #expect(
                try await orchestration.service.process(.processStepResult(message)) == .stepResultProcessed(.ignored(state: .complete)))
            try await orchestration.stop()
        }
    }

    /// The asserting statements raise `division_by_zero` and write nothing when the row is elsewhere.
    @Test func assertingStatementsFailVisibly() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let created = try await harness.submittedTask("linear_workflow", ["number": 4])
            let c = harness.admin
            let task = created.taskUUID
            let before = try await harness.taskTransitions(task)
            do {
                try await c.pipeline([
                    .plain("BEGIN"),
                    try TransitionRepository.transitionTaskStatement(
                        taskUUID: task, from: .pending, to: .initializing,
                        event: .start, processorUUID: UUID.v7(), asserting: true),
                    .plain("COMMIT"),
                ])
                Issue.record("a lost compare-and-set was not an error")
            } catch {
                #expect((error as? PostgresError)?.isFailedAssertion == true)
            }
            #expect(try await harness.taskTransitions(task) == before)
            // Not asserting: no row, no error.
            let rows = try await c.pipeline([
                try TransitionRepository.transitionTaskStatement(
                    taskUUID: task, from: .pending, to: .initializing, event: .start, processorUUID: UUID.v7(), asserting: false)
            ])
            #expect(rows[0].isEmpty)
            let enqueued = try #require(created.steps["linear_square"])
            do {
                try await c.pipeline([
                    try TransitionRepository.enqueueStepAssertedStatement(
                        stepUUID: enqueued, queue: "worker_examples_queue", message: PostgresJSON(raw: "{}"))
                ])
                Issue.record("enqueueing a step that is not pending was not an error")
            } catch {
                #expect((error as? PostgresError)?.isFailedAssertion == true)
            }
            #expect(try await harness.stepTransitions(task, "linear_square") == ["pending", "enqueued"])
            #expect(try await Self.queued(c, "worker_examples_queue") == [enqueued])
            let step = try #require(created.steps["linear_add"])
            // A pending step moves and its message is sent.
            try await c.pipeline([
                try TransitionRepository.enqueueStepAssertedStatement(
                    stepUUID: step, queue: "worker_examples_queue",
                    message: try PostgresJSON(StepMessage(taskUUID: task, stepUUID: step, correlationID: created.correlationID)))
            ])
            #expect(try await harness.stepTransitions(task, "linear_add") == ["pending", "enqueued"])
            #expect(try await Self.queued(c, "worker_examples_queue").contains(step))
        }
    }
}
