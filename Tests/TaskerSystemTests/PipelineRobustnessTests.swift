import Foundation
import Synchronization
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// The step pipeline under stress against a real PostgreSQL: competing workers, poison and stale
/// messages, killed connections, the handler concurrency bound and domain-event ordering.
@Suite("Step pipeline robustness", .timeLimit(.minutes(3)))
struct PipelineRobustnessTests {
    static let modes: [WorkerConfiguration.DeploymentMode] = [.hybrid, .eventDrivenOnly, .pollingOnly]

    /// A harness on `yaml` with one ready worker whose `test.work` runs are counted.
    static func startCountingWorker(
        _ db: TestDatabase, mode: WorkerConfiguration.DeploymentMode
    ) async throws
        -> (PipelineHarness, InvocationCounter, PipelineHarness.RunningWorker)
    {
        let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
        let invocations = InvocationCounter()
        let worker = harness.startWorker(countingHandlers(invocations), configuration: configuration(harness, mode: mode))
        try await harness.waitForWorkersReady(1, mode: mode)
        return (harness, invocations, worker)
    }

    /// Built-ins plus `test.work`, which records each run in `invocations`.
    static func countingHandlers(_ invocations: InvocationCounter) -> HandlerRegistry {
        let handlers = HandlerRegistry.withBuiltIns()
        handlers.register("test.work") { context in
            invocations.record(context.stepUUID)
            return .success(.emptyObject)
        }
        return handlers
    }

    static let events = """
            publishes_events:
              - name: pipeline.done
                description: x
                condition: success
                delivery_mode: broadcast
                schema: null
              - name: pipeline.failed
                description: y
                condition: failure
                delivery_mode: durable
                schema: null
        """

    static let yaml = """
        name: robust
        namespace_name: pipeline
        version: 1.0.0
        steps:
          - name: work
            handler: { callable: test.work }
          - name: announce
            handler: { callable: test.announce }
        \(events)
          - name: announce_fail
            handler: { callable: test.announce_fail }
        \(events)
          - name: stubborn
            timeout_seconds: 1
            handler: { callable: test.stubborn }
        """

    /// A configuration with short visibility timeouts, so that a message whose claim failed comes
    /// back quickly.
    static func configuration(
        _ harness: PipelineHarness, mode: WorkerConfiguration.DeploymentMode,
        maxConcurrentHandlers: Int = 10, loadShedding: Bool = true
    ) -> TaskerConfiguration {
        var configuration = harness.configuration(mode: mode, maxConcurrentHandlers: maxConcurrentHandlers)
        configuration.worker.eventSystems.worker.metadata.fallbackPoller.visibilityTimeoutSeconds = 2
        configuration.worker.eventSystems.worker.timing.visibilityTimeoutSeconds = 2
        configuration.worker.mpscChannels.handlerDispatch.loadShedding.enabled = loadShedding
        return configuration
    }

    // MARK: - Two workers, one database

