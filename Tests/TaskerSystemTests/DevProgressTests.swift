import Foundation
import TaskerOrchestration
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// `tasker-dev progress` (the display of `scripts/dev`): its snapshot agrees with the database,
/// and its submitter feeds the orchestration unique example tasks.
@Suite(.serialized, .timeLimit(.minutes(3))) struct DevProgressTests {
    /// The snapshot as `progress --once --json` prints it (the fields checked here).
    struct Snapshot: Decodable {
        struct Percentiles: Decodable {
            var count: Int
            var p50: Double?
            var p95: Double?
            var p99: Double?
            var max: Double?
        }
        struct Workflow: Decodable {
            var name: String
            var total: Int
            var complete: Int
            var error: Int
        }
        var tasksByState: [String: Int]
        var stepsByState: [String: Int]
        var tasksTotal: Int
        var stepsTotal: Int
        var workflows: [Workflow]
        var stepsCompleted: Int
        var stepsPerSecond: Double
        var taskLatency: Percentiles
        var stepLatency: Percentiles
        var stepQueueWait: Percentiles
    }

    /// PostgreSQL's `percentile_cont` (linear interpolation between the closest ranks).
    static func percentileCont(_ values: [Double], _ fraction: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let position = fraction * Double(sorted.count - 1)
        let lower = Int(position.rounded(.down))
        let upper = min(lower + 1, sorted.count - 1)
        return sorted[lower] + (sorted[upper] - sorted[lower]) * (position - Double(lower))
    }

    static func expectClose(
        _ actual: Double?, _ expected: Double?, _ what: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let actual, let expected else {
            #expect(
                actual == nil && expected == nil, "\(what): \(String(describing: actual)) vs \(String(describing: expected))",
                sourceLocation: sourceLocation)
            return
        }
        #expect(abs(actual - expected) < 0.001, "\(what): \(actual) vs \(expected)", sourceLocation: sourceLocation)
    }

    static func checkPercentiles(
        _ p: Snapshot.Percentiles, _ samples: [Double], _ what: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(p.count == samples.count, "\(what) count", sourceLocation: sourceLocation)
        expectClose(p.p50, percentileCont(samples, 0.5), "\(what) p50", sourceLocation: sourceLocation)
        expectClose(p.p95, percentileCont(samples, 0.95), "\(what) p95", sourceLocation: sourceLocation)
        expectClose(p.p99, percentileCont(samples, 0.99), "\(what) p99", sourceLocation: sourceLocation)
        expectClose(p.max, samples.max(), "\(what) max", sourceLocation: sourceLocation)
    }

    @Test func snapshotCountsAndPercentilesMatchTheDatabase() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let worker = harness.startWorker()
            let orchestration = harness.startOrchestration()

            // A task before --since is not counted.
            let before = try await orchestration.submit(OrchestrationHarness.request("linear_workflow", ["number": 1]))
            try await harness.waitForTask(before.taskUUID, in: ["complete"])
            let since: String = try await harness.admin.query(
                """
                SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS since
                """)[0].decode("since")
            try await Task.sleep(for: .milliseconds(20))

            let requests: [(String, JSONValue)] = [
                ("linear_workflow", ["number": 3]), ("diamond_workflow", ["number": 5]), ("tree_workflow", ["number": 10]),
                ("decision_workflow", ["amount": 250]), ("batch_workflow", ["item_count": 60]), ("retry_workflow", ["number": 4]),
            ]
            var tasks: [UUID] = []
            for (name, context) in requests {
                tasks.append(try await orchestration.submit(OrchestrationHarness.request(name, context)).taskUUID)
            }
            for task in tasks { try await harness.waitForTask(task, in: ["complete"], timeout: .seconds(60)) }

            let outcome = try CommandLineTests.run(
                ["progress", "--database-url", db.url, "--since", since, "--once", "--json"],
                executable: CommandLineTests.devBinary)
            try await orchestration.stop()
            try await worker.stop()
            #expect(outcome.status == 0, "\(outcome.stderr)")
            let snapshot = try JSONDecoder().decode(Snapshot.self, from: Data(outcome.stdout.utf8))

            // Counts.
            #expect(snapshot.tasksTotal == 6)
            #expect(snapshot.tasksByState == ["complete": 6])
            #expect(snapshot.workflows.map(\.name) == requests.map(\.0).sorted())
            #expect(snapshot.workflows.allSatisfy { $0.total == 1 && $0.complete == 1 && $0.error == 0 })
            let steps: Int = try await harness.admin.query(
                "SELECT count(*)::int8 AS n FROM tasker.workflow_steps WHERE task_uuid = ANY($1::uuid[])",
                ["{\(tasks.map { $0.uuidString.lowercased() }.joined(separator: ","))}"])[0].decode("n")
            // linear 4 + diamond 4 + tree 7 + decision 4 + batch (analyze, 3 workers, aggregate) 5 + retry 2
            #expect(steps == 26)
            #expect(snapshot.stepsTotal == steps)
            #expect(snapshot.stepsByState == ["complete": steps])
            #expect(snapshot.stepsCompleted == steps)
            #expect(snapshot.stepsPerSecond > 0)

            // Task latency: created_at → completed_at of the six tasks.
            var taskSamples: [Double] = []
            for task in tasks {
                let row = try await harness.admin.query(
                    "SELECT created_at, completed_at FROM tasker.tasks WHERE task_uuid = $1", [task])[0]
                let created: Date = try row.decode("created_at")
                let completed: Date = try row.decode("completed_at")
                taskSamples.append(completed.timeIntervalSince(created))
            }
            Self.checkPercentiles(snapshot.taskLatency, taskSamples, "task latency")

            // Step latencies, recomputed from the transition history: each result (and each claim)
            // against the latest `enqueued` before it.
            var results: [Double] = []
            var claims: [Double] = []
            var lastEnqueued: [UUID: Date] = [:]
            for row in try await harness.admin.query(
                """
                SELECT wst.workflow_step_uuid, wst.to_state, wst.created_at
                  FROM tasker.workflow_step_transitions wst
                  JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = wst.workflow_step_uuid
                 WHERE ws.task_uuid = ANY($1::uuid[])
                 ORDER BY wst.workflow_step_uuid, wst.sort_key
                """, ["{\(tasks.map { $0.uuidString.lowercased() }.joined(separator: ","))}"])
            {
                let step: UUID = try row.decode("workflow_step_uuid")
                let state: String = try row.decode("to_state")
                let at: Date = try row.decode("created_at")
                switch state {
                case "enqueued": lastEnqueued[step] = at
                case "in_progress": if let start = lastEnqueued[step] { claims.append(at.timeIntervalSince(start)) }
                case "enqueued_for_orchestration", "enqueued_as_error_for_orchestration":
                    if let start = lastEnqueued[step] { results.append(at.timeIntervalSince(start)) }
                default: break
                }
            }
            // Every step ran once, retry_fetch twice.
            #expect(results.count == steps + 1)
            Self.checkPercentiles(snapshot.stepLatency, results, "step enqueue→result")
            Self.checkPercentiles(snapshot.stepQueueWait, claims, "step enqueue→claim")
            #expect(snapshot.stepLatency.p50! > 0 && snapshot.stepLatency.p50! <= snapshot.stepLatency.p99!)
            // The retry task waited out its backoff (2 s: attempt 1's exponential).
            #expect(snapshot.taskLatency.max! >= 1)
        }
    }

    @Test func submitterFeedsUniqueExampleTasksAndStopsOnSIGTERM() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let worker = harness.startWorker()
            let orchestration = harness.startOrchestration()

            let progress = try Subprocess.start(
                CommandLineTests.devBinary,
                ["progress", "--database-url", db.url, "--since", "all", "--submit-rate", "12", "--plain-interval", "0.5"],
                environment: ProcessInfo.processInfo.environment, directory: TestEnvironment.repositoryRoot)
            try await Task.sleep(for: .seconds(2))
            progress.process.terminate()  // SIGTERM
            let outcome = try progress.finish()
            let stdout = outcome.stdout
            #expect(outcome.status == 0, "\(outcome.stderr)")

            // Plain lines (stdout is a pipe), the last one the final snapshot.
            let lines = stdout.split(separator: "\n").map(String.init)
            #expect(lines.count >= 3, "\(stdout)")
            #expect(lines.allSatisfy { $0.hasPrefix("[progress") })
            #expect(lines.last?.hasPrefix("[progress, final]") == true)
            #expect(!stdout.contains("\u{1B}["), "no ANSI sequences when stdout is not a terminal")
            let submitted = Int(lines.last!.components(separatedBy: "submitted ")[1].prefix { $0.isNumber }) ?? 0
            #expect(submitted >= 12 && submitted <= 40, "\(lines.last!)")

            // Every request became a task (none refused as a duplicate) and completed.
            let deadline = ContinuousClock.now.advanced(by: .seconds(60))
            var states: [String: Int] = [:]
            while ContinuousClock.now < deadline {
                states = [:]
                for row in try await harness.admin.query(
                    """
                    SELECT tt.to_state, count(*)::int8 AS n FROM tasker.tasks t
                      JOIN tasker.task_transitions tt ON tt.task_uuid = t.task_uuid AND tt.most_recent
                     WHERE t.source_system = 'tasker-dev' GROUP BY 1
                    """)
                {
                    states[try row.decode("to_state", as: String.self)] = try row.decode("n", as: Int.self)
                }
                if states == ["complete": submitted] { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(states == ["complete": submitted])
            let workflows: Int = try await harness.admin.query(
                """
                SELECT count(DISTINCT t.named_task_uuid)::int8 AS n FROM tasker.tasks t WHERE t.source_system = 'tasker-dev'
                """)[0].decode("n")
            #expect(workflows == 6)
            try await orchestration.stop()
            try await worker.stop()
        }
    }
}
