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

    // MARK: - The worker's pool under its own maintenance

    /// The pipeline tests above log "released a connection that this pool did not lend" when the
    /// worker's pool runs its maintenance while steps are being claimed. This reproduces it
    /// directly: a running pool (maintenance every 5 ms, as `WorkerDaemon` runs it, only faster)
    /// and four busy borrowers. No connection may be lent to two borrowers at once, and no
    /// connection may be left open outside the pool's bookkeeping.
    @Test
    func aMaintainedPoolNeverLendsOneConnectionTwice() async throws {
        try await withTestDatabase { db in
            let application = "pool-repro-\(UInt32.random(in: 0...UInt32.max))"
            let pool = PostgresConnectionPool(
                configuration: PostgresPoolConfiguration(
                    url: db.url, maxConnections: 4, minConnections: 4, acquireTimeout: .seconds(10),
                    applicationName: application, maintenanceInterval: .milliseconds(2)))
            let maintenance = Task { try await pool.run() }
            let tracker = LendTracker()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        for _ in 0..<300 {
                            let connection = try await pool.acquire()
                            let id = ObjectIdentifier(connection)
                            tracker.lend(id)
                            _ = try? await connection.query("SELECT 1")
                            tracker.giveBack(id)
                            await pool.release(connection)
                            // Leave connections idle now and then, where maintenance looks at them.
                            try await Task.sleep(for: .microseconds(Int.random(in: 0...600)))
                        }
                    }
                }
                try await group.waitForAll()
            }
            maintenance.cancel()
            await pool.close()
            _ = await maintenance.result
            #expect(tracker.doubleLent == 0, "a connection was lent to two borrowers at once")
            // Everything the pool opened is closed once it is closed (allow the closes to land).
            let admin = try await db.connect()
            var open = -1
            for _ in 0..<50 {
                open = try await admin.query(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1", [application])[0].decode("n")
                if open == 0 { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            await admin.close()
            #expect(open == 0, "\(open) connections of a closed pool are still open (lost from the pool's bookkeeping)")
        }
    }

    // MARK: - Domain events

    /// Holds the step's `in_progress` transition row lock so the completion transaction cannot
    /// commit: no event may appear while the result is not committed; once it commits, the event
    /// arrives and the stored state is already visible.
    @Test(arguments: Self.modes)
    func domainEventsArePublishedOnlyAfterTheResultCommits(mode: WorkerConfiguration.DeploymentMode) async throws {
        try await withTestDatabase { db in
            let harness = try await PipelineHarness.make(db, yaml: Self.yaml)
            let release = TestFlag()
            let handlers = HandlerRegistry.withBuiltIns()
            handlers.register("test.announce") { context in
                while !release.value { try await Task.sleep(for: .milliseconds(10)) }
                return .success(.object(["order": .int(7), "step": .string(context.stepName)]))
            }
            handlers.register("test.announce_fail") { _ in
                .failure(message: "no luck", retryable: false)
            }
            let worker = harness.startWorker(handlers, configuration: Self.configuration(harness, mode: mode))
            try await harness.waitForWorkersReady(1, mode: mode)
            let eventsQueue = QueueNames.domainEvents(namespace: harness.namespace)
            let task = try await harness.createTask(steps: ["announce", "announce_fail"], context: .object(["k": .string("v")]))
            let step = task["announce"]
            try await harness.enqueue(task, "announce")
            try await harness.waitForState(step, ["in_progress"])

            // Block the completion transaction on the in_progress transition's row lock.
            let locker = try await db.connect(applicationName: "tasker-test-locker")
            try await locker.query("BEGIN")
            try await locker.query(
                """
                SELECT 1 FROM tasker.workflow_step_transitions
                 WHERE workflow_step_uuid = $1 AND most_recent AND to_state = 'in_progress' FOR UPDATE
                """, [step])
            release.set(true)
            // The handler has returned and the completion is waiting for the lock.
            try await waitUntil(timeout: .seconds(10)) {
                try await !harness.admin.query(
                    """
                    SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
                    """
                ).isEmpty
            }
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await harness.eventMessages(eventsQueue).isEmpty, "a domain event was published before its result committed")
            #expect(try await harness.state(step) == "in_progress")
            #expect(worker.daemon.statistics.snapshot.domainEventsPublished == 0)
            try await locker.query("COMMIT")
            await locker.close()

            // The event arrives; at that moment the result is committed (seen from another connection).
            var events: [JSONValue] = []
            var stateAtEvent = ""
            let deadline = ContinuousClock.now.advanced(by: .seconds(10))
            while ContinuousClock.now < deadline {
                events = try await harness.eventMessages(eventsQueue)
                if !events.isEmpty {
                    stateAtEvent = try await harness.state(step)
                    break
                }
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(events.count == 1, "expected only pipeline.done (the failure event must not fire): \(events)")
            #expect(stateAtEvent == "enqueued_for_orchestration")
            if let event = events.first {
                #expect(event["event_name"]?.stringValue == "pipeline.done")
                #expect(event["event_version"]?.stringValue == "1.0")
                #expect(event["payload"]?["payload"] == .object(["order": .int(7), "step": .string("announce")]))
                #expect(event["payload"]?["execution_result"]?["success"]?.boolValue == true)
                #expect(event["metadata"]?["step_uuid"]?.stringValue == step.uuidString.lowercased())
                #expect(event["metadata"]?["task_uuid"]?.stringValue == task.taskUUID.uuidString.lowercased())
                #expect(event["metadata"]?["correlation_id"]?.stringValue == task.correlationID.uuidString.lowercased())
                #expect(event["metadata"]?["step_name"]?.stringValue == "announce")
                #expect(event["metadata"]?["namespace"]?.stringValue == "pipeline")
            }

            // A failing step fires only the failure event.
            try await harness.enqueue(task, "announce_fail")
            try await harness.waitForState(task["announce_fail"], ["enqueued_as_error_for_orchestration"])
            try await waitUntil(timeout: .seconds(10)) { try await harness.eventMessages(eventsQueue).count >= 2 }
            await worker.stop(within: .seconds(20))
            let all = try await harness.eventMessages(eventsQueue)
            #expect(all.compactMap { $0["event_name"]?.stringValue } == ["pipeline.done", "pipeline.failed"])
            #expect(all.last?["metadata"]?["step_uuid"]?.stringValue == task["announce_fail"].uuidString.lowercased())
            #expect(worker.daemon.statistics.snapshot.domainEventsPublished == 2)
            #expect(worker.daemon.statistics.snapshot.domainEventsFailed == 0)
        }
    }
}