    @Test(arguments: [(WorkerConfiguration.DeploymentMode.hybrid, 240), (.eventDrivenOnly, 60), (.pollingOnly, 60)])
    func twoWorkersNeverRunAStepTwice(mode: WorkerConfiguration.DeploymentMode, count: Int) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let invocations = InvocationCounter()
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.work") { context in
                invocations.record(context.stepUUID)
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...5)))
                return .success(.object(["ok": .bool(true)]))
            }
            let tasks = try await harness.createSingleStepTasks(count: count, step: "work")
            let configuration = Self.configuration(harness, mode: mode)
            let first = harness.startWorker(handlers, configuration: configuration)
            let second = harness.startWorker(handlers, configuration: configuration)
            try await harness.waitForWorkersReady(2, mode: mode)
            try await harness.enqueueBatch(tasks, "work")
            let finished = await harness.waitForAllSteps(["enqueued_for_orchestration"], timeout: .seconds(40))
            await first.stop(within: .seconds(20))
            await second.stop(within: .seconds(20))
            #expect(finished, "not every step finished")

            let summaries = try await harness.stepSummaries()
            #expect(summaries.count == count)
            for (step, summary) in summaries {
                #expect(summary.state == "enqueued_for_orchestration", "step \(step): \(summary)")
                #expect(summary.starts == 1, "step \(step): \(summary)")
                #expect(summary.attempts == 1, "step \(step): \(summary)")
                #expect(summary.results == 1, "step \(step): \(summary)")
                #expect(invocations.count(step) == 1, "step \(step) ran \(invocations.count(step)) times")
            }
            #expect(invocations.total == count)
            #expect(try await harness.queueDepth(archived: false) == 0)
            #expect(try await harness.queueDepth(archived: true) == count)
            let (a, b) = (first.daemon.statistics.snapshot, second.daemon.statistics.snapshot)
            #expect(a.claimed + b.claimed == count)
            #expect(a.totalSucceeded + b.totalSucceeded == count)
            if count >= 200 {
                #expect(a.claimed > 0, "the first worker claimed nothing")
                #expect(b.claimed > 0, "the second worker claimed nothing")
            }
        }
    }

    // MARK: - Poison and stale messages

    @Test(arguments: Self.modes)
    func poisonMessagesAreArchivedAndTheWorkerKeepsRunning(mode: WorkerConfiguration.DeploymentMode) async throws {
        try await withTestDatabase { db in
            let (harness, invocations, worker) = try await Self.startCountingWorker(db, mode: mode)
            let queue = QueueNames.workerQueue(namespace: harness.namespace)
            let real = try await harness.createTask(steps: ["work"])
            let otherTask = try await harness.createTask(steps: ["work"])
            let ghost = StepMessage(taskUUID: UUID.v7(), stepUUID: UUID.v7(), correlationID: UUID.v7())
            // A real step of another task: hydrate finds no such (task, step) pair.
            let mismatched = StepMessage(taskUUID: real.taskUUID, stepUUID: otherTask["work"], correlationID: real.correlationID)
            let poison: [String] = [
                #"{"hello":1}"#,
                #""just a string""#,
                "[1, 2, 3]",
                "42",
                #"{"task_uuid":"not-a-uuid","step_uuid":"x","correlation_id":"y"}"#,
                try JSONValue(encoding: ghost).jsonString(),
                try JSONValue(encoding: mismatched).jsonString(),
            ]
            var poisonIDs: [Int64] = []
            for body in poison {
                poisonIDs.append(try await PGMQ.sendWithNotify(harness.admin, queue: queue, message: PostgresJSON(raw: body)))
            }
            try await harness.enqueue(real, "work")
            try await harness.waitForState(real["work"], ["enqueued_for_orchestration"])

            // Every poison message ends up archived and counted, none is left in the queue.
            var archived = false
            let deadline = ContinuousClock.now.advanced(by: .seconds(10))
            while ContinuousClock.now < deadline {
                if try await harness.archivedIDs().isSuperset(of: poisonIDs) {
                    archived = true
                    break
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            let missing = Set(poisonIDs).subtracting(try await harness.archivedIDs()).sorted()
            #expect(archived, "poison messages not archived: \(missing)")
            #expect(worker.daemon.statistics.snapshot.poisonMessages == poison.count)

            // The worker still runs: the other task's step (whose uuid was in a poison message) runs once.
            try await harness.enqueue(otherTask, "work")
            try await harness.waitForState(otherTask["work"], ["enqueued_for_orchestration"])
            await worker.stop(within: .seconds(20))
            #expect(invocations.count(real["work"]) == 1)
            #expect(invocations.count(otherTask["work"]) == 1)
            #expect(try await harness.queueDepth(archived: false) == 0)
            #expect(try await harness.queueDepth(archived: true) == poison.count + 2)
            #expect(worker.daemon.statistics.snapshot.totalSucceeded == 2)
            #expect(
                try await harness.transitions(otherTask["work"]).map(\.to)
                    == ["pending", "enqueued", "in_progress", "enqueued_for_orchestration"])
        }
    }

    @Test(arguments: Self.modes)
    func aStaleDuplicateMessageIsArchivedWithoutRunningTheStepAgain(mode: WorkerConfiguration.DeploymentMode) async throws {
        try await withTestDatabase { db in
            let (harness, invocations, worker) = try await Self.startCountingWorker(db, mode: mode)
            let task = try await harness.createTask(steps: ["work"])
            try await harness.enqueue(task, "work")
            try await harness.waitForState(task["work"], ["enqueued_for_orchestration"])
            let queue = QueueNames.workerQueue(namespace: harness.namespace)
            let message = try PostgresJSON(StepMessage(taskUUID: task.taskUUID, stepUUID: task["work"], correlationID: task.correlationID))

            // Duplicate while the result waits for orchestration…
            let first = try await PGMQ.sendWithNotify(harness.admin, queue: queue, message: message)
            try await harness.waitForArchived(first)
            // …and after orchestration completed the step.
            try await harness.completeLikeOrchestration(task, "work")
            let second = try await PGMQ.sendWithNotify(harness.admin, queue: queue, message: message)
            try await harness.waitForArchived(second)
            await worker.stop(within: .seconds(20))

            #expect(worker.daemon.statistics.snapshot.staleMessages == 2)
            #expect(worker.daemon.statistics.snapshot.poisonMessages == 0)
            #expect(invocations.count(task["work"]) == 1)
            #expect(
                try await harness.transitions(task["work"]).map(\.to)
                    == ["pending", "enqueued", "in_progress", "enqueued_for_orchestration", "complete"])
            #expect(try await harness.stepSummaries()[task["work"]]?.results == 1)
            #expect(try await harness.queueDepth(archived: false) == 0)
        }
    }

    // MARK: - Killed connections

    @Test(arguments: Self.modes)
    func theWorkerRecoversWhenEveryConnectionIsTerminatedMidLoad(mode: WorkerConfiguration.DeploymentMode) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let invocations = InvocationCounter()
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.work") { context in
                invocations.record(context.stepUUID)
                try await Task.sleep(for: .milliseconds(40))
                return .success(.emptyObject)
            }
            let count = 80
            let tasks = try await harness.createSingleStepTasks(count: count, step: "work")
            let worker = harness.startWorker(handlers, configuration: Self.configuration(harness, mode: mode))
            try await harness.waitForWorkersReady(1, mode: mode)
            try await harness.enqueueBatch(tasks, "work")

            // Mid-load: some results stored, others not yet.
            try await waitUntil(timeout: .seconds(20)) {
                try await harness.countSteps(in: ["enqueued_for_orchestration"]) >= 10
            }
            let done = try await harness.countSteps(in: ["enqueued_for_orchestration"])
            let terminated: [Bool] = try await harness.admin.query(
                """
                SELECT pg_terminate_backend(pid) AS t FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()
                """
            ).map { try $0.decode("t") }
            #expect(terminated.count >= 2, "expected the worker's pool and listener connections")
            #expect(done < count, "the load finished before the connections were terminated; nothing was tested")

            let finished = await harness.waitForAllSteps(["enqueued_for_orchestration"], timeout: .seconds(40))
            #expect(finished, "not every step finished after the connections were terminated")
            // Still alive afterwards: a new step (new notification) is claimed and run.
            let late = try await harness.createTask(steps: ["work"])
            try await harness.enqueue(late, "work")
            try await harness.waitForState(late["work"], ["enqueued_for_orchestration"], timeout: .seconds(20))
            await worker.stop(within: .seconds(20))

            let summaries = try await harness.stepSummaries()
            for (step, summary) in summaries {
                #expect(summary.state == "enqueued_for_orchestration", "step \(step): \(summary)")
                #expect(summary.starts == 1, "step \(step): \(summary)")
                #expect(summary.results == 1, "step \(step): \(summary)")
                #expect(invocations.count(step) == 1, "step \(step) ran \(invocations.count(step)) times")
            }
            #expect(summaries.count == count + 1)
        }
    }

    // MARK: - Handler concurrency bound

    @Test(arguments: Self.modes)
    func theHandlerConcurrencyBoundIsNeverExceeded(mode: WorkerConfiguration.DeploymentMode) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let gauge = ConcurrencyGauge()
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.work") { _ in
                gauge.enter()
                defer { gauge.leave() }
                try await Task.sleep(for: .milliseconds(Int.random(in: 20...50)))
                return .success(.emptyObject)
            }
            // Load shedding off: the semaphore alone must keep the bound.
            let worker = harness.startWorker(
                handlers, configuration: Self.configuration(harness, mode: mode, maxConcurrentHandlers: 3, loadShedding: false))
            try await harness.waitForWorkersReady(1, mode: mode)
            let tasks = try await harness.createSingleStepTasks(count: 30, step: "work")
            try await harness.enqueueBatch(tasks, "work")
            let finished = await harness.waitForAllSteps(["enqueued_for_orchestration"], timeout: .seconds(30))
            await worker.stop(within: .seconds(20))
            #expect(finished)
            #expect(gauge.maximum <= 3, "\(gauge.maximum) handlers ran at once with max_concurrent_handlers = 3")
            #expect(gauge.maximum >= 2, "handlers never overlapped; the bound was not exercised")
            #expect(gauge.entered == 30)
            #expect(worker.daemon.statistics.snapshot.totalSucceeded == 30)
        }
    }

    /// A handler that ignores cancellation gets `handler_timeout` at its timeout, but keeps its
    /// permit until it really returns: while it is overdue, at most `max - 1` other handlers run.
    @Test(arguments: Self.modes)
    func anOverdueHandlerKeepsItsPermitUntilItReturns(mode: WorkerConfiguration.DeploymentMode) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let gauge = ConcurrencyGauge()
            let stubbornRunning = TestFlag()
            let release = TestFlag()
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.work") { _ in
                gauge.enter()
                defer { gauge.leave() }
                try await Task.sleep(for: .milliseconds(40))
                return .success(.emptyObject)
            }
            handlers.register("test.stubborn") { _ in
                gauge.enter()
                stubbornRunning.set(true)
                defer {
                    stubbornRunning.set(false)
                    gauge.leave()
                }
                // Not cancellable: runs until the test has seen the quick steps finish (at most
                // 60 s) although its timeout is 1 s, so the overlap does not depend on the
                // machine's load (a fixed 8 s was too short under the whole suite on 2 cores).
                let started = ContinuousClock.now
                while !release.value, ContinuousClock.now - started < .seconds(60) {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { continuation.resume() }
                    }
                }
                return .success(.object(["late": .bool(true)]))
            }
            let worker = harness.startWorker(
                handlers, configuration: Self.configuration(harness, mode: mode, maxConcurrentHandlers: 3, loadShedding: false))
            try await harness.waitForWorkersReady(1, mode: mode)
            let stubborn = try await harness.createTask(steps: ["stubborn"])
            let tasks = try await harness.createSingleStepTasks(count: 16, step: "work")
            try await harness.enqueue(stubborn, "stubborn")
            // The timeout result is stored at ~1 s, while the handler's body is still running.
            try await harness.waitForState(stubborn["stubborn"], ["enqueued_as_error_for_orchestration"], timeout: .seconds(10))
            #expect(
                stubbornRunning.value,
                "the timeout result should be reported before the overdue handler returns")
            let result = try await harness.result(stubborn["stubborn"])
            #expect(result.error?.errorType == "handler_timeout")
            #expect(result.metadata.retryable == true)

            // While it is overdue, the other steps share the remaining two permits.
            try await harness.enqueueBatch(tasks, "work")
            let finished = await harness.waitForAllSteps(
                ["enqueued_for_orchestration", "enqueued_as_error_for_orchestration"], timeout: .seconds(30))
            let overlapped = stubbornRunning.value
            release.set(true)
            await worker.stop(within: .seconds(20))
            #expect(finished)
            #expect(overlapped, "the quick steps finished after the overdue handler returned; the overlap was not tested")
            #expect(gauge.maximum <= 3, "\(gauge.maximum) handler bodies ran at once with max_concurrent_handlers = 3")
            #expect(gauge.maximum >= 2)
            #expect(gauge.entered == 17)
            #expect(gauge.current == 0)
            #expect(try await harness.countSteps(in: ["enqueued_for_orchestration"]) == 16)
        }
    }
}
