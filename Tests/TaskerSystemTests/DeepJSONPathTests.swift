import Foundation
import TaskerPostgres
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerOrchestration
@testable import TaskerWorker

/// Issue #26, item 1, on every path of a running worker and orchestration: data stored before the
/// depth limit fails its step for good, once, and nothing crashes (the decoders alone: `DeepJSONTests`
/// in TaskerWorkerTests).
@Suite("Deep JSON on every path", .timeLimit(.minutes(5)))
struct DeepJSONPathTests {
    /// Runs `body` with a ready Hybrid worker over a test database, whose handlers count their runs.
    static func withCountingWorker(
        _ body: (PipelineHarness, InvocationCounter, PipelineHarness.RunningWorker) async throws -> Void
    ) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: PipelineRobustnessTests.yaml)
            let invocations = InvocationCounter()
            let worker = harness.startWorker(
                PipelineRobustnessTests.countingHandlers(invocations), configuration: harness.configuration(mode: .hybrid))
            try await harness.waitForWorkersReady(1, mode: .hybrid)
            try await body(harness, invocations, worker)
        }
    }

    /// A worker whose steps carry contexts stored before the limit (written straight into the
    /// database) at every depth tried: up to 128 the step runs; deeper, it fails for good with a
    /// `step_data_unreadable` error saying why, its message archived once, and the worker stays up
    /// and runs the next step. (Before the fix, depth 365 and more killed the test process.)
    @Test func storedContextsAtEveryDepthRunOrFailForGoodOnceAndTheWorkerStaysUp() async throws {
        try await Self.withCountingWorker { harness, invocations, worker in
            var tasks: [(depth: Int, task: PipelineHarness.SeededTask)] = []
            for depth in HostileFixtures.deepJSONDepths {
                let task = try await harness.createTask(steps: ["work"])
                try await harness.admin.query(
                    "UPDATE tasker.tasks SET context = \(HostileFixtures.deepJSONSQL(depth)) WHERE task_uuid = $1", [task.taskUUID])
                try await harness.enqueue(task, "work")
                tasks.append((depth, task))
            }
            for (_, task) in tasks {
                try await harness.waitForState(task["work"], ["enqueued_for_orchestration", "enqueued_as_error_for_orchestration"])
            }
            // The worker is still up: a plain step after them runs.
            let plain = try await harness.createTask(steps: ["work"])
            try await harness.enqueue(plain, "work")
            try await harness.waitForState(plain["work"], ["enqueued_for_orchestration"])
            try await worker.stop()

            for (depth, task) in tasks {
                let result = try await harness.result(task["work"])
                if depth <= UntrustedJSON.maximumDepth {
                    #expect(result.success, "depth \(depth): \(String(describing: result.error))")
                    #expect(invocations.count(task["work"]) == 1, "depth \(depth)")
                } else {
                    #expect(!result.success, "depth \(depth)")
                    #expect(result.metadata.errorType == StepExecutor.unreadableDataErrorType, "depth \(depth)")
                    #expect(result.metadata.retryable == false, "depth \(depth)")
                    #expect(result.error?.message.contains("nested more than 128 levels") == true, "depth \(depth)")
                    #expect(invocations.count(task["work"]) == 0, "depth \(depth)")
                }
            }
            #expect(try await harness.queueDepth(archived: false) == 0)
            let readCounts: [Int] = try await harness.admin.query(
                "SELECT read_ct FROM pgmq.a_\(QueueNames.workerQueue(namespace: harness.namespace))"
            ).map { try $0.decode("read_ct") }
            #expect(readCounts.count == tasks.count + 1 && readCounts.allSatisfy { $0 == 1 }, "read counts \(readCounts)")
        }
    }

    /// A dependency's stored result nested past the limit fails the dependent step for good, once.
    @Test func aDeepDependencyResultFailsTheDependentStepForGood() async throws {
        try await Self.withCountingWorker { harness, invocations, worker in
            var children: [UUID] = []
            for depth in [400, 5_000] {
                let task = try await harness.createTask(steps: ["announce", "work"], edges: [("announce", "work")])
                try await harness.transition(task["announce"], from: "pending", to: "enqueued", event: #"{"type":"Enqueue"}"#)
                try await harness.transition(
                    task["announce"], from: "enqueued", to: "in_progress", event: #"{"type":"Start"}"#)
                try await harness.transition(
                    task["announce"], from: "in_progress", to: "enqueued_for_orchestration", event: #"{"type":"Complete"}"#)
                try await harness.completeLikeOrchestration(task, "announce")
                try await harness.admin.query(
                    """
                    UPDATE tasker.workflow_steps
                       SET results = jsonb_build_object('step_uuid', $2::text, 'success', true, 'result', \(HostileFixtures.deepJSONSQL(depth)))
                     WHERE workflow_step_uuid = $1
                    """, [task["announce"], task["announce"].uuidString.lowercased()])
                try await harness.enqueue(task, "work")
                children.append(task["work"])
            }
            for child in children { try await harness.waitForState(child, ["enqueued_as_error_for_orchestration"]) }
            try await worker.stop()
            for child in children {
                let result = try await harness.result(child)
                #expect(!result.success && result.metadata.retryable == false)
                #expect(result.metadata.errorType == StepExecutor.unreadableDataErrorType)
                #expect(invocations.count(child) == 0)
            }
        }
    }

    /// The orchestration: deep task requests on its queue (as `submit --queue` sent them) are
    /// archived once as poison and it keeps creating tasks; the task API answers 400 naming the limit.
    @Test func theOrchestrationArchivesDeepRequestsAsPoisonAndStaysUp() async throws {
        try await withTestDatabase { db in
            let harness = try await OrchestrationHarness.make(db)
            let queue = QueueNames.taskRequests
            // 125: the message decodes (127 levels) but its context is over the value limit.
            let depths = [125, 130, 365, 450, 510, 5_000]
            for depth in depths {
                try await harness.admin.query(
                    """
                    SELECT tasker.pgmq_send_with_notify($1::text, jsonb_build_object(
                        'request_id', gen_random_uuid(),
                        'task_request', jsonb_build_object('namespace', 'examples', 'name', 'linear_workflow',
                            'version', '1.0.0', 'context', \(HostileFixtures.deepJSONSQL(depth)))), 0) AS id
                    """, [queue])
            }
            // The default visibility timeout (30 s): a loaded host must not see a message come back
            // before it was archived (read twice would be the harness, not the product).
            let orchestration = harness.startOrchestration()
            try await waitUntil(timeout: .seconds(30)) { orchestration.service.statistics.poisonMessages >= depths.count }
            // Still up: a normal request becomes a task.
            let created = try await orchestration.submit(OrchestrationHarness.request("linear_workflow", ["number": 2]))
            #expect(try await harness.taskState(created.taskUUID) != nil)
            try await orchestration.stop()
            let queued: Int = try await harness.admin.query("SELECT count(*)::integer AS n FROM pgmq.q_\(queue)")[0].decode("n")
            let reads: [Int] = try await harness.admin.query("SELECT read_ct FROM pgmq.a_\(queue)").map { try $0.decode("read_ct") }
            #expect(queued == 0)
            #expect(reads.count == depths.count && reads.allSatisfy { $0 == 1 }, "read counts \(reads)")
            #expect(orchestration.service.statistics.poisonMessages == depths.count)
        }
    }

    static let processYAML = """
        name: deep_restart
        namespace_name: deep
        version: 1.0.0
        steps:
          - name: work
            handler: { callable: tasker.noop }
        """

    /// The real `tasker-worker` over a poisoned queue, three times: each start finds new steps whose
    /// stored contexts are nested 365, 510 and 5,000 levels, raw message bodies nested 450 and 5,000
    /// levels, and a plain step; it stays up, fails the deep steps for good, archives the raw bodies
    /// as poison, runs the plain step and leaves the queue empty; SIGTERM stops it cleanly. Nothing
    /// comes back on the next start. (Before the fix it died about 2 s after every start.)
    @Test func aWorkerRestartedThreeTimesOverAPoisonedQueueStaysUpAndEmptiesIt() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.processYAML)
            let queue = QueueNames.workerQueue(namespace: harness.namespace)
            var deepSteps: [UUID] = []
            var plainSteps: [UUID] = []
            var poisonIDs: [Int64] = []
            for round in 1...3 {
                for depth in [365, 510, 5_000] {
                    let task = try await harness.createTask(steps: ["work"])
                    try await harness.admin.query(
                        "UPDATE tasker.tasks SET context = \(HostileFixtures.deepJSONSQL(depth)) WHERE task_uuid = $1", [task.taskUUID])
                    try await harness.enqueue(task, "work")
                    deepSteps.append(task["work"])
                }
                for depth in [450, 5_000] {
                    poisonIDs.append(
                        try await harness.admin.query(
                            "SELECT tasker.pgmq_send_with_notify($1::text, \(HostileFixtures.deepJSONSQL(depth)), 0) AS id", [queue]
                        )[0].decode("id"))
                }
                let plain = try await harness.createTask(steps: ["work"])
                try await harness.enqueue(plain, "work")
                plainSteps.append(plain["work"])

                let worker = try WorkerProcess(["run"], db: db, templatePath: harness.templateDirectory)
                defer { worker.kill() }
                try await waitUntil(timeout: .seconds(60)) {
                    guard worker.process.isRunning else { return true }
                    let queued = try await harness.queueDepth(archived: false)
                    let settled = try await harness.countSteps(
                        in: ["enqueued_for_orchestration", "enqueued_as_error_for_orchestration"])
                    return queued == 0 && settled == deepSteps.count + plainSteps.count
                }
                #expect(worker.process.isRunning, "round \(round): the worker died:\n\(worker.log.suffix(3000))")
                let stopped = try await worker.terminate(within: .seconds(40))
                #expect(stopped && worker.process.terminationStatus == 0, "round \(round):\n\(worker.log.suffix(3000))")
            }
            #expect(try await harness.queueDepth(archived: false) == 0)
            for step in deepSteps {
                let result = try await harness.result(step)
                #expect(!result.success && result.metadata.retryable == false)
                #expect(result.metadata.errorType == StepExecutor.unreadableDataErrorType)
            }
            for step in plainSteps { #expect(try await harness.result(step).success) }
            for id in poisonIDs {
                #expect(
                    try await NotificationIntakeTests.messageState(harness.admin, queue: queue, msgID: id) == "archived, read 1",
                    "poison message \(id)")
            }
        }
    }
}
