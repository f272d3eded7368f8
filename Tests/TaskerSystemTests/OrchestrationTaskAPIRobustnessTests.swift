import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import ServiceLifecycle
import TaskerAuth
import TaskerHTTP
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerPostgres

/// The orchestration's REST server under hostile clients (the worker's connection limits) and the
/// task API's cancellation racing the orchestration's own transitions.
@Suite(.timeLimit(.minutes(3))) struct OrchestrationTaskAPIRobustnessTests {
    /// A slowloris client is closed after `header_read_timeout_seconds`, and one client address cannot
    /// open more than `max_connections_per_address` connections, over real sockets.
    @Test func webServerClosesSlowRequestHeadsAndCapsConnectionsPerAddress() async throws {
        try await LiveOrchestrationAPI.with(configure: { web in
            web.headerReadTimeoutSeconds = 1
            web.maxConnectionsPerAddress = 2
        }) { api in
            let connections = api.connections
            // A request head trickling in one byte every 200 ms is closed after ~1 s.
            let slow = try await connections.connect(host: api.host, port: api.port, from: "127.0.0.1")
            try await slow.send("GET /health/live HTTP/1.1\r\nHost: orchestration\r\n")
            let started = ContinuousClock.now
            while !slow.isClosed, started.duration(to: .now) < .seconds(10) {
                try? await slow.send("X")
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(slow.isClosed, "a stalled request head was not closed within 10 s (header timeout 1 s)")

            // Two connections from one address are served; a third is closed at once.
            var open: [RawConnection] = []
            for _ in 0..<2 {
                let connection = try await connections.connect(host: api.host, port: api.port, from: "127.0.0.2")
                try await connection.send("GET /health/live HTTP/1.1\r\nHost: orchestration\r\n\r\n")
                try await waitUntil { connection.received.contains("HTTP/1.1 200") }
                open.append(connection)
            }
            let third = try await connections.connect(host: api.host, port: api.port, from: "127.0.0.2")
            try await waitUntil { third.isClosed }
            #expect(third.isClosed && third.receivedCount == 0, "a 3rd connection from one address was kept")
            let other = try await connections.connect(host: api.host, port: api.port, from: "127.0.0.3")
            try await other.send("GET /health/live HTTP/1.1\r\nHost: orchestration\r\n\r\n")
            try await waitUntil { other.received.contains("HTTP/1.1 200") }
            #expect(open.allSatisfy { !$0.isClosed })
        }
    }

    /// `DELETE /v1/tasks/{uuid}` while the orchestration moves the task (a transition not yet
    /// committed): the cancel waits, then cancels from the state the orchestration reached, instead of
    /// failing with a unique violation; a step a worker holds (`in_progress`) is left to finish.
    @Test func cancelWaitsOutAConcurrentTransitionAndLeavesRunningStepsAlone() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let pool = db.pool(maxConnections: 4)
            let service = OrchestrationService(pool: pool, databaseURL: db.url)
            let queries = TaskQueries(pool: pool, orchestration: service)
            let other = try await db.connect()
            do {
                let request = try JSONDecoder().decode(TaskRequest.self, from: Data(OrchestrationTaskAPITests.linearRequest.utf8))
                let created = try JSONDecoder().decode(JSONValue.self, from: try await queries.create(request))
                let task = try #require(created["task_uuid"]?.stringValue.flatMap(UUID.init(uuidString:)))

                // A worker holds one step.
                let held = try await harness.admin.query(
                    """
                    WITH one AS (
                        SELECT wst.workflow_step_uuid, wst.to_state, wst.sort_key
                          FROM tasker.workflow_steps ws JOIN tasker.workflow_step_transitions wst
                            ON wst.workflow_step_uuid = ws.workflow_step_uuid AND wst.most_recent
                         WHERE ws.task_uuid = $1::uuid ORDER BY ws.created_at LIMIT 1),
                    retired AS (
                        UPDATE tasker.workflow_step_transitions t SET most_recent = false
                          FROM one WHERE t.workflow_step_uuid = one.workflow_step_uuid AND t.most_recent
                        RETURNING t.workflow_step_uuid)
                    INSERT INTO tasker.workflow_step_transitions
                        (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
                    SELECT one.workflow_step_uuid, 'in_progress', one.to_state, '{}'::jsonb, one.sort_key + 1, true, NOW(), NOW()
                      FROM one JOIN retired USING (workflow_step_uuid)
                    RETURNING workflow_step_uuid
                    """, [task])
                let heldStep: UUID = try held[0].decode("workflow_step_uuid")

                // The orchestration moves the task in a transaction that has not committed yet.
                try await other.execute("BEGIN")
                let moved = try await other.query(
                    """
                    WITH retired AS (
                        UPDATE tasker.task_transitions SET most_recent = false, updated_at = NOW()
                         WHERE task_uuid = $1::uuid AND most_recent RETURNING to_state, sort_key)
                    INSERT INTO tasker.task_transitions
                        (task_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
                    SELECT $1::uuid, 'evaluating_results', to_state, '{}'::jsonb, sort_key + 1, true, NOW(), NOW() FROM retired
                    RETURNING sort_key
                    """, [task])
                #expect(moved.count == 1)
                let cancelling = Task { try await queries.cancel(task) }
                try await Task.sleep(for: .milliseconds(500))
                try await other.execute("COMMIT")
                let answer = try JSONDecoder().decode(JSONValue.self, from: try await cancelling.value)
                #expect(answer["status"]?.stringValue == "cancelled", "\(answer)")

                let transitions = try await harness.admin.query(
                    "SELECT from_state, most_recent FROM tasker.task_transitions WHERE task_uuid = $1::uuid AND to_state = 'cancelled'",
                    [task])
                #expect(transitions.count == 1)
                #expect(try transitions.first?.decode("from_state") as String? == "evaluating_results")
                let steps = try await harness.admin.query(
                    """
                    SELECT ws.workflow_step_uuid, t.to_state FROM tasker.workflow_steps ws
                      JOIN tasker.workflow_step_transitions t ON t.workflow_step_uuid = ws.workflow_step_uuid AND t.most_recent
                     WHERE ws.task_uuid = $1::uuid
                    """, [task])
                #expect(steps.count > 1)
                for row in steps {
                    let step: UUID = try row.decode("workflow_step_uuid")
                    let state: String = try row.decode("to_state")
                    #expect(state == (step == heldStep ? "in_progress" : "cancelled"), "step \(step)")
                }
                do {
                    _ = try await queries.cancel(task)
                    Issue.record("a second cancel succeeded")
                } catch {
                    #expect((error as? TaskAPIError)?.code == .badRequest, "\(error)")
                }
            } catch {
                await other.close()
                await pool.close()
                throw error
            }
            await other.close()
            await pool.close()
        }
    }

    /// `tasker-dev task show` prints contexts, reasons and results that API clients and handlers wrote:
    /// their control characters (a terminal's escape sequences) come out escaped.
    @Test func taskShowEscapesControlCharacters() async throws {
        try await withTestDatabase { db in
            _ = try await OrchestrationHarness.make(db)
            let pool = db.pool(maxConnections: 2)
            let service = OrchestrationService(pool: pool, databaseURL: db.url)
            let request = TaskRequest(
                namespace: "examples", name: "linear_workflow", version: "1.0.0",
                context: .object(["note": .string("\u{9B}31mred")]), initiator: "tests", sourceSystem: "tests",
                reason: "\u{1B}]0;retitled\u{07}")
            let created: Data
            do {
                created = try await TaskQueries(pool: pool, orchestration: service).create(request)
            } catch {
                await pool.close()
                throw error
            }
            await pool.close()
            let task = try #require(try JSONDecoder().decode(JSONValue.self, from: created)["task_uuid"]?.stringValue)
            let outcome = try CommandLineTests.run(
                ["task", "show", task], environment: ["DATABASE_URL": db.url, "TASKER_ENV": "test"],
                executable: CommandLineTests.devBinary)
            #expect(outcome.status == 0, "\(outcome.stderr)")
            #expect(outcome.stdout.contains(task))
            #expect(
                !outcome.stdout.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x9B || $0.value == 0x07 },
                "\(outcome.stdout.debugDescription)")
            #expect(outcome.stdout.contains("\\u{1b}]0;retitled\\u{7}"), "\(outcome.stdout)")
        }
    }
}