// MARK: - Test instruments

/// Counts handler invocations per step (thread-safe).
final class InvocationCounter: Sendable {
    private let counts = Mutex<[UUID: Int]>([:])
    func record(_ step: UUID) { counts.withLock { $0[step, default: 0] += 1 } }
    func count(_ step: UUID) -> Int { counts.withLock { $0[step] ?? 0 } }
    var total: Int { counts.withLock { $0.values.reduce(0, +) } }
}

/// Connections currently held by borrowers, and how often one was lent while already held.
final class LendTracker: Sendable {
    private let state = Mutex<(held: Set<ObjectIdentifier>, doubleLent: Int)>(([], 0))
    func lend(_ id: ObjectIdentifier) { state.withLock { if !$0.held.insert(id).inserted { $0.doubleLent += 1 } } }
    func giveBack(_ id: ObjectIdentifier) { state.withLock { _ = $0.held.remove(id) } }
    var doubleLent: Int { state.withLock { $0.doubleLent } }
}

/// A thread-safe boolean.
final class TestFlag: Sendable {
    private let storage = Atomic<Bool>(false)
    func set(_ value: Bool) { storage.store(value, ordering: .sequentiallyConsistent) }
    var value: Bool { storage.load(ordering: .sequentiallyConsistent) }
}

/// Handler bodies running at once, and the most ever seen.
final class ConcurrencyGauge: Sendable {
    private struct State { var current = 0, maximum = 0, entered = 0 }
    private let state = Mutex(State())
    func enter() {
        state.withLock {
            $0.current += 1
            $0.entered += 1
            $0.maximum = max($0.maximum, $0.current)
        }
    }
    func leave() { state.withLock { $0.current -= 1 } }
    var current: Int { state.withLock { $0.current } }
    var maximum: Int { state.withLock { $0.maximum } }
    var entered: Int { state.withLock { $0.entered } }
}

