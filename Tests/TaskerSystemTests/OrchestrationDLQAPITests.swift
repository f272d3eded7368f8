import Foundation
import HTTPTypes
import HummingbirdTesting
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerPostgres

/// The DLQ's investigation API (`PATCH /v1/dlq/entry/{uuid}`, `GET /v1/dlq/stats`,
/// `/v1/dlq/investigation-queue`, `/v1/dlq/staleness`) and the task summary (`GET /v1/tasks/{uuid}/summary`)
/// on a test database: entries made by upstream's own `create_dlq_entry`, tasks made stale by moving
/// their state's start back; answers checked against the database and the OpenAPI document's schemas,
/// upstream's serde spelling of the DLQ's enums, the update's effects and refusals, the permissions.
@Suite(.timeLimit(.minutes(3))) struct OrchestrationDLQAPITests {
    static let operatorHeaders: HTTPFields = [HTTPField.Name("X-API-Key")!: OrchestrationStepActionTests.operatorKey]
    static let readerHeaders: HTTPFields = [HTTPField.Name("X-API-Key")!: OrchestrationStepActionTests.readerKey]

    /// `GET uri` as the operator, its answer conforming to `[schema]` (or `schema`).
    static func read(_ client: any TestClientProtocol, _ uri: String, list schema: String) async throws -> [JSONValue] {
        let (status, body) = try await requestJSON(client, .get, uri, headers: operatorHeaders)
        #expect(status == .ok, "\(uri): \(body)")
        guard case .array(let items) = body else {
            Issue.record("\(uri) is not an array: \(body)")
            return []
        }
        for item in items { #expect(OrchestrationStepActionTests.conformance(item, schema).isEmpty, "\(uri): \(item)") }
        return items
    }

    /// A stale-looking task: created (its steps enqueued), no worker, its state entered `minutes` ago.
    /// Tasks of `linear_workflow` waiting in `steps_in_process` for `minutes` each. All are submitted before
    /// any is backdated: each submission starts an orchestration whose staleness detector, at start, would
    /// move a task already backdated past its threshold to `error`.
    static func waitingTasks(_ harness: OrchestrationHarness, minutes: [Int]) async throws -> [UUID] {
        var tasks: [UUID] = []
        for (index, _) in minutes.enumerated() {
            tasks.append(try await harness.submittedTask("linear_workflow", ["number": .int(Int64(index + 1))]).taskUUID)
        }
        for (task, minutes) in zip(tasks, minutes) {
            try await harness.admin.query(
                """
                UPDATE tasker.task_transitions SET created_at = NOW() - make_interval(mins => $2::integer)
                 WHERE task_uuid = $1::uuid AND most_recent
                """, [task, minutes])
        }
        return tasks
    }

    @Test func investigationsAreUpdatedCountedQueuedAndSummarized() async throws {
        try await OrchestrationStepActionTests.withActions { client, harness, _ in
            let task = try await OrchestrationStepActionTests.failedTask(client, harness, "failure_workflow")
            let created: UUID? = try await harness.admin.query(
                """
                SELECT tasker.create_dlq_entry($1::uuid, 'examples', 'failure_workflow', 'steps_in_process', 45, 30,
                                               'staleness_timeout') AS entry
                """, [task])[0].decode("entry")
            let entry = try #require(created)

            // The summary: the task, its template, its steps with the failure's kind, its pending DLQ entry.
            let (read, summary) = try await requestJSON(client, .get, "/v1/tasks/\(task.lowercased)/summary", headers: Self.readerHeaders)
            #expect(read == .ok, "\(summary)")
            #expect(OrchestrationStepActionTests.conformance(summary, "TaskSummaryResponse").isEmpty, "\(summary)")
            #expect(summary["task"]?["task_uuid"]?.stringValue == task.lowercased && summary["task"]?["status"] == "error")
            #expect(summary["task"]?["total_steps"] == 2 && summary["task"]?["execution_status"] == "blocked_by_failures")
            let templateSteps = summary["template"]?["steps"]?.arrayItems ?? []
            #expect(templateSteps.map { $0["name"]?.stringValue ?? "" } == ["failure_prepare", "failure_explode"])
            #expect(templateSteps.last?["handler"] == "tasker.fail" && templateSteps.last?["dependencies"] == ["failure_prepare"])
            let steps = summary["steps"]?.arrayItems ?? []
            let prepare = steps.first { $0["name"] == "failure_prepare" }
            let explode = steps.first { $0["name"] == "failure_explode" }
            #expect(steps.count == 2)
            #expect(prepare?["error"] == .null && prepare?["current_state"] == "complete")
            #expect(explode?["current_state"] == "error" && explode?["error"]?["retryable"] == false)
            #expect(explode?["error"]?["error_type"]?.stringValue?.isEmpty == false, "\(steps)")
            #expect(summary["dlq"] == ["in_dlq": true, "dlq_reason": "staleness_timeout", "resolution_status": "pending"])
            #expect(summary["links"]?["steps"]?.stringValue == "/v1/tasks/\(task.lowercased)/workflow_steps")
            let (missing, _) = try await requestJSON(client, .get, "/v1/tasks/\(UUID().uuidString)/summary", headers: Self.readerHeaders)
            #expect(missing == .notFound)

            // Stats, the investigation queue, the entries: upstream's serde spelling of the enums.
            let stats = try await Self.read(client, "/v1/dlq/stats", list: "DlqStats")
            #expect(stats.count == 1 && stats.first?["dlq_reason"] == "StalenessTimeout" && stats.first?["pending"] == 1)
            let queue = try await Self.read(client, "/v1/dlq/investigation-queue?limit=5", list: "DlqInvestigationQueueEntry")
            #expect(queue.count == 1 && queue.first?["dlq_entry_uuid"]?.stringValue == entry.lowercased)
            #expect(queue.first?["time_in_state_minutes"] == 45 && queue.first?["namespace_name"] == "examples")
            #expect((queue.first?["priority_score"]?.doubleValue ?? 0) >= 100)
            for spelling in ["Pending", "pending"] {
                let entries = try await Self.read(client, "/v1/dlq?resolution_status=\(spelling)", list: "DlqEntry")
                #expect(entries.map { $0["dlq_entry_uuid"]?.stringValue } == [entry.lowercased])
                #expect(entries.first?["resolution_status"] == "Pending" && entries.first?["dlq_reason"] == "StalenessTimeout")
            }

            // The investigation resolved: upstream's answer, the row, the reads.
            let update =
                #"{"resolution_status":"ManuallyResolved","resolution_notes":"fixed the step","resolved_by":"ops@example.com","metadata":{"root_cause":"db"}}"#
            let (denied, denial) = try await requestJSON(
                client, .patch, "/v1/dlq/entry/\(entry.lowercased)", body: update, headers: Self.readerHeaders)
            #expect(denied == .forbidden && denial["error"]?["message"] == "Missing required permission: dlq:update")
            let (updated, answer) = try await requestJSON(
                client, .patch, "/v1/dlq/entry/\(entry.lowercased)", body: update, headers: Self.operatorHeaders)
            #expect(updated == .ok, "\(answer)")
            #expect(
                answer == [
                    "success": true, "message": "Investigation status updated successfully", "dlq_entry_uuid": .string(entry.lowercased),
                ])
            #expect(OrchestrationStepActionTests.conformance(answer, "UpdateInvestigationResponse").isEmpty)
            let row = try await harness.admin.query(
                """
                SELECT resolution_status::text AS status, resolution_timestamp IS NOT NULL AS stamped, resolution_notes,
                       resolved_by, metadata FROM tasker.tasks_dlq WHERE dlq_entry_uuid = $1
                """, [entry])[0]
            #expect(try row.decode("status", as: String.self) == "manually_resolved" && row.decode("stamped", as: Bool.self))
            #expect(try row.decode("resolution_notes", as: String.self) == "fixed the step")
            #expect(try row.decode("resolved_by", as: String.self) == "ops@example.com")
            #expect(try row.decode("metadata", as: JSONValue.self) == ["root_cause": "db"])
            let (_, ofTask) = try await requestJSON(client, .get, "/v1/dlq/task/\(task.lowercased)", headers: Self.readerHeaders)
            #expect(ofTask["resolution_status"] == "ManuallyResolved" && ofTask["resolved_by"] == "ops@example.com")
            #expect(try await Self.read(client, "/v1/dlq/investigation-queue", list: "DlqInvestigationQueueEntry").isEmpty)
            let resolvedStats = try await Self.read(client, "/v1/dlq/stats", list: "DlqStats")
            #expect(resolvedStats.first?["manually_resolved"] == 1 && resolvedStats.first?["pending"] == 0)
            let (_, afterSummary) = try await requestJSON(client, .get, "/v1/tasks/\(task.lowercased)/summary", headers: Self.readerHeaders)
            #expect(afterSummary["dlq"]?["in_dlq"] == false)
            // An empty update changes nothing but `updated_at`; notes stay.
            let (empty, _) = try await requestJSON(
                client, .patch, "/v1/dlq/entry/\(entry.lowercased)", body: "{}", headers: Self.operatorHeaders)
            #expect(empty == .ok)
            #expect(
                try await harness.admin.query("SELECT resolution_notes FROM tasker.tasks_dlq WHERE dlq_entry_uuid = $1", [entry])[0]
                    .decode("resolution_notes", as: String.self) == "fixed the step")

            // A second investigation of the task: the first cannot become pending again beside it.
            let second: UUID? = try await harness.admin.query(
                "SELECT tasker.create_dlq_entry($1::uuid, 'examples', 'failure_workflow', 'error', 5, 30, 'manual_dlq') AS entry",
                [task])[0].decode("entry")
            #expect(second != nil)
            let (conflict, clash) = try await requestJSON(
                client, .patch, "/v1/dlq/entry/\(entry.lowercased)", body: #"{"resolution_status":"pending"}"#,
                headers: Self.operatorHeaders)
            #expect(conflict == .conflict && clash["error"]?["code"] == "CONFLICT", "\(clash)")
            #expect(
                try await harness.admin.query(
                    "SELECT resolution_status::text AS s FROM tasker.tasks_dlq WHERE dlq_entry_uuid = $1", [entry])[0]
                    .decode("s", as: String.self) == "manually_resolved")

            // Refusals.
            let refusals: [(String, String, HTTPResponse.Status, String)] = [
                ("/v1/dlq/entry/\(UUID().uuidString)", "{}", .notFound, "NOT_FOUND"),
                ("/v1/dlq/entry/\(entry.lowercased)", #"{"resolution_status":"Closed"}"#, .badRequest, "BAD_REQUEST"),
                ("/v1/dlq/entry/\(entry.lowercased)", #"{"metadata":{"time_in_state_minutes":"forever"}}"#, .badRequest, "BAD_REQUEST"),
                ("/v1/dlq/entry/not-a-uuid", "{}", .badRequest, "INVALID_UUID"),
            ]
            for (uri, body, status, code) in refusals {
                let (answered, refusal) = try await requestJSON(client, .patch, uri, body: body, headers: Self.operatorHeaders)
                #expect(answered == status && refusal["error"]?["code"]?.stringValue == code, "\(uri) \(body): \(refusal)")
            }
            let (statsDenied, _) = try await requestJSON(client, .get, "/v1/dlq/stats", headers: Self.readerHeaders)
            #expect(statsDenied == .forbidden, "dlq:stats is its own permission")
        }
    }

    @Test func stalenessListsWaitingTasksStaleFirst() async throws {
        try await OrchestrationTaskAPITests.withAPI(auth: Self.auth) { client, harness in
            // steps_in_process's threshold is 30 minutes: 45 is stale, 25 a warning (≥ 80 %), 1 healthy.
            let tasks = try await Self.waitingTasks(harness, minutes: [45, 25, 1])
            let (stale, warning, healthy) = (tasks[0], tasks[1], tasks[2])
            let rows = try await Self.read(client, "/v1/dlq/staleness", list: "StalenessMonitoring")
            #expect(rows.map { $0["task_uuid"]?.stringValue } == [stale, warning, healthy].map(\.lowercased))
            #expect(rows.map { $0["health_status"]?.stringValue ?? "" } == ["stale", "warning", "healthy"])
            #expect(rows.first?["current_state"] == "steps_in_process" && rows.first?["staleness_threshold_minutes"] == 30)
            #expect(rows.first?["time_in_state_minutes"] == 45 && rows.first?["namespace_name"] == "examples")
            let limited = try await Self.read(client, "/v1/dlq/staleness?limit=1", list: "StalenessMonitoring")
            #expect(limited.map { $0["task_uuid"]?.stringValue } == [stale.lowercased])
            let (capped, _) = try await requestJSON(client, .get, "/v1/dlq/staleness?limit=100000", headers: Self.operatorHeaders)
            #expect(capped == .ok)
        }
    }

    /// The step-action suite's keys, for `OrchestrationTaskAPITests.withAPI`.
    static var auth: WorkerConfiguration.Auth {
        var auth = WorkerConfiguration.Auth()
        auth.enabled = true
        auth.apiKeysEnabled = true
        auth.apiKeys = [
            WorkerConfiguration.APIKey(key: OrchestrationStepActionTests.operatorKey, permissions: ["tasks:*", "steps:*", "dlq:*"]),
            WorkerConfiguration.APIKey(key: OrchestrationStepActionTests.readerKey, permissions: ["tasks:read", "steps:read", "dlq:read"]),
        ]
        return auth
    }
}
