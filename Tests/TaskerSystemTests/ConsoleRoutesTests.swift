import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerPostgres

/// The task console's routes (`ConsoleRoutes`) on a test database: the console-only JSON (counts by
/// state, a task's DAG with the parents from `workflow_step_edges`) checked against the database, hostile
/// uuids, and the API's permissions on the data routes. (The page and its files with the console's
/// Content-Security-Policy: `ConsolePageTests` in TaskerOrchestrationTests.) The page itself runs in
/// Chromium in bindings/python/tests/test_console.py.
@Suite(.timeLimit(.minutes(3))) struct ConsoleRoutesTests {
    static let diamondRequest =
        #"{"namespace":"examples","name":"diamond_workflow","version":"1.0.0","context":{"number":3},"initiator":"console-test","source_system":"tests","reason":"checking the console"}"#

    @Test func summaryAndDAGAnswerWhatTheDatabaseHolds() async throws {
        try await OrchestrationTaskAPITests.withAPI { client, harness in
            let (created, task) = try await requestJSON(client, .post, "/v1/tasks", body: Self.diamondRequest)
            #expect(created == .created)
            let uuid = try #require(task["task_uuid"]?.stringValue)
            let state = try #require(task["status"]?.stringValue)

            let (summarized, summary) = try await requestJSON(client, .get, "/console/api/summary")
            #expect(summarized == .ok)
            #expect(summary["counts"] == .object([state: .int(1)]), "\(summary)")
            #expect(summary["dlq_pending"]?.intValue == 0)
            guard case .array(let namespaces) = summary["namespaces"] ?? .null else {
                Issue.record("no namespaces: \(summary)")
                return
            }
            #expect(namespaces.contains(.string("examples")))

            let (read, dag) = try await requestJSON(client, .get, "/console/api/tasks/\(uuid)/dag")
            #expect(read == .ok && dag["task_uuid"]?.stringValue == uuid && dag["truncated"]?.boolValue == false)
            guard case .array(let steps) = dag["steps"] ?? .null else {
                Issue.record("no steps: \(dag)")
                return
            }
            var names: [String: String] = [:]
            for step in steps { names[step["step_uuid"]?.stringValue ?? ""] = step["name"]?.stringValue }
            func parents(of name: String) -> Set<String> {
                guard let step = steps.first(where: { $0["name"]?.stringValue == name }),
                    case .array(let parents) = step["parents"] ?? .null
                else { return ["missing"] }
                return Set(parents.compactMap { $0.stringValue.flatMap { names[$0] } })
            }
            #expect(Set(names.values) == ["diamond_start", "diamond_left", "diamond_right", "diamond_merge"])
            #expect(parents(of: "diamond_start").isEmpty)
            #expect(parents(of: "diamond_left") == ["diamond_start"] && parents(of: "diamond_right") == ["diamond_start"])
            #expect(parents(of: "diamond_merge") == ["diamond_left", "diamond_right"])
            let rows = try await harness.admin.query(
                "SELECT count(*)::bigint AS n FROM tasker.workflow_step_edges e JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = e.to_step_uuid WHERE ws.task_uuid = $1::uuid",
                [UUID(uuidString: uuid)!])
            let edges: Int = try rows[0].decode("n")
            #expect(edges == 4)
            for step in steps {
                #expect(step["claimed_at"] == .null && step["completed_at"] == .null, "nothing ran yet: \(step)")
                #expect(step["created_at"]?.stringValue?.hasSuffix("Z") == true)
            }

            let (missing, _) = try await requestJSON(
                client, .get, "/console/api/tasks/0190a000-0000-7000-8000-000000000000/dag")
            #expect(missing == .notFound)
            let (hostile, refusal) = try await requestJSON(client, .get, "/console/api/tasks/%3Cscript%3E/dag")
            #expect(hostile == .badRequest && refusal["error"]?["code"]?.stringValue == "INVALID_UUID")
        }
    }

    @Test func theDataRoutesNeedTheAPIsPermissionsButThePageDoesNot() async throws {
        var auth = WorkerConfiguration.Auth()
        auth.enabled = true
        auth.apiKeysEnabled = true
        auth.apiKeys = [WorkerConfiguration.APIKey(key: "lister-key-0123456789", permissions: ["tasks:list"])]
        try await OrchestrationTaskAPITests.withAPI(auth: auth) { client, _ in
            let key: HTTPFields = [HTTPField.Name("X-API-Key")!: "lister-key-0123456789"]
            let (page, _) = try await requestJSON(client, .get, "/console")
            #expect(page == .ok)
            let (settings, body) = try await requestJSON(client, .get, "/console/api/auth")
            #expect(settings == .ok && body["enabled"]?.boolValue == true)
            let (anonymous, _) = try await requestJSON(client, .get, "/console/api/summary")
            #expect(anonymous == .unauthorized)
            let (lister, _) = try await requestJSON(client, .get, "/console/api/summary", headers: key)
            #expect(lister == .ok)
            let (forbidden, _) = try await requestJSON(
                client, .get, "/console/api/tasks/0190a000-0000-7000-8000-000000000000/dag", headers: key)
            #expect(forbidden == .forbidden)
        }
    }
}
