import Foundation
import TaskerPostgres
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerWorker

/// The step pipeline end to end against a real PostgreSQL: a step enqueued the way orchestration
/// does it is claimed, run and reported exactly as the reference says.
@Suite("Step pipeline", .timeLimit(.minutes(3)))
struct PipelineTests {
    static let yaml = """
        name: flow
        namespace_name: pipeline
        version: 1.0.0
        steps:
          - name: add_one
            handler: { callable: test.add_one }
          - name: double
            dependencies: [add_one]
            handler: { callable: test.double }
          - name: report
            dependencies: [double]
            handler: { callable: test.report, initialization: { label: total } }
          - name: boom
            handler: { callable: test.boom }
          - name: slow
            timeout_seconds: 1
            handler: { callable: test.slow }
          - name: ghost
            handler: { callable: test.not_registered }
          - name: chunks
            handler: { callable: test.chunks }
          - name: hold
            handler: { callable: test.hold }
          - name: after_hold
            handler: { callable: tasker.noop }
          - name: announce
            handler: { callable: test.add_one }
            publishes_events:
              - name: pipeline.fast_done
                description: in-process only
                condition: success
                delivery_mode: fast
                schema: null
              - name: pipeline.never
                description: must not fire on success
                condition: permanent_failure
                delivery_mode: fast
                schema: null
        """

    static func handlers() -> HandlerRegistry {
        let registry = HandlerRegistry.withBuiltIns()
        registry.register("test.add_one") { context in
            let n = context.taskContext["n"]?.intValue ?? 0
            return .success(.object(["n": .int(Int64(n + 1))]))
        }
        registry.register("test.double") { context in
            guard let n = context.dependencyResult("add_one")?["n"]?.intValue else {
                return .failure(message: "add_one result missing", retryable: false)
            }
            return .success(.object(["n": .int(Int64(n * 2))]))
        }
        registry.register("test.report") { context in
            let n = context.dependencyResult("double")?["n"]?.intValue ?? -1
            let label = context.stepConfig["label"]?.stringValue ?? "?"
            return .success(.object([label: .int(Int64(n)), "attempt": .int(Int64(context.attempt))]))
        }
        registry.register("test.boom") { _ in
            struct Boom: Error, CustomStringConvertible { var description: String { "boom went the handler" } }
            throw Boom()
        }
        registry.register("test.slow") { _ in
            try await Task.sleep(for: .seconds(30))
            return .success(.emptyObject)
        }
        registry.register("test.hold") { _ in
            try await Task.sleep(for: .milliseconds(800))
            return .success(.emptyObject)
        }
        registry.register("test.chunks") { context in
            // Processes 3 chunks of 10 items, yielding a checkpoint after each of the first two.
            let done = context.checkpoint?["items_processed"]?.intValue ?? 0
            let sum = context.checkpoint?["accumulated_results"]?["sum"]?.intValue ?? 0
            let chunkSum = (done..<(done + 10)).reduce(0, +)
            if done + 10 < 30 {
                return .checkpoint(
                    cursor: .int(Int64(done + 10)), itemsProcessed: done + 10,
                    accumulatedResults: .object(["sum": .int(Int64(sum + chunkSum))]))
            }
            return .success(.object(["sum": .int(Int64(sum + chunkSum)), "items": .int(30)]))
        }
        return registry
    }

    @Test(arguments: [WorkerConfiguration.DeploymentMode.hybrid, .eventDrivenOnly, .pollingOnly])
    func aStepEnqueuedLikeOrchestrationIsClaimedRunAndReported(mode: WorkerConfiguration.DeploymentMode) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let worker = harness.startWorker(Self.handlers(), configuration: harness.configuration(mode: mode))
            let task = try await harness.createTask(steps: ["add_one"], context: .object(["n": .int(41)]))
            try await harness.enqueue(task, "add_one")
            try await harness.waitForState(task["add_one"], ["enqueued_for_orchestration"])
            try await worker.stop()

            let transitions = try await harness.transitions(task["add_one"])
            #expect(transitions.map(\.to) == ["pending", "enqueued", "in_progress", "enqueued_for_orchestration"])
            #expect(transitions[2].from == "enqueued")
            #expect(transitions[2].metadata["event"]?.stringValue == #"{"type":"Start"}"#)
            #expect(transitions[2].metadata["timestamp"]?.stringValue?.hasSuffix("+00:00") == true)
            // The claiming worker (`ClaimStamp`; upstream records none): the claim attempt's identity.
            #expect(transitions[2].metadata["worker_uuid"]?.stringValue == worker.daemon.identity.uuid.uuidString.lowercased())
            let final = transitions[3].metadata
            #expect(final["worker_uuid"]?.stringValue == worker.daemon.identity.uuid.uuidString.lowercased())
            #expect(final["correlation_id"]?.stringValue == task.correlationID.uuidString.lowercased())
            let event = try JSONDecoder().decode(JSONValue.self, from: Data((final["event"]?.stringValue ?? "").utf8))
            #expect(event["type"]?.stringValue == "EnqueueForOrchestration")
            #expect(event["data"]?["success"]?.boolValue == true)

