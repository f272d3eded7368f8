import Foundation
import Synchronization
import TaskerStore
import TaskerTestSupport
import Testing

@testable import TaskerModel
@testable import TaskerPostgres
@testable import TaskerWorker

/// The worker's pool under its own maintenance, and domain events in order (the robustness suite's
/// second half).
extension PipelineRobustnessTests {
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