// MARK: - Harness helpers for many steps

extension PipelineHarness.RunningWorker {
    /// Graceful shutdown, waiting at most `timeout` for the worker to finish; false (and an issue
    /// recorded) when it did not, so a test never hangs on a worker that does not stop.
    @discardableResult
    func stop(within timeout: Duration, _ label: String = "worker") async -> Bool {
        // Unstructured, so that a worker that never finishes cannot hold this function.
        let done = TestFlag()
        Task {
            _ = try? await self.stop()
            done.set(true)
        }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while !done.value && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        let stopped = done.value
        if !stopped {
            Issue.record("\(label) did not finish within \(timeout) of graceful shutdown")
            task.cancel()
        }
        return stopped
    }
}

extension PipelineHarness {
    struct StepSummary: CustomStringConvertible {
        var state: String
        var attempts: Int
        /// `in_progress` transitions.
        var starts: Int
        /// Messages for this step on `orchestration_step_results`.
        var results: Int
        var description: String { "state \(state), attempts \(attempts), starts \(starts), results \(results)" }
    }

    /// `count` tasks with one pending step `step` each.
    func createSingleStepTasks(count: Int, step: String) async throws -> [SeededTask] {
        var tasks: [SeededTask] = []
        for _ in 0..<count { tasks.append(try await createTask(steps: [step])) }
        return tasks
    }

    /// Three single-step tasks enqueued, the second's step already claimed elsewhere, and a claim
    /// request for each queued message (in task order): the setting of the claim repository tests.
    func claimRequestsWithOneTakenElsewhere(step: String) async throws -> (tasks: [SeededTask], messages: [Int64], requests: [ClaimRequest])
    {
        let tasks = try await createSingleStepTasks(count: 3, step: step)
        for task in tasks { try await enqueue(task, step) }
        let queue = QueueNames.workerQueue(namespace: namespace)
        let messages: [Int64] = try await admin.query("SELECT msg_id FROM pgmq.q_\(queue) ORDER BY msg_id")
            .map { row throws(PostgresError) in try row.decode("msg_id") }
        try await transition(tasks[1][step], from: "enqueued", to: "in_progress", event: "start")
        let requests = zip(tasks, messages).map {
            ClaimRequest(taskUUID: $0.0.taskUUID, stepUUID: $0.0[step], queue: queue, msgID: $0.1)
        }
        return (tasks, messages, requests)
    }