            let result = try await harness.result(task["add_one"])
            #expect(result.success)
            #expect(result.status == "completed")
            #expect(result.stepUUID == task["add_one"])
            #expect(result.result["n"]?.intValue == 42)
            #expect(result.metadata.retryable == false)
            #expect(result.metadata.workerID == worker.daemon.identity.workerID)

            let row = try await harness.admin.query(
                "SELECT attempts, in_process, processed, last_attempted_at IS NOT NULL AS attempted FROM tasker.workflow_steps WHERE workflow_step_uuid = $1",
                [task["add_one"]])[0]
            #expect(try row.decode("attempts", as: Int.self) == 1)
            #expect(try row.decode("in_process", as: Bool.self) == false)
            #expect(try row.decode("processed", as: Bool.self) == false)  // orchestration's to set
            #expect(try row.decode("attempted", as: Bool.self))

            // The worker queue message was archived (acked) exactly once; orchestration got the StepMessage.
            let queue = QueueNames.workerQueue(namespace: harness.namespace)
            #expect(try await harness.admin.query("SELECT count(*) AS n FROM pgmq.q_\(queue)")[0].decode("n", as: Int.self) == 0)
            #expect(try await harness.admin.query("SELECT count(*) AS n FROM pgmq.a_\(queue)")[0].decode("n", as: Int.self) == 1)
            let sent = try await harness.admin.query("SELECT message FROM pgmq.q_orchestration_step_results")
            #expect(sent.count == 1)
            let message = try sent[0].decode("message", as: JSONValue.self).decode(StepMessage.self)
            #expect(message == StepMessage(taskUUID: task.taskUUID, stepUUID: task["add_one"], correlationID: task.correlationID))
            #expect(worker.daemon.statistics.snapshot.totalSucceeded == 1)
        }
    }

    @Test func aLinearChainPassesDependencyResultsOn() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let worker = harness.startWorker(Self.handlers(), configuration: harness.configuration())
            let task = try await harness.createTask(
                steps: ["add_one", "double", "report"], edges: [("add_one", "double"), ("double", "report")],
                context: .object(["n": .int(4)]))
            for step in ["add_one", "double", "report"] {
                try await harness.enqueue(task, step)
                try await harness.waitForState(task[step], ["enqueued_for_orchestration"])
                try await harness.completeLikeOrchestration(task, step)
            }
            try await worker.stop()
            let report = try await harness.result(task["report"])
            #expect(report.result["total"]?.intValue == 10)
            #expect(report.result["attempt"]?.intValue == 1)
        }
    }

    @Test func errorsTimeoutsAndUnknownHandlersBecomeFailureResults() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let worker = harness.startWorker(Self.handlers(), configuration: harness.configuration())
            let task = try await harness.createTask(steps: ["boom", "slow", "ghost"])
            for step in ["boom", "slow", "ghost"] { try await harness.enqueue(task, step) }
            for step in ["boom", "slow", "ghost"] {
                try await harness.waitForState(task[step], ["enqueued_as_error_for_orchestration"])
            }
            try await worker.stop()

            let boom = try await harness.result(task["boom"])
            #expect(!boom.success)
            #expect(boom.error?.errorType == "handler_error")
            #expect(boom.metadata.retryable == true)
            #expect(boom.error?.message.contains("boom went the handler") == true)

            let slow = try await harness.result(task["slow"])
            #expect(slow.error?.errorType == "handler_timeout")
            #expect(slow.metadata.retryable == true)
            #expect(slow.error?.message == "Handler timed out after 1000ms")

            let ghost = try await harness.result(task["ghost"])
            #expect(ghost.error?.errorType == "handler_not_found")
            #expect(ghost.metadata.retryable == false)
            #expect(ghost.error?.message == "Handler not found: test.not_registered")
            let final = try await harness.transitions(task["ghost"]).last
            let event = try JSONDecoder().decode(JSONValue.self, from: Data((final?.metadata["event"]?.stringValue ?? "").utf8))
            #expect(event["type"]?.stringValue == "EnqueueAsErrorForOrchestration")
        }
    }
}

extension PipelineTests {
    @Test func checkpointYieldsArePersistedAndTheHandlerResumes() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let worker = harness.startWorker(Self.handlers(), configuration: harness.configuration())
            let task = try await harness.createTask(steps: ["chunks"])
            try await harness.enqueue(task, "chunks")
            try await harness.waitForState(task["chunks"], ["enqueued_for_orchestration"])
            try await worker.stop()
            let result = try await harness.result(task["chunks"])
            #expect(result.result["sum"]?.intValue == (0..<30).reduce(0, +))
            let checkpoint: JSONValue = try await harness.admin.query(
                "SELECT checkpoint FROM tasker.workflow_steps WHERE workflow_step_uuid = $1", [task["chunks"]])[0].decode("checkpoint")
            #expect(checkpoint["items_processed"]?.intValue == 20)
            #expect(checkpoint["cursor"]?.intValue == 20)
            guard case .array(let history)? = checkpoint["history"] else {
                Issue.record("no checkpoint history: \(checkpoint)")
                return
            }
            #expect(history.map { $0["cursor"]?.intValue } == [10, 20])
            // One claim for the whole step: the yields did not re-claim.
            #expect(try await harness.transitions(task["chunks"]).filter { $0.to == "in_progress" }.count == 1)
        }
    }
}

