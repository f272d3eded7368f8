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
/// state, a task's DAG with the parents from `workflow_step_edges`, the live workers from their leases
/// and claims, the per-minute throughput and latency from the transitions) checked against rows the
/// tests write, hostile uuids, and the API's permissions on the data routes. (The page and its files with the console's
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

    @Test func workersAreTheLiveLeasesWithTheirNamespacesAndStepsInFlight() async throws {
        try await OrchestrationTaskAPITests.withAPI { client, harness in
            let (_, task) = try await requestJSON(client, .post, "/v1/tasks", body: Self.diamondRequest)
            let taskUUID = try #require(task["task_uuid"]?.stringValue)
            let steps = try await Self.stepUUIDs(harness, task: taskUUID)
            let (busy, idle, quiet, dead) = (UUID(), UUID(), UUID(), UUID())
            try await harness.admin.query(
                """
                INSERT INTO tasker.worker_leases (worker_uuid, expires_at, renewed_at, started_at, hostname) VALUES
                    ($1::uuid, clock_timestamp() + interval '1 hour', clock_timestamp(), clock_timestamp() - interval '3 minutes', 'busy-host'),
                    ($2::uuid, clock_timestamp() + interval '1 hour', clock_timestamp(), clock_timestamp() - interval '2 minutes', 'idle-host'),
                    ($3::uuid, clock_timestamp() + interval '1 hour', clock_timestamp(), clock_timestamp() - interval '1 minute', 'quiet-host'),
                    ($4::uuid, clock_timestamp() - interval '1 second', clock_timestamp() - interval '1 minute',
                     clock_timestamp() - interval '4 minutes', 'dead-host')
                """, [busy, idle, quiet, dead])
            // In flight: diamond_start on the busy worker; diamond_left on the dead one (its lease lapsed).
            try await Self.claim(harness, step: try #require(steps["diamond_start"]), by: busy)
            try await Self.claim(harness, step: try #require(steps["diamond_left"]), by: dead)
            // A result of the idle worker now, and one of the quiet worker 20 minutes ago (past the window).
            let now = try await Self.minutes(harness)
            let right = try #require(steps["diamond_right"])
            try await harness.admin.query(Self.pastTransition, [right, "enqueued_for_orchestration", 100, now.base, 0.0, idle.lowercased])
            try await harness.admin.query(Self.pastTransition, [right, "enqueued_for_orchestration", 101, now.base, 0.0, quiet.lowercased])
            try await harness.admin.query(
                "UPDATE tasker.workflow_step_result_audit SET recorded_at = now() - interval '20 minutes' WHERE worker_uuid = $1::uuid",
                [quiet])

            let (status, answer) = try await requestJSON(client, .get, "/console/api/workers")
            #expect(status == .ok, "\(answer)")
            #expect(answer["expired_leases"]?.intValue == 1 && answer["truncated"]?.boolValue == false, "\(answer)")
            guard case .array(let workers) = answer["workers"] ?? .null else {
                Issue.record("no workers: \(answer)")
                return
            }
            #expect(
                workers.map { $0["worker_uuid"]?.stringValue } == [busy.lowercased, idle.lowercased, quiet.lowercased],
                "oldest lease first, the dead one left out")
            guard workers.count == 3 else { return }
            let (first, second, third) = (workers[0], workers[1], workers[2])
            #expect(first["hostname"]?.stringValue == "busy-host" && first["recovers"]?.boolValue == true)
            #expect(first["namespaces"] == .array([.string("examples")]), "\(first)")
            #expect(first["steps_in_flight"]?.intValue == 1)
            guard case .array(let held) = first["steps"] ?? .null, let step = held.first, held.count == 1 else {
                Issue.record("the busy worker's step is not listed: \(first)")
                return
            }
            #expect(step["name"]?.stringValue == "diamond_start" && step["namespace"]?.stringValue == "examples")
            #expect(step["step_uuid"]?.stringValue == steps["diamond_start"]?.lowercased && step["task_uuid"]?.stringValue == taskUUID)
            #expect(step["since"]?.stringValue?.hasSuffix("Z") == true)
            for stamp in ["started_at", "renewed_at", "expires_at"] {
                #expect(first[stamp]?.stringValue?.hasSuffix("Z") == true, "\(stamp): \(first)")
            }
            #expect(second["steps_in_flight"]?.intValue == 0 && second["steps"] == .array([]))
            #expect(second["namespaces"] == .array([.string("examples")]), "a recent result names the namespace: \(second)")
            #expect(third["steps_in_flight"]?.intValue == 0 && third["namespaces"] == .array([]), "a result past the window: \(third)")
        }
    }

    @Test func throughputCountsEachMinutesResultsAndTheirLatencyFromTheTransitions() async throws {
        try await OrchestrationTaskAPITests.withAPI { client, harness in
            let (_, task) = try await requestJSON(client, .post, "/v1/tasks", body: Self.diamondRequest)
            let steps = try await Self.stepUUIDs(harness, task: try #require(task["task_uuid"]?.stringValue))
            let (start, left, right, merge) = (
                try #require(steps["diamond_start"]), try #require(steps["diamond_left"]), try #require(steps["diamond_right"]),
                try #require(steps["diamond_merge"])
            )
            let now = try await Self.minutes(harness)
            // Two minutes ago: results after 100 ms and 300 ms, a failure after 500 ms; a minute ago: one after 1 s.
            for (step, second, latency, state) in [
                (start, 10.0, 0.1, "enqueued_for_orchestration"), (left, 20.0, 0.3, "enqueued_for_orchestration"),
                (right, 30.0, 0.5, "enqueued_as_error_for_orchestration"), (merge, 70.0, 1.0, "enqueued_for_orchestration"),
            ] {
                try await harness.admin.query(Self.pastTransition, [step, "in_progress", 100, now.base, second, String?.none])
                try await harness.admin.query(Self.pastTransition, [step, state, 101, now.base, second + latency, String?.none])
            }
            // A result 20 minutes ago is outside the window.
            try await harness.admin.query(
                Self.pastTransition, [start, "enqueued_for_orchestration", 102, now.base, -1_200.0, String?.none])
            try await harness.admin.query(
                """
                UPDATE tasker.workflow_step_result_audit a SET recorded_at = t.created_at
                  FROM tasker.workflow_step_transitions t
                 WHERE t.workflow_step_transition_uuid = a.workflow_step_transition_uuid AND t.sort_key = 102
                """)

            let (status, answer) = try await requestJSON(client, .get, "/console/api/throughput")
            #expect(status == .ok, "\(answer)")
            #expect(answer["window_minutes"]?.intValue == 15 && answer["bucket_seconds"]?.intValue == 60)
            #expect(answer["results_counted"]?.intValue == 4 && answer["capped"]?.boolValue == false, "\(answer)")
            guard case .array(let buckets) = answer["buckets"] ?? .null else {
                Issue.record("no buckets: \(answer)")
                return
            }
            #expect(buckets.count == 15)
            #expect(buckets.first?["start"] == answer["since"])
            let starts = buckets.compactMap { $0["start"]?.stringValue }
            #expect(starts == starts.sorted() && Set(starts).count == 15, "one bucket per minute, oldest first: \(starts)")
            func bucket(_ start: String) -> JSONValue? { buckets.first { $0["start"]?.stringValue == start } }
            let older = try #require(bucket(now.first), "no bucket \(now.first): \(starts)")
            #expect(older["completed"]?.intValue == 2 && older["failed"]?.intValue == 1, "\(older)")
            #expect(older["p50_ms"]?.doubleValue == 300 && older["p95_ms"]?.doubleValue == 480, "\(older)")
            let newer = try #require(bucket(now.second), "no bucket \(now.second): \(starts)")
            #expect(newer["completed"]?.intValue == 1 && newer["failed"]?.intValue == 0, "\(newer)")
            #expect(newer["p50_ms"]?.doubleValue == 1_000 && newer["p95_ms"]?.doubleValue == 1_000, "\(newer)")
            for other in buckets where ![now.first, now.second].contains(other["start"]?.stringValue ?? "") {
                #expect(other["completed"]?.intValue == 0 && other["failed"]?.intValue == 0, "\(other)")
                #expect(other["p50_ms"] == .null && other["p95_ms"] == .null, "\(other)")
            }
        }
    }

    /// The steps of `task` by name.
    static func stepUUIDs(_ harness: OrchestrationHarness, task: String) async throws -> [String: UUID] {
        let rows = try await harness.admin.query(
            """
            SELECT ns.name, ws.workflow_step_uuid AS step
              FROM tasker.workflow_steps ws JOIN tasker.named_steps ns ON ns.named_step_uuid = ws.named_step_uuid
             WHERE ws.task_uuid = $1::uuid
            """, [try #require(UUID(uuidString: task))])
        var steps: [String: UUID] = [:]
        for row in rows {
            let name: String = try row.decode("name")
            let step: UUID = try row.decode("step")
            steps[name] = step
        }
        return steps
    }

    /// `worker` claims `step` as the claim writes it: the step's current transition becomes an
    /// `in_progress` one whose metadata names the worker's `worker_uuid`.
    static func claim(_ harness: OrchestrationHarness, step: UUID, by worker: UUID) async throws {
        try await harness.admin.query(
            "UPDATE tasker.workflow_step_transitions SET most_recent = false WHERE workflow_step_uuid = $1::uuid AND most_recent", [step])
        try await harness.admin.query(
            """
            INSERT INTO tasker.workflow_step_transitions
                (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
            SELECT $1::uuid, 'in_progress', NULL, jsonb_build_object('worker_uuid', $2::text),
                   coalesce(max(sort_key), 0) + 1, true, now(), now()
              FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1::uuid
            """, [step, worker.lowercased])
    }

    /// A past transition (not the step's current one) of step `$1` to `$2` with sort key `$3`, created
    /// `$5` seconds after `$4` (a UTC timestamp as text); `$6` the `worker_uuid` in its metadata, or
    /// NULL. A result transition gets its `workflow_step_result_audit` row from the trigger, recorded now.
    static let pastTransition = """
        INSERT INTO tasker.workflow_step_transitions
            (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
        VALUES ($1::uuid, $2::text, NULL,
                CASE WHEN $6::text IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('worker_uuid', $6::text) END,
                $3::int, false, $4::timestamp + make_interval(secs => $5::float8), now())
        """

    /// The minute two minutes before the database's now (`base`, a UTC timestamp as text), and the
    /// chart's bucket starts of it and of the minute after (`first`, `second`).
    static func minutes(_ harness: OrchestrationHarness) async throws -> (base: String, first: String, second: String) {
        let row = try await harness.admin.query(
            #"""
            SELECT m::text AS base, to_char(m, 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS first,
                   to_char(m + interval '1 minute', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS second
              FROM (SELECT date_trunc('minute', now() AT TIME ZONE 'UTC') - interval '2 minutes' AS m) n
            """#)[0]
        let base: String = try row.decode("base")
        let first: String = try row.decode("first")
        let second: String = try row.decode("second")
        return (base, first, second)
    }
}
