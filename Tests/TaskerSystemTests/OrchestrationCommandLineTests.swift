import Foundation
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerWorker

/// `tasker-dev submit` and `tasker-dev orchestrate` as an operator runs them.
@Suite(.timeLimit(.minutes(2))) struct OrchestrationCommandLineTests {
    @Test func submitQueuesARequestThatOrchestrateRunsToCompletionAndStopsOnSIGTERM() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let worker = harness.startWorker()
            var environment = ProcessInfo.processInfo.environment
            environment.removeValue(forKey: "TASKER_CONFIG_PATH")
            environment["DATABASE_URL"] = db.url
            environment["TASKER_ENV"] = "test"
            let orchestrate = try Subprocess.start(
                CommandLineTests.devBinary, ["orchestrate"], environment: environment,
                directory: TestEnvironment.repositoryRoot)
            let process = orchestrate.process

            let submitted = try CommandLineTests.run(
                ["submit", "examples", "linear_workflow", "1.0.0", "--context", #"{"number": 2}"#, "--queue"],
                environment: ["DATABASE_URL": db.url, "TASKER_ENV": "test"], executable: CommandLineTests.devBinary)
            #expect(submitted.status == 0, "\(submitted.stderr)")
            #expect(submitted.stdout.contains("queued"))
            let rejected = try CommandLineTests.run(
                ["submit", "examples", "linear_workflow", "1.0.0", "--context", "[1]"],
                environment: ["DATABASE_URL": db.url, "TASKER_ENV": "test"], executable: CommandLineTests.devBinary)
            #expect(rejected.status != 0 && rejected.stderr.contains("JSON object"))

            var task: UUID?
            let deadline = ContinuousClock.now.advanced(by: .seconds(30))
            while ContinuousClock.now < deadline {
                let rows = try await harness.admin.query(
                    """
                    SELECT t.task_uuid FROM tasker.tasks t JOIN tasker.task_transitions tt USING (task_uuid)
                     WHERE tt.most_recent AND tt.to_state = 'complete'
                    """)
                if let row = rows.first {
                    task = try row.decode("task_uuid")
                    break
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(task != nil, "the submitted task did not complete")
            if let task {
                #expect(try await harness.result(task, "linear_verify").result["value"] == .int((4 + 5) * 3))
            }
            process.terminate()
            let stopDeadline = ContinuousClock.now.advanced(by: .seconds(20))
            while process.isRunning && ContinuousClock.now < stopDeadline { try await Task.sleep(for: .milliseconds(50)) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                Issue.record("orchestrate did not exit within 20 s of SIGTERM")
            }
            let outcome = try orchestrate.finish()
            let log = outcome.stderr
            #expect(outcome.status == 0, "\(log)")
            #expect(log.contains("tasker orchestration stopped"))
            try await worker.stop()
        }
    }
}
