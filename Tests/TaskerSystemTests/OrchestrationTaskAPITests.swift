import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerPostgres

/// The orchestration's task REST API (`OrchestrationRoutes` over `TaskQueries`) on a test database with
/// the example templates registered: upstream's status codes and error shape for good and hostile input,
/// answers checked against the database, and the worker's auth rules on the orchestration's permissions.
@Suite(.timeLimit(.minutes(3))) struct OrchestrationTaskAPITests {
    typealias Client = any TestClientProtocol

    /// Runs `body` with a client of the API (no orchestration loop running: tasks stay where creation puts them).
    static func withAPI(
        auth: WorkerConfiguration.Auth = WorkerConfiguration.Auth(),
        _ body: @escaping @Sendable (Client, OrchestrationHarness) async throws -> Void
    ) async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let pool = db.pool(maxConnections: 4)
            let service = OrchestrationService(pool: pool, databaseURL: db.url)
            let authenticator = try await OrchestrationWebServer.authenticator(auth, logger: Logger(label: "test.auth"))
            let router = OrchestrationRoutes.makeRouter(
                queries: TaskQueries(pool: pool, orchestration: service), authenticator: authenticator,
                requestTimeout: .seconds(30))
            do {
                try await Application(router: router).test(.router) { client in try await body(client, harness) }
            } catch {
                await pool.close()
                throw error
            }
            await pool.close()
        }
    }

    static let linearRequest =
        #"{"namespace":"examples","name":"linear_workflow","version":"1.0.0","context":{"number":3},"initiator":"api-test","source_system":"tests","reason":"checking the API"}"#

    @Test func createGetListAndCancelAnswerUpstreamShapesThatMatchTheDatabase() async throws {
        try await Self.withAPI { client, harness in
            let (created, task) = try await requestJSON(client, .post, "/v1/tasks", body: Self.linearRequest)
            #expect(created == .created, "\(task)")
            let uuid = try #require(task["task_uuid"]?.stringValue)
            #expect(uuid == uuid.lowercased())
            #expect(task["namespace"]?.stringValue == "examples" && task["name"]?.stringValue == "linear_workflow")
            #expect(task["context"]?["number"] == .int(3))
            #expect(task["initiator"]?.stringValue == "api-test" && task["source_system"]?.stringValue == "tests")
            let rows = try await harness.admin.query(
                "SELECT count(*)::bigint AS n FROM tasker.workflow_steps WHERE task_uuid = $1::uuid", [UUID(uuidString: uuid)!])
            let stepCount: Int = try rows[0].decode("n")
            #expect(task["total_steps"]?.intValue == stepCount && stepCount > 0)
            if case .array(let steps) = task["steps"] ?? .null { #expect(steps.count == stepCount) } else { Issue.record("no steps array") }

            let (got, again) = try await requestJSON(client, .get, "/v1/tasks/\(uuid)")
            #expect(got == .ok && again["task_uuid"]?.stringValue == uuid)
            let (upper, _) = try await requestJSON(client, .get, "/v1/tasks/\(uuid.uppercased())")
            #expect(upper == .ok)

            let (listed, list) = try await requestJSON(client, .get, "/v1/tasks?namespace=examples&per_page=100000")
            #expect(listed == .ok)
            #expect(list["pagination"]?["per_page"]?.intValue == TaskListFilter.maxPerPage)
            #expect(list["pagination"]?["total_count"]?.intValue == 1)
            let (_, none) = try await requestJSON(client, .get, "/v1/tasks?namespace=nowhere")
            #expect(none["pagination"]?["total_count"]?.intValue == 0)
            let (_, byState) = try await requestJSON(client, .get, "/v1/tasks?status=complete")
            #expect(byState["pagination"]?["total_count"]?.intValue == 0)

            let (stepsStatus, steps) = try await requestJSON(client, .get, "/v1/tasks/\(uuid)/workflow_steps")
            #expect(stepsStatus == .ok)
            guard case .array(let stepList) = steps, let first = stepList.first, let stepUUID = first["step_uuid"]?.stringValue else {
                Issue.record("no steps: \(steps)")
                return
            }
            #expect(stepList.count == stepCount)
            let (oneStatus, one) = try await requestJSON(client, .get, "/v1/tasks/\(uuid)/workflow_steps/\(stepUUID)")
            #expect(oneStatus == .ok && one["step_uuid"]?.stringValue == stepUUID && one["task_uuid"]?.stringValue == uuid)
            let (auditStatus, audit) = try await requestJSON(client, .get, "/v1/tasks/\(uuid)/workflow_steps/\(stepUUID)/audit")
            #expect(auditStatus == .ok && audit == .array([]))

            try await harness.admin.query(
                """
                INSERT INTO tasker.tasks_dlq (task_uuid, original_state, dlq_reason, task_snapshot)
                VALUES ($1::uuid, 'steps_in_process', 'staleness_timeout', '{"snapshot": true}')
                """, [UUID(uuidString: uuid)!])
            let (dlqStatus, dlq) = try await requestJSON(client, .get, "/v1/dlq?resolution_status=pending")
            guard case .array(let entries) = dlq, let entry = entries.first else {
                Issue.record("no DLQ entries: \(dlqStatus) \(dlq)")
                return
            }
            #expect(entries.count == 1 && entry["task_uuid"]?.stringValue == uuid)
            #expect(
                entry["dlq_reason"]?.stringValue == "StalenessTimeout" && entry["resolution_status"]?.stringValue == "Pending"
                    && entry["task_snapshot"]?["snapshot"] == .bool(true))
            let (_, resolved) = try await requestJSON(client, .get, "/v1/dlq?resolution_status=manually_resolved")
            #expect(resolved == .array([]))
            let (ofTaskStatus, ofTask) = try await requestJSON(client, .get, "/v1/dlq/task/\(uuid)")
            #expect(ofTaskStatus == .ok && ofTask["dlq_entry_uuid"] == entry["dlq_entry_uuid"])

            let (cancelled, afterCancel) = try await requestJSON(client, .delete, "/v1/tasks/\(uuid)")
            #expect(cancelled == .ok && afterCancel["status"]?.stringValue == "cancelled", "\(afterCancel)")
            let state = try await harness.admin.query(
                "SELECT to_state FROM tasker.task_transitions WHERE task_uuid = $1::uuid AND most_recent", [UUID(uuidString: uuid)!])
            #expect(try state[0].decode("to_state") as String == "cancelled")
            let openSteps = try await harness.admin.query(
                """
                SELECT count(*)::bigint AS n FROM tasker.workflow_steps ws JOIN tasker.workflow_step_transitions t
                    ON t.workflow_step_uuid = ws.workflow_step_uuid AND t.most_recent
                 WHERE ws.task_uuid = $1::uuid AND t.to_state <> 'cancelled'
                """, [UUID(uuidString: uuid)!])
            #expect(try openSteps[0].decode("n") as Int == 0)
            let (twice, refusal) = try await requestJSON(client, .delete, "/v1/tasks/\(uuid)")
            #expect(twice == .badRequest && refusal["error"]?["code"]?.stringValue == "BAD_REQUEST")
        }
    }

    @Test func unknownTemplatesAndDuplicatesAreClearErrors() async throws {
        try await Self.withAPI { client, _ in
            let unknown = Self.linearRequest.replacingOccurrences(of: "linear_workflow", with: "no_such_workflow")
            let (missing, error) = try await requestJSON(client, .post, "/v1/tasks", body: unknown)
            #expect(missing == .notFound && error["error"]?["code"]?.stringValue == "NOT_FOUND")
            #expect(error["error"]?["message"]?.stringValue?.contains("examples/no_such_workflow/1.0.0") == true, "\(error)")
            let (first, _) = try await requestJSON(client, .post, "/v1/tasks", body: Self.linearRequest)
            #expect(first == .created)
            let (duplicate, conflict) = try await requestJSON(client, .post, "/v1/tasks", body: Self.linearRequest)
            #expect(duplicate == .conflict && conflict["error"]?["code"]?.stringValue == "CONFLICT", "\(conflict)")
        }
    }

    @Test func hostileInputGetsUpstreamErrorShapes() async throws {
        try await Self.withAPI { client, _ in
            let cases: [(HTTPRequest.Method, String, String?, HTTPResponse.Status, String)] = [
                (.get, "/v1/tasks/not-a-uuid", nil, .badRequest, "INVALID_UUID"),
                (.delete, "/v1/tasks/1234", nil, .badRequest, "INVALID_UUID"),
                (.get, "/v1/tasks/\(UUID().uuidString)", nil, .notFound, "NOT_FOUND"),
                (.get, "/v1/tasks/\(UUID().uuidString)/workflow_steps", nil, .notFound, "NOT_FOUND"),
                (.get, "/v1/tasks/\(UUID().uuidString)/workflow_steps/\(UUID().uuidString)/audit", nil, .notFound, "NOT_FOUND"),
                (.delete, "/v1/tasks/\(UUID().uuidString)", nil, .notFound, "NOT_FOUND"),
                (.get, "/v1/tasks?status=exploded", nil, .badRequest, "BAD_REQUEST"),
                (.get, "/v1/tasks?page=0", nil, .badRequest, "BAD_REQUEST"),
                (.get, "/v1/tasks?per_page=lots", nil, .badRequest, "BAD_REQUEST"),
                (.get, "/v1/tasks?page=99999999999999999999999", nil, .badRequest, "BAD_REQUEST"),
                (.get, "/v1/dlq?resolution_status=whatever", nil, .badRequest, "BAD_REQUEST"),
                (.get, "/v1/dlq?limit=-1", nil, .badRequest, "BAD_REQUEST"),
                (.get, "/v1/dlq/task/\(UUID().uuidString)", nil, .notFound, "NOT_FOUND"),
                (.post, "/v1/tasks", "{not json", .badRequest, "BAD_REQUEST"),
                (.post, "/v1/tasks", "[1,2]", .badRequest, "BAD_REQUEST"),
                (.post, "/v1/tasks", #"{"namespace":"examples","name":"linear_workflow"}"#, .badRequest, "BAD_REQUEST"),
                (.post, "/v1/tasks", #"{"namespace":1,"name":"x","version":"1"}"#, .badRequest, "BAD_REQUEST"),
                (.post, "/v1/tasks", "", .badRequest, "BAD_REQUEST"),
            ]
            for (method, uri, body, status, code) in cases {
                let (answered, json) = try await requestJSON(client, method, uri, body: body)
                #expect(answered == status, "\(method) \(uri): \(answered) \(json)")
                #expect(json["error"]?["code"]?.stringValue == code, "\(method) \(uri): \(json)")
                #expect(json["error"]?["message"]?.stringValue?.isEmpty == false)
            }
            let (dlq, entries) = try await requestJSON(client, .get, "/v1/dlq?limit=100000")
            #expect(dlq == .ok && entries == .array([]))
            let (health, body) = try await requestJSON(client, .get, "/health")
            #expect(health == .ok && body["status"]?.stringValue == "healthy")
        }
    }

    @Test func apiKeysGuardTheTaskRoutesWithUpstreamPermissions() async throws {
        var auth = WorkerConfiguration.Auth()
        auth.enabled = true
        auth.apiKeysEnabled = true
        auth.apiKeys = [
            WorkerConfiguration.APIKey(key: "reader-key-0123456789", permissions: ["tasks:read", "tasks:list"]),
            WorkerConfiguration.APIKey(key: "writer-key-0123456789", permissions: ["tasks:*"]),
        ]
        try await Self.withAPI(auth: auth) { client, _ in
            func key(_ value: String) -> HTTPFields { [HTTPField.Name("X-API-Key")!: value] }
            let (anonymous, refusal) = try await requestJSON(client, .get, "/v1/tasks")
            #expect(anonymous == .unauthorized && refusal["error"]?["code"]?.stringValue == "AUTHENTICATION_FAILED")
            let (wrong, _) = try await requestJSON(client, .get, "/v1/tasks", headers: key("nope"))
            #expect(wrong == .unauthorized)
            let (reader, _) = try await requestJSON(client, .get, "/v1/tasks", headers: key("reader-key-0123456789"))
            #expect(reader == .ok)
            let (forbidden, denial) = try await requestJSON(
                client, .post, "/v1/tasks", body: Self.linearRequest, headers: key("reader-key-0123456789"))
            #expect(forbidden == .forbidden && denial["error"]?["message"]?.stringValue == "Missing required permission: tasks:create")
            let (writer, _) = try await requestJSON(
                client, .post, "/v1/tasks", body: Self.linearRequest, headers: key("writer-key-0123456789"))
            #expect(writer == .created)
            let (health, _) = try await requestJSON(client, .get, "/health")
            #expect(health == .ok)
        }
    }
}
