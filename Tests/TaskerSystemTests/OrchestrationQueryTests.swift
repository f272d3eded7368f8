import Foundation
import TaskerExamples
import TaskerTestSupport
import Testing

@testable import TaskerOrchestration
@testable import TaskerPostgres
@testable import TaskerWorker

/// The orchestration's batched and derived SQL against the database itself: array parameters, the
/// execution status derived from readiness rows, the one-statement transitions.
@Suite struct OrchestrationQueryTests {
    /// A stored state is decoded as the row's other values are: a text that is no state is a
    /// decoding error naming the column and the value (never a state made up).
    @Test func statesAreDecodedFromTheirColumn() async throws {
        try await withTestDatabase { db in
            let c = try await db.connect()
            let row = try #require(
                try await c.query("SELECT 'in_progress'::text AS step, 'complete'::text AS task, 'bogus'::text AS bad").first)
            #expect(try row.decode("step", as: StepState.self) == .inProgress)
            #expect(try row.decode("task", as: TaskState.self) == .complete)
            for decode in [{ _ = try row.decode("bad", as: StepState.self) }, { _ = try row.decode("bad", as: TaskState.self) }] {
                let error = #expect(throws: PostgresError.self) { try decode() }
                #expect(error?.kind == .decoding)
                #expect(
                    error?.message.contains(#"column "bad""#) == true && error?.message.contains("bogus") == true,
                    "\(String(describing: error))")
            }
        }
    }

    @Test func arrayLiteralsRoundTripAnyText() async throws {
        try await withTestDatabase { db in
            let c = try await db.connect()
            let texts: [String?] = ["plain", #"with "quotes""#, #"back\slash"#, "comma, {braces}", "", nil, "ünï 🚀", "NULL"]
            let back: [String?] = try await c.query("SELECT unnest($1::text[]) AS t", [PostgresArrayLiteral(texts)])
                .map { try $0.decode("t") }
            #expect(back == texts)
            let uuids = [UUID(), UUID()]
            let count: Int = try await c.query("SELECT cardinality($1::uuid[]) AS n", [PostgresArrayLiteral(uuids)])[0].decode("n")
            #expect(count == 2)
            let empty: Int = try await c.query("SELECT count(*) AS n FROM unnest($1::uuid[])", [PostgresArrayLiteral([UUID]())])[0]
                .decode("n")
            #expect(empty == 0)
        }
    }

    /// `TaskRepository.executionStatus(of:)` must give what `get_task_execution_context` gives.
    @Test func derivedExecutionStatusMatchesTheSQLFunction() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let created = try await harness.submittedTask("diamond_workflow", ["number": 3])
            let c = harness.admin
            func expectSame(_ label: String) async throws -> String {
                let readiness = try await TaskRepository.readiness(c, taskUUID: created.taskUUID)
                let sql = try await TaskRepository.executionStatus(c, taskUUID: created.taskUUID)
                #expect(TaskRepository.executionStatus(of: readiness) == sql, "\(label)")
                return sql
            }
            // No worker: the first step is out (`enqueued`).
            #expect(try await expectSame("enqueued") == "processing")
            let first = try #require(created.steps["diamond_start"])
            for (from, to) in [
                ("enqueued", "in_progress"), ("in_progress", "enqueued_for_orchestration"),
                ("enqueued_for_orchestration", "complete"),
            ] {
                try await Self.move(c, step: first, from: from, to: to)
            }
            try await c.query(
                "UPDATE tasker.workflow_steps SET processed = true, in_process = false WHERE workflow_step_uuid = $1",
                [first])
            #expect(try await expectSame("first complete") == "has_ready_steps")
            let second = try #require(
                try await TaskRepository.readiness(c, taskUUID: created.taskUUID)
                    .first(where: \.readyForExecution)?.stepUUID)
            try await Self.move(c, step: second, from: "pending", to: "error")
            #expect(try await expectSame("one in error") == "blocked_by_failures")
        }
    }

    /// The one-statement compare-and-set: moves only from the expected state, keeps one
    /// `most_recent` row, and a dynamic step's first transition is written once.
    @Test func transitionsAreCompareAndSet() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let created = try await harness.submittedTask("linear_workflow", ["number": 2])
            let c = harness.admin
            let processor = UUID.v7()
            let task = created.taskUUID
            #expect(
                try await TransitionRepository.transitionTask(
                    c, taskUUID: task, from: .pending, to: .initializing,
                    event: .start, processorUUID: processor) == false)
            #expect(
                try await TransitionRepository.transitionTask(
                    c, taskUUID: task, from: .stepsInProcess,
                    to: .evaluatingResults, event: .allStepsCompleted,
                    processorUUID: processor))
            #expect(try await TransitionRepository.currentTaskState(c, taskUUID: task) == .evaluatingResults)
            let keys: [Int] = try await c.query(
                "SELECT sort_key FROM tasker.task_transitions WHERE task_uuid = $1 ORDER BY sort_key",
                [task]
            ).map { try $0.decode("sort_key") }
            #expect(keys == Array(1...keys.count))
            let current: Int = try await c.query(
                "SELECT count(*) AS n FROM tasker.task_transitions WHERE task_uuid = $1 AND most_recent", [task])[0].decode("n")
            #expect(current == 1)
            // A step without any transition (as decision and batch steps start) counts as pending.
            let step = created.steps["linear_verify"]!
            try await c.query("DELETE FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1", [step])
            #expect(
                try await TransitionRepository.transitionStep(
                    c, stepUUID: step, from: .enqueued, to: .inProgress,
                    event: .enqueue) == false)
            #expect(try await TransitionRepository.transitionStep(c, stepUUID: step, from: .pending, to: .enqueued, event: .enqueue))
            #expect(
                try await TransitionRepository.transitionStep(
                    c, stepUUID: step, from: .pending, to: .enqueued,
                    event: .enqueue) == false)
            #expect(try await harness.stepTransitions(task, "linear_verify") == ["enqueued"])
        }
    }

    static func move(_ c: PostgresConnection, step: UUID, from: String, to: String) async throws {
        try await c.query(
            """
            WITH retired AS (UPDATE tasker.workflow_step_transitions SET most_recent = false
                              WHERE workflow_step_uuid = $1 AND most_recent AND to_state = $2 RETURNING sort_key)
            INSERT INTO tasker.workflow_step_transitions
                (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
            SELECT $1, $3, $2, '{}', sort_key + 1, true, NOW(), NOW() FROM retired
            """, [step, from, to])
    }
}