extension PipelineTests {
    @Test func loadSheddingLeavesMessagesQueuedUntilPermitsFreeUp() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            var configuration = harness.configuration(mode: .hybrid, maxConcurrentHandlers: 2)
            configuration.worker.mpscChannels.handlerDispatch.loadShedding.capacityThresholdPercent = 50
            configuration.worker.mpscChannels.handlerDispatch.loadShedding.warningThresholdPercent = 40
            let worker = harness.startWorker(Self.handlers(), configuration: configuration)
            let task = try await harness.createTask(steps: ["hold", "after_hold"])
            try await harness.enqueue(task, "hold")
            try await harness.waitForState(task["hold"], ["in_progress"])
            // One of two permits is in use: 50 % → claims are shed, the message stays queued.
            try await harness.enqueue(task, "after_hold")
            // The notification is read (by id) and shed; under load that can take a while.
            try await waitUntil(timeout: .seconds(10)) { worker.daemon.statistics.snapshot.shedClaims >= 1 }
            #expect(try await harness.state(task["after_hold"]) == "enqueued")
            #expect(worker.daemon.statistics.snapshot.shedClaims >= 1)
            // Once the handler finishes, the queued step is claimed (by the poller or a notification).
            try await harness.waitForState(task["after_hold"], ["enqueued_for_orchestration"], timeout: .seconds(20))
            try await worker.stop()
        }
    }
}

extension PipelineTests {
    @Test func fastDomainEventsReachInProcessSubscribersAfterTheResultCommits() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let worker = harness.startWorker(Self.handlers(), configuration: harness.configuration())
            var events = await worker.daemon.subscribeToDomainEvents().makeAsyncIterator()
            let task = try await harness.createTask(steps: ["announce"], context: ["n": 1])
            try await harness.enqueue(task, "announce")
            let event = try #require(await events.next())
            // Delivered after the completion transaction committed.
            #expect(try await harness.state(task["announce"]) == "enqueued_for_orchestration")
            #expect(event.name == "pipeline.fast_done")
            #expect(event.json["event_version"] == "1.0")
            #expect(event.json["payload"]?["payload"] == ["n": 2])
            #expect(event.json["metadata"]?["correlation_id"]?.stringValue == task.correlationID.uuidString.lowercased())
            try await worker.stop()
            // `fast` never touches the durable queue; the permanent_failure event did not fire.
            #expect(
                try await harness.admin.query("SELECT count(*) AS n FROM pgmq.q_pipeline_domain_events")[0].decode("n", as: Int.self) == 0)
            #expect(await events.next() == nil)  // the stream ends with the worker
        }
    }
}

@Suite("Worker status and claiming", .timeLimit(.minutes(2)))
struct WorkerStatusTests {
    @Test func statusAndClaimingOnAndOff() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: PipelineTests.yaml)
            let worker = harness.startWorker(PipelineTests.handlers(), configuration: harness.configuration(mode: .pollingOnly))
            // The namespaces are served once the templates are registered (then the event system runs).
            try await waitUntil(timeout: .seconds(20)) { worker.daemon.runtime.eventSystem.status.running }
            let status = await worker.daemon.runtime.status()
            #expect(status.workerID == worker.daemon.identity.workerID)
            #expect(status.publicID.hasPrefix("worker-"))
            #expect(status.namespaces == ["pipeline"])
            #expect(status.handlerPermits == 10)
            #expect(status.acceptingSteps)

            // With event integration off, nothing is claimed; back on, the step runs.
            worker.daemon.setClaiming(false)
            let task = try await harness.createTask(steps: ["add_one"], context: .object(["n": .int(1)]))
            try await harness.enqueue(task, "add_one")
            // Two passes of the poller end after the enqueue (the second starts after it): each
            // found the queue and, claiming off, left the message unread.
            let passes = worker.daemon.runtime.eventSystem.status.pollPasses
            try await waitUntil(timeout: .seconds(20)) { worker.daemon.runtime.eventSystem.status.pollPasses >= passes + 2 }
            #expect(try await harness.state(task["add_one"]) == "enqueued")
            let queue = QueueNames.workerQueue(namespace: "pipeline")
            let readCount = try await harness.admin.query("SELECT read_ct FROM pgmq.q_\(queue)")[0].decode("read_ct", as: Int.self)
            #expect(readCount == 0)
            worker.daemon.setClaiming(true)
            // The poller did not read (and hide) the message while claiming was off, so it runs at once.
            try await harness.waitForState(task["add_one"], ["enqueued_for_orchestration"], timeout: .seconds(5))
            // The statistics are updated right after the completion transaction commits.
            try await waitUntil(timeout: .seconds(5)) { worker.daemon.statistics.snapshot.totalExecuted == 1 }
            let after = await worker.daemon.runtime.status()
            #expect(after.statistics.totalExecuted == 1)
            #expect(after.statistics.claimed == 1)
            try await worker.stop()
        }
    }
}
