import Foundation
import TaskerOrchestration
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel

/// One example workflow's task (`config/tasks/examples/`) and what its outcome must be: the one set
/// of expectations that `ExampleWorkflowTests` (PGMQ) and the RabbitMQ run
/// (`everyExampleWorkflowCompletesWithOurWorkerAndOrchestrationOnTheBroker`) both check.
struct ExampleWorkflowCase: Sendable, CustomStringConvertible {
    let name: String
    let context: JSONValue
    /// Checks a task of this case that reached `complete`.
    let check: @Sendable (OrchestrationHarness, UUID) async throws -> Void

    var description: String { "\(name) \(context)" }

    /// The templates of `config/tasks/examples/` (file `<name>.yaml`): `all` covers each.
    static var exampleTemplateNames: Set<String> {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: TestEnvironment.repositoryRoot + "/config/tasks/examples")) ?? []
        return Set(files.filter { $0.hasSuffix(".yaml") }.map { String($0.dropLast(".yaml".count)) })
    }

    static let all: [ExampleWorkflowCase] = [
        linear, diamond, tree, decisionAutoApproved, decisionManagerApproved, batch, batchWithNoItems, retry,
    ]

    static let linear = ExampleWorkflowCase(name: "linear_workflow", context: ["number": 3]) {
        (harness: OrchestrationHarness, task: UUID) async throws in
        #expect(try await harness.result(task, "linear_verify").result == ["value": 42, "verified": true])
    }

    static let diamond = ExampleWorkflowCase(name: "diamond_workflow", context: ["number": 5]) {
        (harness: OrchestrationHarness, task: UUID) async throws in
        #expect(try await harness.result(task, "diamond_left").result["value"] == 26)
        #expect(try await harness.result(task, "diamond_right").result["value"] == 50)
        #expect(try await harness.result(task, "diamond_merge").result == ["value": 76, "verified": true])
        // The merge ran once, after both branches.
        #expect(try await harness.stepTransitions(task, "diamond_merge").count == 5)
    }

    static let tree = ExampleWorkflowCase(name: "tree_workflow", context: ["number": 10]) {
        (harness: OrchestrationHarness, task: UUID) async throws in
        // leaves: 11·2 + 11·3 + 12·4 = 103
        #expect(try await harness.result(task, "tree_gather").result == ["value": 103, "verified": true])
        #expect(try await harness.stepNames(task).count == 7)
    }

    /// The decision creates only the chosen branch.
    static let decisionAutoApproved = ExampleWorkflowCase(name: "decision_workflow", context: ["amount": 250]) {
        (harness: OrchestrationHarness, task: UUID) async throws in
        #expect(
            try await harness.stepNames(task)
                == ["decision_auto_approve", "decision_finalize", "decision_route", "decision_validate"])
        let finalize = try await harness.result(task, "decision_finalize").result
        #expect(finalize["branch"] == "decision_auto_approve" && finalize["approved_by"] == "system")
        let route = try await harness.result(task, "decision_route").result
        #expect(route["decision_point_outcome"]?["type"] == "create_steps")
    }

    static let decisionManagerApproved = ExampleWorkflowCase(name: "decision_workflow", context: ["amount": 5000]) {
        (harness: OrchestrationHarness, task: UUID) async throws in
        #expect(
            try await harness.stepNames(task)
                == ["decision_finalize", "decision_manager_approval", "decision_route", "decision_validate"])
        #expect(try await harness.result(task, "decision_finalize").result["approved_by"] == "manager")
        // Edges: route → manager_approval, manager_approval → finalize (deferred: only created parents).
        let edges: Int = try await harness.admin.query(
            """
            SELECT count(*) AS n FROM tasker.workflow_step_edges e JOIN tasker.workflow_steps ws
              ON ws.workflow_step_uuid = e.to_step_uuid WHERE ws.task_uuid = $1
            """, [task])[0].decode("n")
        #expect(edges == 3)
    }

    /// The batch creates cursor workers and converges.
    static let batch = ExampleWorkflowCase(name: "batch_workflow", context: ["item_count": 100]) {
        (harness: OrchestrationHarness, task: UUID) async throws in
        #expect(
            try await harness.stepNames(task) == [
                "batch_aggregate", "batch_analyze", "batch_process_001", "batch_process_002", "batch_process_003",
                "batch_process_004",
            ])
        // Σ i² for i < 100 = 328350, over 4 workers of 25 items.
        #expect(try await harness.result(task, "batch_aggregate").result == ["value": 328350, "processed": 100, "workers": 4])
        let worker = try await harness.stepUUID(task, "batch_process_002")
        let inputs: JSONValue = try await harness.admin.query(
            "SELECT inputs FROM tasker.workflow_steps WHERE workflow_step_uuid = $1", [worker])[0].decode("inputs")
        #expect(inputs["cursor"] == ["batch_id": "002", "start_cursor": 25, "end_cursor": 50, "batch_size": 25])
        #expect(inputs["batch_metadata"] == ["cursor_field": "index", "failure_strategy": "fail_fast"])
        #expect(inputs["is_no_op"] == false && inputs["__template_step_name"] == "batch_process")
    }

    /// A batch with no items runs one no-op worker.
    static let batchWithNoItems = ExampleWorkflowCase(name: "batch_workflow", context: ["item_count": 0]) {
        (harness: OrchestrationHarness, task: UUID) async throws in
        #expect(try await harness.stepNames(task) == ["batch_aggregate", "batch_analyze", "batch_process_000"])
        #expect(try await harness.result(task, "batch_process_000").result["no_op"] == true)
        #expect(try await harness.result(task, "batch_aggregate").result["value"] == 0)
    }

    static let retry = ExampleWorkflowCase(name: "retry_workflow", context: ["number": 1]) {
        (harness: OrchestrationHarness, task: UUID) async throws in
        #expect(try await harness.result(task, "retry_confirm").result == ["value": 2, "confirmed": true])
        #expect(try await harness.result(task, "retry_fetch").result["attempts"] == 2)
    }
}

extension ExampleWorkflowCase {
    /// Submits every example workflow at once through `orchestration`, then waits for each to end
    /// `complete` and runs its checks (a transport's end-to-end run: the broker, the queue database).
    static func runAll(_ harness: OrchestrationHarness, _ orchestration: OrchestrationHarness.RunningOrchestration) async throws {
        var submitted: [(ExampleWorkflowCase, UUID)] = []
        for example in all {
            submitted.append(
                (example, try await orchestration.submit(OrchestrationHarness.request(example.name, example.context)).taskUUID))
        }
        for (example, task) in submitted {
            let final = try await harness.waitForTask(task, in: ["complete", "error"], timeout: .seconds(60))
            #expect(final == "complete", "\(example) ended \(final)")
            try await example.check(harness, task)
        }
    }
}