    /// `pending→enqueued` and the step message for every task's `step`, in ONE transaction (the
    /// notifications all arrive at once, on commit).
    func enqueueBatch(_ tasks: [SeededTask], _ step: String) async throws {
        let queue = QueueNames.workerQueue(namespace: namespace)
        let metadata = try JSONValue.object([
            "event": .string(#"{"type":"Enqueue"}"#), "timestamp": .string("2026-11-23T00:00:00+00:00"),
        ]).jsonString()
        let items = try tasks.map { task in
            (task[step], try PostgresJSON(StepMessage(taskUUID: task.taskUUID, stepUUID: task[step], correlationID: task.correlationID)))
        }
        try await admin.transaction { c in
            for (id, message) in items {
                try c.query(
                    """
                    WITH previous AS (
                        UPDATE tasker.workflow_step_transitions SET most_recent = false
                         WHERE workflow_step_uuid = $1 AND most_recent AND to_state = 'pending' RETURNING sort_key)
                    INSERT INTO tasker.workflow_step_transitions (workflow_step_uuid, to_state, from_state, metadata, sort_key, most_recent, created_at, updated_at)
                    SELECT $1, 'enqueued', 'pending', $2::jsonb, sort_key + 1, true, NOW(), NOW() FROM previous
                    """, [id, PostgresJSON(raw: metadata)])
                try PGMQ.sendWithNotify(c, queue: queue, message: message)
            }
        }
    }

    /// Waits until `count` workers are ready to receive: their listeners are connected (modes with
    /// a listener) or their pools have connected (polling only).
    func waitForWorkersReady(_ count: Int, mode: WorkerConfiguration.DeploymentMode, timeout: Duration = .seconds(20)) async throws {
        let application = mode == .pollingOnly ? "tasker-worker" : "tasker-worker-listener"
        try await waitUntil(timeout: timeout) {
            let n: Int = try await admin.query(
                """
                SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1
                """, [application])[0].decode("n")
            return n >= count
        }
        // The listener connects just before LISTEN completes; give it a moment.
        try await Task.sleep(for: .milliseconds(200))
    }

    /// Steps (of every task in the database) whose current state is in `states`.
    func countSteps(in states: Set<String>) async throws -> Int {
        let summaries = try await stepSummaries()
        return summaries.values.filter { states.contains($0.state) }.count
    }

    /// Waits (bounded) until every step in the database is in one of `states`.
    func waitForAllSteps(_ states: Set<String>, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var last: [String: Int] = [:]
        while ContinuousClock.now < deadline {
            if let summaries = try? await stepSummaries() {
                last = Dictionary(grouping: summaries.values, by: \.state).mapValues(\.count)
                if summaries.values.allSatisfy({ states.contains($0.state) }) { return true }
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("steps still not all in \(states.sorted()) after \(timeout): \(last)")
        return false
    }

    /// Every step in the database with its state, attempts, starts and result messages.
    func stepSummaries() async throws -> [UUID: StepSummary] {
        let rows = try await admin.query(
            """
            SELECT ws.workflow_step_uuid AS id, COALESCE(ws.attempts, 0) AS attempts,
                   COALESCE((SELECT t.to_state FROM tasker.workflow_step_transitions t
                              WHERE t.workflow_step_uuid = ws.workflow_step_uuid AND t.most_recent), 'pending') AS state,
                   (SELECT count(*) FROM tasker.workflow_step_transitions t
                     WHERE t.workflow_step_uuid = ws.workflow_step_uuid AND t.to_state = 'in_progress') AS starts,
                   (SELECT count(*) FROM pgmq.q_orchestration_step_results r
                     WHERE r.message->>'step_uuid' = ws.workflow_step_uuid::text) AS results
              FROM tasker.workflow_steps ws
            """)
        var summaries: [UUID: StepSummary] = [:]
        for row in rows {
            summaries[try row.decode("id")] = StepSummary(
                state: try row.decode("state"), attempts: try row.decode("attempts"),
                starts: try row.decode("starts"), results: try row.decode("results"))
        }
        return summaries
    }

    /// Messages in the worker queue (`q_`) or its archive (`a_`).
    func queueDepth(archived: Bool) async throws -> Int {
        let table = (archived ? "a_" : "q_") + QueueNames.workerQueue(namespace: namespace)
        return try await admin.query("SELECT count(*) AS n FROM pgmq.\(table)")[0].decode("n")
    }

    /// Ids of the archived worker-queue messages.
    func archivedIDs() async throws -> Set<Int64> {
        let table = "a_" + QueueNames.workerQueue(namespace: namespace)
        return Set(try await admin.query("SELECT msg_id FROM pgmq.\(table)").map { try $0.decode("msg_id") })
    }

    /// Messages currently on the worker queue (`q_`), by id.
    func queuedIDs() async throws -> Set<Int64> {
        let table = "q_" + QueueNames.workerQueue(namespace: namespace)
        return Set(try await admin.query("SELECT msg_id FROM pgmq.\(table)").map { try $0.decode("msg_id") })
    }

    /// Waits (bounded) until worker-queue message `msgID` is archived.
    func waitForArchived(_ msgID: Int64, timeout: Duration = .seconds(10)) async throws {
        try await waitUntil(timeout: timeout) { try await archivedIDs().contains(msgID) }
    }

    /// Every message on `queue` (not archived), oldest first.
    func eventMessages(_ queue: String) async throws -> [JSONValue] {
        try await admin.query("SELECT message FROM pgmq.q_\(queue) ORDER BY msg_id").map { try $0.decode("message") }
    }
}
