import Foundation
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// The timing keys the upstream runtime ignores and we apply: the shutdown drain deadline
/// (`timing.processing_timeout_seconds`), the claim timeout (`timing.claim_timeout_seconds`) and the
/// poller's `max_age_hours` / `supported_namespaces`.
@Suite("Shutdown deadline and timing keys", .timeLimit(.minutes(2)))
struct ShutdownDeadlineTests {
    static let yaml = """
        name: deadline
        namespace_name: deadline
        version: 1.0.0
        steps:
          - name: stuck
            handler: { callable: test.stuck }
          - name: waiting
            handler: { callable: test.stuck }
        """

    /// A handler that ignores cancellation for `seconds` without blocking a thread.
    static func stuckHandlers(seconds: Double, started: TestFlag) -> HandlerRegistry {
        let handlers = HandlerRegistry.withBuiltIns()
        handlers.register("test.stuck") { _ in
            started.set(true)
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { continuation.resume() }
            }
            return .success(["late": true])
        }
        return handlers
    }

    /// One permit, a handler stuck for 30 s and a second claimed step waiting for the permit:
    /// shutdown with a 1 s drain deadline ends in about a second, and both steps have a retryable
    /// `handler_timeout` result naming the shutdown.
    @Test func theDrainDeadlineGivesEveryClaimedStepAResult() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let started = TestFlag()
            var configuration = harness.configuration(mode: .pollingOnly, maxConcurrentHandlers: 1, handlerTimeoutMs: 60_000)
            configuration.worker.mpscChannels.handlerDispatch.loadShedding.enabled = false
            configuration.worker.eventSystems.worker.timing.processingTimeoutSeconds = 1
            let worker = harness.startWorker(Self.stuckHandlers(seconds: 30, started: started), configuration: configuration)
            let task = try await harness.createTask(steps: ["stuck", "waiting"])
            try await harness.enqueue(task, "stuck")
            try await waitUntil { started.value }
            try await harness.enqueue(task, "waiting")
            try await harness.waitForState(task["waiting"], ["in_progress"])

            let clock = ContinuousClock()
            let stopStarted = clock.now
            #expect(await worker.stop(within: .seconds(40)))
            let took = stopStarted.duration(to: clock.now)
            #expect(took < .seconds(20), "shutdown took \(took): the drain deadline did not apply (the handler runs 30 s)")

            for (step, text) in [("stuck", "did not finish"), ("waiting", "not started")] {
                #expect(try await harness.state(task[step]) == "enqueued_as_error_for_orchestration")
                let result = try await harness.result(task[step])
                #expect(result.error?.errorType == "handler_timeout")
                #expect(result.isRetryable)
                #expect(result.error?.message.contains(text) == true, "\(step): \(result.error?.message ?? "")")
            }
        }
    }

    /// A claim blocked on the step's row lock gives up after `claim_timeout_seconds`; the message
    /// stays queued and the step unclaimed.
    @Test func aClaimStuckOnALockGivesUpAfterTheClaimTimeout() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let task = try await harness.createTask(steps: ["stuck"])
            try await harness.enqueue(task, "stuck")
            let queue = QueueNames.workerQueue(namespace: harness.namespace)
            let message = try #require(
                try await harness.admin.query(
                    "SELECT msg_id FROM pgmq.q_\(queue)"
                ).first?.decode("msg_id", as: Int64.self))

            let locker = try await db.connect(applicationName: "tasker-test-locker")
            try await locker.query("BEGIN")
            try await locker.query(
                """
                SELECT 1 FROM tasker.workflow_step_transitions WHERE workflow_step_uuid = $1 AND most_recent FOR UPDATE
                """, [task["stuck"]])
            let claimer = try await db.connect()
            let started = ContinuousClock.now
            await #expect(throws: PostgresError.self) {
                try await StepRepository.claim(claimer, stepUUID: task["stuck"], queue: queue, msgID: message, timeout: .seconds(1))
            }
            #expect(started.duration(to: .now) < .seconds(20))  // without the timeout it waits for the lock for good
            try await locker.query("ROLLBACK")
            #expect(try await harness.state(task["stuck"]) == "enqueued")
            #expect(try await harness.admin.query("SELECT count(*) AS n FROM pgmq.q_\(queue)")[0].decode("n", as: Int.self) == 1)
            // Without the lock the same claim succeeds.
            let outcome = try await StepRepository.claim(
                claimer, stepUUID: task["stuck"], queue: queue, msgID: message,
                timeout: .seconds(1))
            #expect(outcome == .claimed(attempts: 1))
            await claimer.close()
            await locker.close()
        }
    }

    /// `max_age_hours`: polling reads skip messages older than the limit and leave them queued.
    @Test func pollingSkipsMessagesOlderThanMaxAge() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let task = try await harness.createTask(steps: ["stuck", "waiting"])
            try await harness.enqueue(task, "stuck")
            try await harness.enqueue(task, "waiting")
            let queue = QueueNames.workerQueue(namespace: harness.namespace)
            try await harness.admin.query(
                """
                UPDATE pgmq.q_\(queue) SET enqueued_at = now() - interval '3 hours'
                 WHERE message->>'step_uuid' = $1
                """, [task["stuck"].uuidString.lowercased()])
            let read = try await PGMQ.read(
                harness.admin, queue: queue, visibilityTimeout: 30, quantity: 10,
                maxAgeSeconds: 2 * 3600)
            #expect(read.map { $0.message["step_uuid"]?.stringValue } == [task["waiting"].uuidString.lowercased()])
            let old = try await PGMQ.read(harness.admin, queue: queue, visibilityTimeout: 30, quantity: 10)
            #expect(old.map { $0.message["step_uuid"]?.stringValue } == [task["stuck"].uuidString.lowercased()])
        }
    }

    @Test func supportedNamespacesLimitWhatThePollerReads() async throws {
        var settings = WorkerEventSystemSettings(mode: .hybrid, namespaces: ["a", "b", "c"])
        #expect(settings.polledNamespaces == ["a", "b", "c"])
        settings.pollNamespaces = ["c", "a", "zz"]
        #expect(settings.polledNamespaces == ["a", "c"])

        // Through a running PollingOnly worker: its namespace is not in `supported_namespaces`, so
        // its queue is never read; with the namespace listed, the same step is claimed and run.
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.stuck") { _ in .success(.emptyObject) }
            var configuration = harness.configuration(mode: .pollingOnly)
            configuration.worker.eventSystems.worker.metadata.fallbackPoller.supportedNamespaces = ["elsewhere"]
            let task = try await harness.createTask(steps: ["stuck"])
            try await harness.enqueue(task, "stuck")
            let excluded = harness.startWorker(handlers, configuration: configuration)
            try await harness.waitForWorkersReady(1, mode: .pollingOnly)
            try await Task.sleep(for: .seconds(1))  // ten poll intervals
            #expect(await excluded.stop(within: .seconds(20)))
            #expect(try await harness.state(task["stuck"]) == "enqueued")
            #expect(excluded.daemon.statistics.snapshot.claimed == 0)

            configuration.worker.eventSystems.worker.metadata.fallbackPoller.supportedNamespaces = [harness.namespace]
            let included = harness.startWorker(handlers, configuration: configuration)
            try await harness.waitForState(task["stuck"], ["enqueued_for_orchestration"])
            #expect(await included.stop(within: .seconds(20)))
        }
    }
}

