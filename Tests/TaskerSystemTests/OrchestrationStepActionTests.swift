import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerPostgres
@testable import TaskerWorker

/// The operator's step actions (`PATCH /v1/tasks/{uuid}/workflow_steps/{step_uuid}`, upstream's
/// `StepManualAction`) on a real database with a running orchestration and worker: a failed step reset
/// for retry really runs again and its task completes; a failed step resolved or completed by hand lets
/// its dependents run (the completion's result is what they read) and the task completes; refusals
/// (unknown action, a step of another task, a state the action does not apply to, a finished task, bad
/// JSON) with their status and code; the permission the route asks for. Every answer is checked against
/// the document's `StepResponse` schema.
@Suite(.timeLimit(.minutes(3))) struct OrchestrationStepActionTests {
    typealias Client = any TestClientProtocol

    /// `manual_flaky` fails its first run for good (not retryable), then succeeds; `manual_after` echoes it.
    static let flakyYAML = """
        name: manual_flaky_workflow
        namespace_name: examples
        version: 1.0.0
        steps:
          - name: manual_flaky
            handler:
              callable: tests.flaky
            retry:
              retryable: false
              max_attempts: 1
          - name: manual_after
            dependencies: [manual_flaky]
            handler:
              callable: tasker.echo
        """

    /// `bypass_explode` always fails for good; `bypass_after` echoes what it left.
    static let bypassYAML = """
        name: manual_bypass_workflow
        namespace_name: examples
        version: 1.0.0
        steps:
          - name: bypass_explode
            handler:
              callable: tasker.fail
              initialization:
                retryable: false
                error_type: exploded
                message: "exploded on purpose"
          - name: bypass_after
            dependencies: [bypass_explode]
            handler:
              callable: tasker.echo
        """

    static let operatorKey = "operator-key-0123456789"
    static let readerKey = "reader-key-0123456789"
    static var operatorHeaders: HTTPFields { [HTTPField.Name("X-API-Key")!: operatorKey] }

    /// Runs `body` with the API (auth on: `operatorKey` may do anything with tasks, steps and the DLQ,
    /// `readerKey` only read them), a worker whose `tests.flaky` counts its runs in `runs`, and the
    /// orchestration running.
    static func withActions(_ body: @escaping @Sendable (Client, OrchestrationHarness, Tally) async throws -> Void) async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(
                db,
                extra: [
                    "failure_workflow.yaml": OrchestrationHarness.failureYAML, "manual_flaky.yaml": flakyYAML,
                    "manual_bypass.yaml": bypassYAML,
                ])
            let runs = Tally()
            let handlers = OrchestrationHarness.exampleHandlers()
            handlers.register("tests.flaky") { _ in
                let run = runs.increment()
                guard run > 1 else { throw StepFailure(message: "flaky: first run fails", errorType: "flaky", retryable: false) }
                return .success(["run": .int(Int64(run))])
            }
            var auth = WorkerConfiguration.Auth()
            auth.enabled = true
            auth.apiKeysEnabled = true
            auth.apiKeys = [
                WorkerConfiguration.APIKey(key: operatorKey, permissions: ["tasks:*", "steps:*", "dlq:*"]),
                WorkerConfiguration.APIKey(key: readerKey, permissions: ["tasks:read", "steps:read", "dlq:read"]),
            ]
            let worker = harness.startWorker(handlers)
            let orchestration = harness.startOrchestration()
            let service = orchestration.service
            let authenticator = try await OrchestrationWebServer.authenticator(auth, logger: Logger(label: "test.auth"))
            let queries = TaskQueries(pool: service.databasePool, orchestration: service)
            let router = OrchestrationRoutes.makeRouter(queries: queries, authenticator: authenticator, requestTimeout: .seconds(30))
            do {
                try await Application(router: router).test(.router) { client in try await body(client, harness, runs) }
            } catch {
                await queries.close()
                try? await orchestration.stop()
                try? await worker.stop()
                throw error
            }
            await queries.close()
            try await orchestration.stop()
            try await worker.stop()
        }
    }

    /// `PATCH` of step `step` of `task` with `body`, as the operator.
    static func act(
        _ client: Client, _ task: UUID, _ step: UUID, _ body: String, headers: HTTPFields = OrchestrationStepActionTests.operatorHeaders
    )
        async throws -> (HTTPResponse.Status, JSONValue)
    {
        try await requestJSON(
            client, .patch, "/v1/tasks/\(task.lowercased)/workflow_steps/\(step.lowercased)", body: body, headers: headers)
    }

    /// A created task of `name`, waited for until it failed.
    static func failedTask(_ client: Client, _ harness: OrchestrationHarness, _ name: String) async throws -> UUID {
        let request =
            #"{"namespace":"examples","name":"\#(name)","version":"1.0.0","context":{"number":3,"n":\#(Int.random(in: 0..<1_000_000))}}"#
        let (created, task) = try await requestJSON(client, .post, "/v1/tasks", body: request, headers: operatorHeaders)
        #expect(created == .created, "\(task)")
        let uuid = try #require(task["task_uuid"]?.stringValue.flatMap(UUID.init(uuidString:)))
        #expect(try await harness.waitForTask(uuid, in: ["error", "complete"]) == "error")
        return uuid
    }

    /// Problems of `body` against the document's `schema`.
    static func conformance(_ body: JSONValue, _ schema: String) -> [String] {
        let document = OrchestrationOpenAPIDocument.make()
        return SchemaCheck(document: document).problems(body, ["$ref": .string("#/components/schemas/\(schema)")], at: schema)
    }

    /// The step's transition metadata, oldest first.
    static func stepMetadata(_ harness: OrchestrationHarness, _ step: UUID) async throws -> [JSONValue] {
        try await harness.admin.query(
            "SELECT metadata FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1 ORDER BY sort_key", [step]
        ).map { try $0.decode("metadata") }
    }

    @Test func resetForRetryRunsTheFailedStepAgainAndTheTaskCompletes() async throws {
        try await Self.withActions { client, harness, runs in
            let task = try await Self.failedTask(client, harness, "manual_flaky_workflow")
            let flaky = try await harness.stepUUID(task, "manual_flaky")
            #expect(try await harness.stepTransitions(task, "manual_flaky").last == "error" && runs.count == 1)

            let (status, step) = try await Self.act(
                client, task, flaky, #"{"action_type":"reset_for_retry","reason":"the dependency is back","reset_by":"ops@example.com"}"#)
            #expect(status == .ok, "\(step)")
            #expect(step["step_uuid"]?.stringValue == flaky.lowercased && step["task_uuid"]?.stringValue == task.lowercased)
            // Answered after the step was re-enqueued (or, within its failure's 1 s backoff, left for discovery).
            let after = step["current_state"]?.stringValue ?? ""
            #expect(["pending", "enqueued", "in_progress", "enqueued_for_orchestration", "complete"].contains(after), "\(step)")
            #expect(Self.conformance(step, "StepResponse").isEmpty, "\(Self.conformance(step, "StepResponse"))")

            #expect(try await harness.waitForTask(task, in: ["complete", "error"]) == "complete")
            #expect(runs.count == 2)
            #expect(try await harness.result(task, "manual_after").result["dependencies"]?["manual_flaky"] == ["run": 2])
            #expect(
                try await harness.stepTransitions(task, "manual_flaky") == [
                    "pending", "enqueued", "in_progress", "enqueued_as_error_for_orchestration", "error",
                    "pending", "enqueued", "in_progress", "enqueued_for_orchestration", "complete",
                ])
            let reset = try await Self.stepMetadata(harness, flaky)[5]
            #expect(reset["event"] == #"{"type":"ResetForRetry"}"# && reset["reset_by"] == "ops@example.com")
            #expect(reset["reason"] == "the dependency is back" && reset["action_type"] == "reset_for_retry")
            let attempts: Int = try await harness.admin.query(
                "SELECT attempts FROM tasker.workflow_steps WHERE workflow_step_uuid = $1", [flaky])[0].decode("attempts")
            #expect(attempts == 1, "the reset counted the attempts from zero again")
            // The task left `error` the way upstream's state machine allows (Reset, then a fresh start).
            let transitions = try await harness.taskTransitions(task)
            let failed = try #require(transitions.firstIndex(of: "error"))
            #expect(Array(transitions[failed...].prefix(3)) == ["error", "pending", "initializing"], "\(transitions)")
            #expect(transitions.last == "complete")

            // Finished: no action changes it any more.
            let (again, refusal) = try await Self.act(
                client, task, flaky, #"{"action_type":"resolve_manually","reason":"r","resolved_by":"o"}"#)
            #expect(again == .badRequest && refusal["error"]?["code"] == "BAD_REQUEST")
            #expect(refusal["error"]?["message"]?.stringValue?.contains("its task \(task.lowercased) is complete") == true, "\(refusal)")
        }
    }

    @Test func resolvingOrCompletingAFailedStepByHandLetsTheTaskFinish() async throws {
        try await Self.withActions { client, harness, _ in
            let resolved = try await Self.failedTask(client, harness, "manual_bypass_workflow")
            let explode = try await harness.stepUUID(resolved, "bypass_explode")
            let (status, step) = try await Self.act(
                client, resolved, explode, #"{"action_type":"resolve_manually","reason":"optional step","resolved_by":"ops"}"#)
            #expect(status == .ok && step["current_state"] == "resolved_manually", "\(step)")
            #expect(Self.conformance(step, "StepResponse").isEmpty)
            #expect(try await harness.waitForTask(resolved, in: ["complete", "error"]) == "complete")
            #expect(try await harness.stepTransitions(resolved, "bypass_after").last == "complete")
            let flags = try await harness.admin.query(
                "SELECT processed, in_process FROM tasker.workflow_steps WHERE workflow_step_uuid = $1", [explode])[0]
            #expect(try flags.decode("processed", as: Bool.self) && !flags.decode("in_process", as: Bool.self))

            let completed = try await Self.failedTask(client, harness, "manual_bypass_workflow")
            let failed = try await harness.stepUUID(completed, "bypass_explode")
            let (done, answer) = try await Self.act(
                client, completed, failed,
                #"{"action_type":"complete_manually","completion_data":{"result":{"value":42},"metadata":{"ticket":"OPS-1"}},"reason":"computed by hand","completed_by":"ops"}"#
            )
            #expect(done == .ok && answer["current_state"] == "complete", "\(answer)")
            #expect(answer["results"]?["result"] == ["value": 42] && answer["results"]?["success"] == true)
            #expect(answer["results"]?["metadata"]?["custom"]?["ticket"] == "OPS-1")
            #expect(answer["results"]?["metadata"]?["custom"]?["manually_completed"] == true)
            #expect(try await harness.waitForTask(completed, in: ["complete", "error"]) == "complete")
            // The dependent read the operator's result.
            #expect(try await harness.result(completed, "bypass_after").result["dependencies"]?["bypass_explode"] == ["value": 42])
            let stored = try await harness.result(completed, "bypass_explode")
            #expect(stored.success && stored.metadata.custom["completed_by"] == "ops")
        }
    }

    @Test func refusalsNameWhatIsWrongAndChangeNothing() async throws {
        try await Self.withActions { client, harness, _ in
            let task = try await Self.failedTask(client, harness, "failure_workflow")
            let other = try await Self.failedTask(client, harness, "manual_bypass_workflow")
            let prepare = try await harness.stepUUID(task, "failure_prepare")
            let explode = try await harness.stepUUID(task, "failure_explode")
            let foreign = try await harness.stepUUID(other, "bypass_explode")
            let before = try await harness.taskTransitions(task)
            let resolve = #"{"action_type":"resolve_manually","reason":"r","resolved_by":"o"}"#
            let cases: [(UUID, UUID, String, HTTPResponse.Status, String, String)] = [
                (task, explode, #"{"action_type":"rerun_everything","reason":"r"}"#, .badRequest, "BAD_REQUEST", "unknown action_type"),
                (task, explode, "{oops", .badRequest, "BAD_REQUEST", "Invalid JSON body"),
                (task, foreign, resolve, .notFound, "NOT_FOUND", "has no workflow step"),
                (UUID(), explode, resolve, .notFound, "NOT_FOUND", "has no workflow step"),
                (
                    task, prepare, #"{"action_type":"reset_for_retry","reason":"r","reset_by":"o"}"#, .badRequest, "BAD_REQUEST",
                    "it is complete; reset_for_retry applies to a step in error"
                ),
                (task, prepare, resolve, .badRequest, "BAD_REQUEST", "it is complete; resolve_manually applies to a step in pending"),
            ]
            for (taskUUID, stepUUID, body, status, code, message) in cases {
                let (answered, refusal) = try await Self.act(client, taskUUID, stepUUID, body)
                #expect(answered == status, "\(body): \(answered) \(refusal)")
                #expect(refusal["error"]?["code"]?.stringValue == code, "\(body): \(refusal)")
                #expect(refusal["error"]?["message"]?.stringValue?.contains(message) == true, "\(body): \(refusal)")
            }
            // Without steps:resolve: refused, naming the permission.
            let (forbidden, denial) = try await Self.act(
                client, task, explode, resolve, headers: [HTTPField.Name("X-API-Key")!: Self.readerKey])
            #expect(forbidden == .forbidden && denial["error"]?["message"] == "Missing required permission: steps:resolve")
            let (anonymous, _) = try await Self.act(client, task, explode, resolve, headers: [:])
            #expect(anonymous == .unauthorized)
            // Nothing moved.
            #expect(try await harness.taskTransitions(task) == before)
            #expect(try await harness.stepTransitions(task, "failure_explode").last == "error")
            #expect(try await harness.stepTransitions(other, "bypass_explode").last == "error")
        }
    }
}
