import Foundation
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerPostgres

/// The task API's response sizes and database budget (issue #26, item 6), against the real server
/// and database: lists carry summaries, one document's large fields are bounded, health never waits
/// behind the API's connections, and an API without a free connection sheds with 503 + `Retry-After`.
@Suite(.timeLimit(.minutes(3))) struct OrchestrationTaskAPIBudgetTests {
    static let json = [("Content-Type", "application/json")]

    /// A linear example request whose context holds `bytes` bytes of padding (`tag` keeps identities apart).
    static func largeRequest(bytes: Int, tag: Int) -> String {
        OrchestrationTaskAPIInputTests.request([
            "context": #"{"number":3,"tag":\#(tag),"padding":"\#(String(repeating: "p", count: bytes))"}"#
        ])
    }

    @Test func listsOfLargeTasksStaySmallAndOneTasksContextIsBounded() async throws {
        try await LiveOrchestrationAPI.with { api in
            var uuids: [String] = []
            for tag in 0..<3 {
                let created = try await api.request(
                    "POST", "/v1/tasks", headers: Self.json, body: Self.largeRequest(bytes: 3 << 20, tag: tag))
                #expect(created.status == 201, "\(created.body.prefix(300))")
                uuids.append(try #require(created.json["task_uuid"]?.stringValue))
            }
            // 9 MiB of contexts; the page is a few KiB (upstream's shape: every field, context a marker, no steps).
            let list = try await api.request("GET", "/v1/tasks?per_page=100")
            #expect(list.status == 200)
            #expect(list.body.utf8.count < 16 << 10, "the list is \(list.body.utf8.count) bytes")
            guard case .array(let tasks) = list.json["tasks"] ?? .null else {
                Issue.record("no tasks array: \(list.body.prefix(300))")
                return
            }
            #expect(Set(tasks.compactMap { $0["task_uuid"]?.stringValue }) == Set(uuids))
            for task in tasks {
                #expect(task["context"]?["_tasker_omitted"]?["reason"]?.stringValue?.contains("GET /v1/tasks/") == true, "\(task)")
                #expect(task["steps"] == .array([]) && task["total_steps"]?.intValue.map { $0 > 0 } == true)
            }

            // One task: the 3 MiB context over the 1 MiB field limit is replaced by the marker with its size.
            let one = try await api.request("GET", "/v1/tasks/\(uuids[0])")
            #expect(one.status == 200)
            #expect(one.body.utf8.count < 64 << 10, "the task is \(one.body.utf8.count) bytes")
            let marker = one.json["context"]?["_tasker_omitted"]
            #expect(marker?["limit"]?.intValue == TaskQueries.defaultDocumentFieldLimit, "\(String(describing: marker))")
            #expect(marker?["bytes"]?.intValue.map { $0 > 3 << 20 } == true, "\(String(describing: marker))")
            // A context under the limit comes whole.
            let small = try await api.request("POST", "/v1/tasks", headers: Self.json, body: Self.largeRequest(bytes: 1000, tag: 9))
            #expect(small.json["context"]?["padding"]?.stringValue?.count == 1000, "\(small.body.prefix(300))")
        }
    }

    /// Every connection the API may hold is taken (as by slow list clients): `/health` still answers
    /// healthy on its own connection, and the API answers 503 with `Retry-After` after its short wait,
    /// not 500 after the pool's acquire timeout; once a connection is free it serves again.
    @Test func healthAnswersAndTheAPIShedsWhileItsConnectionsAreHeld() async throws {
        try await LiveOrchestrationAPI.with(maxConnections: 4, operatorMaxConnections: 2) { api in
            // Warm the probe's connection once, as a running server's first probe does.
            #expect(try await api.request("GET", "/health").status == 200)
            var held: [PostgresConnection] = []
            for _ in 0..<2 { held.append(try await api.pool.acquire(lane: .operator)) }
            do {
                // Healthy means the probe answered within its own deadline (`DatabaseProbe.deadline`).
                let health = try await api.request("GET", "/health")
                #expect(health.status == 200 && health.json["status"] == "healthy", "\(health.body)")
                let ready = try await api.request("GET", "/health/ready")
                #expect(ready.status == 200, "\(ready.body)")

                let list = try await api.request("GET", "/v1/tasks")
                #expect(list.status == 503, "\(list.status) \(list.body)")
                #expect(list.json["error"]?["code"] == "SERVICE_UNAVAILABLE")
                #expect(list.header("Retry-After") == "1", "\(list.head)")
            } catch {
                for connection in held { await api.pool.release(connection) }
                throw error
            }
            for connection in held { await api.pool.release(connection) }
            #expect(try await api.request("GET", "/v1/tasks").status == 200)
        }
    }
}