/// The poller reads no more than can be claimed before load shedding starts, so that it never hides
/// messages for their visibility timeout only to shed them.
@Suite("Poller reads within capacity", .timeLimit(.minutes(2)))
struct PollerCapacityTests {
    /// Two permits, ten queued steps, a 30 s visibility timeout: everything finishes in seconds,
    /// because no read hides more messages than the worker can claim.
    @Test func aSmallWorkerDrainsABacklogWithoutWaitingForVisibilityTimeouts() async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: ShutdownDeadlineTests.yaml)
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.stuck") { _ in
                try await Task.sleep(for: .milliseconds(150))
                return .success(.emptyObject)
            }
            var configuration = harness.configuration(mode: .pollingOnly, maxConcurrentHandlers: 2)
            configuration.worker.eventSystems.worker.metadata.fallbackPoller.visibilityTimeoutSeconds = 30
            configuration.worker.eventSystems.worker.metadata.fallbackPoller.batchSize = 20
            let tasks = try await harness.createSingleStepTasks(count: 10, step: "stuck")
            try await harness.enqueueBatch(tasks, "stuck")
            let worker = harness.startWorker(handlers, configuration: configuration)
            // Under 30 s (the visibility timeout), with room for a machine loaded by the parallel suite.
            let finished = await harness.waitForAllSteps(["enqueued_for_orchestration"], timeout: .seconds(25))
            await worker.stop(within: .seconds(20))
            #expect(finished, "steps waited for the visibility timeout of messages read beyond capacity")
            #expect(worker.daemon.statistics.snapshot.totalExecuted == 10)
            // Nothing was read beyond capacity, so nothing had to be shed.
            #expect(worker.daemon.statistics.snapshot.shedClaims == 0)
        }
    }
}
